"""Every zoo model and the shipped demo, decompiled, imported and run, against the program
(issue 17): values under jit, gradients, no more equations than the rehydrated function, and
source that ruff accepts."""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from decompile_helpers import (
    as_tuple,
    assert_close,
    equations,
    from_source,
    load_module,
    ruff_errors,
)

import hlopipe
from hlopipe.decompile import decompile

sys.path.insert(0, str(Path(__file__).parents[1] / "rehydrate"))
from zoo_programs import CASES, case, expected, program

CASES_FORMATS = [(m, "stablehlo", s) for m in CASES for s in ("jnp", "lax")] + [
    ("transformer", "hlo-opt", "jnp"),
    ("loops", "hlo-opt", "jnp"),
    ("train_step", "hlo", "jnp"),
    ("mlp", "jax-export", "jnp"),
]


@pytest.mark.parametrize(("model", "fmt", "style"), CASES_FORMATS)
def test_values_and_equations(model: str, fmt: str, style: str) -> None:
    c = case(model)
    prog = program(model, fmt)
    d = decompile(prog, style=style)
    g = from_source(d)
    assert_close(as_tuple(jax.jit(g)(*c.args)), expected(model), rtol=1e-6)
    mine = equations(jax.make_jaxpr(g)(*c.args))
    # against the program as written (the decompiler's source is literal JAX): the framework's
    # derivative guards (rehydrate/_safe_grad.py) add equations that only shape gradients
    literal = hlopipe.rehydrate(prog, derivatives="literal")
    theirs = equations(jax.make_jaxpr(literal)(*c.args))
    assert mine <= theirs, (mine, theirs)
    if style == "lax":
        assert mine == theirs  # one lax call per equation, nothing dropped or added
    else:
        assert mine < theirs or model == "cond"  # the folds remove broadcasts


def _loss(fn, n_out: slice):
    def loss(*args):
        outs = as_tuple(fn(*args))[n_out]
        return sum(jnp.sum(o) for o in outs if jnp.issubdtype(o.dtype, jnp.floating))

    return loss


@pytest.mark.parametrize("model", ["mlp", "transformer", "loops", "cond", "train_step"])
def test_gradients(model: str) -> None:
    c = case(model)
    prog = program(model, "stablehlo")
    g = from_source(decompile(prog))
    argnums = tuple(c.float_args)
    outs = slice(-1, None) if model == "train_step" else slice(None)
    want = jax.jit(jax.grad(_loss(prog.as_function(), outs), argnums))(*c.args)
    got = jax.jit(jax.grad(_loss(g, outs), argnums))(*c.args)
    assert_close(got, want, rtol=1e-5)


@pytest.mark.parametrize("style", ["jnp", "lax"])
def test_ruff_accepts_the_source(style: str, tmp_path: Path) -> None:
    for model in ("transformer", "loops", "cond"):
        src = decompile(program(model, "stablehlo"), style=style).source
        assert ruff_errors(src, tmp_path) == ""
        assert src.splitlines()[0].startswith('"""Decompiled by hlopipe')


def test_demo_program(tmp_path: Path) -> None:
    """The shipped 4-layer GPT (HLO text with stage markers), through a .npz of constants."""
    data = Path(hlopipe.__file__).parent / "models" / "data" / "tiny_gpt_loss.hlo"
    prog = hlopipe.load(data)
    f = prog.as_function()
    d = decompile(prog, constants_file="gpt.npz", source_constant_limit=4)
    assert d.source.count("hlopipe.stage_boundary(") == prog.stage_markers() > 0
    assert "params_layers_3_qkv" in d.source  # argument names from the program
    mod = load_module(d, tmp_path)
    rng = np.random.default_rng(0)
    args = []
    for a in f.in_avals:
        if np.issubdtype(a.dtype, np.integer):
            args.append(rng.integers(0, 64, a.shape).astype(a.dtype))
        else:
            args.append((rng.standard_normal(a.shape) * 0.1).astype(a.dtype))
    assert_close(jax.jit(mod.main)(*args), jax.jit(f)(*args), rtol=1e-5)
    closed = jax.make_jaxpr(mod.main)(*args)
    assert equations(closed) <= equations(jax.make_jaxpr(f)(*args))
    assert "stage_boundary" in str(closed)
    grads = jax.jit(jax.grad(mod.main))(*args)
    want = jax.jit(jax.grad(f))(*args)
    assert_close(grads, want, rtol=1e-4)


def _bools(m, x):
    return jnp.where(m != False, x, 0.0), (m == True) & (x > 0), jnp.less(0.5, x)  # noqa: E712


def _fft_conv(x, k):
    n = x.shape[-1] + k.shape[-1] - 1
    return jnp.fft.irfft(jnp.fft.rfft(x, n) * jnp.fft.rfft(k, n), n)


def test_ruff_accepts_boolean_comparisons_fft_and_a_long_source_path(tmp_path: Path) -> None:
    # `m != False` (E712), `0.5 < x` (SIM300) and a docstring line over 100 columns failed the
    # project's settings
    m, x = np.array([True, False, True]), np.linspace(-1, 1, 3, dtype=np.float32)
    long_dir = tmp_path / ("a_directory_with_a_long_name_" * 3)
    long_dir.mkdir()
    path = long_dir / "bools.hlo"
    path.write_text(jax.jit(_bools).lower(m, x).as_text())
    d = decompile(path)
    assert ruff_errors(d.source, tmp_path) == "", d.source
    assert_close(as_tuple(from_source(d)(m, x)), as_tuple(_bools(m, x)))
    k = np.linspace(0, 1, 6, dtype=np.float32).reshape(2, 3)
    conv = jax.export.export(jax.jit(_fft_conv))(x.reshape(1, 3).repeat(2, 0), k)
    assert ruff_errors(decompile(conv.serialize()).source, tmp_path) == ""
