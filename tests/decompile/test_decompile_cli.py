"""`hlopipe decompile`, `Program.to_python`, large constants in a .npz, stage markers, and the
errors for what cannot be written."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from decompile_helpers import as_tuple, assert_close, from_source, load_module, program_of
from jax import lax

import hlopipe
from hlopipe.cli import main as cli
from hlopipe.decompile import DecompileError, decompile

X = np.arange(12, dtype=np.float32).reshape(3, 4) / 7


def _mlp(w1, b1, w2, x):
    return jnp.tanh(x @ w1 + b1) @ w2


MLP_ARGS = (
    np.linspace(-1, 1, 20, dtype=np.float32).reshape(4, 5),
    np.linspace(0, 1, 5, dtype=np.float32),
    np.linspace(1, -1, 10, dtype=np.float32).reshape(5, 2),
    X,
)


def test_cli_writes_a_module_that_runs(tmp_path: Path, capsys) -> None:
    src = tmp_path / "mlp.hlo"
    src.write_text(jax.jit(_mlp).lower(*MLP_ARGS).as_text(dialect="hlo"))
    out = tmp_path / "mlp_src.py"
    assert cli(["decompile", str(src), "-o", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    ns: dict = {}
    exec(out.read_text(), ns)
    assert_close(jax.jit(ns["main"])(*MLP_ARGS), jax.jit(_mlp)(*MLP_ARGS))
    assert cli(["decompile", str(src), "-o", str(out), "--style", "lax"]) == 0
    assert "lax.dot_general(" in out.read_text()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["decompile", "{tmp}/missing.hlo", "-o", "{tmp}/x.py"], "no such file"),
        (["decompile", "{src}", "-o", "{tmp}/x.txt"], "must be a .py"),
        (["decompile", "{src}", "-o", "{tmp}/nope/x.py"], "does not exist"),
    ],
)
def test_cli_errors(tmp_path: Path, capsys, argv: list[str], message: str) -> None:
    src = tmp_path / "mlp.hlo"
    src.write_text(jax.jit(_mlp).lower(*MLP_ARGS).as_text(dialect="hlo"))
    argv = [a.format(tmp=tmp_path, src=src) for a in argv]
    assert cli(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err and "\n" not in err


HOST_CALL = """
func.func public @main(%arg0: tensor<3xf32>) -> tensor<3xf32> {
  %0 = stablehlo.custom_call @decompile_test_host(%arg0) : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
"""


def test_cli_refuses_what_it_cannot_write(tmp_path: Path, capsys, monkeypatch) -> None:
    """A custom call implemented by a host callback runs rehydrated, but has no source."""
    from hlopipe.rehydrate import CUSTOM_CALLS

    def host(ctx, a, **attrs):
        out = jax.ShapeDtypeStruct(a.shape, a.dtype)
        return jax.pure_callback(lambda v: np.asarray(v) * 2, out, a)

    monkeypatch.setitem(CUSTOM_CALLS, "decompile_test_host", host)
    src = tmp_path / "host.mlir"
    src.write_text(HOST_CALL)
    x = np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(jax.jit(hlopipe.load(src).as_function())(x), x * 2)
    assert cli(["decompile", str(src), "-o", str(tmp_path / "host.py")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no JAX source for the primitive 'pure_callback'")
    assert not (tmp_path / "host.py").exists()


def test_to_python_and_style_error() -> None:
    prog = program_of(_mlp, *MLP_ARGS)
    src = prog.to_python()
    assert "def main(" in src and " @ " in src
    with pytest.raises(DecompileError, match="style must be one of"):
        decompile(prog, style="numpy")


def test_large_constants_go_to_an_npz(tmp_path: Path) -> None:
    table = np.random.default_rng(0).standard_normal((16, 4)).astype(np.float32)
    small = np.array([1.5, -2.0, 0.25, 3.0], np.float32)

    def f(x):
        return x @ table.T + small.sum() * jnp.asarray(small)[:3].sum()

    prog = program_of(f, X)
    d = decompile(prog, constants_file="consts.npz")
    assert d.constants and d.constants_file == "consts.npz"
    assert "consts.npz" in d.source and "np.load(" in d.source
    mod = load_module(d, tmp_path)
    assert_close(jax.jit(mod.main)(X), jax.jit(f)(X))
    # without a constants file every value is written into the source
    inline = decompile(prog)
    assert not inline.constants and "np.load" not in inline.source
    assert_close(jax.jit(from_source(inline))(X), jax.jit(f)(X))


def test_stage_markers_become_stage_boundary_calls() -> None:
    def f(w, x):
        h = jnp.tanh(x @ w)
        h = hlopipe.stage_boundary(h)
        a, b = hlopipe.stage_boundary(h * 2.0, h + 1.0)
        return (a * b).sum()

    w = np.linspace(-1, 1, 16, dtype=np.float32).reshape(4, 4)
    prog = program_of(f, w, X)
    src = decompile(prog).source
    assert src.count("hlopipe.stage_boundary(") == 2
    assert "import hlopipe  # stage_boundary" in src
    g = from_source(decompile(prog))
    assert str(jax.make_jaxpr(g)(w, X)).count("stage_boundary") == 2
    assert_close(as_tuple(jax.jit(g)(w, X)), as_tuple(jax.jit(f)(w, X)))
    gw = jax.jit(jax.grad(g))(w, X)
    assert_close(gw, jax.jit(jax.grad(f))(w, X), rtol=1e-5)


def test_mlp_reads_like_hand_written() -> None:
    """docs/decompile.md: the 2-layer MLP, names from the program, within 2x the lines."""

    def mlp(w1, b1, w2, b2, x):
        h = jax.nn.relu(x @ w1 + b1)
        return h @ w2 + b2

    args = (*MLP_ARGS[:3], np.linspace(-1, 1, 2, dtype=np.float32), X)
    prog = hlopipe.load(jax.jit(mlp).lower(*args).as_text(debug_info=True))
    src = prog.to_python()
    body = src.split("def main", 1)[1].strip().splitlines()
    assert body[0] == "(w1, b1, w2, b2, x):"
    assert body[1:] == ["    return jax.nn.relu(x @ w1 + b1) @ w2 + b2"]
    assert_close(jax.jit(from_source(decompile(prog)))(*args), jax.jit(mlp)(*args))


def test_transformer_block_reads_as_one() -> None:
    """docs/decompile.md: norms, attention (softmax) and the GELU MLP are recognisable."""
    from hlopipe.models import gpt

    cfg = gpt.GPTConfig(vocab=16, seq=8, d_model=16, n_heads=2, n_layers=1, d_ff=32)
    p = gpt.init(jax.random.key(0), cfg)["layers"][0]
    x = jax.random.normal(jax.random.key(1), (2, 8, 16))

    def block(p, x):
        return gpt.block(p, x, cfg.n_heads)

    prog = hlopipe.load(jax.jit(block).lower(p, x).as_text(debug_info=True))
    src = prog.to_python()
    assert src.count(".mean(axis=-1, keepdims=True)") == 4  # two layer norms
    assert src.count("lax.rsqrt(") == 2
    assert "jax.nn.softmax(" in src and "jax.nn.gelu(" in src and "@ p_qkv" in src
    assert len(src.split("def main", 1)[1].splitlines()) <= 50  # hand-written: 18 lines
    g = from_source(decompile(prog))
    assert_close(jax.jit(g)(*jax.tree.leaves(p), x), jax.jit(block)(p, x), rtol=1e-6)


@pytest.mark.x64
def test_64bit_programs_run_in_their_own_64bit_scope_without_x64() -> None:
    def f(x):
        return (x.astype(jnp.float64) * 0.1).sum(), x.astype(jnp.int64) + 2**40

    prog = program_of(f, X)
    want = as_tuple(jax.jit(f)(X))
    g = from_source(decompile(prog))
    assert_close(as_tuple(jax.jit(g)(X)), want)
    jax.config.update("jax_enable_x64", False)  # the conftest fixture restores it
    got = as_tuple(g(X))  # was: RuntimeError("call jax.config.update(...) first")
    assert [o.dtype for o in got] == [np.float64, np.int64]
    assert_close(got, want)


@pytest.mark.x64
def test_int32_loop_counters_of_a_64bit_program_are_not_written_as_fori_loop_bounds() -> None:
    # fori_loop's index is a Python int, an int64 in 64-bit mode: an int32 counter read by
    # dynamic_slice's clamp made lax.clamp refuse (int32, int64, int32)
    table = np.linspace(0, 1, 8)  # float64

    def f(x, t):
        def body(i, h):
            return h + lax.dynamic_slice(t, (i,), (1,))[0] * x

        return lax.fori_loop(jnp.int32(0), jnp.int32(4), body, x)

    x = np.ones(3)
    want = jax.jit(f)(x, table)
    g = from_source(decompile(program_of(f, x, table)))
    assert_close(jax.jit(g)(x, table), want)
    jax.config.update("jax_enable_x64", False)
    got = g(x, table)
    assert got.dtype == np.float64
    assert_close(got, want)


@pytest.mark.x64
def test_64bit_constants_of_a_decompiled_module_stay_64bit_without_x64(tmp_path: Path) -> None:
    c = np.array([1 + 2**-40, 3.0, 2**53 + 1], np.float64)  # not float32 values

    def f(x):
        return x * c + np.int64(2**40)

    x = np.linspace(0, 1, 3)
    want = jax.jit(f)(x)
    d = decompile(program_of(f, x))
    jax.config.update("jax_enable_x64", False)
    got = load_module(d, tmp_path).main(x)  # imported (constants made) in 32-bit mode
    assert got.dtype == np.float64
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
