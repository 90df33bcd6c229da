"""Fuzzing the loaders: mutated HLO text, MLIR text, MLIR bytecode and proto bytes must load or
raise HlopipeError -- never crash or hang the process. Each batch runs in a child process, so a
crash (jaxlib's C++ aborts) fails the test instead of killing pytest. A small budget here;
benchmarks/fuzz_load.py runs a large one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent(
    """
    import json, os, sys
    import jax, jax.numpy as jnp
    from hypothesis import HealthCheck, given, settings, strategies as st
    from hlopipe._jax_compat import mlir as jax_mlir
    from hlopipe._jax_compat import hlo_module_from_text
    import hlopipe

    kind, examples, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

    def f(w, x):
        return jnp.tanh(x @ w).sum(0) * 2.0

    args = (jnp.ones((3, 3)), jnp.ones((2, 3)))
    low = jax.jit(f).lower(*args)
    hlo = low.as_text(dialect="hlo")
    seeds = {
        "hlo-text": hlo.encode(),
        "hlo-opt": low.compile().as_text().encode(),
        "stablehlo-text": low.as_text().encode(),
        "hlo-proto": hlo_module_from_text(hlo).as_serialized_hlo_module_proto(),
        "mlir-bytecode": jax_mlir.module_to_bytecode(low.compiler_ir("stablehlo")),
    }
    src = seeds[kind]

    # The unmutated seed must load, run and equal JAX, or every "refused" below means nothing.
    want = f(*args)
    got = hlopipe.load(src).as_function()(*args)
    got = got[0] if isinstance(got, (tuple, list)) else got
    seed_ok = bool(jnp.allclose(got, want, rtol=1e-6))

    mutation = st.one_of(
        st.tuples(st.just("flip"), st.integers(0, len(src) - 1), st.integers(0, 255)),
        st.tuples(st.just("cut"), st.integers(0, len(src) - 1), st.just(0)),
        st.tuples(st.just("insert"), st.integers(0, len(src)), st.binary(min_size=1, max_size=8)),
        st.tuples(st.just("delete"), st.integers(0, len(src) - 1), st.integers(1, 16)),
    )
    stats = {"examples": 0, "loaded": 0, "refused": 0, "ran": 0, "seed_ok": seed_ok}

    @settings(max_examples=examples, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck))
    @given(st.lists(mutation, min_size=1, max_size=4), st.randoms(use_true_random=False))
    def fuzz(mutations, rnd):
        data = bytearray(src)
        for what, pos, arg in mutations:
            pos = min(pos, len(data))
            if what == "flip" and pos < len(data):
                data[pos] = arg
            elif what == "cut":
                data = data[:pos]
            elif what == "insert":
                data[pos:pos] = arg
            elif what == "delete":
                del data[pos:pos + arg]
        stats["examples"] += 1
        try:
            prog = hlopipe.load(bytes(data))
            stats["loaded"] += 1
            g = prog.as_function()
            avals = [a for a in prog.in_avals if hasattr(a, "shape")]
            g(*[jnp.zeros(a.shape, a.dtype) for a in avals])
            stats["ran"] += 1
        except hlopipe.HlopipeError:
            stats["refused"] += 1

    from hypothesis import seed as hypothesis_seed
    hypothesis_seed(seed)(fuzz)()
    print("STATS " + json.dumps(stats))
    """
)


def run_fuzz(kind: str, examples: int, seed: int = 0, timeout: float = 300) -> dict:
    """Fuzz one format in a child process; returns its stats or fails with what went wrong."""
    env = dict(os.environ, JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="3")
    try:
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, kind, str(examples), str(seed)],
            env=env,
            capture_output=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"fuzzing {kind} hung for {timeout} s")
    out = proc.stdout.decode(errors="replace")
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode == 0, (
        f"fuzzing {kind}: exit {proc.returncode}\n{out[-2000:]}\n{err[-4000:]}"
    )
    line = next(l for l in out.splitlines() if l.startswith("STATS "))
    return json.loads(line[6:])


# HLO text and bytecode cost a child-process parse per example (the crash guard): fewer.
@pytest.mark.parametrize(
    ("kind", "examples"),
    [
        ("hlo-text", 16),
        ("hlo-opt", 8),
        ("stablehlo-text", 60),
        ("hlo-proto", 60),
        ("mlir-bytecode", 4),
    ],
)
def test_mutated_inputs_load_or_raise(kind: str, examples: int) -> None:
    stats = run_fuzz(kind, examples)
    assert stats["seed_ok"], f"the unmutated {kind} seed does not load, run and equal JAX"
    assert stats["examples"] == examples, stats  # hypothesis ran the whole budget
    # Each example either ran to the end or was refused with an HlopipeError (anything else
    # fails the child); a refusal after loading counts in both "loaded" and "refused".
    assert stats["ran"] + stats["refused"] == examples, stats
    assert stats["loaded"] >= stats["ran"], stats
    # The mutations reach the error paths (the seed is fixed, so this is deterministic).
    assert stats["refused"] >= 1, stats
