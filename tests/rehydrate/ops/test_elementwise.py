"""Element-wise rules against XLA compiling the same StableHLO (values, bit for bit where the
op is exact), StableHLO's reference interpreter where the specification and XLA part ways,
and JAX for grad/vmap."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

from hlopipe.io._types import dtype_of, mlir_name
from hlopipe.rehydrate._rehydrate import rehydrate

pytestmark = pytest.mark.x64  # 64-bit types on for every test here (tests/conftest.py)
N = 12


def _sample(t: str, seed: int) -> np.ndarray:
    dt = dtype_of(t)
    rng = np.random.default_rng(seed)
    if dt == np.dtype(bool):
        return rng.integers(0, 2, N).astype(bool)
    if dt.kind == "c":
        re_, im = _sample(t[8:-1], seed), _sample(t[8:-1], seed + 1)
        return (re_ + 1j * im).astype(dt)
    if jnp.issubdtype(dt, jnp.integer):
        info = ml_dtypes.iinfo(dt)
        edge = [info.min, info.max, 0, 1, info.bits, info.bits + 1]
        wide = np.int64 if info.min < 0 else np.uint64
        body = rng.integers(info.min, info.max, N - len(edge), endpoint=True, dtype=wide)
        return np.array([*edge, *body], wide).astype(dt)
    fi = ml_dtypes.finfo(dt)
    edge = [np.nan, np.inf, -np.inf, 0.0, -0.0, float(fi.max), -1.5, 2.5]
    with np.errstate(all="ignore"):
        return np.array([*edge, *(rng.standard_normal(N - len(edge)) * 3)]).astype(dt)


def _program(op: str, ins: list[np.ndarray], out: str, attrs: str = "") -> str:
    ts = [f"tensor<{N}x{mlir_name(a.dtype)}>" for a in ins]
    args = ", ".join(f"%a{i}: {t}" for i, t in enumerate(ts))
    names = ", ".join(f"%a{i}" for i in range(len(ins)))
    ot = f"tensor<{N}x{out}>"
    return (
        f"func.func @main({args}) -> {ot} {{\n"
        f'  %r = "{op}"({names}) {attrs} : ({", ".join(ts)}) -> {ot}\n'
        f"  return %r : {ot}\n}}\n"
    )


def _same(a: np.ndarray, b: np.ndarray, ulps: int) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind == "c":
        return _same(a.real, b.real, ulps) and _same(a.imag, b.imag, ulps)
    if not jnp.issubdtype(a.dtype, jnp.floating):
        return bool(np.array_equal(a, b))
    af, bf = a.astype(np.float64), b.astype(np.float64)
    both_nan = np.isnan(af) & np.isnan(bf)
    if ulps == 0:
        bits = f"u{a.itemsize}"
        return bool(np.all(both_nan | (a.view(bits) == b.view(bits)) | ((af == 0) & (bf == 0))))
    eps = float(ml_dtypes.finfo(a.dtype).eps)
    return bool(np.all(both_nan | (af == bf) | (np.abs(af - bf) <= ulps * eps * np.abs(bf))))


class Case(NamedTuple):
    op: str
    ins: tuple[str, ...]
    out: str
    attrs: str = ""
    ulps: int = 0


def _cmp(direction: str, kind: str) -> str:
    return (
        f"{{comparison_direction = #stablehlo<comparison_direction {direction}>, "
        f"compare_type = #stablehlo<comparison_type {kind}>}}"
    )


F = ("f16", "bf16", "f32", "f64")
C = ("complex<f32>", "complex<f64>")
I = ("i8", "ui64", "i4", "ui4")
CASES = [
    *(
        Case(f"stablehlo.{op}", (t,), t, ulps=4)
        for op in (
            "exponential",
            "log",
            "tan",
            "cbrt",
            "exponential_minus_one",
            "log_plus_one",
            "logistic",
            "rsqrt",
            "tanh",
        )
        for t in ("f32",)
    ),
    *(Case(f"stablehlo.{op}", (t,), t, ulps=4) for op in ("exponential", "tan") for t in C),
    *(
        Case(f"stablehlo.{op}", (t,), t)
        for op in ("round_nearest_afz", "round_nearest_even", "negate", "sign", "abs")
        for t in ("bf16", "f64", "f8E4M3FN")
    ),
    Case("stablehlo.abs", ("complex<f64>",), "f64", ulps=2),
    Case("stablehlo.sign", ("complex<f32>",), "complex<f32>", ulps=2),
    *(Case("stablehlo.is_finite", (t,), "i1") for t in ("f16", "f8E4M3FN")),
    Case("stablehlo.real", ("complex<f32>",), "f32"),
    Case("stablehlo.imag", ("complex<f64>",), "f64"),
    *(
        Case(f"stablehlo.{op}", (t,), t)
        for op in ("not", "popcnt", "count_leading_zeros")
        for t in (*I, "i2")
        if not (op == "popcnt" and t in ("i4", "i2"))
    ),
    Case("stablehlo.not", ("i1",), "i1"),
    *(
        Case(f"stablehlo.{op}", (t, t), t)
        for op in (
            "add",
            "subtract",
            "multiply",
            "divide",
            "remainder",
            "maximum",
            "minimum",
            "and",
            "or",
            "xor",
            "shift_left",
            "shift_right_logical",
            "shift_right_arithmetic",
        )
        for t in I
    ),
    *(Case(f"stablehlo.{op}", ("i1", "i1"), "i1") for op in ("add", "multiply", "maximum")),
    *(Case("stablehlo.power", (t, t), t) for t in ("i8", "i32", "i4")),
    *(
        Case(f"stablehlo.{op}", (t, t), t, ulps=u)
        for op, u in (("divide", 0), ("remainder", 0), ("power", 4), ("atan2", 4))
        for t in ("bf16", "f32")
    ),
    *(
        Case("stablehlo.compare", (t, t), "i1", _cmp(d, k))
        for t in ("f32", "bf16", "f8E5M2")
        for d in ("EQ", "LT")
        for k in ("FLOAT", "TOTALORDER")
    ),
    *(
        Case("stablehlo.compare", (t, t), "i1", _cmp(d, k))
        for t, k in (("i32", "SIGNED"), ("ui64", "UNSIGNED"), ("i4", "SIGNED"), ("i1", "UNSIGNED"))
        for d in ("LT",)
    ),
    Case("stablehlo.compare", ("complex<f32>",) * 2, "i1", _cmp("NE", "FLOAT")),
    *(
        Case("stablehlo.convert", (s,), t)
        for s in ("f32", "bf16", "complex<f32>")
        for t in ("i8", "ui64", "i1", "f8E4M3FN", "i4")
    ),
    *(
        Case("stablehlo.convert", (s,), t)
        for s in ("i64", "ui4", "i1")
        for t in ("i8", "f32", "complex<f64>", "i1", "i4")
    ),
    *(
        Case("stablehlo.bitcast_convert", (s,), t)
        for s, t in (
            ("f32", "i32"),
            ("i64", "f64"),
            ("bf16", "ui16"),
            ("ui8", "f8E4M3FN"),
            ("i1", "i1"),
        )
    ),
    Case(
        "stablehlo.reduce_precision",
        ("f32",),
        "f32",
        "{exponent_bits = 5 : i32, mantissa_bits = 10 : i32}",
    ),
]


def _multi_program(cases: list[Case], ins: list[list[np.ndarray]]) -> str:
    """One function applying every case to its own arguments (one compile for all)."""
    args, body, outs = [], [], []
    for k, (case, xs) in enumerate(zip(cases, ins, strict=True)):
        ts = [f"tensor<{N}x{mlir_name(a.dtype)}>" for a in xs]
        names = [f"%a{k}_{i}" for i in range(len(xs))]
        args += [f"{n}: {t}" for n, t in zip(names, ts, strict=True)]
        ot = f"tensor<{N}x{case.out}>"
        body.append(
            f'  %r{k} = "{case.op}"({", ".join(names)}) {case.attrs} : ({", ".join(ts)}) -> {ot}'
        )
        outs.append(ot)
    rets = ", ".join(f"%r{k}" for k in range(len(cases)))
    return (
        f"func.func @main({', '.join(args)}) -> ({', '.join(outs)}) {{\n"
        + "\n".join(body)
        + f"\n  return {rets} : {', '.join(outs)}\n}}\n"
    )


def _case_id(c: Case) -> str:
    return f"{c.op[10:]}({', '.join(c.ins)})->{c.out} {c.attrs[-30:]}"


def _inputs(case: Case) -> list[np.ndarray]:
    ins = [_sample(t, i) for i, t in enumerate(case.ins)]
    if case.op == "stablehlo.power" and jnp.issubdtype(ins[0].dtype, jnp.integer):
        ins[1] = (np.arange(N) % 12 - 3).astype(ins[1].dtype)  # XLA squares 6 times only
    return ins


CHUNK = 40
CASES = [c for k in range(4) for c in CASES[k::4]]  # the first chunk mixes every family


@pytest.mark.parametrize("start", range(0, len(CASES), CHUNK))
def test_against_xla(start: int) -> None:
    cases = CASES[start : start + CHUNK]
    ins = [_inputs(c) for c in cases]
    text = _multi_program(cases, ins)
    flat = [a for xs in ins for a in xs]
    client = jax.devices()[0].client
    want = client.compile_and_load(text, jax.devices()[:1]).execute(
        [jax.device_put(a) for a in flat]
    )
    f = rehydrate(text)
    jitted = jax.jit(f)(*flat)
    # eager runs compile op by op (slow): the first chunk, which mixes every family, checks it
    eager = f(*flat) if start == 0 else jitted
    bad = [
        _case_id(c)
        for c, w, e, j in zip(cases, want, eager, jitted, strict=True)
        if not (
            _same(np.asarray(e), np.asarray(w), c.ulps)
            and _same(np.asarray(j), np.asarray(w), c.ulps)
        )
    ]
    assert not bad, "differ from XLA: " + "; ".join(bad)


def _ref(op: str, ins: list[np.ndarray], out: str) -> np.ndarray:
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import stablehlo

    from hlopipe.io._types import parse_tensor_type
    from hlopipe.io._xla import make_context
    from hlopipe.rehydrate._ir import _dense_body, parse_dense

    consts = "\n".join(
        f'  %a{i} = stablehlo.constant dense<"0x{a.tobytes().hex()}"> : '
        f"tensor<{N}x{mlir_name(a.dtype)}>"
        for i, a in enumerate(ins)
    )
    text = _program(op, ins, out).replace("\n", "\n" + consts + "\n", 1)
    text = text.replace(text[text.index("(") : text.index(")") + 1], "()", 1)
    with make_context():
        res = str(stablehlo.eval_module(ir.Module.parse(text), [])[0])
    shape, dtype = parse_tensor_type(res[res.rindex(":") + 1 :].strip())
    return parse_dense(_dense_body(res), shape, dtype)


@pytest.mark.parametrize(
    "op,t",
    [
        ("stablehlo.power", "i16"),  # exponents >= 64: XLA's CPU loop stops at 6 squarings
        ("stablehlo.power", "ui8"),
        ("stablehlo.popcnt", "i4"),  # XLA counts the sign-extended 8-bit pattern
    ],
)
def test_spec_semantics_against_reference_interpreter(op: str, t: str) -> None:
    ins = [_sample(t, i) for i in range(1 if op.endswith("popcnt") else 2)]
    got = rehydrate(_program(op, ins, t))(*ins)
    np.testing.assert_array_equal(np.asarray(got), _ref(op, ins, t))


def test_scalar_predicate_select_and_scalar_clamp() -> None:
    text = """func.func @main(%p: tensor<i1>, %x: tensor<3xf32>, %y: tensor<3xf32>,
                             %lo: tensor<f32>, %hi: tensor<f32>) -> (tensor<3xf32>, tensor<3xf32>) {
      %0 = stablehlo.select %p, %x, %y : tensor<i1>, tensor<3xf32>
      %1 = stablehlo.clamp %lo, %x, %hi : (tensor<f32>, tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
      return %0, %1 : tensor<3xf32>, tensor<3xf32>
    }"""
    x, y = np.array([1.0, -2.0, 5.0], np.float32), np.zeros(3, np.float32)
    sel, clamped = rehydrate(text)(np.bool_(False), x, y, np.float32(-1), np.float32(2))
    np.testing.assert_array_equal(sel, y)
    np.testing.assert_array_equal(clamped, [1.0, -1.0, 2.0])


def test_real_imag_of_real_operand() -> None:
    text = """func.func @main(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
      %0 = stablehlo.real %x : (tensor<2xf32>) -> tensor<2xf32>
      %1 = stablehlo.imag %x : (tensor<2xf32>) -> tensor<2xf32>
      return %0, %1 : tensor<2xf32>, tensor<2xf32>
    }"""
    re_, im = rehydrate(text)(np.array([1.5, -2.0], np.float32))
    np.testing.assert_array_equal(re_, [1.5, -2.0])
    np.testing.assert_array_equal(im, [0.0, 0.0])


def _fn(x, y):
    return jnp.sum(jnp.tanh(x) * jnp.exp(-y) + jnp.arctan2(x, y) ** 2 + jnp.cbrt(jnp.abs(x) + 1))


def test_grad_and_vmap() -> None:
    x = jnp.linspace(-2.0, 2.0, 6)
    y = jnp.linspace(0.5, 3.0, 6)
    f = rehydrate(jax.jit(_fn).lower(x, y).as_text())
    np.testing.assert_allclose(f(x, y), _fn(x, y), rtol=1e-12)
    for a, b in zip(jax.grad(f, (0, 1))(x, y), jax.grad(_fn, (0, 1))(x, y), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    xs = jnp.stack([x, 2 * x])
    np.testing.assert_allclose(
        jax.vmap(f, (0, None))(xs, y), jax.vmap(_fn, (0, None))(xs, y), rtol=1e-12
    )


@pytest.mark.parametrize("t", ["i8", "ui16", "i64", "i4"])
def test_integer_division_by_constants_does_not_crash_xla(t: str) -> None:
    """x / 0, x % 0 and MIN / -1 of constants: XLA's constant folder dies of SIGFPE on a
    plain integer divide; the rule divides by a safe divisor and selects XLA's run-time
    answers (x / 0 = -1, x % 0 = x, MIN / -1 = MIN, MIN % -1 = 0)."""
    dt = dtype_of(t)
    info = ml_dtypes.iinfo(dt)
    x = np.array([info.min, 7, info.max, 5], dt)
    y = np.array([-1 if info.min else 1, 0, 3, 0], np.int64).astype(dt)
    ts = f"tensor<4x{t}>"
    text = f"""func.func @main() -> ({ts}, {ts}) {{
      %x = stablehlo.constant dense<{np.asarray(x, np.int64).tolist()}> : {ts}
      %y = stablehlo.constant dense<{np.asarray(y, np.int64).tolist()}> : {ts}
      %q = stablehlo.divide %x, %y : {ts}
      %r = stablehlo.remainder %x, %y : {ts}
      return %q, %r : {ts}, {ts}
    }}"""
    q, r = jax.jit(rehydrate(text))()
    want_q, want_r = [], []
    for a, b in zip(
        np.asarray(x, np.int64).tolist(), np.asarray(y, np.int64).tolist(), strict=True
    ):
        if b == 0:
            want_q.append(-1 if info.min < 0 else info.max)
            want_r.append(a)
        elif a == info.min and b == -1:
            want_q.append(info.min)
            want_r.append(0)
        else:
            quo = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)  # truncating
            want_q.append(quo)
            want_r.append(a - quo * b)
    np.testing.assert_array_equal(np.asarray(q, np.int64), want_q)
    np.testing.assert_array_equal(np.asarray(r, np.int64), want_r)


def _minmax_program(n: int, t: str) -> str:
    ts = f"tensor<{n}x{t}>"
    return (
        f"func.func @main(%x: {ts}, %y: {ts}) -> ({ts}, {ts}) {{\n"
        f"  %a = stablehlo.maximum %x, %y : {ts}\n"
        f"  %b = stablehlo.minimum %x, %y : {ts}\n"
        f"  return %a, %b : {ts}, {ts}\n}}\n"
    )


@pytest.mark.xla_default  # XLA's complex ordering: its default emitters (tests/conftest.py)
@pytest.mark.parametrize("t", ["complex<f32>", "complex<f64>"])
def test_complex_maximum_minimum_bit_for_bit_as_xla(t: str) -> None:
    """XLA run directly on the module (JAX's compile options) against rehydration jitted,
    eager and under vmap, every pair of values built from ±0, ±denormal, ordinary values,
    ±inf and NaN in either part: bit for bit, so the signed zero and the NaN picked count."""
    from jax.extend.backend import get_compile_options

    dt = dtype_of(t)
    ft = np.dtype(np.float32) if dt == np.complex64 else np.dtype(np.float64)
    sub = float(ml_dtypes.finfo(ft).smallest_subnormal)
    parts = np.array([0.0, -0.0, sub, -sub, 1.0, -1.5, np.inf, np.nan], ft)
    vals = np.empty((len(parts), len(parts)), dt)
    vals.real, vals.imag = parts[:, None], parts[None, :]  # set part by part: keeps -0.0
    vals = vals.reshape(-1)
    for part in (vals.real, vals.imag):
        assert (np.signbit(part) & (part == 0)).sum() == len(parts)
    m = len(vals)
    x, y = np.repeat(vals, m), np.tile(vals, m)
    text = _minmax_program(m * m, t)
    client = jax.devices()[0].client
    options = get_compile_options(num_replicas=1, num_partitions=1)
    exe = client.compile_and_load(text, jax.devices()[:1], options)
    want = [np.asarray(o) for o in exe.execute([jax.device_put(x), jax.device_put(y)])]
    f = rehydrate(text)
    g = rehydrate(_minmax_program(m, t))
    runs = {
        "jit": jax.jit(f)(x, y),
        "eager": f(x, y),
        "vmap": [o.reshape(-1) for o in jax.vmap(g)(x.reshape(m, m), y.reshape(m, m))],
    }
    bits = f"u{ft.itemsize}"

    def key(a: np.ndarray) -> np.ndarray:
        a = np.asarray(a)
        return np.stack([a.real.view(bits), a.imag.view(bits)])

    for mode, outs in runs.items():
        for op, got, w in zip(("maximum", "minimum"), outs, want, strict=True):
            diff = np.flatnonzero((key(got) != key(w)).any(0))
            assert not diff.size, f"{mode} {op}: {len(diff)} differ from XLA, e.g. " + "; ".join(
                f"{x[k]!r}, {y[k]!r}: {np.asarray(got)[k]!r} != {w[k]!r}" for k in diff[:4]
            )


@pytest.mark.xla_default  # XLA's complex ordering: its default emitters (tests/conftest.py)
@pytest.mark.parametrize("t", ["complex<f32>", "complex<f64>"])
def test_complex_max_min_reduce_as_xla(t: str) -> None:
    """A reduce whose region is complex maximum/minimum folds XLA's pick (many real parts tie,
    so lax.reduce_max's lexicographic order would differ), over either dimension."""
    from jax.extend.backend import get_compile_options

    dt = dtype_of(t)
    ft = np.dtype(np.float32) if dt == np.complex64 else np.dtype(np.float64)
    rng = np.random.default_rng(3)
    sub = float(ml_dtypes.finfo(ft).smallest_subnormal)
    pool = np.array([0.0, -0.0, sub, -sub, 1.0, -1.0, np.inf, np.nan], ft)
    x = np.empty((16, 40), dt)
    x.real = rng.choice(pool[:-1], x.shape, p=[0.3, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1])
    x.imag = rng.choice(pool, x.shape)
    x.real[3, 7] = x.real[9, 0] = np.nan
    ts, e = f"tensor<16x40x{t}>", f"tensor<{t}>"
    outs = [f"tensor<{n}x{t}>" for n in (16, 40, 16, 40)]
    lines = [f"func.func @main(%x: {ts}) -> ({', '.join(outs)}) {{"]
    lines.append(f"  %lo = stablehlo.constant dense<(-1.0e30, 0.0)> : {e}")
    lines.append(f"  %hi = stablehlo.constant dense<(1.0e30, 0.0)> : {e}")
    for k, (op, init, dim) in enumerate(
        [("maximum", "lo", 1), ("maximum", "lo", 0), ("minimum", "hi", 1), ("minimum", "hi", 0)]
    ):
        lines.append(
            f"  %r{k} = stablehlo.reduce(%x init: %{init}) applies stablehlo.{op} across "
            f"dimensions = [{dim}] : ({ts}, {e}) -> {outs[k]}"
        )
    lines.append(f"  return %r0, %r1, %r2, %r3 : {', '.join(outs)}\n}}")
    text = "\n".join(lines)
    client = jax.devices()[0].client
    options = get_compile_options(num_replicas=1, num_partitions=1)
    exe = client.compile_and_load(text, jax.devices()[:1], options)
    want = [np.asarray(o) for o in exe.execute([jax.device_put(x)])]
    f = rehydrate(text)
    bits = f"u{ft.itemsize}"
    for mode, got in (("jit", jax.jit(f)(x)), ("eager", f(x))):
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            g = np.asarray(g)
            same = (g.real.view(bits) == w.real.view(bits)) & (
                g.imag.view(bits) == w.imag.view(bits)
            )
            assert same.all(), f"{mode} reduce {k}: {g[~same][:4]!r} != XLA's {w[~same][:4]!r}"


def test_times_infinity_in_branch_not_taken_keeps_gradient_finite() -> None:
    """XLA's math library selects ``x * inf`` where a function is infinite (ErfInv at
    |x| = 1): the zero cotangent of the branch not taken must not become NaN (0 * inf), in
    HLO text (a broadcast scalar) and StableHLO (a dense constant) alike."""
    import hlopipe

    hlo = """HloModule m
ENTRY main {
  x = f32[5] parameter(0)
  one = f32[] constant(1)
  ones = f32[5] broadcast(one), dimensions={}
  edge = pred[5] compare(x, ones), direction=EQ
  pinf = f32[] constant(inf)
  infs = f32[5] broadcast(pinf), dimensions={}
  big = f32[5] multiply(x, infs)
  sq = f32[5] multiply(x, x)
  ROOT out = f32[5] select(edge, big, sq)
}
"""
    f = hlopipe.load(hlo.encode()).as_function()
    x = np.array([0.5, 1.0, -2.0, 3.0, 1.0], np.float32)
    np.testing.assert_array_equal(jax.jit(f)(x), [0.25, np.inf, 4.0, 9.0, np.inf])
    g = jax.grad(lambda x: f(x).sum())(np.array([0.5, 0.25, -2.0, 3.0, 0.0], np.float32))
    np.testing.assert_array_equal(g, [1.0, 0.5, -4.0, 6.0, 0.0])


# every bit width bitcast into and out of i1: one bit an element (the specification), each
# element's bits in memory order, low bit first
BIT_TYPES = (
    "i2",
    "i4",
    "ui4",
    "f4E2M1FN",
    "i8",
    "f8E4M3FN",
    "f8E5M2",
    "ui16",
    "bf16",
    "f16",
    "i32",
    "f32",
    "ui64",
    "f64",
)  # fmt: skip (complex and i1 do not bitcast: the verifier refuses real <-> complex)


def _bits_of(a: np.ndarray, width: int) -> np.ndarray:
    """numpy's view of the bits of ``a``: its bytes in memory, each byte's low bit first (a
    sub-byte value sits in the low bits of its byte)."""
    if width < 8:
        per_byte = np.unpackbits(a.view(np.uint8)[:, None], axis=1, bitorder="little")
        return per_byte[:, :width].astype(bool)
    return np.unpackbits(a.view(np.uint8), bitorder="little").reshape(a.size, width).astype(bool)


def test_bitcast_convert_into_and_out_of_i1_every_width() -> None:
    args, body, outs, ins, want = [], [], [], [], []
    for k, t in enumerate(BIT_TYPES):
        dt = dtype_of(t)
        width = ml_dtypes.iinfo(dt).bits if jnp.issubdtype(dt, jnp.integer) else None
        width = width or ml_dtypes.finfo(dt).bits
        x = _sample(t, k)
        bits = _bits_of(x, width)
        ins += [x, bits]
        want += [bits, x]
        xt, bt = f"tensor<{N}x{t}>", f"tensor<{N}x{width}xi1>"
        args += [f"%x{k}: {xt}", f"%b{k}: {bt}"]
        body += [
            f"  %to{k} = stablehlo.bitcast_convert %x{k} : ({xt}) -> {bt}",
            f"  %from{k} = stablehlo.bitcast_convert %b{k} : ({bt}) -> {xt}",
        ]
        outs += [(f"%to{k}", bt), (f"%from{k}", xt)]
    text = (
        f"func.func @main({', '.join(args)}) -> ({', '.join(t for _, t in outs)}) {{\n"
        + "\n".join(body)
        + f"\n  return {', '.join(v for v, _ in outs)} : {', '.join(t for _, t in outs)}\n}}\n"
    )
    # jitted only: eagerly, every op compiles alone (the interpreter-suite file
    # tests/conformance/data/interpret/bits_and_complex.mlir runs the rule eagerly too)
    got = jax.jit(rehydrate(text))(*ins)
    for name, g, w in zip([v for v, _ in outs], got, want, strict=True):
        g = np.asarray(g)
        assert g.dtype == w.dtype and g.shape == w.shape, name
        same = g == w if g.dtype == np.dtype(bool) else g.view(np.uint8) == w.view(np.uint8)
        assert np.all(same), f"{name}: {g} != {w}"


def test_bitcast_convert_f6_and_i1_refused_by_name() -> None:
    from hlopipe.errors import UnsupportedOpError

    text = """func.func @main(%x: tensor<2x6xi1>) -> tensor<2xf6E2M3FN> {
      %r = stablehlo.bitcast_convert %x : (tensor<2x6xi1>) -> tensor<2xf6E2M3FN>
      return %r : tensor<2xf6E2M3FN>
    }"""
    with pytest.raises(UnsupportedOpError, match="no 6-bit integer type"):
        rehydrate(text)(np.ones((2, 6), bool))


@pytest.mark.parametrize("t", ["complex<f32>", "complex<f64>"])
def test_complex_cbrt_is_the_principal_root(t: str) -> None:
    x = _sample(t, 3)  # edge values: NaN, infinities, signed zeros, the type's largest
    x[:4] = [-8, -1j, 0, 3 + 4j]  # the specification's (3, 4) and the branch cut
    # the closed form in complex128 (for complex<f64>, where |z| overflows there, the root
    # is checked by its size alone)
    wide = x.astype(np.complex128)
    with np.errstate(all="ignore"):
        want = np.abs(wide) ** (1 / 3) * np.exp(1j * np.angle(wide) / 3)
    got = np.asarray(jax.jit(rehydrate(_program("stablehlo.cbrt", [x], t)))(x))
    finite = np.isfinite(x)
    exact = finite & np.isfinite(want)
    tol = 8 * ml_dtypes.finfo(x.real.dtype).eps
    np.testing.assert_allclose(got[exact], want[exact].astype(x.dtype), rtol=tol, atol=tol)
    np.testing.assert_allclose(got[0], 1 + 1.7320508075688772j, rtol=tol)
    huge = finite & ~np.isfinite(want)
    big = np.maximum(np.abs(x.real), np.abs(x.imag))[huge]
    assert np.all(np.isfinite(got[huge])), got[huge]
    np.testing.assert_array_less(np.abs(got[huge]), 2 * np.cbrt(big))
    np.testing.assert_array_less(np.cbrt(big), 2 * np.abs(got[huge]))
    # cubed back (where the cube does not overflow)
    small = finite & (np.abs(wide) < 1e6)
    np.testing.assert_allclose(got[small] ** 3, x[small], rtol=100 * tol, atol=100 * tol)


@pytest.mark.xla_default  # XLA's complex ordering: its default emitters (tests/conftest.py)
@pytest.mark.parametrize("t", ["complex<f32>", "complex<f64>"])
def test_complex_ordering_compare_as_xla(t: str) -> None:
    # every pair of real and imaginary parts from {-inf, -1, 0, 1, nan}: ties in either part
    parts = [-np.inf, -1.0, 0.0, 1.0, np.nan]
    grid = np.array([complex(a, b) for a in parts for b in parts])
    dt = dtype_of(t)
    x, y = np.repeat(grid, grid.size).astype(dt), np.tile(grid, grid.size).astype(dt)
    n = x.size
    ts = f"tensor<{n}x{t}>"
    body = [
        f"  %{d} = stablehlo.compare {d}, %a, %b, FLOAT : ({ts}, {ts}) -> tensor<{n}xi1>"
        for d in ("LT", "LE", "GT", "GE", "EQ", "NE")
    ]
    outs = ", ".join(f"tensor<{n}xi1>" for _ in body)
    text = (
        f"func.func @main(%a: {ts}, %b: {ts}) -> ({outs}) {{\n"
        + "\n".join(body)
        + f"\n  return %LT, %LE, %GT, %GE, %EQ, %NE : {outs}\n}}\n"
    )
    client = jax.devices()[0].client
    want = client.compile_and_load(text, jax.devices()[:1]).execute(
        [jax.device_put(x), jax.device_put(y)]
    )
    got = jax.jit(rehydrate(text))(x, y)
    for d, g, w in zip(("LT", "LE", "GT", "GE", "EQ", "NE"), got, want, strict=True):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w), err_msg=d)


def test_complex_remainder_refused_by_name() -> None:
    from hlopipe.errors import UnsupportedOpError

    x = _sample("complex<f32>", 0)
    with pytest.raises(UnsupportedOpError, match=r"remainder of complex64 .* not supported"):
        rehydrate(_program("stablehlo.remainder", [x, x], "complex<f32>"))(x, x)
