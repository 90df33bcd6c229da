"""`hlopipe serve` under `hlopipe launch`: two real processes of one `jax.distributed` job (CPU
devices, gloo), the built-in tiny GPT's two stages one on each. Process 0 serves HTTP; process
1 runs its stage following process 0's calls. The oracle is the tiny GPT's decode step run
directly in JAX in a plain loop, one prompt at a time (``test_serve.oracle``)."""

from __future__ import annotations

import io
import re
import signal
import sys
import threading
import time

import numpy as np
import openai
import pytest

from hlopipe.runtime.launch import launch

pytestmark = pytest.mark.multiprocess


class _Lines(io.StringIO):
    """The launcher's output, with an event set once process 0 prints its URL."""

    def __init__(self) -> None:
        super().__init__()
        self.url: str | None = None
        self.ready = threading.Event()
        self.ready_seen = 0.0  # this process's clock when the URL line was read

    def write(self, text: str) -> int:
        m = re.search(r"^\[rank 0\] serving \S+ at (\S+)$", text, re.M)
        if m:
            self.ready_seen = time.perf_counter()
            self.url = m.group(1)
            self.ready.set()
        return super().write(text)


def test_two_processes_serve_greedy_completions_equal_the_unsplit_program():
    """Four requests of prompt lengths 3, 8, 5 and 2 at once on one group of 2 slots (so a
    finished sequence's slot is refilled, and process 1 must follow the refill; each prompt
    goes through the prefill into its slot's row, in both processes: the prompt of 8 whole,
    the others right-padded): each equals the
    unsplit program on its prompt alone; /metrics has both stages' busy fractions (one
    timed in each process); one broadcast a turn; a seeded request's log-probabilities equal
    ``log_softmax`` of the unsplit step's logits. SIGTERM to process 0 drains and stops both."""
    from test_serve import _metrics, greedy_like_the_oracle, log_softmax_after, penalized_greedy

    out = _Lines()
    procs: list = []
    code: list[int] = []
    cmd = [sys.executable, "-m", "hlopipe", "serve", "--port", "0", "--groups", "1"]

    def run() -> None:
        code.append(launch(cmd, nproc=2, devices_per_process=1, heartbeat_timeout=10,
                           grace=20, timeout=240, out=out, on_start=procs.extend))  # fmt: skip

    job = threading.Thread(target=run, daemon=True)
    spawned = time.perf_counter()
    job.start()
    try:
        assert out.ready.wait(200), out.getvalue()[-4000:]
        client = openai.OpenAI(base_url=out.url, api_key="none", max_retries=0, timeout=120)
        rng = np.random.default_rng(5)
        cases = [(rng.integers(0, 64, L).tolist(), n) for L, n in ((3, 4), (8, 3), (5, 3), (2, 5))]
        greedy_like_the_oracle(client, cases, "hlopipe-tiny-gpt", lambda: out.getvalue()[-3000:])
        scraped = time.perf_counter()
        after = _metrics(out.url.removesuffix("/v1"))
        done = time.perf_counter()
        # each stage's busy fraction (stage 1's step timed in process 1): its step's time x
        # the group steps over the time since process 0's engine was ready, which this test's
        # own clock brackets (ready after the job was spawned, before its URL line was read)
        steps = after[("hlopipe_group_steps", ())]
        work = [after[("hlopipe_stage_step_seconds", (("stage", str(s)),))] * steps for s in (0, 1)]
        busy = [after[("hlopipe_stage_busy_fraction", (("stage", str(s)),))] for s in (0, 1)]
        for s in (0, 1):
            low = min(1.0, work[s] / (done - spawned))
            high = min(1.0, work[s] / (scraped - out.ready_seen))
            assert work[s] > 0 and low <= busy[s] <= high and busy[s] < 1, (s, busy[s], low, high)
        # and the wall time under it runs on as this clock does: scraped again (the engine
        # idle), work / busy has grown by the time between the two scrapes
        time.sleep(0.3)
        scraped2 = time.perf_counter()
        again = _metrics(out.url.removesuffix("/v1"))
        done2 = time.perf_counter()
        assert again[("hlopipe_group_steps", ())] == steps
        for s in (0, 1):
            later = again[("hlopipe_stage_busy_fraction", (("stage", str(s)),))]
            gap = work[s] / later - work[s] / busy[s]
            assert scraped2 - done <= gap <= done2 - scraped, (s, gap, scraped2 - done)
        # every prompt: of 8 whole, the others right-padded (all but their last token)
        assert after[("hlopipe_prefilled_sequences", ())] == 4
        # one broadcast a turn, those admitting through a prefill too: the plans process 0's
        # leader wrote to the coordination service, against the turns its engine ran
        turns = after[("hlopipe_engine_steps", ())]
        assert turns > 0 and after[("hlopipe_engine_broadcasts", ())] == turns, after
        # log-probabilities, made on process 1's stage, reach process 0: seeded draws, each
        # token's and the 3 largest equal log_softmax of the unsplit step's logits
        prompt = [9, 3, 33]
        r = client.completions.create(model="hlopipe-tiny-gpt", prompt=prompt, max_tokens=4,
                                      logprobs=3, temperature=1.5, seed=7)  # fmt: skip
        choice = r.choices[0].model_dump()
        tokens, got = choice["token_ids"], choice["logprobs"]
        want = log_softmax_after(prompt, tokens)
        np.testing.assert_allclose(got["token_logprobs"], want[range(4), tokens], atol=1e-4)
        for row, top in zip(want, got["top_logprobs"], strict=True):
            ids = np.argsort(-row)[:3]
            assert list(top) == [f" {i}" for i in ids]
            np.testing.assert_allclose(list(top.values()), row[ids], atol=1e-4)
        # a frequency penalty, its counts kept on process 1's stage (which samples): set from
        # the prompt (read whole by the prefill), the prefill's token and each step's counted
        prompt = [54, 40, 32, 17, 19, 2, 4, 1]
        how = {"frequency_penalty": 1.5}
        r = client.completions.create(model="hlopipe-tiny-gpt", prompt=prompt, max_tokens=8,
                                      temperature=0, extra_body=how)  # fmt: skip
        assert r.choices[0].model_dump()["token_ids"] == penalized_greedy(prompt, 8, frequency=1.5)
    finally:
        if procs and procs[0].poll() is None:
            procs[0].send_signal(signal.SIGTERM)  # process 0 only: it stops the others
        job.join(120)
    text = out.getvalue()
    assert code == [0], text[-4000:]
    assert len(re.findall(r"^\[rank [01]\] stopped$", text, re.M)) == 2, text[-4000:]
