"""stablehlo.sort: single-compare comparators (lax.sort with a derived key), arbitrary
comparators (all-pairs ranks, and the bitonic network), stability, total order on floats.

Oracles: StableHLO's reference interpreter for hand-written comparators, JAX for values,
``jax.grad`` and ``jax.vmap`` of programs JAX lowered.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

import hlopipe
from hlopipe.io._xla import compile_stablehlo, make_context
from hlopipe.rehydrate.ops import sort as sort_mod

pytestmark = pytest.mark.x64  # 64-bit types on for every test here (tests/conftest.py)

F32, I32 = np.float32, np.int32
_rng = np.random.default_rng(0)


class Case(NamedTuple):
    name: str
    types: list[str]  # element type of each operand
    shape: str  # e.g. "5x4"
    comparator: str  # body of the comparator block; args %a0 %b0 %a1 %b1 ...
    attrs: str
    args: tuple[np.ndarray, ...]
    # "reference": stablehlo.eval_module; "xla": the module compiled by XLA, for TOTALORDER
    # compares, which the reference interpreter evaluates as plain float compares
    oracle: str = "reference"


def _module(case: Case) -> str:
    ts = [f"tensor<{case.shape}x{t}>" for t in case.types]
    sig = ", ".join(f"%x{i}: {t}" for i, t in enumerate(ts))
    bargs = ", ".join(f"%{p}{i}: tensor<{t}>" for i, t in enumerate(case.types) for p in ("a", "b"))
    operands = ", ".join(f"%x{i}" for i in range(len(ts)))
    n = len(ts)
    res = "%0" if n == 1 else f"%0:{n}"
    values = "%0" if n == 1 else ", ".join(f"%0#{i}" for i in range(n))
    return (
        f"func.func @main({sig}) -> ({', '.join(ts)}) {{\n"
        f'  {res} = "stablehlo.sort"({operands}) <{{{case.attrs}}}> ({{\n'
        f"  ^bb0({bargs}):\n{case.comparator}\n  }}) : ({', '.join(ts)}) -> ({', '.join(ts)})\n"
        f"  return {values} : {', '.join(ts)}\n}}\n"
    )


def _cmp(direction: str, lhs: str, rhs: str, t: str, ctype: str) -> str:
    return (
        f"    %c = stablehlo.compare {direction}, {lhs}, {rhs}, {ctype} "
        f": (tensor<{t}>, tensor<{t}>) -> tensor<i1>\n    stablehlo.return %c : tensor<i1>"
    )


_SPECIAL = np.array(
    [0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 1.5, -1.5, 0.0, -0.0, 3.0, np.nan], F32
)

# first key descending, second ascending (lexicographic): a general comparator
_LEX = """\
    %gt = stablehlo.compare GT, %a0, %b0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %eq = stablehlo.compare EQ, %a0, %b0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %lt = stablehlo.compare LT, %a1, %b1, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %t = stablehlo.and %eq, %lt : tensor<i1>
    %c = stablehlo.or %gt, %t : tensor<i1>
    stablehlo.return %c : tensor<i1>"""

# by absolute value: many ties (x and -x), order among them from stability
_ABS = """    %p = stablehlo.abs %a0 : tensor<f32>
    %q = stablehlo.abs %b0 : tensor<f32>
    %c = stablehlo.compare LT, %p, %q, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>"""

_INTS = _rng.integers(-3, 4, (6, 5)).astype(I32)
_INTS[0, 0], _INTS[1, 1] = np.iinfo(I32).min, np.iinfo(I32).max

CASES = [
    Case(
        "gt_signed_extremes_payload",
        ["i32", "f32"],
        "6x5",
        _cmp("GT", "%a0", "%b0", "i32", "SIGNED"),
        "dimension = 0 : i64, is_stable = true",
        (_INTS, _rng.standard_normal((6, 5)).astype(F32)),
    ),
    Case(
        "totalorder_lt_signed_zeros_nans",
        ["f32"],
        "12",
        _cmp("LT", "%a0", "%b0", "f32", "TOTALORDER"),
        "dimension = 0 : i64, is_stable = true",
        (_SPECIAL,),
        "xla",
    ),
    Case(
        "totalorder_gt_swapped_args",
        ["f32"],
        "12",
        _cmp("LT", "%b0", "%a0", "f32", "TOTALORDER"),
        "dimension = 0 : i64, is_stable = true",
        (_SPECIAL,),
        "xla",
    ),
    Case(
        "key_is_second_operand_unsigned",
        ["f32", "ui8"],
        "3x7",
        _cmp("LT", "%a1", "%b1", "ui8", "UNSIGNED"),
        "dimension = 1 : i64, is_stable = true",
        (
            _rng.standard_normal((3, 7)).astype(F32),
            _rng.integers(0, 256, (3, 7)).astype(np.uint8),
        ),
    ),
    Case(
        "bool_descending",
        ["i1", "i32"],
        "9",
        _cmp("GT", "%a0", "%b0", "i1", "UNSIGNED"),
        "dimension = 0 : i64, is_stable = true",
        (_rng.random(9) < 0.5, np.arange(9, dtype=I32)),
    ),
    Case(
        "lexicographic_two_keys",
        ["i32", "f32", "i32"],
        "4x10",
        _LEX,
        "dimension = 1 : i64, is_stable = true",
        (
            _rng.integers(0, 3, (4, 10)).astype(I32),
            _rng.integers(-2, 2, (4, 10)).astype(F32),
            np.arange(40, dtype=I32).reshape(4, 10),
        ),
    ),
    Case(
        "abs_comparator_stable",
        ["f32", "i32"],
        "2x11",
        _ABS,
        "dimension = -1 : i64, is_stable = true",
        (_rng.integers(-3, 4, (2, 11)).astype(F32), np.arange(22, dtype=I32).reshape(2, 11)),
    ),
]


def _reference(text: str, args: tuple[np.ndarray, ...]) -> list[np.ndarray]:
    with make_context():
        module = ir.Module.parse(text)
        attrs = [ir.DenseElementsAttr.get(a, signless=a.dtype.kind != "u") for a in args]
        return [np.asarray(r) for r in stablehlo.eval_module(module, attrs)]


def _xla(text: str, args: tuple[np.ndarray, ...]) -> list[np.ndarray]:
    exe = compile_stablehlo(text.replace("func.func @main", "func.func public @main"))
    return [np.asarray(o) for o in exe.execute([jax.device_put(a) for a in args])]


def _as_list(out: Any) -> list[np.ndarray]:
    return [np.asarray(o) for o in (out if isinstance(out, tuple | list) else (out,))]


def _same(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind == "f":
        # bit for bit: signed zeros and NaN signs are part of a total order's answer
        bits = np.dtype(f"u{want.dtype.itemsize}")
        np.testing.assert_array_equal(got.view(bits), want.view(bits))
    else:
        np.testing.assert_array_equal(got, want)


def _check(case: Case, modes: tuple[str, ...] = ("eager", "jit")) -> None:
    text = _module(case)
    want = (_reference if case.oracle == "reference" else _xla)(text, case.args)
    fn = hlopipe.load(text).as_function()
    for mode in modes:
        got = _as_list((jax.jit(fn) if mode == "jit" else fn)(*case.args))
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _same(g, w)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_against_reference_interpreter(case: Case) -> None:
    _check(case)


_NETWORK = ["totalorder_gt_swapped_args", "lexicographic_two_keys", "abs_comparator_stable"]


@pytest.mark.parametrize("name", _NETWORK)
def test_network_path(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # the general path, for single compares too, and the network rather than ranks
    monkeypatch.setattr(sort_mod, "_simple_comparator", lambda *a: None)
    monkeypatch.setattr(sort_mod, "_PAIRS_LIMIT", 0)
    _check(CASES[[c.name for c in CASES].index(name)], ("jit",))


# ---- JAX as the oracle ----------------------------------------------------------------------


class JaxCase(NamedTuple):
    name: str
    fn: Any
    args: tuple[Any, ...]


def _f(*shape: int) -> np.ndarray:
    return _rng.standard_normal(shape).astype(F32)


JAX_CASES = [
    JaxCase("jnp_sort_axis0", lambda x: jnp.sin(jnp.sort(x, axis=0)), (_f(7, 3),)),
    JaxCase(
        "sort_with_payload",
        lambda k, x: lax.sort((k, x), dimension=1, num_keys=1)[1] * 2.0,
        (_rng.integers(0, 4, (3, 8)).astype(I32), _f(3, 8)),
    ),
    JaxCase(
        "two_keys_stable",
        lambda k, x: lax.sort((k, jnp.round(x), x), num_keys=2, is_stable=True)[2],
        (_rng.integers(0, 2, (9,)).astype(I32), _f(9)),
    ),
    JaxCase(
        "argsort_descending_gather",
        lambda x: x[jnp.argsort(-x, stable=True)] ** 2,
        (_f(10),),
    ),
]


@pytest.mark.parametrize("case", JAX_CASES, ids=[c.name for c in JAX_CASES])
def test_against_jax(case: JaxCase) -> None:
    text = jax.jit(case.fn).lower(*case.args).as_text()
    assert "stablehlo.sort" in text
    fn = hlopipe.load(text).as_function()
    np.testing.assert_allclose(jax.jit(fn)(*case.args), case.fn(*case.args), rtol=1e-6)
    floats = tuple(i for i, a in enumerate(case.args) if a.dtype == F32)

    def loss(f: Any) -> Any:
        return lambda *a: jnp.sum(jnp.cos(f(*a)) * jnp.arange(f(*a).size).reshape(f(*a).shape))

    want = jax.grad(loss(case.fn), argnums=floats)(*case.args)
    got = jax.jit(jax.grad(loss(fn), argnums=floats))(*case.args)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    batched = tuple(np.stack([a, a[::-1] if a.ndim else a]) for a in case.args)
    np.testing.assert_allclose(
        jax.jit(jax.vmap(fn))(*batched), jax.vmap(case.fn)(*batched), rtol=1e-6
    )


def test_general_comparator_gradient_network() -> None:
    # JAX's complex sort (a lexicographic comparator) through the bitonic network, with grad
    x = (_f(6) + 1j * _f(6)).astype(np.complex64)
    text = jax.jit(jnp.sort).lower(x).as_text()
    fn = hlopipe.load(text).as_function()
    limit = sort_mod._PAIRS_LIMIT
    try:
        sort_mod._PAIRS_LIMIT = 0
        np.testing.assert_array_equal(jax.jit(fn)(x), jnp.sort(x))
        w = jnp.arange(6.0)

        def loss(f: Any) -> Any:
            return lambda x: jnp.sum(jnp.real(f(x)) * w + jnp.imag(f(x)) ** 2)

        g_re = jax.jit(jax.grad(lambda r: loss(fn)(r + 1j * x.imag)))(x.real)
        g_want = jax.grad(lambda r: loss(jnp.sort)(r + 1j * x.imag))(x.real)
        np.testing.assert_allclose(g_re, g_want, rtol=1e-6)
    finally:
        sort_mod._PAIRS_LIMIT = limit


@pytest.mark.parametrize(
    "fn",
    [jnp.sort, jnp.argsort, lambda v: jnp.sort(v)[::-1], lambda v: jnp.sort(v, descending=True)],
    ids=["sort", "argsort", "reversed", "descending"],
)
def test_jax_float_comparators_take_lax_sort(fn):
    """JAX's float comparators (canonicalise -0 and NaN, then TOTALORDER) are recognised as a
    key function: one lax.sort, not the O(n^2)/bitonic general path, and the same order."""
    x = np.random.default_rng(0).standard_normal(4096).astype(np.float32)
    x[:6] = [np.nan, -0.0, 0.0, np.inf, -np.inf, -np.nan]
    f = hlopipe.load(jax.jit(fn).lower(x).as_text()).as_function()
    np.testing.assert_array_equal(np.asarray(jax.jit(f)(x)), np.asarray(fn(x)))
    jaxpr = jax.make_jaxpr(f)(x)
    prims = [e.primitive.name for e in jaxpr.jaxpr.eqns]
    assert prims.count("sort") == 1
    assert "while" not in prims and "dot_general" not in prims


@pytest.mark.parametrize(
    "dtypes", [("int32", "float32", "int32"), ("float32", "int8"), ("uint8", "float64", "float32")]
)
def test_multi_key_sort_takes_lax_sort(dtypes):
    """lax.sort(num_keys=k): JAX's lexicographic comparator (or(lt0, and(eq0, lt1...)), keys
    canonicalised as for one key) becomes one lax.sort with k keys, the same order."""
    rng = np.random.default_rng(1)
    xs = []
    for d in dtypes:
        a = rng.integers(0, 3, 300).astype(d)
        if np.issubdtype(np.dtype(d), np.floating):
            a[::7], a[3::11] = np.nan, -0.0
        xs.append(a)
    for k in range(2, len(dtypes) + 1):

        def fn(*v, k=k):
            return lax.sort(v, num_keys=k)

        f = hlopipe.load(jax.jit(fn).lower(*xs).as_text()).as_function()
        for got, want in zip(jax.jit(f)(*xs), fn(*xs), strict=True):
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        prims = [e.primitive.name for e in jax.make_jaxpr(f)(*xs).jaxpr.eqns]
        assert prims.count("sort") == 1 and "dot_general" not in prims, prims


def test_select_form_lexicographic_comparator():
    """The specification's select(eq0, lt1, lt0) form, descending second key, is a two-key
    lax.sort too."""
    text = """func.func @main(%a: tensor<6xi32>, %b: tensor<6xf32>)
        -> (tensor<6xi32>, tensor<6xf32>) {
      %r:2 = "stablehlo.sort"(%a, %b) ({
      ^bb0(%a0: tensor<i32>, %b0: tensor<i32>, %a1: tensor<f32>, %b1: tensor<f32>):
        %eq = stablehlo.compare EQ, %a0, %b0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
        %gt = stablehlo.compare GT, %a1, %b1, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
        %lt = stablehlo.compare LT, %a0, %b0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
        %s = stablehlo.select %eq, %gt, %lt : tensor<i1>, tensor<i1>
        stablehlo.return %s : tensor<i1>
      }) {dimension = 0 : i64, is_stable = true}
          : (tensor<6xi32>, tensor<6xf32>) -> (tensor<6xi32>, tensor<6xf32>)
      return %r#0, %r#1 : tensor<6xi32>, tensor<6xf32>
    }"""
    a = np.array([2, 1, 2, 1, 0, 2], np.int32)
    b = np.array([0.5, 3.0, -1.0, np.nan, 9.0, 4.0], np.float32)
    f = hlopipe.load(text).as_function()
    ra, rb = jax.jit(f)(a, b)
    np.testing.assert_array_equal(ra, [0, 1, 1, 2, 2, 2])
    np.testing.assert_array_equal(rb, [9.0, np.nan, 3.0, 4.0, 0.5, -1.0])
    prims = [e.primitive.name for e in jax.make_jaxpr(f)(a, b).jaxpr.eqns]
    assert prims.count("sort") == 1 and "dot_general" not in prims, prims


# XLA's own TopK custom call, as TensorFlow's TopKV2 and XLA's CPU passes write it.
XLA_TOPK = """
HloModule topk

cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT c = pred[] compare(a, b), direction=DIR
}

ENTRY main {
  x = f32[3,7] parameter(0)
  t = (f32[3,__K__], s32[3,__K__]) custom-call(x), custom_call_target="TopK",
      called_computations={cmp}
  v = f32[3,__K__] get-tuple-element(t), index=0
  i = s32[3,__K__] get-tuple-element(t), index=1
  ROOT r = (f32[3,__K__], s32[3,__K__]) tuple(v, i)
}
"""


@pytest.mark.parametrize("direction", ["GT", "LT"])
def test_xla_topk_custom_call_matches_xla(direction: str) -> None:
    """XLA's CPU kernel gives the largest k whatever the comparator says (LT too)."""
    from hlopipe.io import _xla

    text = XLA_TOPK.replace("DIR", direction).replace("__K__", "3")
    # ties, and 0.0 against -0.0
    x = np.round(np.random.default_rng(0).standard_normal((3, 7)), 0).astype(np.float32)
    prog = hlopipe.load(text)
    exe = _xla.compile_stablehlo(prog.to_text())
    dev = jax.devices()[0]
    want = exe.execute_sharded([jax.device_put(x, dev)]).disassemble_into_single_device_arrays()
    got = jax.jit(prog.as_function())(x)
    for g, w in zip(got, want, strict=True):
        assert np.asarray(g).dtype == np.asarray(w[0]).dtype
        assert np.asarray(g).tobytes() == np.asarray(w[0]).tobytes()
