"""The code examples of README.md and docs/ run as written (in a fresh process, in a tmp dir)."""

from __future__ import annotations

import ast
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", path.read_text(), re.M | re.S)


def run_example(code: str, cwd: Path) -> str:
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, env=env,
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_readme_starts_with_make_demo_and_make_test() -> None:
    text = (ROOT / "README.md").read_text()
    first_block = text.split("```")[1]
    assert first_block.strip().splitlines()[:2] == [
        "make demo    # creates .venv, installs, runs the main job on a built-in default",
        "make test    # creates .venv if missing, installs, runs the test suite",
    ]


def test_readme_train_your_own_model(tmp_path) -> None:
    code = next(b for b in python_blocks(ROOT / "README.md") if "pipe.save" in b)
    out = run_example(code, tmp_path)
    loss = float(re.search(r"loss ([\d.e+-]+)", out).group(1))
    assert "Pipeline(2 stages" in out and loss < 0.2, out  # starts near 0.5; it trains
    assert (tmp_path / "ckpt" / "step_00000030" / "meta.json").exists()


def test_stage_files_chained_by_hand(tmp_path) -> None:
    (code,) = python_blocks(ROOT / "docs" / "stage-files.md")
    out = run_example(code, tmp_path)
    assert out.startswith("by hand:")


@pytest.mark.devices16
def test_parallelism_worked_example(tmp_path) -> None:
    """docs/parallelism.md's example, as written (it sets 16 CPU devices itself): the sharding
    its last line shows, and the step's loss against the loss function run on one device."""
    (code,) = python_blocks(ROOT / "docs" / "parallelism.md")
    check = (
        "\nsh = state.params['layers'][0]['qkv'].sharding"
        "\nids = sorted(d.id for d in sh.mesh.devices.flat)"
        "\nprint('spec', sh.spec, 'mesh', dict(sh.mesh.shape), 'ids', ids)"
        "\none = jax.jit(loss_fn)(*jax.device_put((params, batch), jax.devices()[0]))"
        "\nprint('loss', float(metrics.loss), 'one device', float(one))"
    )  # fmt: skip
    out = run_example(code + check, tmp_path)
    assert "spec P(None, 'model') mesh {'data': 2, 'model': 2} ids [0, 1, 2, 3]" in out
    found = re.search(r"loss (\S+) one device (\S+)", out)
    assert found, out
    loss, one = map(float, found.groups())
    assert abs(loss - one) <= 1e-5 * abs(one), out


def shell_commands(path: Path) -> list[str]:
    """The commands of a page's ```bash blocks, continuation lines joined."""
    blocks = re.findall(r"^```bash\n(.*?)^```", path.read_text(), re.M | re.S)
    return [c.strip() for b in blocks for c in b.replace("\\\n", " ").splitlines() if c.strip()]


def test_training_page_end_to_end(tmp_path) -> None:
    """docs/training.md: the program and token file, a split run saving every 2 steps with a
    log and evaluation, a resume to step 10, the log read back."""
    page = ROOT / "docs" / "training.md"
    make, read = python_blocks(page)
    assert "wrote loss.hlo" in run_example(make, tmp_path)
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=str(ROOT))
    outs = []
    for command in shell_commands(page):
        argv = shlex.split(command)
        assert argv[0] == "hlopipe"
        proc = subprocess.run(
            [sys.executable, "-m", "hlopipe", *argv[1:]], cwd=tmp_path, capture_output=True,
            text=True, env=env, timeout=300,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stdout + proc.stderr
        outs.append(proc.stdout)
    plan = page.read_text().split("```\nprogram")[1].split("```")[0]
    for line in ("program" + plan).strip().splitlines():
        assert line.replace("loss.hlo", "") in outs[0].replace("loss.hlo", ""), line
    assert "resumed from step 6 of" in outs[1]
    out = run_example(read, tmp_path)
    lines = out.splitlines()
    assert lines[0] == str(list(range(1, 11)))
    first, last = map(float, re.findall(r"[\d.]+", lines[1]))
    assert last < first - 0.5, out
    assert [s for s, _ in ast.literal_eval(lines[2][5:])] == [3, 6, 9, 10]


def test_generation_page_opens_with_a_jax_decode_step(tmp_path, monkeypatch, capsys) -> None:
    """docs/generation.md's first example: the hand-written decode step and prefill, exported,
    generated in 2 stages; its tokens against the two functions run directly in a plain loop
    (each token fed back); then the page's shell commands: `generate --check`, and `serve`,
    whose greedy completion of the first prompt gives the same tokens."""
    import json
    import urllib.request

    page = ROOT / "docs" / "generation.md"
    assert page.read_text().split("```")[1].startswith("python\nimport jax")  # it opens with it
    code = next(b for b in python_blocks(page) if "jax.export.export(jax.jit(decode" in b)
    direct = (
        "\nprompts = jnp.array([[1, 2, 3, 4], [5, 6, 7, 8]])"
        "\ntok, cache = jax.jit(prefill)(params, prompts)"
        "\nseq = [tok]"
        "\nfor t in range(7):"
        "\n    tok, cache = jax.jit(decode)(params, cache, tok, jnp.int32(P + t))"
        "\n    seq.append(tok)"
        "\nprint('direct', np.stack(seq, -1).tolist())"
    )  # fmt: skip
    out = run_example(code + direct, tmp_path).splitlines()
    want = ast.literal_eval(out[-1].removeprefix("direct "))
    assert out[-2] == str([want]), out  # the generator's [groups, B, 8]
    assert want[0] != want[1] and len(set(want[0])) > 2  # tokens that vary
    generate, serve = (shlex.split(c) for c in shell_commands(page)[:2])
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    from hlopipe.cli import main  # in this process (its CPU devices): no second JAX start

    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(generate[1:]) == 0
    printed = capsys.readouterr().out
    assert "check: all 26 tokens equal the unsplit program's" in printed, printed
    server = subprocess.Popen(
        [sys.executable, "-m", "hlopipe", *serve[1:], "--port", "0"], cwd=tmp_path,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert line.startswith("serving "), line + server.stdout.read()
        body = {"model": line.split()[1], "prompt": [1, 2, 3, 4], "max_tokens": 8, "temperature": 0}
        req = urllib.request.Request(
            line.split(" at ")[1].strip() + "/completions", json.dumps(body).encode()
        )
        with urllib.request.urlopen(req, timeout=60) as r:
            (choice,) = json.loads(r.read())["choices"]
        assert choice["token_ids"] == want[0]
    finally:
        server.kill()
        server.wait()
