"""HLO opcodes whose StableHLO form is an ``mhlo.*`` op or custom call (issue 11, item 3).

Each program is HLO text as XLA writes it; the oracle is XLA running the very module the
converter made of it, or, for ops XLA's CPU backend does not compile from a StableHLO module
(layout bitcasts, async pairs, copy-start, ragged-dot), the computation written in JAX / numpy
(scripts/hlo_opcode_survey.py surveys every opcode).
"""

from __future__ import annotations

import re

import jax
import numpy as np
import pytest
from jax import lax

import hlopipe
from hlopipe.errors import UnsupportedOpError

F4 = "f32[4]{0}"


def _hlo(body: str, pre: str = "") -> str:
    return f"HloModule m\n\n{pre}\nENTRY main {{\n  {body}\n}}\n"


def _xla(program: hlopipe.Program, args: tuple[np.ndarray, ...]) -> list[np.ndarray]:
    from jax.extend.backend import get_compile_options

    client = jax.devices("cpu")[0].client
    options = get_compile_options(num_replicas=1, num_partitions=1)
    exe = client.compile_and_load(program.to_text(), jax.devices("cpu")[:1], options)
    outs = exe.execute([jax.device_put(a, jax.devices("cpu")[0]) for a in args])
    return [np.asarray(o) for o in outs]


X = np.array([0.5, -2.0, 3.0, 3.0, 0.25, -0.75], np.float32)
X4 = X[:4]

CASES = {
    "topk_largest": (
        _hlo(
            "p = f32[6]{0} parameter(0)\n"
            "  ROOT r = (f32[3]{0}, s32[3]{0}) topk(p), k=3, largest=true"
        ),
        r"mhlo.topk\b",
        (X,),
    ),
    "topk_smallest": (
        _hlo(
            "p = f32[6]{0} parameter(0)\n"
            "  ROOT r = (f32[4]{0}, s32[4]{0}) topk(p), k=4, largest=false"
        ),
        r"mhlo.topk\b",
        (np.array([0.5, -2.0, 3.0, -2.0, 0.25, 0.5], np.float32),),
    ),
    "erf": (_hlo(f"p = {F4} parameter(0)\n  ROOT r = {F4} erf(p)"), r"mhlo.erf\b", (X4,)),
    "copy": (_hlo(f"p = {F4} parameter(0)\n  ROOT r = {F4} copy(p)"), "mhlo.copy", (X4,)),
    "bitcast": (
        _hlo("p = f32[2,3]{1,0} parameter(0)\n  ROOT r = f32[3,2]{0,1} bitcast(p)"),
        "mhlo.bitcast",
        (X.reshape(2, 3),),
        lambda x: [x.T],  # the same bytes, read with dim 0 minor
    ),
    "add_dependency": (
        _hlo(
            f"p = {F4} parameter(0)\n  t = token[] after-all()\n"
            f"  ROOT r = {F4} add-dependency(p, t)"
        ),
        "mhlo.add_dependency",
        (X4,),
    ),
    "domain": (
        _hlo(
            f"p = {F4} parameter(0)\n  n = {F4} negate(p)\n  ROOT r = {F4} domain(n), "
            'domain={kind="sharding", entry={maximal device=0}, exit={replicated}}'
        ),
        "mhlo.domain",
        (X4,),
    ),
    "async_call": (
        _hlo(
            f"p = {F4} parameter(0)\n  s = (({F4}), {F4}, s32[]) async-start(p), calls=comp\n"
            f"  ROOT r = {F4} async-done(s)",
            "comp {\n  a = f32[4]{0} parameter(0)\n  ROOT n = f32[4]{0} sine(a)\n}\n",
        ),
        r"mhlo.async_start",
        (X4,),
        lambda x: [np.sin(x)],
    ),
    "copy_start_done": (
        _hlo(
            f"p = {F4} parameter(0)\n  s = ({F4}, {F4}, u32[]) copy-start(p)\n"
            f"  ROOT r = {F4} copy-done(s)"
        ),
        r"(?s)mhlo.copy.*mhlo.async_done",
        (X4,),
        lambda x: [x],
    ),
    "ragged_dot": (
        _hlo(
            "p = f32[6,3]{1,0} parameter(0)\n  q = f32[2,3,4]{2,1,0} parameter(1)\n"
            "  g = s32[2]{0} parameter(2)\n  ROOT r = f32[6,4]{1,0} ragged-dot(p, q, g), "
            "lhs_contracting_dims={1}, rhs_contracting_dims={1}, lhs_ragged_dims={0}, "
            "rhs_group_dims={0}"
        ),
        "mhlo.ragged_dot",
        (
            np.arange(18, dtype=np.float32).reshape(6, 3) / 10,
            np.linspace(-1, 1, 24, dtype=np.float32).reshape(2, 3, 4),
            np.array([2, 4], np.int32),
        ),
        lambda a, b, g: [np.asarray(lax.ragged_dot(a, b, g))],
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_converted_op_matches_xla(name: str) -> None:
    text, marker, args, *oracle = CASES[name]
    program = hlopipe.load(text.encode())
    # the converter made the op this case is about (an mhlo op, or a custom call to it)
    assert re.search(marker, program.to_text())
    want = oracle[0](*args) if oracle else _xla(program, args)
    f = hlopipe.rehydrate(program)
    for out in (f(*args), jax.jit(f)(*args)):
        got = [np.asarray(o) for o in (out if isinstance(out, tuple) else (out,))]
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


def test_topk_from_jax_grad() -> None:
    # lax.top_k compiled to HLO (post-optimisation) becomes mhlo.topk; values differentiate
    x = np.array([[0.5, -2.0, 3.0, 1.0, 0.25]], np.float32)
    f = hlopipe.rehydrate(
        hlopipe.load(
            _hlo(
                "p = f32[1,5]{1,0} parameter(0)\n"
                "  ROOT r = (f32[1,2]{1,0}, s32[1,2]{1,0}) topk(p), k=2, largest=true"
            ).encode()
        )
    )
    g = jax.grad(lambda v: f(v)[0].sum())(x)
    np.testing.assert_array_equal(g, [[0, 0, 1, 1, 0]])


def test_rng_get_and_update_state_is_deterministic_ui64_with_x64_off() -> None:
    program = hlopipe.load(_hlo("ROOT r = u64[2]{0} rng-get-and-update-state(), delta=4").encode())
    assert "mhlo.xla.rng_get_and_update_state" in program.to_text()
    f = hlopipe.rehydrate(program)
    a, b = np.asarray(f()), np.asarray(jax.jit(f)())
    assert a.dtype == np.uint64 and a.shape == (2,) and a[1] == 4
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    ("body", "what"),
    [
        (
            f"p = {F4} parameter(0)\n  n = s32[] constant(3)\n"
            "  ROOT r = f32[<=4]{0} set-dimension-size(p, n), dimensions={0}",
            r"stablehlo.set_dimension_size at .*dynamic shape",
        ),
        (
            "t = token[] after-all()\n  ROOT r = ((f32[4]{0}), token[]) infeed(t)",
            r"stablehlo.infeed is not supported .*host transfers",
        ),
        (
            f"p = {F4} parameter(0)\n  q = u32[4]{{0}} parameter(1)\n"
            "  ROOT r = bf16[4]{0} stochastic-convert(p, q)",
            r"mhlo.stochastic_convert at .* from float32 to bfloat16 is not supported",
        ),
    ],
    ids=["bounded_dynamic_shape", "infeed", "stochastic_convert_to_float"],
)
def test_refused_by_name(body: str, what: str) -> None:
    with pytest.raises(UnsupportedOpError, match=what):
        f = hlopipe.rehydrate(hlopipe.load(_hlo(body).encode()))
        jax.eval_shape(f, *f.in_avals)  # refused when traced, if not before


def test_custom_call_forms_from_the_converters_bytecode() -> None:
    # jax.extend.mlir.hlo_to_stablehlo writes mhlo-only ops as custom calls to mhlo.<op>
    from hlopipe.io import _xla as xla_io

    text = _hlo(
        "p = f32[6]{0} parameter(0)\n  e = f32[6]{0} erf(p)\n"
        "  ROOT r = (f32[4]{0}, s32[4]{0}) topk(e), k=4, largest=false"
    )
    data = xla_io.hlo_module_to_stablehlo_bytes(xla_io.hlo_module_from_text(text))
    program = hlopipe.load(data)
    assert "custom_call @mhlo.topk" in program.to_text()
    assert "custom_call @mhlo.erf" in program.to_text()
    f = hlopipe.rehydrate(program)
    x = np.array([0.5, -2.0, 3.0, -2.0, 0.25, 0.5], np.float32)
    want = _xla(hlopipe.load(text.encode()), (x,))
    got = jax.jit(f)(x)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    np.testing.assert_array_equal(got[1], want[1])


@pytest.mark.parametrize(
    ("src", "bits", "out"),
    [("f32", "u32", "s32"), ("f32", "u32", "s8"), ("f16", "u16", "s16"), ("f16", "u16", "s32")],
)
def test_stochastic_convert_matches_xla(src: str, bits: str, out: str) -> None:
    text = _hlo(
        f"p = {src}[64]{{0}} parameter(0)\n  q = {bits}[64]{{0}} parameter(1)\n"
        f"  ROOT r = {out}[64]{{0}} stochastic-convert(p, q)"
    )
    rng = np.random.default_rng(1)
    fdt = np.float32 if src == "f32" else np.float16
    udt = np.uint32 if bits == "u32" else np.uint16
    x = (rng.standard_normal(64) * 100).astype(fdt)
    # NaN, infinities, beyond the range, halves on both sides of the range's ends
    x[:9] = np.array([np.nan, np.inf, -np.inf, 6e4, -6e4, 127.5, -128.5, 0.5, -0.0], fdt)
    r = rng.integers(0, np.iinfo(udt).max, 64, dtype=udt)
    r[9:12] = [0, np.iinfo(udt).max, 1 << (np.iinfo(udt).bits - 1)]
    program = hlopipe.load(text.encode())
    assert "mhlo.stochastic_convert" in program.to_text()
    want = _xla(program, (x, r))[0]
    f = hlopipe.rehydrate(program)
    np.testing.assert_array_equal(np.asarray(jax.jit(f)(x, r)), want)
    np.testing.assert_array_equal(np.asarray(f(x, r)), want)


DEAD_DYNAMIC = """
func.func private @dead(%x: tensor<4xf32>) -> tensor<?xf32, #stablehlo.bounds<4>> {
  %n = stablehlo.constant dense<3> : tensor<i32>
  %0 = stablehlo.set_dimension_size %x, %n, dim = 0
    : (tensor<4xf32>, tensor<i32>) -> tensor<?xf32, #stablehlo.bounds<4>>
  return %0 : tensor<?xf32, #stablehlo.bounds<4>>
}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.negate %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


def test_dead_function_with_bounded_dynamic_shapes_does_not_stop_the_program() -> None:
    f = hlopipe.rehydrate(DEAD_DYNAMIC)
    np.testing.assert_array_equal(jax.jit(f)(X4), -X4)
    live = DEAD_DYNAMIC.replace(
        "%0 = stablehlo.negate %x : tensor<4xf32>\n",
        "%d = func.call @dead(%x) : (tensor<4xf32>) -> tensor<?xf32, #stablehlo.bounds<4>>\n"
        "  %0 = stablehlo.negate %x : tensor<4xf32>\n",
    )
    with pytest.raises(UnsupportedOpError, match=r"in @(main|dead): [a-z_.]+ at .*: dynamic shape"):
        hlopipe.rehydrate(live)


def test_one_device_collective_program_with_a_loop_runs_when_called_directly() -> None:
    # per device under shard_map: called eagerly, the loop's trip count used to be evaluated
    # inside an eager shard_map trace (TracerBoolConversionError); its values are XLA's
    from pathlib import Path

    path = Path(__file__).parents[1] / "data/frameworks/xla/while_with_collectives_one_replica.hlo"
    f = hlopipe.rehydrate(hlopipe.load(path))
    want = np.sin(np.sin(np.sin(X4)))
    np.testing.assert_allclose(np.asarray(f(X4)), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jax.jit(f)(X4)), want, rtol=1e-6)


def test_compare_with_the_other_signedness_reads_the_bits_as_declared() -> None:
    # not valid HLO for XLA's verifier, and the specification forbids it: hlopipe compares as
    # the comparison type says, never silently by the element type
    a = np.array([-1, 1, 5, -3], np.int32)
    b = np.array([1, -1, 5, -2], np.int32)
    text = _hlo(
        "x = s32[4]{0} parameter(0)\n  y = s32[4]{0} parameter(1)\n"
        "  ux = u32[4]{0} convert(x)\n  uy = u32[4]{0} convert(y)\n"
        "  lt = pred[4]{0} compare(x, y), direction=LT, type=UNSIGNED\n"
        "  gt = pred[4]{0} compare(ux, uy), direction=GT, type=SIGNED\n"
        "  ROOT r = (pred[4]{0}, pred[4]{0}) tuple(lt, gt)"
    )
    lt, gt = hlopipe.rehydrate(hlopipe.load(text.encode()))(a, b)
    np.testing.assert_array_equal(lt, a.view(np.uint32) < b.view(np.uint32))
    np.testing.assert_array_equal(gt, a > b)


def test_custom_call_kept_in_mhlo_dispatches_by_target() -> None:
    # a schedule (or a tuple result with the status-returning API) keeps mhlo.custom_call:
    # unknown targets are refused by name, registered ones run
    text = _hlo(
        f"p = {F4} parameter(0)\n"
        f'  ROOT r = ({F4}, s32[]) custom-call(p), custom_call_target="test.mhlo_kept", '
        "api_version=API_VERSION_STATUS_RETURNING, schedule=SCHEDULE_LATEST"
    )
    program = hlopipe.load(text.encode())
    assert "mhlo.custom_call @test.mhlo_kept" in program.to_text()
    with pytest.raises(UnsupportedOpError, match=r"'test\.mhlo_kept'"):
        hlopipe.rehydrate(program)(X4)
    hlopipe.register_custom_call("test.mhlo_kept", lambda x: (2 * x, np.int32(7)), replace=True)
    y, s = hlopipe.rehydrate(program)(X4)
    np.testing.assert_array_equal(y, 2 * X4)
    assert int(s) == 7


def test_hlo_dot_of_int4_widens_as_dot_general_does() -> None:
    # HLO `dot` without batch dimensions converts to stablehlo.dot; XLA's CPU backend refuses
    # int4 operands with a wider result, so the rule widens them to 8 bits (exact)
    import ml_dtypes

    a = np.array([[1, -2, 7], [-8, 3, 0]], ml_dtypes.int4)
    b = np.array([[1, 2], [3, -4], [5, 6]], ml_dtypes.int4)
    text = _hlo(
        "a = s4[2,3]{1,0} parameter(0)\n  b = s4[3,2]{1,0} parameter(1)\n"
        "  ROOT d = s32[2,2]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}"
    )
    program = hlopipe.load(text.encode())
    assert "stablehlo.dot " in program.to_text()
    f = hlopipe.rehydrate(program)
    want = a.astype(np.int32) @ b.astype(np.int32)
    np.testing.assert_array_equal(np.asarray(f(a, b)), want)
    np.testing.assert_array_equal(np.asarray(jax.jit(f)(a, b)), want)
