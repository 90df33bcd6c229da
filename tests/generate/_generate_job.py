"""One process of a multi-process generation job, for tests/generate/test_generate_launch.py.

Run under ``hlopipe launch --nproc 2 --devices-per-process 4 -- python this.py OUT``: the tiny
GPT's decode step and prefill split into 2 stages, each on a (2 data x 2 model) mesh of one
process's devices; 2 groups, 32 greedy tokens. Every process writes ``OUT/tokens-<p>.npy``
(the tokens it got), ``OUT/oracle-<p>.npy`` (the unsplit program's on one local device) and
``OUT/caches-<p>.npz`` (per cache it holds: whether it is close to the oracle's, and the
largest difference).
``--die-after K``: process 1 exits after K tokens, in the middle of the job; ``--reps R``
generates R - 1 more times and prints each time's metrics.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from hlopipe.runtime import distributed

B, P, N, GROUPS = 2, 8, 32, 2


def programs(cfg, params, cuts=(2,)):
    import jax
    import jax.numpy as jnp

    import hlopipe
    from hlopipe.marker import stage_boundary
    from hlopipe.models import gpt_decode as gd

    dec = jax.jit(gd.decode_fn(cfg, stage_boundary, cuts=cuts), donate_argnums=1)
    ex = (params, gd.empty_cache(B, cfg), jnp.zeros(B, jnp.int32), jnp.int32(0))
    pre = jax.jit(gd.prefill_fn(cfg, stage_boundary, cuts=cuts))
    return (
        hlopipe.load(jax.export.export(dec)(*ex).serialize()),
        hlopipe.load(jax.export.export(pre)(params, jnp.zeros((B, P), jnp.int32)).serialize()),
    )


def refuse_spanning(Generator, cfg, params) -> None:
    """One stage on a mesh over 6 devices (4 of process 0, 2 of process 1) is refused, naming
    the stage (a mesh may span processes only in equal blocks; even ones are
    test_generate_spanning.py's)."""
    import jax

    from hlopipe.errors import RuntimeConfigError

    dec, _ = programs(cfg, params, cuts=())
    try:
        Generator(
            dec, params, num_stages=1, groups=GROUPS, devices=jax.devices(), stage_mesh_shape=(6,)
        )
    except RuntimeConfigError as e:
        assert "rank 0's stage mesh (6,) (data) crosses processes unevenly" in str(e), e
        print("REFUSED SPANNING", flush=True)
    else:
        raise AssertionError("a stage mesh crossing processes unevenly was not refused")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--die-after", type=int, default=0)
    ap.add_argument("--reps", type=int, default=1, help="generate again, timed (a benchmark)")
    args = ap.parse_args()
    distributed.initialize()
    import jax
    import numpy as np
    from test_generate_mesh import megatron_specs

    from hlopipe.generate import Generator, generate_unsplit
    from hlopipe.models import gpt_decode as gd

    me = jax.process_index()
    print(f"PID {os.getpid()}", flush=True)
    cfg = gd.DecodeConfig()
    params = gd.init(jax.random.key(0), cfg)
    dec, pre = programs(cfg, params)
    if not args.die_after:
        refuse_spanning(Generator, cfg, params)
    gen = Generator(
        dec, params, prefill=pre, groups=GROUPS, stage_mesh_shape=(2, 2),
        stage_mesh_axes=("data", "model"), param_specs=megatron_specs(params),
    )  # fmt: skip
    assert [gen.place.local(s) for s in range(2)] == [me == 0, me == 1]
    prompts = np.asarray(gd.prompts(jax.random.key(1), GROUPS, B, P, cfg))
    session = gen.start(prompts)
    if args.die_after:
        session.generate(args.die_after)
        print("HALFWAY", flush=True)
        if me == 1:
            os._exit(3)
    toks = session.generate(N)
    for _ in range(args.reps - 1):
        again = gen.start(prompts)
        assert np.array_equal(again.generate(N), toks)
        m = again.metrics
        print(f"METRICS {m.tokens_per_s:.0f} tokens/s, {m.inter_token_s * 1e3:.2f} ms per "
              f"token, TTFT {m.time_to_first_token_s * 1e3:.1f} ms", flush=True)  # fmt: skip
    print(f"TOKENS {' '.join(map(str, toks[0, 0]))}", flush=True)
    ref, ref_states = generate_unsplit(dec, params, N, prefill=pre, prompts=prompts)
    np.save(os.path.join(args.out, f"tokens-{me}.npy"), toks)
    np.save(os.path.join(args.out, f"oracle-{me}.npy"), ref)
    paths = [r.path for r in gen.roles.state]
    diffs = {}
    for g in range(GROUPS):
        for path, mine in session.local_state(g).items():
            theirs = ref_states[g][paths.index(path)]
            close = np.allclose(mine, theirs, rtol=1e-5, atol=1e-5)  # tensor parallel sums
            diffs[f"{g}{path}"] = np.array([close, np.max(np.abs(mine - theirs))])
    np.savez(os.path.join(args.out, f"caches-{me}.npz"), **diffs)
    print(f"SENT {session.metrics.bytes_sent._asdict()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
