"""XLA-style HLO probe cases for ``scripts/xla_style_probe.py``: ~230 small modules, one or a
few per class of HLO syntax and opcode that XLA's own tests use, each written here.

``case(name, text, args, ...)``: ``ref`` (a numpy oracle, for programs XLA's CPU backend does
not compile from StableHLO), ``grad`` (argument indices whose gradient is checked against
central finite differences), ``rtol``/``atol``.
"""

# HLO is written as XLA writes it, long lines and all; the cases are data.
# ruff: noqa: E501, E731, E741, RUF100

from __future__ import annotations

import ml_dtypes
import numpy as np

CASES: dict[str, dict] = {}


def case(name, text, args, **kw):
    CASES[name] = dict(text=text, args=args, **kw)


# ---- batch 1 --------------------------------------------------------------------------------
R1 = np.random.default_rng(3)


def f32_1(*s):
    return R1.standard_normal(s).astype(np.float32)


X = f32_1(2, 3)
Y = f32_1(2, 3)
V4 = f32_1(4)

case(
    "hdr_full",
    """HloModule m, entry_computation_layout={(f32[2,3]{1,0}, f32[2,3]{1,0})->f32[2,3]{1,0}}, is_scheduled=true, allow_spmd_sharding_propagation_to_output={true}, replica_count=1, num_partitions=1

ENTRY %main (a: f32[2,3], b: f32[2,3]) -> f32[2,3] {
  %a = f32[2,3]{1,0} parameter(0)
  %b = f32[2,3]{1,0} parameter(1)
  ROOT %r = f32[2,3]{1,0} add(f32[2,3]{1,0} %a, f32[2,3]{1,0} %b)
}
""",
    [X, Y],
    grad=[0, 1],
)

case(
    "entry_first",
    """HloModule m

ENTRY main {
  x = f32[4] parameter(0)
  ROOT y = f32[4] call(x), to_apply=helper
}

helper {
  a = f32[4] parameter(0)
  ROOT s = f32[4] sine(a)
}
""",
    [V4],
    grad=[0],
)

case(
    "entry_middle_bare",
    """
sq {
  a = f32[4] parameter(0)
  ROOT s = f32[4] multiply(a, a)
}

ENTRY main {
  x = f32[4] parameter(0)
  ROOT y = f32[4] call(x), to_apply=sq
}

unused {
  a = f32[4] parameter(0)
  ROOT n = f32[4] negate(a)
}
""",
    [V4],
    grad=[0],
)

case(
    "mixed_percent_names",
    """HloModule m
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT %c = f32[] add(a, %b)
}
ENTRY %e {
  p = f32[2,3] parameter(0)
  %z = f32[] constant(0)
  ROOT r = f32[2] reduce(%p, z), dimensions={1}, to_apply=%add
}
""",
    [X],
    grad=[0],
)

case(
    "attrs_everywhere",
    """HloModule m, is_scheduled=true

ENTRY %main.9 (Arg_0.1: f32[2,3], Arg_1.2: f32[2,3]) -> (f32[2,3], f32[2,3]) {
  %Arg_0.1 = f32[2,3]{1,0} parameter(0), sharding={replicated}, metadata={op_name="x"}, frontend_attributes={_xla_compute_type="host"}
  %Arg_1.2 = f32[2,3]{1,0} parameter(1), sharding={maximal device=0}, origin={{"y"}}
  %multiply.3 = f32[2,3]{1,0} multiply(f32[2,3]{1,0} %Arg_0.1, f32[2,3]{1,0} %Arg_1.2), metadata={op_type="Mul" op_name="jit(f)/mul" source_file="/tmp/a.py" source_line=3 source_column=7}, backend_config="{\\"flag\\":1}"
  %tanh.4 = f32[2,3]{1,0} tanh(f32[2,3]{1,0} %multiply.3), /*index=5*/ backend_config={"operation_queue_id":"0","wait_on_operation_queues":[],"force_earliest_schedule":false}, control-predecessors={%multiply.3}, statistics={visualizing_index=1,stat-1=33.5}
  %exp.5 = f32[2,3]{1,0} exponential(%tanh.4), frontend_attributes={a="1",b="two"}, sharding={devices=[2,1]0,1}
  ROOT %tuple.6 = (f32[2,3]{1,0}, f32[2,3]{1,0}) tuple(%tanh.4, /*index=1*/%exp.5)
}
""",
    [X, Y],
    grad=[0, 1],
)

case(
    "tiled_layout_memspace",
    """HloModule m, entry_computation_layout={(f32[8,128]{1,0:T(8,128)}, f32[8,128]{1,0:T(8,128)S(1)})->f32[8,128]{1,0:T(8,128)}}

ENTRY %main (a: f32[8,128], b: f32[8,128]) -> f32[8,128] {
  %a = f32[8,128]{1,0:T(8,128)} parameter(0)
  %b = f32[8,128]{1,0:T(8,128)S(1)} parameter(1)
  %c = f32[8,128]{1,0:T(8,128)} copy(%b)
  ROOT %r = f32[8,128]{1,0:T(8,128)} subtract(%a, %c)
}
""",
    [f32_1(8, 128), f32_1(8, 128)],
    grad=[0, 1],
)

case(
    "layouts_01_dot",
    """
ENTRY main {
  a = f32[2,3]{0,1} parameter(0)
  b = f32[3,2]{0,1} parameter(1)
  ROOT d = f32[2,2]{0,1} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
""",
    [X, f32_1(3, 2)],
    grad=[0, 1],
)

case(
    "const_scalars",
    """
ENTRY main {
  a = f32[] constant(inf)
  b = f32[] constant(-inf)
  c = f32[] constant(nan)
  d = f32[] constant(-nan)
  e = f32[] constant(1e-45)
  f = f32[] constant(3.4028235e+38)
  g = f64[] constant(0.1)
  h = pred[] constant(true)
  i = s8[] constant(-128)
  j = u64[] constant(18446744073709551615)
  k = s64[] constant(-9223372036854775808)
  ROOT t = (f32[], f32[], f32[], f32[], f32[], f32[], f64[], pred[], s8[], u64[], s64[]) tuple(a, b, c, d, e, f, g, h, i, j, k)
}
""",
    [],
)

case(
    "const_nested_arrays",
    """
ENTRY main {
  a = f32[2,2,2] constant({ { {1, 2}, {3, 4} }, { {5, 6}, {7, 8.5} } })
  b = s32[2,0] constant({ {}, {} })
  c = pred[3] constant({true, false, true})
  d = f32[0] constant({})
  e = s32[1,1,1,1] constant({{{{42}}}})
  ROOT t = (f32[2,2,2], s32[2,0], pred[3], f32[0], s32[1,1,1,1]) tuple(a, b, c, d, e)
}
""",
    [],
)

case(
    "const_small_types",
    """
ENTRY main {
  a = bf16[3] constant({1.5, -inf, 3.0078125})
  b = f16[3] constant({65504, -0.0001, nan})
  c = f8e4m3fn[3] constant({448, -0.5, 1})
  d = f8e5m2[3] constant({57344, -inf, 0.25})
  e = s4[4] constant({-8, 7, -1, 0})
  f = u4[3] constant({15, 0, 9})
  g = u8[2] constant({255, 0})
  h = s16[2] constant({-32768, 32767})
  ca = f32[3] convert(a)
  cb = f32[3] convert(b)
  cc = f32[3] convert(c)
  cd = f32[3] convert(d)
  ce = s32[4] convert(e)
  cf = s32[3] convert(f)
  ROOT t = (f32[3], f32[3], f32[3], f32[3], s32[4], s32[3], u8[2], s16[2]) tuple(ca, cb, cc, cd, ce, cf, g, h)
}
""",
    [],
)

case(
    "const_complex",
    """
ENTRY main {
  a = c64[2] constant({(1, 2), (-3.5, 0)})
  b = c128[] constant((0, -1))
  p = c64[2] parameter(0)
  m = c64[2] multiply(a, p)
  ROOT t = (c64[2], c128[]) tuple(m, b)
}
""",
    [np.array([1 + 1j, 2 - 3j], np.complex64)],
)

case(
    "const_elided_refused",
    """
ENTRY main {
  a = f32[4] constant({...})
  p = f32[4] parameter(0)
  ROOT r = f32[4] add(a, p)
}
""",
    [V4],
    ref=lambda p: [p],
)

case(
    "tuple_of_tuples",
    """
ENTRY main {
  p = ((f32[2], s32[]), f32[3]) parameter(0)
  inner = (f32[2], s32[]) get-tuple-element(p), index=0
  a = f32[2] get-tuple-element(inner), index=0
  i = s32[] get-tuple-element(inner), index=1
  b = f32[3] get-tuple-element(p), index=1
  fi = f32[] convert(i)
  bi = f32[2] broadcast(fi), dimensions={}
  s = f32[2] add(a, bi)
  ROOT t = ((f32[2], f32[3]), s32[]) tuple(tuple(s, b), i)
}
""",
    [],
    ref=None,
)
case(
    "tuple_of_tuples",
    """
ENTRY main {
  p0 = f32[2] parameter(0)
  p1 = s32[] parameter(1)
  p2 = f32[3] parameter(2)
  inner = (f32[2], s32[]) tuple(p0, p1)
  outer = ((f32[2], s32[]), f32[3]) tuple(inner, p2)
  g = (f32[2], s32[]) get-tuple-element(outer), index=0
  a = f32[2] get-tuple-element(g), index=0
  i = s32[] get-tuple-element(g), index=1
  b = f32[3] get-tuple-element(outer), index=1
  fi = f32[] convert(i)
  bi = f32[2] broadcast(fi), dimensions={}
  s = f32[2] add(a, bi)
  t2 = (f32[2], f32[3]) tuple(s, b)
  ROOT t = ((f32[2], f32[3]), s32[]) tuple(t2, i)
}
""",
    [f32_1(2), np.int32(3), f32_1(3)],
    grad=[0, 2],
)


case(
    "inline_operand_types_mixed",
    """
ENTRY main {
  a = f32[4]{0} parameter(0)
  b = f32[4] parameter(1)
  c = f32[4]{0} add(f32[4]{0} a, b)
  ROOT d = f32[4] multiply(c, f32[4] b)
}
""",
    [V4, f32_1(4)],
    grad=[0, 1],
)

case(
    "scheduled_with_controls",
    """HloModule m, is_scheduled=true

ENTRY main {
  a = f32[4] parameter(0)
  b = f32[4] exponential(a)
  c = f32[4] log(b), control-predecessors={b}
  d = f32[4] sine(a), control-predecessors={c}
  ROOT t = (f32[4], f32[4]) tuple(c, d)
}
""",
    [V4],
    grad=[0],
)

case(
    "sharding_tuple_and_manual",
    """
ENTRY main {
  a = f32[4,2] parameter(0), sharding={devices=[2,1]0,1}
  b = f32[4,2] parameter(1), sharding={devices=[1,1,2]0,1 last_tile_dim_replicate}
  c = f32[4,2] add(a, b), sharding={manual}
  d = f32[4,2] custom-call(c), custom_call_target="Sharding", sharding={devices=[2,1]0,1}
  ROOT t = (f32[4,2], f32[4,2]) tuple(c, d), sharding={{replicated}, {maximal device=0}}
}
""",
    [f32_1(4, 2), f32_1(4, 2)],
    grad=[0, 1],
)

case(
    "sharding_iota_v2",
    """
ENTRY main {
  a = f32[4,2] parameter(0), sharding={devices=[2,2]<=[4]}
  b = f32[4,2] parameter(1), sharding={devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}
  ROOT c = f32[4,2] multiply(a, b), sharding={unknown}
}
""",
    [f32_1(4, 2), f32_1(4, 2)],
    grad=[0, 1],
)

case(
    "hex_float_const",
    """
ENTRY main {
  a = f32[] constant(0x1p-3)
  p = f32[] parameter(0)
  ROOT r = f32[] add(a, p)
}
""",
    [np.float32(1)],
)

case(
    "bf16_params_dot",
    """
ENTRY main {
  a = bf16[2,3] parameter(0)
  b = bf16[3,2] parameter(1)
  ROOT d = f32[2,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
""",
    [
        X.astype("bfloat16") if False else ml_dtypes.bfloat16 and X.astype(ml_dtypes.bfloat16),
        f32_1(3, 2).astype(ml_dtypes.bfloat16),
    ],
    rtol=1e-2,
    atol=1e-2,
)

case(
    "entry_comp_layout_tuple_param",
    """HloModule m, entry_computation_layout={((f32[2]{0}, f32[3]{0}))->f32[3]{0}}

ENTRY main {
  p = (f32[2], f32[3]) parameter(0)
  a = f32[3] get-tuple-element(p), index=1
  ROOT r = f32[3] negate(a)
}
""",
    [f32_1(2), f32_1(3)],
)

# ---- batch 2 --------------------------------------------------------------------------------
R2 = np.random.default_rng(5)


def f32_2(*s):
    return R2.standard_normal(s).astype(np.float32)


V4 = f32_2(4)
M = f32_2(3, 4)
ADD = """add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
"""
case(
    "ar_start_done",
    ADD
    + """
ENTRY main {
  x = f32[4] parameter(0)
  s = f32[4] all-reduce-start(x), replica_groups={}, to_apply=add
  d = f32[4] all-reduce-done(s)
  ROOT y = f32[4] multiply(d, x)
}
""",
    [V4],
    grad=[0],
)
case(
    "ag_start_done",
    """
ENTRY main {
  x = f32[4] parameter(0)
  s = (f32[4], f32[4]) all-gather-start(x), replica_groups={{0}}, dimensions={0}
  ROOT d = f32[4] all-gather-done(s)
}
""",
    [V4],
    grad=[0],
)
case(
    "cp_start_done",
    """
ENTRY main {
  x = f32[4] parameter(0)
  s = (f32[4], f32[4], u32[], u32[]) collective-permute-start(x), source_target_pairs={{0,0}}
  ROOT d = f32[4] collective-permute-done(s)
}
""",
    [V4],
    grad=[0],
)
case(
    "copy_start_done",
    """
ENTRY main {
  x = f32[4] parameter(0)
  s = (f32[4], f32[4], u32[]) copy-start(x)
  d = f32[4] copy-done(s)
  ROOT y = f32[4] sine(d)
}
""",
    [V4],
    grad=[0],
    ref=lambda x: [np.sin(x)],
)
case(
    "async_update",
    """
comp {
  a = f32[4] parameter(0)
  ROOT n = f32[4] cosine(a)
}
ENTRY main {
  p = f32[4] parameter(0)
  s = ((f32[4]), f32[4], s32[]) async-start(p), calls=comp
  u = ((f32[4]), f32[4], s32[]) async-update(s)
  ROOT r = f32[4] async-done(u)
}
""",
    [V4],
    grad=[0],
    ref=lambda x: [np.cos(x)],
)
case(
    "async_wrapped_all_reduce",
    ADD
    + """
ar_comp {
  a = f32[4] parameter(0)
  ROOT r = f32[4] all-reduce(a), replica_groups={}, to_apply=add
}
ENTRY main {
  p = f32[4] parameter(0)
  s = ((f32[4]), f32[4]) all-reduce-start(p), replica_groups={}, to_apply=add
  ROOT r = f32[4] all-reduce-done(s)
}
""",
    [V4],
)
case(
    "send_recv",
    """
ENTRY main {
  x = f32[4] parameter(0)
  t = token[] after-all()
  s = (f32[4], u32[], token[]) send(x, t), channel_id=1
  sd = token[] send-done(s), channel_id=1
  r = (f32[4], u32[], token[]) recv(t), channel_id=2
  rd = (f32[4], token[]) recv-done(r), channel_id=2
  ROOT y = f32[4] get-tuple-element(rd), index=0
}
""",
    [V4],
)
case(
    "opt_barrier",
    """
ENTRY main {
  x = f32[4] parameter(0)
  y = f32[3,4] parameter(1)
  t = (f32[4], f32[3,4]) tuple(x, y)
  b = (f32[4], f32[3,4]) opt-barrier(t)
  a = f32[4] get-tuple-element(b), index=0
  c = f32[3,4] get-tuple-element(b), index=1
  ab = f32[3,4] broadcast(a), dimensions={1}
  ROOT r = f32[3,4] multiply(ab, c)
}
""",
    [V4, M],
    grad=[0, 1],
)
case(
    "bitcast_reshape",
    """
ENTRY main {
  x = f32[3,4]{1,0} parameter(0)
  b = f32[12]{0} bitcast(x)
  ROOT r = f32[2,6]{1,0} bitcast(b)
}
""",
    [M],
    grad=[0],
    ref=lambda x: [x.reshape(2, 6)],
)
case(
    "bitcast_convert_widths",
    """
ENTRY main {
  x = f32[4] parameter(0)
  a = s32[4] bitcast-convert(x)
  b = u16[4,2] bitcast-convert(x)
  c = u8[4,4] bitcast-convert(x)
  y = f64[2] parameter(1)
  d = f32[2,2] bitcast-convert(y)
  e = u16[2] parameter(2)
  ee = u16[2,2] reshape(u16[4] parameter(3))
  f = f32[2] bitcast-convert(ee)
  ROOT t = (s32[4], u16[4,2], u8[4,4], f32[2,2], f32[2]) tuple(a, b, c, d, f)
}
""",
    [
        V4,
        np.array([1.5, -2.25]),
        np.array([1, 2], np.uint16),
        np.array([0, 16256, 0, 49152], np.uint16),
    ],
)
case(
    "reduce_precision",
    """
ENTRY main {
  x = f32[6] parameter(0)
  a = f32[6] reduce-precision(x), exponent_bits=5, mantissa_bits=10
  b = f32[6] reduce-precision(x), exponent_bits=8, mantissa_bits=7
  c = f32[6] reduce-precision(x), exponent_bits=4, mantissa_bits=3
  ROOT t = (f32[6], f32[6], f32[6]) tuple(a, b, c)
}
""",
    [np.array([1.0001, 70000, 1e-8, np.nan, -3.14159, 300.3], np.float32)],
)
for alg in ["rng_default", "rng_three_fry", "rng_philox"]:
    case(
        f"rbg_{alg}",
        f"""
ENTRY main {{
  s = u64[2] parameter(0)
  ROOT r = (u64[2], u32[3,4]) rng-bit-generator(s), algorithm={alg}
}}
""",
        [np.array([42, 7], np.uint64)],
    )
case(
    "rbg_philox3_f",
    """
ENTRY main {
  s = u64[3] parameter(0)
  ROOT r = (u64[3], u64[5]) rng-bit-generator(s), algorithm=rng_philox
}
""",
    [np.array([42, 7, 9], np.uint64)],
)
case(
    "rng_uniform_shape",
    """
ENTRY main {
  a = f32[] constant(0)
  b = f32[] constant(1)
  r = f32[64] rng(a, b), distribution=rng_uniform
  lo = pred[64] compare(r, f32[64] broadcast(a), dimensions={}), direction=GE
  hi = pred[64] compare(r, f32[64] broadcast(b), dimensions={}), direction=LT
  ok = pred[64] and(lo, hi)
  ROOT all = pred[] reduce(ok, pred[] constant(true)), dimensions={0}, to_apply=and
}
and {
  x = pred[] parameter(0)
  y = pred[] parameter(1)
  ROOT z = pred[] and(x, y)
}
""",
    [],
)
case(
    "rng_uniform_shape",
    """
and {
  x = pred[] parameter(0)
  y = pred[] parameter(1)
  ROOT z = pred[] and(x, y)
}
ENTRY main {
  a = f32[] constant(0)
  b = f32[] constant(1)
  r = f32[64] rng(a, b), distribution=rng_uniform
  ba = f32[64] broadcast(a), dimensions={}
  bb = f32[64] broadcast(b), dimensions={}
  lo = pred[64] compare(r, ba), direction=GE
  hi = pred[64] compare(r, bb), direction=LT
  ok = pred[64] and(lo, hi)
  t = pred[] constant(true)
  ROOT all = pred[] reduce(ok, t), dimensions={0}, to_apply=and
}
""",
    [],
)
case(
    "rng_get_and_update",
    """
ENTRY main {
  ROOT s = u64[2] rng-get-and-update-state(), delta=16
}
""",
    [],
)
case(
    "bn_training",
    """
ENTRY main {
  x = f32[2,3,4] parameter(0)
  sc = f32[3] parameter(1)
  of = f32[3] parameter(2)
  ROOT r = (f32[2,3,4], f32[3], f32[3]) batch-norm-training(x, sc, of), epsilon=0.001, feature_index=1
}
""",
    [f32_2(2, 3, 4), f32_2(3), f32_2(3)],
    grad=[0, 1, 2],
)
case(
    "bn_inference",
    """
ENTRY main {
  x = f32[2,4,3] parameter(0)
  sc = f32[3] parameter(1)
  of = f32[3] parameter(2)
  mn = f32[3] parameter(3)
  vr = f32[3] parameter(4)
  ROOT r = f32[2,4,3] batch-norm-inference(x, sc, of, mn, vr), epsilon=0.01, feature_index=2
}
""",
    [f32_2(2, 4, 3), f32_2(3), f32_2(3), f32_2(3), np.abs(f32_2(3)) + 0.5],
    grad=[0, 1, 2, 3],
)
case(
    "bn_grad",
    """
ENTRY main {
  x = f32[2,3] parameter(0)
  sc = f32[3] parameter(1)
  mn = f32[3] parameter(2)
  vr = f32[3] parameter(3)
  g = f32[2,3] parameter(4)
  ROOT r = (f32[2,3], f32[3], f32[3]) batch-norm-grad(x, sc, mn, vr, g), epsilon=0.001, feature_index=1
}
""",
    [f32_2(2, 3), f32_2(3), f32_2(3), np.abs(f32_2(3)) + 0.5, f32_2(2, 3)],
)
A = f32_2(3, 3)
SPD = (A @ A.T + 3 * np.eye(3)).astype(np.float32)
case(
    "cholesky_lower_upper",
    """
ENTRY main {
  a = f32[3,3] parameter(0)
  l = f32[3,3] cholesky(a), lower=true
  u = f32[3,3] cholesky(a), lower=false
  ROOT t = (f32[3,3], f32[3,3]) tuple(l, u)
}
""",
    [SPD],
)
case(
    "cholesky_batched",
    """
ENTRY main {
  a = f32[2,3,3] parameter(0)
  ROOT l = f32[2,3,3] cholesky(a), lower=true
}
""",
    [np.stack([SPD, SPD * 2])],
)
T = (np.tril(f32_2(3, 3)) + 4 * np.eye(3)).astype(np.float32)
for left in ["true", "false"]:
    for lower in ["true", "false"]:
        for ua in ["true", "false"]:
            for tr in ["NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"]:
                b = "f32[3,2]" if left == "true" else "f32[2,3]"
                case(
                    f"trsm_{left[0]}{lower[0]}{ua[0]}_{tr[:2]}",
                    f"""
ENTRY main {{
  a = f32[3,3] parameter(0)
  b = {b} parameter(1)
  ROOT x = {b} triangular-solve(a, b), left_side={left}, lower={lower}, unit_diagonal={ua}, transpose_a={tr}
}}
""",
                    [T + T.T * 0.3, f32_2(2, 3) if left == "false" else f32_2(3, 2)],
                    grad=[0, 1] if (ua == "false" and tr == "TRANSPOSE") else None,
                    rtol=1e-3,
                    atol=1e-4,
                )
case(
    "trsm_complex_adjoint",
    """
ENTRY main {
  a = c64[3,3] parameter(0)
  b = c64[3,2] parameter(1)
  ROOT x = c64[3,2] triangular-solve(a, b), left_side=true, lower=true, unit_diagonal=false, transpose_a=ADJOINT
}
""",
    [
        (T + 1j * np.tril(f32_2(3, 3))).astype(np.complex64),
        (f32_2(3, 2) + 1j * f32_2(3, 2)).astype(np.complex64),
    ],
    rtol=1e-3,
    atol=1e-4,
)
C = (f32_2(4, 8) + 1j * f32_2(4, 8)).astype(np.complex64)
case(
    "fft_all",
    """
ENTRY main {
  c = c64[4,8] parameter(0)
  r = f32[4,8] parameter(1)
  a = c64[4,8] fft(c), fft_type=FFT, fft_length={8}
  b = c64[4,8] fft(c), fft_type=IFFT, fft_length={4,8}
  d = c64[4,5] fft(r), fft_type=RFFT, fft_length={8}
  cs = c64[4,5] slice(c), slice={[0:4], [0:5]}
  e = f32[4,8] fft(cs), fft_type=IRFFT, fft_length={4,8}
  ROOT t = (c64[4,8], c64[4,8], c64[4,5], f32[4,8]) tuple(a, b, d, e)
}
""",
    [C, f32_2(4, 8)],
    rtol=1e-3,
    atol=1e-4,
)
case(
    "fft_irfft_grad",
    """
ENTRY main {
  r = f32[4,8] parameter(0)
  d = c64[4,5] fft(r), fft_type=RFFT, fft_length={4,8}
  e = f32[4,8] fft(d), fft_type=IRFFT, fft_length={4,8}
  ROOT s = f32[4,8] multiply(e, r)
}
""",
    [f32_2(4, 8)],
    grad=[0],
    rtol=1e-3,
    atol=1e-4,
)
case(
    "map",
    """
mf {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  m = f32[] multiply(a, b)
  ROOT s = f32[] sine(m)
}
ENTRY main {
  x = f32[3,4] parameter(0)
  y = f32[3,4] parameter(1)
  ROOT r = f32[3,4] map(x, y), dimensions={0,1}, to_apply=mf
}
""",
    [M, f32_2(3, 4)],
    grad=[0, 1],
)
case(
    "dyn_reshape_and_dimsize",
    """
ENTRY main {
  x = f32[3,4] parameter(0)
  n = s32[] get-dimension-size(x), dimensions={1}
  s = f32[<=3,4] set-dimension-size(x, s32[] constant(2)), dimensions={0}
  n2 = s32[] get-dimension-size(s), dimensions={0}
  ROOT t = (s32[], s32[]) tuple(n, n2)
}
""",
    [M],
)
case(
    "stochastic_convert",
    """
ENTRY main {
  x = f32[6] parameter(0)
  r = u32[6] parameter(1)
  ROOT y = s32[6] stochastic-convert(x, r)
}
""",
    [
        np.array([1.25, -1.75, 3e10, np.nan, 0.5, -0.5], np.float32),
        np.array([0, 2**31, 5, 9, 2**31 + 1, 2**31 - 1], np.uint32),
    ],
)
case(
    "real_imag_complex",
    """
ENTRY main {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  c = c64[4] complex(a, b)
  m = c64[4] multiply(c, c)
  r = f32[4] real(m)
  i = f32[4] imag(m)
  ab = f32[4] abs(c)
  ROOT t = (f32[4], f32[4], f32[4]) tuple(r, i, ab)
}
""",
    [V4, f32_2(4)],
    grad=[0, 1],
)

# ---- batch 3 --------------------------------------------------------------------------------
R3 = np.random.default_rng(7)


def f32_3(*s):
    return R3.standard_normal(s).astype(np.float32)


V4 = f32_3(4)
M = f32_3(3, 4)
I32 = np.array([7, -7, 0, -2147483648, 5, -1, 2147483647, 3], np.int32)
J32 = np.array([0, 0, 0, -1, -3, 0, -1, 33], np.int32)
case(
    "dynamic_reshape_unsupported_by_xla_parser",
    """
ENTRY main {
  x = f32[3,4] parameter(0)
  a = s32[] constant(2)
  b = s32[] constant(6)
  ROOT r = f32[<=3,<=12] dynamic-reshape(x, a, b)
}
""",
    [M],
    ref=lambda x: [x],
)
case(
    "reduce_precision_grad",
    """
ENTRY main {
  x = f32[4] parameter(0)
  ROOT a = f32[4] reduce-precision(x), exponent_bits=8, mantissa_bits=23
}
""",
    [V4],
    grad=[0],
)
case(
    "int_div_rem",
    """
ENTRY main {
  a = s32[8] parameter(0)
  b = s32[8] parameter(1)
  d = s32[8] divide(a, b)
  r = s32[8] remainder(a, b)
  ua = u32[8] convert(a)
  ub = u32[8] convert(b)
  ud = u32[8] divide(ua, ub)
  ur = u32[8] remainder(ua, ub)
  ROOT t = (s32[8], s32[8], u32[8], u32[8]) tuple(d, r, ud, ur)
}
""",
    [I32, J32],
)
case(
    "int_div_const_fold",
    """
ENTRY main {
  a = s32[3] constant({5, -2147483648, -9})
  b = s32[3] constant({0, -1, 4})
  d = s32[3] divide(a, b)
  r = s32[3] remainder(a, b)
  ROOT t = (s32[3], s32[3]) tuple(d, r)
}
""",
    [],
)
case(
    "shifts_out_of_range",
    """
ENTRY main {
  a = s32[8] parameter(0)
  b = s32[8] parameter(1)
  l = s32[8] shift-left(a, b)
  ra = s32[8] shift-right-arithmetic(a, b)
  rl = s32[8] shift-right-logical(a, b)
  a8 = s8[8] convert(a)
  b8 = s8[8] convert(b)
  l8 = s8[8] shift-left(a8, b8)
  r8 = s8[8] shift-right-arithmetic(a8, b8)
  q8 = s8[8] shift-right-logical(a8, b8)
  ROOT t = (s32[8], s32[8], s32[8], s8[8], s8[8], s8[8]) tuple(l, ra, rl, l8, r8, q8)
}
""",
    [I32, np.array([1, 31, 32, 33, -1, 100, 0, 8], np.int32)],
)
case(
    "popcnt_clz",
    """
ENTRY main {
  a = s32[8] parameter(0)
  p = s32[8] popcnt(a)
  c = s32[8] count-leading-zeros(a)
  u = u8[8] convert(a)
  pu = u8[8] popcnt(u)
  cu = u8[8] count-leading-zeros(u)
  ROOT t = (s32[8], s32[8], u8[8], u8[8]) tuple(p, c, pu, cu)
}
""",
    [I32],
)
case(
    "remainder_float_neg",
    """
ENTRY main {
  a = f32[6] parameter(0)
  b = f32[6] parameter(1)
  ROOT r = f32[6] remainder(a, b)
}
""",
    [
        np.array([-7.5, 7.5, -7.5, 0, np.inf, 3], np.float32),
        np.array([2, -2, -2, -1, 2, 0], np.float32),
    ],
)
case(
    "convert_f2i_sat",
    """
ENTRY main {
  x = f32[8] parameter(0)
  a = s32[8] convert(x)
  b = u8[8] convert(x)
  c = s8[8] convert(x)
  d = u32[8] convert(x)
  e = s64[8] convert(x)
  g = pred[8] convert(x)
  h = s16[8] convert(f16[8] convert(x))
  ROOT t = (s32[8], u8[8], s8[8], u32[8], s64[8], pred[8], s16[8]) tuple(a, b, c, d, e, g, h)
}
""",
    [np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, -1.5, 255.9, 0.0], np.float32)],
)
case(
    "convert_f2i_sat_f16",
    """
ENTRY main {
  x = f32[8] parameter(0)
  y = f16[8] convert(x)
  h = s16[8] convert(y)
  u = u16[8] convert(y)
  ROOT t = (s16[8], u16[8]) tuple(h, u)
}
""",
    [np.array([np.nan, np.inf, -np.inf, 60000, -40000, -1.5, 255.9, 0.0], np.float32)],
)
case(
    "round_modes",
    """
ENTRY main {
  x = f32[8] parameter(0)
  a = f32[8] round-nearest-afz(x)
  b = f32[8] round-nearest-even(x)
  ROOT t = (f32[8], f32[8]) tuple(a, b)
}
""",
    [np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999998, np.nan], np.float32)],
)
case(
    "clamp_scalar_select_scalar",
    """
ENTRY main {
  x = f32[3,4] parameter(0)
  lo = f32[] constant(-0.5)
  hi = f32[] constant(0.5)
  c = f32[3,4] clamp(lo, x, hi)
  p = pred[] parameter(1)
  y = f32[3,4] negate(x)
  s = f32[3,4] select(p, c, y)
  ROOT t = (f32[3,4], f32[3,4]) tuple(c, s)
}
""",
    [M, np.bool_(False)],
    grad=[0],
)
case(
    "iota_dims",
    """
ENTRY main {
  a = s32[2,3,4] iota(), iota_dimension=0
  b = f32[2,3,4] iota(), iota_dimension=2
  c = u8[300] iota(), iota_dimension=0
  d = bf16[3,2] iota(), iota_dimension=1
  ROOT t = (s32[2,3,4], f32[2,3,4], u8[300], bf16[3,2]) tuple(a, b, c, d)
}
""",
    [],
)
case(
    "pad_neg_interior",
    """
ENTRY main {
  x = f32[3,4] parameter(0)
  z = f32[] constant(-1)
  a = f32[6,6] pad(x, z), padding=-1_2_1x1_-2_1
  b = f32[1,9] pad(x, z), padding=-1_-1x0_2_1
  ROOT t = (f32[6,6], f32[1,9]) tuple(a, b)
}
""",
    [M],
    grad=[0],
)
case(
    "slice_strides_reverse_concat",
    """
ENTRY main {
  x = f32[5,7] parameter(0)
  a = f32[2,3] slice(x), slice={[0:5:3], [1:7:2]}
  b = f32[5,7] reverse(x), dimensions={0,1}
  c = f32[2,3] slice(b), slice={[1:4:2], [0:3]}
  d = f32[4,3] concatenate(a, c), dimensions={0}
  e = f32[2,6] concatenate(a, c), dimensions={1}
  ROOT t = (f32[4,3], f32[2,6]) tuple(d, e)
}
""",
    [f32_3(5, 7)],
    grad=[0],
)
case(
    "gather_batching_dims",
    """
ENTRY main {
  op = f32[2,5,3] parameter(0)
  idx = s32[2,4,1] parameter(1)
  ROOT g = f32[2,4,3] gather(op, idx), offset_dims={2}, collapsed_slice_dims={1}, start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=2, slice_sizes={1,1,3}
}
""",
    [f32_3(2, 5, 3), np.array([[[0], [4], [2], [9]], [[-1], [1], [1], [3]]], np.int32)],
    grad=[0],
)
case(
    "scatter_batching_dims",
    """
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY main {
  op = f32[2,5,3] parameter(0)
  idx = s32[2,4,1] parameter(1)
  up = f32[2,4,3] parameter(2)
  ROOT s = f32[2,5,3] scatter(op, idx, up), update_window_dims={2}, inserted_window_dims={1}, scatter_dims_to_operand_dims={1}, input_batching_dims={0}, scatter_indices_batching_dims={0}, index_vector_dim=2, to_apply=add
}
""",
    [
        f32_3(2, 5, 3),
        np.array([[[0], [4], [2], [4]], [[-1], [1], [1], [3]]], np.int32),
        f32_3(2, 4, 3),
    ],
    grad=[0, 2],
)
case(
    "scatter_unique_sorted",
    """
mul {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] multiply(a, b)
}
ENTRY main {
  op = f32[6,2] parameter(0)
  idx = s32[3] parameter(1)
  up = f32[3,2] parameter(2)
  ROOT s = f32[6,2] scatter(op, idx, up), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, indices_are_sorted=true, unique_indices=true, to_apply=mul
}
""",
    [f32_3(6, 2), np.array([0, 2, 5], np.int32), f32_3(3, 2)],
    grad=[0, 2],
)
case(
    "scatter_variadic",
    """
comb {
  a0 = f32[] parameter(0)
  b0 = s32[] parameter(1)
  a1 = f32[] parameter(2)
  b1 = s32[] parameter(3)
  s0 = f32[] add(a0, a1)
  m1 = s32[] maximum(b0, b1)
  ROOT t = (f32[], s32[]) tuple(s0, m1)
}
ENTRY main {
  op0 = f32[5] parameter(0)
  op1 = s32[5] parameter(1)
  idx = s32[4,1] parameter(2)
  u0 = f32[4] parameter(3)
  v1 = s32[4] parameter(4)
  ROOT s = (f32[5], s32[5]) scatter(op0, op1, idx, u0, v1), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=comb
}
""",
    [
        f32_3(5),
        np.arange(5, dtype=np.int32),
        np.array([[1], [1], [4], [7]], np.int32),
        f32_3(4),
        np.array([9, -1, 2, 100], np.int32),
    ],
    grad=[0, 3],
)
case(
    "variadic_reduce_argmax",
    """
argmax {
  av = f32[] parameter(0)
  ai = s32[] parameter(1)
  bv = f32[] parameter(2)
  bi = s32[] parameter(3)
  gt = pred[] compare(av, bv), direction=GT
  eq = pred[] compare(av, bv), direction=EQ
  lt = pred[] compare(ai, bi), direction=LT
  tie = pred[] and(eq, lt)
  pick = pred[] or(gt, tie)
  v = f32[] select(pick, av, bv)
  i = s32[] select(pick, ai, bi)
  ROOT r = (f32[], s32[]) tuple(v, i)
}
ENTRY main {
  x = f32[3,4] parameter(0)
  io = s32[3,4] iota(), iota_dimension=1
  ninf = f32[] constant(-inf)
  z = s32[] constant(0)
  ROOT r = (f32[3], s32[3]) reduce(x, io, ninf, z), dimensions={1}, to_apply=argmax
}
""",
    [np.array([[1, 3, 2, 0], [-1, -2, -3, -4], [0, 0.5, 5, 4]], np.float32)],
    grad=[0],
)
case(
    "variadic_reduce_window",
    """
comb {
  a0 = f32[] parameter(0)
  b0 = f32[] parameter(1)
  a1 = f32[] parameter(2)
  b1 = f32[] parameter(3)
  s = f32[] add(a0, a1)
  m = f32[] maximum(b0, b1)
  ROOT t = (f32[], f32[]) tuple(s, m)
}
ENTRY main {
  x = f32[4,6] parameter(0)
  y = f32[4,6] parameter(1)
  z = f32[] constant(0)
  n = f32[] constant(-inf)
  ROOT r = (f32[2,3], f32[2,3]) reduce-window(x, y, z, n), window={size=2x3 stride=2x2 pad=0_0x1_0 lhs_dilate=1x1 rhs_dilate=1x1}, to_apply=comb
}
""",
    [f32_3(4, 6), f32_3(4, 6)],
    grad=[0, 1],
)
case(
    "reduce_window_dilated",
    """
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY main {
  x = f32[5,5] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[5,3] reduce-window(x, z), window={size=2x2 stride=1x2 pad=1_1x0_1 lhs_dilate=1x1 rhs_dilate=2x1}, to_apply=add
}
""",
    [f32_3(5, 5)],
    grad=[0],
)
case(
    "reduce_window_lhs_dilate",
    """
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY main {
  x = f32[3,3] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[4,4] reduce-window(x, z), window={size=2x2 lhs_dilate=2x2}, to_apply=add
}
""",
    [f32_3(3, 3)],
    grad=[0],
)
case(
    "select_and_scatter_pad",
    """
ge {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=GE
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY main {
  x = f32[4,5] parameter(0)
  s = f32[2,3] parameter(1)
  z = f32[] constant(0)
  ROOT r = f32[4,5] select-and-scatter(x, s, z), window={size=2x2 stride=2x2 pad=0_0x0_1}, select=ge, scatter=add
}
""",
    [f32_3(4, 5), f32_3(2, 3)],
    grad=[1],
)
case(
    "sort_multi_stable",
    """
cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  e = u8[] parameter(4)
  f = u8[] parameter(5)
  ROOT lt = pred[] compare(a, b), direction=LT, type=TOTALORDER
}
ENTRY main {
  k = f32[2,5] parameter(0)
  v = s32[2,5] parameter(1)
  w = u8[2,5] parameter(2)
  ROOT s = (f32[2,5], s32[2,5], u8[2,5]) sort(k, v, w), dimensions={1}, is_stable=true, to_apply=cmp
}
""",
    [
        np.array([[1, -0.0, 0.0, np.nan, 1], [3, 2, 3, -np.nan, 1]], np.float32),
        np.arange(10, dtype=np.int32).reshape(2, 5),
        np.arange(10, dtype=np.uint8).reshape(2, 5),
    ],
)
case(
    "sort_dim0_desc",
    """
cmp {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT gt = pred[] compare(a, b), direction=GT
}
ENTRY main {
  k = s32[4,3] parameter(0)
  ROOT s = s32[4,3] sort(k), dimensions={0}, to_apply=cmp
}
""",
    [R3.integers(-5, 5, (4, 3)).astype(np.int32)],
)
case(
    "topk_batched",
    """
ENTRY main {
  x = f32[3,6] parameter(0)
  ROOT r = (f32[3,2], s32[3,2]) topk(x), k=2, largest=true
}
""",
    [f32_3(3, 6)],
    grad=[0],
)
case(
    "while_known_trip",
    """
cond {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[4] get-tuple-element(p), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  y = f32[4] sine(x)
  ROOT t = (s32[], f32[4]) tuple(j, y)
}
ENTRY main {
  x = f32[4] parameter(0)
  z = s32[] constant(0)
  t = (s32[], f32[4]) tuple(z, x)
  w = (s32[], f32[4]) while(t), condition=cond, body=body, backend_config={"known_trip_count":{"n":"5"}}
  ROOT r = f32[4] get-tuple-element(w), index=1
}
""",
    [V4],
    grad=[0],
)
case(
    "conditional_pred",
    """
t_br {
  p = f32[4] parameter(0)
  ROOT s = f32[4] sine(p)
}
f_br {
  p = f32[4] parameter(0)
  ROOT c = f32[4] cosine(p)
}
ENTRY main {
  b = pred[] parameter(0)
  x = f32[4] parameter(1)
  ROOT r = f32[4] conditional(b, x, x), true_computation=t_br, false_computation=f_br
}
""",
    [np.bool_(False), V4],
    grad=[1],
)
case(
    "conditional_index_oob",
    """
b0 {
  p = f32[4] parameter(0)
  ROOT s = f32[4] sine(p)
}
b1 {
  p = f32[4] parameter(0)
  ROOT c = f32[4] cosine(p)
}
b2 {
  p = (f32[4], f32[4]) parameter(0)
  a = f32[4] get-tuple-element(p), index=0
  ROOT n = f32[4] negate(a)
}
ENTRY main {
  i = s32[] parameter(0)
  x = f32[4] parameter(1)
  t = (f32[4], f32[4]) tuple(x, x)
  ROOT r = f32[4] conditional(i, x, x, t), branch_computations={b0, b1, b2}
}
""",
    [np.int32(7), V4],
    grad=[1],
)
case(
    "conditional_index_neg",
    """
b0 {
  p = f32[4] parameter(0)
  ROOT s = f32[4] sine(p)
}
b1 {
  p = f32[4] parameter(0)
  ROOT c = f32[4] cosine(p)
}
ENTRY main {
  i = s32[] parameter(0)
  x = f32[4] parameter(1)
  ROOT r = f32[4] conditional(i, x, x), branch_computations={b0, b1}
}
""",
    [np.int32(-3), V4],
    grad=[1],
)
case(
    "fusion_kinds",
    """
f_loop {
  p = f32[3,4] parameter(0)
  ROOT e = f32[3,4] exponential(p)
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
f_input {
  p = f32[3,4] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[3] reduce(p, z), dimensions={1}, to_apply=add
}
f_output {
  a = f32[3,4] parameter(0)
  b = f32[4,2] parameter(1)
  d = f32[3,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = f32[3,2] tanh(d)
}
f_custom {
  p = f32[3,2] parameter(0)
  ROOT n = f32[3,2] negate(p)
}
ENTRY main {
  x = f32[3,4] parameter(0)
  w = f32[4,2] parameter(1)
  a = f32[3,4] fusion(x), kind=kLoop, calls=f_loop
  b = f32[3] fusion(a), kind=kInput, calls=f_input
  c = f32[3,2] fusion(a, w), kind=kOutput, calls=f_output
  d = f32[3,2] fusion(c), kind=kCustom, calls=f_custom, backend_config={"fusion_backend_config":{"kind":"__triton"}}
  ROOT t = (f32[3], f32[3,2]) tuple(b, d)
}
""",
    [M, f32_3(4, 2)],
    grad=[0, 1],
)
case(
    "custom_call_spmd",
    """
ENTRY main {
  x = f32[4,2] parameter(0), sharding={devices=[2,1]0,1}
  a = f32[4,2] custom-call(x), custom_call_target="Sharding", sharding={devices=[2,1]0,1}
  b = f32[2,2] custom-call(a), custom_call_target="SPMDFullToShardShape", sharding={manual}
  c = f32[2,2] negate(b), sharding={manual}
  d = f32[4,2] custom-call(c), custom_call_target="SPMDShardToFullShape", sharding={devices=[2,1]0,1}
  ROOT r = f32[4,2] add(d, x)
}
""",
    [f32_3(4, 2)],
)
case(
    "custom_call_spmd_1dev",
    """
ENTRY main {
  x = f32[4,2] parameter(0), sharding={replicated}
  a = f32[4,2] custom-call(x), custom_call_target="Sharding", sharding={replicated}
  b = f32[4,2] custom-call(a), custom_call_target="SPMDFullToShardShape", sharding={manual}
  c = f32[4,2] negate(b), sharding={manual}
  d = f32[4,2] custom-call(c), custom_call_target="SPMDShardToFullShape", sharding={replicated}
  ROOT r = f32[4,2] add(d, x)
}
""",
    [f32_3(4, 2)],
    grad=[0],
)
case(
    "custom_call_topk",
    """
cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT gt = pred[] compare(a, b), direction=GT
}
ENTRY main {
  x = f32[2,6] parameter(0)
  ROOT r = (f32[2,3], s32[2,3]) custom-call(x), custom_call_target="TopK", to_apply=cmp
}
""",
    [f32_3(2, 6)],
)
case(
    "custom_call_unknown",
    """
ENTRY main {
  x = f32[4] parameter(0)
  ROOT y = f32[4] custom-call(x), custom_call_target="__cpu$xnn_fusion", backend_config="abc"
}
""",
    [V4],
    ref=lambda x: [x],
)
case(
    "custom_call_unknown2",
    """
ENTRY main {
  x = f32[4] parameter(0)
  ROOT y = f32[4] custom-call(x), custom_call_target="MyKernel", custom_call_has_side_effect=true, output_to_operand_aliasing={{}: (0, {})}
}
""",
    [V4],
    ref=lambda x: [x],
)
case(
    "ids",
    """
ENTRY main {
  p = u32[] partition-id()
  r = u32[] replica-id()
  ROOT t = (u32[], u32[]) tuple(p, r)
}
""",
    [],
)
case(
    "collectives_one_replica",
    """HloModule m, replica_count=1, num_partitions=1

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY main {
  x = f32[4,2] parameter(0)
  ar = f32[4,2] all-reduce(x), replica_groups={{0}}, to_apply=add, channel_id=1
  ag = f32[4,2] all-gather(x), replica_groups={{0}}, dimensions={0}
  rs = f32[4,2] reduce-scatter(x), replica_groups={{0}}, dimensions={1}, to_apply=add
  aa = f32[4,2] all-to-all(x), replica_groups={{0}}, dimensions={0}
  cp = f32[4,2] collective-permute(x), source_target_pairs={{0,0}}
  cb = f32[4,2] collective-broadcast(x), replica_groups={{0}}
  a1 = f32[4,2] add(ar, ag)
  a2 = f32[4,2] add(rs, aa)
  a3 = f32[4,2] add(cp, cb)
  a4 = f32[4,2] add(a1, a2)
  ROOT r = f32[4,2] add(a3, a4)
}
""",
    [f32_3(4, 2)],
    grad=[0],
)
case(
    "all_to_all_tuple",
    """HloModule m, replica_count=1

ENTRY main {
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  ROOT r = (f32[4], f32[4]) all-to-all(x, y), replica_groups={{0}}
}
""",
    [V4, f32_3(4)],
)
case(
    "cp_empty_pairs",
    """
ENTRY main {
  x = f32[4] parameter(0)
  ROOT r = f32[4] collective-permute(x), source_target_pairs={}
}
""",
    [V4],
)
case(
    "all_reduce_tuple_ops",
    """
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY main {
  x = f32[4] parameter(0)
  y = f32[2] parameter(1)
  ROOT r = (f32[4], f32[2]) all-reduce(x, y), replica_groups={}, to_apply=add
}
""",
    [V4, f32_3(2)],
)
case(
    "after_all_multiple",
    """
ENTRY main {
  x = f32[4] parameter(0)
  t1 = token[] after-all()
  t2 = token[] after-all()
  t3 = token[] after-all(t1, t2)
  y = f32[4] add-dependency(x, t3)
  ROOT n = f32[4] exponential(y)
}
""",
    [V4],
    grad=[0],
)
case(
    "domain_op",
    """
ENTRY main {
  x = f32[4] parameter(0)
  d = f32[4] domain(x), domain={kind="sharding", entry={replicated}, exit={maximal device=0}}
  ROOT n = f32[4] exponential(d)
}
""",
    [V4],
    grad=[0],
)

CASES["int_div_const_fold"]["ref"] = lambda: [
    np.array([-1, -2147483648, -2], np.int32),
    np.array([5, 0, -1], np.int32),
]
CASES["collectives_one_replica"]["ref"] = lambda x: [6 * x]


def _fk(x, w):
    a = np.exp(x)
    b = a.sum(1)
    c = np.tanh(a @ w)
    return [b, -c]


CASES["fusion_kinds"]["ref"] = _fk
CASES["fusion_kinds"]["rtol"] = 1e-4
case(
    "custom_call_spmd_1dev_collective",
    """HloModule m, num_partitions=1

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY main {
  x = f32[4,2] parameter(0), sharding={replicated}
  a = f32[4,2] custom-call(x), custom_call_target="Sharding", sharding={replicated}
  b = f32[4,2] custom-call(a), custom_call_target="SPMDFullToShardShape", sharding={manual}
  c = f32[4,2] all-reduce(b), replica_groups={{0}}, to_apply=add, channel_id=1, use_global_device_ids=true
  p = u32[] partition-id()
  pf = f32[] convert(p)
  pb = f32[4,2] broadcast(pf), dimensions={}
  e = f32[4,2] add(c, pb)
  d = f32[4,2] custom-call(e), custom_call_target="SPMDShardToFullShape", sharding={replicated}
  ROOT r = f32[4,2] multiply(d, x)
}
""",
    [f32_3(4, 2)],
    grad=[0],
)

# ---- batch 4 --------------------------------------------------------------------------------
R4 = np.random.default_rng(9)


def f32_4(*s):
    return R4.standard_normal(s).astype(np.float32)


V4 = f32_4(4)
M = f32_4(3, 4)
SP = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1.5, -2.5, 1e-39], np.float32)
case(
    "rng_normal_int",
    """
min {
  x = s32[] parameter(0)
  y = s32[] parameter(1)
  ROOT z = s32[] minimum(x, y)
}
ENTRY main {
  m = f32[] constant(0)
  s = f32[] constant(1)
  r = f32[8] rng(m, s), distribution=rng_normal
  lo = s32[] constant(3)
  hi = s32[] constant(7)
  i = s32[100] rng(lo, hi), distribution=rng_uniform
  big = s32[] constant(100)
  mn = s32[] reduce(i, big), dimensions={0}, to_apply=min
  /* the normal draws (r) are implementation-defined: only the uniform integers' minimum */
  ROOT t = s32[] add(mn, mn)
}
""",
    [],
)
case(
    "rbg_u8_u32state",
    """
ENTRY main {
  s = u64[2] parameter(0)
  ROOT r = (u64[2], u8[5,3]) rng-bit-generator(s), algorithm=rng_three_fry
}
""",
    [np.array([1, 2], np.uint64)],
)
case(
    "rbg_u16_philox",
    """
ENTRY main {
  s = u64[2] parameter(0)
  ROOT r = (u64[2], u16[7]) rng-bit-generator(s), algorithm=rng_philox
}
""",
    [np.array([3, 4], np.uint64)],
)
case(
    "tuple_constant",
    """
ENTRY main {
  c = (f32[], s32[2]) constant((1.5, {2, 3}))
  a = f32[] get-tuple-element(c), index=0
  p = f32[] parameter(0)
  ROOT r = f32[] multiply(a, p)
}
""",
    [np.float32(2)],
    grad=[0],
)
case(
    "elementwise_specials",
    """
ENTRY main {
  x = f32[8] parameter(0)
  y = f32[8] parameter(1)
  mx = f32[8] maximum(x, y)
  mn = f32[8] minimum(x, y)
  sg = f32[8] sign(x)
  fi = pred[8] is-finite(x)
  sq = f32[8] sqrt(x)
  rs = f32[8] rsqrt(x)
  cb = f32[8] cbrt(x)
  at = f32[8] atan2(x, y)
  lg = f32[8] logistic(x)
  e1 = f32[8] exponential-minus-one(x)
  l1 = f32[8] log-plus-one(x)
  tn = f32[8] tan(x)
  er = f32[8] erf(x)
  pw = f32[8] power(x, y)
  ROOT t = (f32[8], f32[8], f32[8], pred[8], f32[8], f32[8], f32[8], f32[8], f32[8], f32[8], f32[8], f32[8], f32[8], f32[8]) tuple(mx, mn, sg, fi, sq, rs, cb, at, lg, e1, l1, tn, er, pw)
}
""",
    [SP, np.array([-0.0, 0.0, 1, np.nan, 2, -np.inf, 0.5, 3], np.float32)],
)
case(
    "int_specials",
    """
ENTRY main {
  x = s32[6] parameter(0)
  y = s32[6] parameter(1)
  ab = s32[6] abs(x)
  ng = s32[6] negate(x)
  sg = s32[6] sign(x)
  nt = s32[6] not(x)
  xr = s32[6] xor(x, y)
  pw = s32[6] power(x, y)
  mx = s32[6] maximum(x, y)
  ux = u32[6] convert(x)
  uy = u32[6] convert(y)
  um = u32[6] minimum(ux, uy)
  cl = s32[6] clamp(y, x, s32[6] parameter(2))
  ROOT t = (s32[6], s32[6], s32[6], s32[6], s32[6], s32[6], s32[6], u32[6], s32[6]) tuple(ab, ng, sg, nt, xr, pw, mx, um, cl)
}
""",
    [
        np.array([-2147483648, -5, 0, 7, 2, -1], np.int32),
        np.array([1, -2, 0, 3, 31, -3], np.int32),
        np.array([0, -3, -1, 2, 40, -5], np.int32),
    ],
)
case(
    "convert_misc",
    """
ENTRY main {
  x = f64[6] parameter(0)
  a = s32[6] convert(x)
  b = bf16[6] convert(x)
  c = f16[6] convert(x)
  d = u64[6] convert(x)
  u = u32[6] parameter(1)
  e = f32[6] convert(u)
  s = s64[6] convert(u)
  f = f16[6] convert(s)
  g = pred[6] convert(u)
  h = f8e4m3fn[6] convert(x)
  i = f32[6] convert(h)
  ROOT t = (s32[6], bf16[6], f16[6], u64[6], f32[6], f16[6], pred[6], f32[6]) tuple(a, b, c, d, e, f, g, i)
}
""",
    [
        np.array([1e20, -1e20, 2.5, -0.7, 70000.0, 1e-9]),
        np.array([4294967295, 0, 16777217, 2, 70000, 123], np.uint32),
    ],
)
case(
    "dus_oob",
    """
ENTRY main {
  x = f32[5,4] parameter(0)
  u = f32[2,3] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  d = f32[5,4] dynamic-update-slice(x, u, i, j)
  s = f32[2,3] dynamic-slice(x, i, j), dynamic_slice_sizes={2,3}
  ROOT t = (f32[5,4], f32[2,3]) tuple(d, s)
}
""",
    [f32_4(5, 4), f32_4(2, 3), np.int32(10), np.int32(-3)],
    grad=[0, 1],
)
case(
    "dot_int8_batch",
    """
ENTRY main {
  a = s8[2,3,4] parameter(0)
  b = s8[2,4,5] parameter(1)
  ROOT d = s32[2,3,5] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}, operand_precision={highest,default}
}
""",
    [
        R4.integers(-128, 127, (2, 3, 4)).astype(np.int8),
        R4.integers(-128, 127, (2, 4, 5)).astype(np.int8),
    ],
)
case(
    "dot_bf16_out_bf16",
    """
ENTRY main {
  a = bf16[3,8] parameter(0)
  b = bf16[8,2] parameter(1)
  ROOT d = bf16[3,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
""",
    [f32_4(3, 8).astype(ml_dtypes.bfloat16), f32_4(8, 2).astype(ml_dtypes.bfloat16)],
    rtol=2e-2,
    atol=2e-2,
)
case(
    "conv_groups",
    """
ENTRY main {
  x = f32[2,5,5,4] parameter(0)
  w = f32[3,3,2,6] parameter(1)
  ROOT c = f32[2,3,5,6] convolution(x, w), window={size=3x3 stride=2x1 pad=1_1x1_1 rhs_dilate=1x1}, dim_labels=b01f_01io->b01f, feature_group_count=2
}
""",
    [f32_4(2, 5, 5, 4), f32_4(3, 3, 2, 6)],
    grad=[0, 1],
    rtol=1e-3,
    atol=1e-4,
)
case(
    "conv_batch_group",
    """
ENTRY main {
  x = f32[4,5,2] parameter(0)
  w = f32[3,2,4] parameter(1)
  ROOT c = f32[1,3,4] convolution(x, w), window={size=3}, dim_labels=b0f_0io->b0f, batch_group_count=4
}
""",
    [f32_4(4, 5, 2), f32_4(3, 2, 4)],
    grad=[0, 1],
    rtol=1e-3,
    atol=1e-4,
)
case(
    "conv_1d_lhs_dilate_window_reversal",
    """
ENTRY main {
  x = f32[1,2,6] parameter(0)
  w = f32[3,2,3] parameter(1)
  ROOT c = f32[1,3,12] convolution(x, w), window={size=3 pad=2_1 lhs_dilate=2 rhs_reversal=1}, dim_labels=bf0_oi0->bf0
}
""",
    [f32_4(1, 2, 6), f32_4(3, 2, 3)],
    grad=[0, 1],
    rtol=1e-3,
    atol=1e-4,
)
case(
    "while_dynamic_grad",
    """
cond {
  p = (f32[4], f32[]) parameter(0)
  s = f32[] get-tuple-element(p), index=1
  lim = f32[] constant(3)
  ROOT lt = pred[] compare(s, lim), direction=LT
}
body {
  p = (f32[4], f32[]) parameter(0)
  x = f32[4] get-tuple-element(p), index=0
  s = f32[] get-tuple-element(p), index=1
  one = f32[] constant(1)
  sn = f32[] add(s, one)
  y = f32[4] multiply(x, x)
  ROOT t = (f32[4], f32[]) tuple(y, sn)
}
ENTRY main {
  x = f32[4] parameter(0)
  z = f32[] parameter(1)
  t = (f32[4], f32[]) tuple(x, z)
  w = (f32[4], f32[]) while(t), condition=cond, body=body
  ROOT r = f32[4] get-tuple-element(w), index=0
}
""",
    [np.array([0.5, -0.9, 1.1, 0.3], np.float32), np.float32(1.0)],
    grad=[0],
)
case(
    "while_counter_inside_tuple_grad",
    """
cond {
  p = (s32[], f32[4], s32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] get-tuple-element(p), index=2
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[4], s32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[4] get-tuple-element(p), index=1
  n = s32[] get-tuple-element(p), index=2
  one = s32[] constant(1)
  j = s32[] add(i, one)
  y = f32[4] sine(x)
  ROOT t = (s32[], f32[4], s32[]) tuple(j, y, n)
}
ENTRY main {
  x = f32[4] parameter(0)
  z = s32[] constant(0)
  n = s32[] constant(3)
  t = (s32[], f32[4], s32[]) tuple(z, x, n)
  w = (s32[], f32[4], s32[]) while(t), condition=cond, body=body
  ROOT r = f32[4] get-tuple-element(w), index=1
}
""",
    [V4],
    grad=[0],
)
case(
    "infeed_refused",
    """
ENTRY main {
  t = token[] after-all()
  i = ((f32[4]), token[]) infeed(t)
  d = (f32[4]) get-tuple-element(i), index=0
  ROOT x = f32[4] get-tuple-element(d), index=0
}
""",
    [],
    ref=lambda: [np.zeros(4, np.float32)],
)
case(
    "outfeed_refused",
    """
ENTRY main {
  x = f32[4] parameter(0)
  t = token[] after-all()
  o = token[] outfeed(x, t), outfeed_shape=f32[4]{0}
  ROOT y = f32[4] negate(x)
}
""",
    [V4],
    ref=lambda x: [-x],
)
case(
    "param_replication_and_layout_mismatch",
    """HloModule m, entry_computation_layout={(f32[3,4]{0,1})->f32[4,3]{1,0}}

ENTRY main {
  x = f32[3,4]{0,1} parameter(0), parameter_replication={true}
  ROOT t = f32[4,3]{1,0} transpose(x), dimensions={1,0}
}
""",
    [M],
    grad=[0],
)
case(
    "complex_ops",
    """
ENTRY main {
  x = c64[4] parameter(0)
  e = c64[4] exponential(x)
  l = c64[4] log(x)
  s = c64[4] sqrt(x)
  a = f32[4] abs(x)
  g = c64[4] sign(x)
  n = c64[4] negate(x)
  cj = c64[4] divide(e, x)
  ROOT t = (c64[4], c64[4], c64[4], f32[4], c64[4], c64[4], c64[4]) tuple(e, l, s, a, g, n, cj)
}
""",
    [np.array([1 + 1j, -2 + 0j, 0.5 - 3j, -1e-3 - 1j], np.complex64)],
    rtol=1e-4,
    atol=1e-5,
)
case(
    "reduce_window_variadic_grad",
    """
comb {
  a0 = f32[] parameter(0)
  b0 = f32[] parameter(1)
  a1 = f32[] parameter(2)
  b1 = f32[] parameter(3)
  s = f32[] add(a0, a1)
  m = f32[] add(b0, b1)
  ROOT t = (f32[], f32[]) tuple(s, m)
}
ENTRY main {
  x = f32[4,6] parameter(0)
  y = f32[4,6] parameter(1)
  z = f32[] constant(0)
  ROOT r = (f32[2,3], f32[2,3]) reduce-window(x, y, z, z), window={size=2x2 stride=2x2}, to_apply=comb
}
""",
    [f32_4(4, 6), f32_4(4, 6)],
    grad=[0, 1],
)
case(
    "cross_program_prefetch_header",
    """HloModule m, entry_computation_layout={(f32[4]{0})->f32[4]{0}}, cross_program_prefetches={{0,{}}}, frontend_attributes={xla.sdy.meshes="{}"}

ENTRY main {
  x = f32[4]{0} parameter(0)
  ROOT y = f32[4]{0} sine(x)
}
""",
    [V4],
    grad=[0],
)
case(
    "input_output_alias",
    """HloModule m, input_output_alias={ {0}: (0, {}, may-alias) }, buffer_donor={ (1, {}) }

ENTRY main {
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  a = f32[4] add(x, y)
  ROOT t = (f32[4]) tuple(a)
}
""",
    [V4, f32_4(4)],
    grad=[0, 1],
)

CASES["input_output_alias"]["ref"] = lambda x, y: [x + y]

# ---- batch 5 --------------------------------------------------------------------------------
R5 = np.random.default_rng(13)


def f32_5(*s):
    return R5.standard_normal(s).astype(np.float32)


V4 = f32_5(4)
M = f32_5(3, 4)
ADD = """add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
"""
case(
    "get_dim_size_static",
    """
ENTRY main {
  x = f32[3,4] parameter(0)
  n = s32[] get-dimension-size(x), dimensions={1}
  f = f32[] convert(n)
  b = f32[3,4] broadcast(f), dimensions={}
  ROOT r = f32[3,4] multiply(x, b)
}
""",
    [M],
    grad=[0],
)
case(
    "bf16_reduce_accum",
    """
add {
  a = bf16[] parameter(0)
  b = bf16[] parameter(1)
  ROOT c = bf16[] add(a, b)
}
ENTRY main {
  x = bf16[4096] parameter(0)
  z = bf16[] constant(0)
  ROOT r = bf16[] reduce(x, z), dimensions={0}, to_apply=add
}
""",
    [np.full(4096, 1.0, ml_dtypes.bfloat16)],
)
case(
    "bf16_reduce_accum_f32region",
    """
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY main {
  x = bf16[4096] parameter(0)
  c = f32[4096] convert(x)
  z = f32[] constant(0)
  s = f32[] reduce(c, z), dimensions={0}, to_apply=add
  ROOT r = bf16[] convert(s)
}
""",
    [np.full(4096, 1.0, ml_dtypes.bfloat16)],
)
case(
    "iota_replica_groups",
    ADD
    + """
ENTRY main {
  x = f32[4] parameter(0)
  a = f32[4] all-reduce(x), replica_groups=[1,1]<=[1], to_apply=add
  g = f32[4] all-gather(a), replica_groups=[1,1]<=[1], dimensions={0}, use_global_device_ids=true, channel_id=3
  ROOT y = f32[4] multiply(g, x)
}
""",
    [V4],
    grad=[0],
)
case(
    "async_reduce_scatter",
    ADD
    + """
rs {
  a = f32[4,2] parameter(0)
  ROOT r = f32[4,2] reduce-scatter(a), replica_groups={{0}}, dimensions={0}, to_apply=add
}
ENTRY main {
  x = f32[4,2] parameter(0)
  s = ((f32[4,2]), f32[4,2]) async-start(x), calls=rs
  ROOT d = f32[4,2] async-done(s)
}
""",
    [f32_5(4, 2)],
    grad=[0],
)
case(
    "ag_start_tuple",
    """
ENTRY main {
  x = f32[4] parameter(0)
  y = f32[2,3] parameter(1)
  s = ((f32[4], f32[2,3]), (f32[4], f32[2,3])) all-gather-start(x, y), replica_groups={{0}}, dimensions={0}
  ROOT d = (f32[4], f32[2,3]) all-gather-done(s)
}
""",
    [V4, f32_5(2, 3)],
)
case(
    "cholesky_not_pd",
    """
ENTRY main {
  a = f32[3,3] parameter(0)
  ROOT l = f32[3,3] cholesky(a), lower=true
}
""",
    [np.array([[1, 2, 0], [2, 1, 0], [0, 0, 1]], np.float32)],
)
case(
    "trsm_singular",
    """
ENTRY main {
  a = f32[2,2] parameter(0)
  b = f32[2,1] parameter(1)
  ROOT x = f32[2,1] triangular-solve(a, b), left_side=true, lower=true, unit_diagonal=false, transpose_a=NO_TRANSPOSE
}
""",
    [np.array([[0, 0], [1, 2]], np.float32), np.array([[1], [2]], np.float32)],
)
case(
    "convert_to_f8_sat",
    """
ENTRY main {
  x = f32[6] parameter(0)
  a = f8e4m3fn[6] convert(x)
  b = f8e5m2[6] convert(x)
  c = bf16[6] convert(x)
  d = f16[6] convert(x)
  fa = f32[6] convert(a)
  fb = f32[6] convert(b)
  fc = f32[6] convert(c)
  fd = f32[6] convert(d)
  ROOT t = (f32[6], f32[6], f32[6], f32[6]) tuple(fa, fb, fc, fd)
}
""",
    [np.array([1000, -1e6, np.nan, 448, 3.3e38, 1e-9], np.float32)],
)
case(
    "compare_unsigned_on_signed",
    """
ENTRY main {
  x = s32[4] parameter(0)
  y = s32[4] parameter(1)
  a = pred[4] compare(x, y), direction=LT, type=UNSIGNED
  b = pred[4] compare(x, y), direction=LT, type=SIGNED
  f = f32[4] convert(x)
  g = f32[4] convert(y)
  c = pred[4] compare(f, g), direction=NE, type=TOTALORDER
  ROOT t = (pred[4], pred[4], pred[4]) tuple(a, b, c)
}
""",
    [np.array([-1, 1, 5, -3], np.int32), np.array([1, -1, 5, -2], np.int32)],
)
case(
    "dynamic_slice_unsigned_idx",
    """
ENTRY main {
  x = f32[6,4] parameter(0)
  i = u32[] parameter(1)
  j = u32[] parameter(2)
  ROOT s = f32[2,2] dynamic-slice(x, i, j), dynamic_slice_sizes={2,2}
}
""",
    [f32_5(6, 4), np.uint32(4294967295), np.uint32(1)],
    grad=[0],
)
case(
    "gather_unsigned_idx",
    """
ENTRY main {
  x = f32[6,4] parameter(0)
  i = u32[3,1] parameter(1)
  ROOT g = f32[3,4] gather(x, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}
}
""",
    [f32_5(6, 4), np.array([[0], [4294967295], [5]], np.uint32)],
    grad=[0],
)
case(
    "scatter_unsigned_idx",
    ADD
    + """
ENTRY main {
  x = f32[6] parameter(0)
  i = u8[3,1] parameter(1)
  u = f32[3] parameter(2)
  ROOT s = f32[6] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
}
""",
    [f32_5(6), np.array([[1], [255], [5]], np.uint8), f32_5(3)],
    grad=[0, 2],
)
case(
    "clamp_min_gt_max",
    """
ENTRY main {
  x = f32[4] parameter(0)
  lo = f32[4] constant({1, 1, 1, 1})
  hi = f32[4] constant({0, 0, 0, 0})
  a = f32[4] clamp(lo, x, hi)
  il = s32[] constant(5)
  ih = s32[] constant(-5)
  xi = s32[4] convert(x)
  b = s32[4] clamp(il, xi, ih)
  ROOT t = (f32[4], s32[4]) tuple(a, b)
}
""",
    [np.array([-3, 0.5, 3, np.nan], np.float32)],
)
case(
    "zero_size",
    ADD
    + """
ENTRY main {
  x = f32[0,3] parameter(0)
  z = f32[] constant(7)
  r = f32[3] reduce(x, z), dimensions={0}, to_apply=add
  s = f32[0,2] slice(x), slice={[0:0], [1:3]}
  v = f32[0,3] reverse(x), dimensions={0}
  p = f32[2,3] pad(x, z), padding=1_1x0_0
  ROOT t = (f32[3], f32[0,2], f32[0,3], f32[2,3]) tuple(r, s, v, p)
}
""",
    [np.zeros((0, 3), np.float32)],
)
case(
    "while_with_collective_and_pid",
    ADD
    + """
cond {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[4] get-tuple-element(p), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  r = f32[4] all-reduce(x), replica_groups={}, to_apply=add
  pid = u32[] partition-id()
  pf = f32[] convert(pid)
  pb = f32[4] broadcast(pf), dimensions={}
  y = f32[4] sine(r)
  w = f32[4] add(y, pb)
  ROOT t = (s32[], f32[4]) tuple(j, w)
}
ENTRY main {
  x = f32[4] parameter(0)
  z = s32[] constant(0)
  t = (s32[], f32[4]) tuple(z, x)
  w = (s32[], f32[4]) while(t), condition=cond, body=body
  ROOT r = f32[4] get-tuple-element(w), index=1
}
""",
    [V4],
    grad=[0],
)
case(
    "conditional_tuple_out",
    """
b0 {
  p = (f32[4], s32[]) parameter(0)
  a = f32[4] get-tuple-element(p), index=0
  i = s32[] get-tuple-element(p), index=1
  s = f32[4] sine(a)
  ROOT t = (f32[4], s32[]) tuple(s, i)
}
b1 {
  p = f32[4] parameter(0)
  c = f32[4] cosine(p)
  k = s32[] constant(-1)
  ROOT t = (f32[4], s32[]) tuple(c, k)
}
ENTRY main {
  i = s32[] parameter(0)
  x = f32[4] parameter(1)
  t = (f32[4], s32[]) tuple(x, i)
  ROOT r = (f32[4], s32[]) conditional(i, t, x), branch_computations={b0, b1}
}
""",
    [np.int32(0), V4],
    grad=[1],
)
case(
    "topk_nan_bf16",
    """
ENTRY main {
  x = bf16[6] parameter(0)
  ROOT r = (bf16[6], s32[6]) topk(x), k=6, largest=true
}
""",
    [np.array([1, np.nan, -np.inf, 2, 1, -0.0], ml_dtypes.bfloat16)],
)
case(
    "sort_default_compare_nan",
    """
cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT lt = pred[] compare(a, b), direction=LT
}
ENTRY main {
  k = f32[6] parameter(0)
  ROOT s = f32[6] sort(k), dimensions={0}, to_apply=cmp
}
""",
    [np.array([3, 1, -1, 2, 0, 5], np.float32)],
    grad=[0],
)
case(
    "fusion_output_alias",
    """
f {
  p = f32[4] parameter(0)
  q = f32[4] parameter(1)
  ROOT a = f32[4] add(p, q)
}
ENTRY main {
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  ROOT r = f32[4] fusion(x, y), kind=kLoop, calls=f, output_to_operand_aliasing={{}: (0, {})}
}
""",
    [V4, f32_5(4)],
    grad=[0, 1],
)
case(
    "copy_tuple",
    """
ENTRY main {
  x = f32[4] parameter(0)
  y = s32[2] parameter(1)
  t = (f32[4], s32[2]) tuple(x, y)
  c = (f32[4], s32[2]) copy(t)
  ROOT g = f32[4] get-tuple-element(c), index=0
}
""",
    [V4, np.array([1, 2], np.int32)],
    grad=[0],
)
case(
    "reduce_multi_dims_nonneutral_init",
    ADD
    + """
ENTRY main {
  x = f32[2,3,4] parameter(0)
  z = f32[] constant(10)
  ROOT r = f32[3] reduce(x, z), dimensions={0,2}, to_apply=add
}
""",
    [f32_5(2, 3, 4)],
    grad=[0],
)
case(
    "reduce_nonmonoid_region",
    """
f {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  m = f32[] multiply(a, b)
  ROOT s = f32[] add(m, a)
}
ENTRY main {
  x = f32[5] parameter(0)
  z = f32[] constant(1)
  ROOT r = f32[] reduce(x, z), dimensions={0}, to_apply=f
}
""",
    [np.array([1, 1, 1, 1, 1], np.float32)],
)
case(
    "exp_bf16",
    """
ENTRY main {
  x = bf16[6] parameter(0)
  e = bf16[6] exponential(x)
  t = bf16[6] tanh(x)
  l = bf16[6] log(bf16[6] abs(x))
  ROOT r = (bf16[6], bf16[6]) tuple(e, t)
}
""",
    [np.array([0.1, -3, 5.5, 10, -0.001, 1], ml_dtypes.bfloat16)],
    rtol=1e-2,
    atol=1e-2,
)
case(
    "atan2_complex_f64_mix",
    """
ENTRY main {
  x = f64[3] parameter(0)
  y = f64[3] parameter(1)
  a = f64[3] atan2(x, y)
  c = c128[3] complex(x, y)
  e = c128[3] exponential(c)
  ROOT t = (f64[3], c128[3]) tuple(a, e)
}
""",
    [np.array([1.0, -0.0, 0.0]), np.array([-1.0, -1.0, -0.0])],
)
case(
    "while_plain_with_top_collective",
    ADD
    + """
cond {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[4] get-tuple-element(p), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  y = f32[4] sine(x)
  ROOT t = (s32[], f32[4]) tuple(j, y)
}
ENTRY main {
  x0 = f32[4] parameter(0)
  x = f32[4] all-reduce(x0), replica_groups={}, to_apply=add
  z = s32[] constant(0)
  t = (s32[], f32[4]) tuple(z, x)
  w = (s32[], f32[4]) while(t), condition=cond, body=body
  ROOT r = f32[4] get-tuple-element(w), index=1
}
""",
    [V4],
    grad=[0],
)
_pd = np.array([[4, 2, 0], [2, 5, 1], [0, 1, 3]], np.float32)
_bad = np.array([[1, 2, 0], [2, 1, 0], [0, 0, 1]], np.float32)
_nm = _pd.copy()
_nm[2, 0] = np.nan
_nm[0, 2] = 7
case(
    "cholesky_batched_failures",
    """
ENTRY main {
  a = f32[3,3,3] parameter(0)
  l = f32[3,3,3] cholesky(a), lower=true
  u = f32[3,3,3] cholesky(a), lower=false
  ROOT t = (f32[3,3,3], f32[3,3,3]) tuple(l, u)
}
""",
    [np.stack([_pd, _bad, _nm])],
)
case(
    "copy_nested_tuple",
    """
ENTRY main {
  x = f32[4] parameter(0)
  y = s32[2] parameter(1)
  i = (f32[4], s32[2]) tuple(x, y)
  t = ((f32[4], s32[2]), f32[4]) tuple(i, x)
  c = ((f32[4], s32[2]), f32[4]) copy(t)
  g = (f32[4], s32[2]) get-tuple-element(c), index=0
  a = f32[4] get-tuple-element(g), index=0
  b = f32[4] get-tuple-element(c), index=1
  m = f32[4] multiply(a, b)
  ROOT r = (f32[4], (f32[4], s32[2])) tuple(m, g)
}
""",
    [V4, np.array([1, 2], np.int32)],
    grad=[0],
)

# ---- batch 6 --------------------------------------------------------------------------------
R6 = np.random.default_rng(17)


def f32_6(*s):
    return R6.standard_normal(s).astype(np.float32)


V4 = f32_6(4)
M = f32_6(3, 4)
case(
    "composite_call",
    """
comp {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  m = f32[4] multiply(a, b)
  ROOT t = f32[4] tanh(m)
}
ENTRY main {
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  ROOT c = f32[4] call(x, y), to_apply=comp, is_composite=true, frontend_attributes={composite.attributes={n = 1 : i32},composite.name="my.tanh_mul",composite.version="1"}
}
""",
    [V4, f32_6(4)],
    grad=[0, 1],
)
case(
    "async_thread",
    """
comp {
  a = f32[4] parameter(0)
  ROOT n = f32[4] exponential(a)
}
ENTRY main {
  p = f32[4] parameter(0)
  s = ((f32[4]), f32[4], s32[]) async-start(p), async_execution_thread="parallel_thread", calls=comp
  ROOT r = f32[4] async-done(s)
}
""",
    [V4],
    grad=[0],
    ref=lambda x: [np.exp(x)],
)
case(
    "result_accuracy",
    """
ENTRY main {
  x = f32[4] parameter(0)
  a = f32[4] exponential(x), result_accuracy={tolerance={atol=0,rtol=0,ulps=2}}
  b = f32[4] tanh(x), result_accuracy={mode=highest}
  ROOT t = (f32[4], f32[4]) tuple(a, b)
}
""",
    [V4],
    grad=[0],
)
case(
    "f8_variants",
    """
ENTRY main {
  x = f32[6] parameter(0)
  a = f8e4m3fnuz[6] convert(x)
  b = f8e5m2fnuz[6] convert(x)
  c = f8e4m3b11fnuz[6] convert(x)
  d = f8e4m3[6] convert(x)
  e = f8e3m4[6] convert(x)
  fa = f32[6] convert(a)
  fb = f32[6] convert(b)
  fc = f32[6] convert(c)
  fd = f32[6] convert(d)
  fe = f32[6] convert(e)
  ROOT t = (f32[6], f32[6], f32[6], f32[6], f32[6]) tuple(fa, fb, fc, fd, fe)
}
""",
    [np.array([0.3, -1.7, 1000, np.nan, -np.inf, 1e-6], np.float32)],
)
case(
    "f8_arith",
    """
ENTRY main {
  x = f8e4m3fn[4] parameter(0)
  y = f8e4m3fn[4] parameter(1)
  a = f8e4m3fn[4] add(x, y)
  m = f8e4m3fn[4] multiply(x, y)
  ROOT t = (f8e4m3fn[4], f8e4m3fn[4]) tuple(a, m)
}
""",
    [
        np.array([1, 2.5, -3, 100], ml_dtypes.float8_e4m3fn),
        np.array([0.125, 3, 7, 400], ml_dtypes.float8_e4m3fn),
    ],
)
case(
    "s4_arith",
    """
ENTRY main {
  x = s4[4] parameter(0)
  y = s4[4] parameter(1)
  a = s4[4] add(x, y)
  m = s4[4] multiply(x, y)
  d = s4[4] divide(x, y)
  ROOT t = (s4[4], s4[4], s4[4]) tuple(a, m, d)
}
""",
    [np.array([7, -8, 3, -1], ml_dtypes.int4), np.array([1, -1, 0, 2], ml_dtypes.int4)],
)
case(
    "sdy_custom_calls",
    """HloModule m, frontend_attributes={xla.sdy.meshes="{mesh = #sdy.mesh<[\\\"x\\\"=1]>}"}

ENTRY main {
  x = f32[4,2] parameter(0), frontend_attributes={xla.sdy.sharding="#sdy.sharding<@mesh, [{\\\"x\\\"}, {}]>"}
  y = f32[4,2] sine(x)
  ROOT r = f32[4,2] custom-call(y), custom_call_target="xla.sdy.FuncResultSharding", frontend_attributes={xla.sdy.sharding="#sdy.sharding_per_value<[<@mesh, [{\\\"x\\\"}, {}]>]>"}
}
""",
    [f32_6(4, 2)],
    grad=[0],
)
case(
    "token_entry",
    """
ENTRY main {
  x = f32[4] parameter(0)
  t = token[] parameter(1)
  t2 = token[] after-all(t)
  y = f32[4] add-dependency(x, t2)
  n = f32[4] negate(y)
  ROOT r = (f32[4], token[]) tuple(n, t2)
}
""",
    [V4],
    ref=lambda x: [-x],
)
case(
    "variadic_reduce_separable",
    """
comb {
  a0 = f32[] parameter(0)
  a1 = f32[] parameter(1)
  b0 = f32[] parameter(2)
  b1 = f32[] parameter(3)
  s = f32[] add(a0, b0)
  m = f32[] maximum(a1, b1)
  ROOT t = (f32[], f32[]) tuple(s, m)
}
ENTRY main {
  x = f32[3,4] parameter(0)
  y = f32[3,4] parameter(1)
  z = f32[] constant(0)
  n = f32[] constant(-inf)
  ROOT r = (f32[3], f32[3]) reduce(x, y, z, n), dimensions={1}, to_apply=comb
}
""",
    [M, f32_6(3, 4)],
    grad=[0, 1],
)
case(
    "scatter_overwrite",
    """
second {
  a = f32[] parameter(0)
  ROOT b = f32[] parameter(1)
}
ENTRY main {
  op = f32[6,2] parameter(0)
  idx = s32[3,1] parameter(1)
  up = f32[3,2] parameter(2)
  ROOT s = f32[6,2] scatter(op, idx, up), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=second
}
""",
    [f32_6(6, 2), np.array([[4], [0], [2]], np.int32), f32_6(3, 2)],
    grad=[0, 2],
)
case(
    "scatter_max",
    """
mx {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] maximum(a, b)
}
ENTRY main {
  op = f32[6] parameter(0)
  idx = s32[3,1] parameter(1)
  up = f32[3] parameter(2)
  ROOT s = f32[6] scatter(op, idx, up), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=mx
}
""",
    [f32_6(6), np.array([[4], [0], [2]], np.int32), f32_6(3) + 1],
    grad=[0, 2],
)
case(
    "sort_carry_grad",
    """
cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = f32[] parameter(2)
  d = f32[] parameter(3)
  ROOT lt = pred[] compare(a, b), direction=LT
}
ENTRY main {
  k = f32[2,5] parameter(0)
  v = f32[2,5] parameter(1)
  ROOT s = (f32[2,5], f32[2,5]) sort(k, v), dimensions={1}, to_apply=cmp
}
""",
    [f32_6(2, 5), f32_6(2, 5)],
    grad=[0, 1],
)
case(
    "all_reduce_pred_and_int_max",
    """
andp {
  a = pred[] parameter(0)
  b = pred[] parameter(1)
  ROOT c = and(a, b)
}
mx {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT c = s32[] maximum(a, b)
}
ENTRY main {
  p = pred[4] parameter(0)
  i = s32[4] parameter(1)
  a = pred[4] all-reduce(p), replica_groups={}, to_apply=andp
  b = s32[4] all-reduce(i), replica_groups={}, to_apply=mx
  ROOT t = (pred[4], s32[4]) tuple(a, b)
}
""",
    [np.array([True, False, True, True]), np.array([1, -2, 3, 4], np.int32)],
)
case(
    "reduce_window_mul_grad",
    """
mul {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] multiply(a, b)
}
ENTRY main {
  x = f32[4,4] parameter(0)
  one = f32[] constant(1)
  ROOT r = f32[3,3] reduce-window(x, one), window={size=2x2}, to_apply=mul
}
""",
    [f32_6(4, 4)],
    grad=[0],
)
case(
    "reduce_mul_grad",
    """
mul {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] multiply(a, b)
}
ENTRY main {
  x = f32[3,4] parameter(0)
  one = f32[] constant(1)
  ROOT r = f32[3] reduce(x, one), dimensions={1}, to_apply=mul
}
""",
    [M],
    grad=[0],
)
case(
    "dot_general_batch_grad",
    """
ENTRY main {
  a = f32[2,3,4] parameter(0)
  b = f32[2,5,4] parameter(1)
  ROOT d = f32[2,3,5] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={2}, operand_precision={highest,highest}
}
""",
    [f32_6(2, 3, 4), f32_6(2, 5, 4)],
    grad=[0, 1],
)
case(
    "f64_while_s64",
    """
cond {
  p = (s64[], f64[3]) parameter(0)
  i = s64[] get-tuple-element(p), index=0
  n = s64[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s64[], f64[3]) parameter(0)
  i = s64[] get-tuple-element(p), index=0
  x = f64[3] get-tuple-element(p), index=1
  one = s64[] constant(1)
  j = s64[] add(i, one)
  y = f64[3] multiply(x, x)
  ROOT t = (s64[], f64[3]) tuple(j, y)
}
ENTRY main {
  x = f64[3] parameter(0)
  z = s64[] constant(0)
  t = (s64[], f64[3]) tuple(z, x)
  w = (s64[], f64[3]) while(t), condition=cond, body=body
  ROOT r = f64[3] get-tuple-element(w), index=1
}
""",
    [np.array([1.01, 0.9, -1.1])],
    grad=[0],
)
case(
    "conditional_pred_tuple_branches",
    """
tb {
  p = (f32[4], f32[4]) parameter(0)
  a = f32[4] get-tuple-element(p), index=0
  b = f32[4] get-tuple-element(p), index=1
  ROOT m = f32[4] multiply(a, b)
}
fb {
  p = (f32[4], f32[4]) parameter(0)
  a = f32[4] get-tuple-element(p), index=0
  ROOT n = f32[4] negate(a)
}
ENTRY main {
  c = pred[] parameter(0)
  x = f32[4] parameter(1)
  y = f32[4] parameter(2)
  t = (f32[4], f32[4]) tuple(x, y)
  ROOT r = f32[4] conditional(c, t, t), true_computation=tb, false_computation=fb
}
""",
    [np.bool_(True), V4, f32_6(4)],
    grad=[1, 2],
)
case(
    "reduce_window_argmax_pool_grad",
    """
argmax {
  av = f32[] parameter(0)
  ai = s32[] parameter(1)
  bv = f32[] parameter(2)
  bi = s32[] parameter(3)
  gt = pred[] compare(av, bv), direction=GT
  v = f32[] select(gt, av, bv)
  i = s32[] select(gt, ai, bi)
  ROOT r = (f32[], s32[]) tuple(v, i)
}
ENTRY main {
  x = f32[4,6] parameter(0)
  io = s32[4,6] iota(), iota_dimension=1
  n = f32[] constant(-inf)
  z = s32[] constant(-1)
  ROOT r = (f32[2,3], s32[2,3]) reduce-window(x, io, n, z), window={size=2x2 stride=2x2}, to_apply=argmax
}
""",
    [f32_6(4, 6)],
    grad=[0],
)
case(
    "reduce_window_padded_mul_dilated_grad",
    """
mul {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] multiply(a, b)
}
ENTRY main {
  x = f32[5,5] parameter(0)
  two = f32[] constant(2)
  ROOT r = f32[3,5] reduce-window(x, two), window={size=2x3 stride=2x1 pad=1_0x1_1 rhs_dilate=1x1 lhs_dilate=1x1}, to_apply=mul
}
""",
    [f32_6(5, 5)],
    grad=[0],
)

# ---- batch 7 --------------------------------------------------------------------------------
R7 = np.random.default_rng(19)


def f32_7(*s):
    return R7.standard_normal(s).astype(np.float32)


V4 = f32_7(4)
M = f32_7(3, 4)
case(
    "hyphen_names",
    """HloModule m

%fused_computation.1 (param_0.2: f32[4]) -> f32[4] {
  %param_0.2 = f32[4]{0} parameter(0)
  ROOT %exponential.3 = f32[4]{0} exponential(f32[4]{0} %param_0.2)
}

ENTRY %main.5 (Arg_0.1: f32[4]) -> (f32[4], f32[4]) {
  %Arg_0.1 = f32[4]{0} parameter(0)
  %custom-call.3 = f32[4]{0} custom-call(f32[4]{0} %Arg_0.1), custom_call_target="Sharding", sharding={replicated}
  %fusion.4 = f32[4]{0} fusion(f32[4]{0} %custom-call.3), kind=kLoop, calls=%fused_computation.1
  %tuple.6 = (f32[4]{0}, f32[4]{0}) tuple(%fusion.4, %custom-call.3)
  %get-tuple-element.7 = f32[4]{0} get-tuple-element(%tuple.6), index=0
  %get-tuple-element.8 = f32[4]{0} get-tuple-element(%tuple.6), index=1
  ROOT %tuple.9 = (f32[4]{0}, f32[4]{0}) tuple(%get-tuple-element.7, %get-tuple-element.8)
}
""",
    [V4],
    grad=[0],
)
case(
    "comments_and_crlf",
    "HloModule m\r\n\r\n/* a block comment */\r\nENTRY main {\r\n  x = f32[4] parameter(0) /* trailing */\r\n  // line comment\r\n  ROOT y = f32[4] negate(x)\r\n}\r\n",
    [V4],
)
case(
    "root_not_last",
    """
ENTRY main {
  x = f32[4] parameter(0)
  ROOT y = f32[4] negate(x)
  z = f32[4] exponential(x)
}
""",
    [V4],
    grad=[0],
)
case(
    "forward_reference",
    """
ENTRY main {
  y = f32[4] negate(z)
  x = f32[4] parameter(0)
  z = f32[4] exponential(x)
  ROOT r = f32[4] add(y, z)
}
""",
    [V4],
    grad=[0],
)
case(
    "complex_layouts",
    """HloModule m, entry_computation_layout={(f32[8,128]{1,0:T(8,128)(2,1)E(32)S(1)})->f32[8,128]{1,0:T(8,128)}}

ENTRY main {
  x = f32[8,128]{1,0:T(8,128)(2,1)E(32)S(1)} parameter(0)
  ROOT y = f32[8,128]{1,0:T(8,128)} negate(x)
}
""",
    [f32_7(8, 128)],
    grad=[0],
)
case(
    "nan_payload_const",
    """
ENTRY main {
  a = f32[3] constant({nan, -nan, nan(0x1)})
  b = bf16[2] constant({nan, -inf})
  c = f32[3] constant({-0, 1.5e+10, 1E-3})
  ROOT t = (f32[3], bf16[2], f32[3]) tuple(a, b, c)
}
""",
    [],
)
case(
    "execution_thread",
    """
comp {
  a = f32[4] parameter(0)
  ROOT n = f32[4] exponential(a)
}, execution_thread="host"
ENTRY main {
  p = f32[4] parameter(0)
  s = ((f32[4]), f32[4], s32[]) async-start(p), async_execution_thread="host", calls=comp
  ROOT r = f32[4] async-done(s)
}
""",
    [V4],
    ref=lambda x: [np.exp(x)],
)
case(
    "dynamic_dim_unbounded",
    """
ENTRY main {
  x = f32[?,3] parameter(0)
  ROOT y = f32[?,3] negate(x)
}
""",
    [M[:, :3]],
    ref=lambda x: [-x],
)
case(
    "tuple_sharding_nested",
    """
ENTRY main {
  p = (f32[4], (f32[2], s32[])) parameter(0), sharding={{replicated}, {maximal device=0}, {devices=[2]0,1}}
  a = f32[4] get-tuple-element(p), index=0, sharding={replicated}
  q = (f32[2], s32[]) get-tuple-element(p), index=1, sharding={{maximal device=0}, {devices=[2]0,1}}
  b = f32[2] get-tuple-element(q), index=0
  ROOT r = (f32[4], f32[2]) tuple(a, b), sharding={{replicated}, {replicated}}
}
""",
    [V4, f32_7(2), np.int32(3)],
)
case(
    "fusion_multi_output",
    """
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
f {
  p = f32[3,4] parameter(0)
  e = f32[3,4] exponential(p)
  z = f32[] constant(0)
  r = f32[3] reduce(e, z), dimensions={1}, to_apply=add
  ROOT t = (f32[3,4], f32[3]) tuple(e, r)
}
ENTRY main {
  x = f32[3,4] parameter(0)
  fu = (f32[3,4], f32[3]) fusion(x), kind=kInput, calls=f
  a = f32[3,4] get-tuple-element(fu), index=0
  b = f32[3] get-tuple-element(fu), index=1
  bb = f32[3,4] broadcast(b), dimensions={0}
  ROOT d = f32[3,4] divide(a, bb)
}
""",
    [M],
    grad=[0],
)
case(
    "bitcast_layout_change",
    """
ENTRY main {
  x = f32[3,4]{1,0} parameter(0)
  b = f32[4,3]{0,1} bitcast(x)
  ROOT c = f32[4,3]{1,0} copy(b)
}
""",
    [M],
    grad=[0],
    ref=lambda x: [x.T],
)
case(
    "scatter_scalar_indices_implicit",
    """
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY main {
  op = f32[5,3] parameter(0)
  idx = s32[] parameter(1)
  up = f32[3] parameter(2)
  ROOT s = f32[5,3] scatter(op, idx, up), update_window_dims={0}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=0, to_apply=add
}
""",
    [f32_7(5, 3), np.int32(2), f32_7(3)],
    grad=[0, 2],
)
case(
    "gather_index_vector_dim_middle",
    """
ENTRY main {
  op = f32[5,6] parameter(0)
  idx = s32[2,2,3] parameter(1)
  ROOT g = f32[2,3,1,2] gather(op, idx), offset_dims={2,3}, collapsed_slice_dims={}, start_index_map={0,1}, index_vector_dim=1, slice_sizes={1,2}
}
""",
    [f32_7(5, 6), np.array([[[0, 4, 2], [1, 5, -3]], [[3, 3, 9], [0, 0, 4]]], np.int32)],
    grad=[0],
)
case(
    "dot_no_contracting_outer",
    """
ENTRY main {
  a = f32[3] parameter(0)
  b = f32[4] parameter(1)
  ROOT d = f32[3,4] dot(a, b), lhs_contracting_dims={}, rhs_contracting_dims={}
}
""",
    [f32_7(3), f32_7(4)],
    grad=[0, 1],
)
case(
    "convolution_int8",
    """
ENTRY main {
  x = s8[1,5,5,2] parameter(0)
  w = s8[3,3,2,4] parameter(1)
  ROOT c = s32[1,5,5,4] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
}
""",
    [
        R7.integers(-128, 127, (1, 5, 5, 2)).astype(np.int8),
        R7.integers(-128, 127, (3, 3, 2, 4)).astype(np.int8),
    ],
)
case(
    "rng_bit_gen_in_while",
    """
cond {
  p = (s32[], u64[2], u32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], u64[2], u32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  s = u64[2] get-tuple-element(p), index=1
  acc = u32[4] get-tuple-element(p), index=2
  one = s32[] constant(1)
  j = s32[] add(i, one)
  r = (u64[2], u32[4]) rng-bit-generator(s), algorithm=rng_philox
  ns = u64[2] get-tuple-element(r), index=0
  bits = u32[4] get-tuple-element(r), index=1
  a2 = u32[4] xor(acc, bits)
  ROOT t = (s32[], u64[2], u32[4]) tuple(j, ns, a2)
}
ENTRY main {
  s = u64[2] parameter(0)
  z = s32[] constant(0)
  zz = u32[4] broadcast(u32[] constant(0)), dimensions={}
  t = (s32[], u64[2], u32[4]) tuple(z, s, zz)
  w = (s32[], u64[2], u32[4]) while(t), condition=cond, body=body
  ROOT r = u32[4] get-tuple-element(w), index=2
}
""",
    [np.array([5, 6], np.uint64)],
)

# ---- batch 8 --------------------------------------------------------------------------------
R8 = np.random.default_rng(23)


def f32_8(*s):
    return R8.standard_normal(s).astype(np.float32)


def rw(op, window, out, init):
    return f"""
r {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] {op}(a, b)
}}
ENTRY main {{
  x = f32[4,5] parameter(0)
  v = f32[] constant({init})
  ROOT y = f32[{out}] reduce-window(x, v), window={{{window}}}, to_apply=r
}}
"""


W = "size=2x3 stride=2x1 pad=1_0x2_1 lhs_dilate=2x1 rhs_dilate=1x2"
case("rw_add_init_pad_dil", rw("add", W, "4,4", 1.5), [f32_8(4, 5)], grad=[0])
case("rw_max_init_pad_dil", rw("maximum", W, "4,4", 0.25), [f32_8(4, 5)], grad=[0])
case(
    "rw_min_init_pad", rw("minimum", "size=3x2 pad=1_1x0_1", "4,5", -0.25), [f32_8(4, 5)], grad=[0]
)
case("rw_mul_init_pad_dil", rw("multiply", W, "4,4", 2), [f32_8(4, 5)], grad=[0])
case("rw_sub_init_pad", rw("subtract", "size=2x2 pad=1_0x0_1", "4,5", 1), [f32_8(4, 5)], grad=[0])

# ---- batch 9 --------------------------------------------------------------------------------
R9 = np.random.default_rng(29)


def f32_9(*s):
    return R9.standard_normal(s).astype(np.float32)


V4 = f32_9(4)
M = f32_9(3, 4)
case(
    "sas_init_pad",
    """
ge {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=GE
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY main {
  x = f32[4,5] parameter(0)
  s = f32[3,3] parameter(1)
  z = f32[] constant(1.5)
  ROOT r = f32[4,5] select-and-scatter(x, s, z), window={size=2x3 stride=2x2 pad=1_1x1_1}, select=ge, scatter=add
}
""",
    [f32_9(4, 5), f32_9(3, 3)],
    grad=[1],
)
case(
    "rw_bf16_generic",
    """
mul {
  a = bf16[] parameter(0)
  b = bf16[] parameter(1)
  ROOT c = bf16[] multiply(a, b)
}
ENTRY main {
  x = bf16[6] parameter(0)
  one = bf16[] constant(1)
  ROOT r = bf16[5] reduce-window(x, one), window={size=2}, to_apply=mul
}
""",
    [f32_9(6).astype(ml_dtypes.bfloat16)],
    rtol=1e-2,
    atol=1e-2,
)
case(
    "rw_int_variadic_nonsep",
    """
comb {
  a0 = s32[] parameter(0)
  a1 = s32[] parameter(1)
  b0 = s32[] parameter(2)
  b1 = s32[] parameter(3)
  s = s32[] add(a0, b1)
  m = s32[] maximum(a1, b0)
  ROOT t = (s32[], s32[]) tuple(s, m)
}
ENTRY main {
  x = s32[6] parameter(0)
  y = s32[6] parameter(1)
  z = s32[] constant(0)
  n = s32[] constant(-100)
  ROOT r = (s32[3], s32[3]) reduce-window(x, y, z, n), window={size=2 stride=2}, to_apply=comb
}
""",
    [np.arange(6, dtype=np.int32), np.array([5, -3, 2, 8, 1, 0], np.int32)],
)
case(
    "scan_dus_while",
    """
cond {
  p = (s32[], f32[5,3], f32[3]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[5,3], f32[3]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  buf = f32[5,3] get-tuple-element(p), index=1
  h = f32[3] get-tuple-element(p), index=2
  one = s32[] constant(1)
  j = s32[] add(i, one)
  h2 = f32[3] tanh(h)
  r = f32[1,3] reshape(h2)
  z = s32[] constant(0)
  nb = f32[5,3] dynamic-update-slice(buf, r, i, z)
  ROOT t = (s32[], f32[5,3], f32[3]) tuple(j, nb, h2)
}
ENTRY main {
  h0 = f32[3] parameter(0)
  z = s32[] constant(0)
  zero = f32[] constant(0)
  b = f32[5,3] broadcast(zero), dimensions={}
  t = (s32[], f32[5,3], f32[3]) tuple(z, b, h0)
  w = (s32[], f32[5,3], f32[3]) while(t), condition=cond, body=body
  ROOT r = f32[5,3] get-tuple-element(w), index=1
}
""",
    [f32_9(3)],
    grad=[0],
)
case(
    "sort3_unstable_second_key",
    """
cmp {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  c = f32[] parameter(2)
  d = f32[] parameter(3)
  e = u32[] parameter(4)
  f = u32[] parameter(5)
  ROOT lt = pred[] compare(c, d), direction=GT
}
ENTRY main {
  k = s32[7] parameter(0)
  v = f32[7] parameter(1)
  w = u32[7] parameter(2)
  ROOT s = (s32[7], f32[7], u32[7]) sort(k, v, w), dimensions={0}, to_apply=cmp
}
""",
    [np.arange(7, dtype=np.int32), f32_9(7), np.arange(7, dtype=np.uint32) * 3],
    grad=[1],
)
case(
    "reduce_region_with_const",
    """
f {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  s = f32[] add(a, b)
  lo = f32[] constant(-1)
  hi = f32[] constant(1)
  ROOT c = f32[] clamp(lo, s, hi)
}
ENTRY main {
  x = f32[3,4] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[3] reduce(x, z), dimensions={1}, to_apply=f
}
""",
    [M * 0.4],
)
case(
    "complex_dot_fft_grad",
    """
ENTRY main {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  c = c64[4] complex(a, b)
  f = c64[4] fft(c), fft_type=FFT, fft_length={4}
  m = c64[4,4] parameter(2)
  d = c64[4] dot(m, f), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  r = f32[4] real(d)
  i = f32[4] imag(d)
  ROOT t = (f32[4], f32[4]) tuple(r, i)
}
""",
    [V4, f32_9(4), (f32_9(4, 4) + 1j * f32_9(4, 4)).astype(np.complex64)],
    grad=[0, 1],
    rtol=1e-4,
    atol=1e-4,
)
case(
    "dot_int4",
    """
ENTRY main {
  a = s4[2,3] parameter(0)
  b = s4[3,2] parameter(1)
  ROOT d = s32[2,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
""",
    [
        np.array([[1, -2, 7], [-8, 3, 0]], ml_dtypes.int4),
        np.array([[1, 2], [3, -4], [5, 6]], ml_dtypes.int4),
    ],
)
case(
    "all_gather_in_while",
    """
cond {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(2)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[4] get-tuple-element(p), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  g = f32[4] all-gather(x), replica_groups={{0}}, dimensions={0}
  rid = u32[] replica-id()
  y = f32[4] multiply(g, g)
  ROOT t = (s32[], f32[4]) tuple(j, y)
}
ENTRY main {
  x = f32[4] parameter(0)
  z = s32[] constant(0)
  t = (s32[], f32[4]) tuple(z, x)
  w = (s32[], f32[4]) while(t), condition=cond, body=body
  ROOT r = f32[4] get-tuple-element(w), index=1
}
""",
    [V4 * 0.5],
    grad=[0],
)
case(
    "custom_call_status_returning_unknown",
    """
ENTRY main {
  x = f32[4] parameter(0)
  ROOT y = (f32[4], s32[]) custom-call(x), custom_call_target="my_status_kernel", api_version=API_VERSION_STATUS_RETURNING, schedule=SCHEDULE_LATEST
}
""",
    [V4],
    ref=lambda x: [x, np.int32(0)],
)

# ---- batch 10 --------------------------------------------------------------------------------
R10 = np.random.default_rng(31)


def f32_10(*s):
    return R10.standard_normal(s).astype(np.float32)


V4 = f32_10(4)
case(
    "while_nested_tuple_state",
    """
cond {
  p = (s32[], (f32[4], f32[])) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], (f32[4], f32[])) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  q = (f32[4], f32[]) get-tuple-element(p), index=1
  x = f32[4] get-tuple-element(q), index=0
  s = f32[] get-tuple-element(q), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  sb = f32[4] broadcast(s), dimensions={}
  y = f32[4] multiply(x, sb)
  q2 = (f32[4], f32[]) tuple(y, s)
  ROOT t = (s32[], (f32[4], f32[])) tuple(j, q2)
}
ENTRY main {
  x = f32[4] parameter(0)
  s = f32[] parameter(1)
  z = s32[] constant(0)
  q = (f32[4], f32[]) tuple(x, s)
  t = (s32[], (f32[4], f32[])) tuple(z, q)
  w = (s32[], (f32[4], f32[])) while(t), condition=cond, body=body
  r = (f32[4], f32[]) get-tuple-element(w), index=1
  ROOT y = f32[4] get-tuple-element(r), index=0
}
""",
    [V4, np.float32(0.9)],
    grad=[0, 1],
)
case(
    "conditional_nested_tuple_out",
    """
b0 {
  p = f32[4] parameter(0)
  s = f32[4] sine(p)
  c = f32[] constant(1)
  i = (f32[4], f32[]) tuple(s, c)
  ROOT t = ((f32[4], f32[]), f32[4]) tuple(i, p)
}
b1 {
  p = f32[4] parameter(0)
  s = f32[4] cosine(p)
  c = f32[] constant(2)
  i = (f32[4], f32[]) tuple(s, c)
  ROOT t = ((f32[4], f32[]), f32[4]) tuple(i, s)
}
ENTRY main {
  k = s32[] parameter(0)
  x = f32[4] parameter(1)
  r = ((f32[4], f32[]), f32[4]) conditional(k, x, x), branch_computations={b0, b1}
  a = (f32[4], f32[]) get-tuple-element(r), index=0
  b = f32[4] get-tuple-element(a), index=0
  c = f32[] get-tuple-element(a), index=1
  d = f32[4] get-tuple-element(r), index=1
  cb = f32[4] broadcast(c), dimensions={}
  e = f32[4] multiply(b, cb)
  ROOT o = f32[4] add(e, d)
}
""",
    [np.int32(1), V4],
    grad=[1],
)
case(
    "call_nested_tuple",
    """
g {
  p = f32[4] parameter(0)
  q = (f32[4], s32[]) parameter(1)
  a = f32[4] get-tuple-element(q), index=0
  m = f32[4] multiply(p, a)
  i = s32[] get-tuple-element(q), index=1
  r = (f32[4], s32[]) tuple(m, i)
  ROOT t = ((f32[4], s32[]), f32[4]) tuple(r, a)
}
ENTRY main {
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  k = s32[] constant(3)
  q = (f32[4], s32[]) tuple(y, k)
  c = ((f32[4], s32[]), f32[4]) call(x, q), to_apply=g
  r = (f32[4], s32[]) get-tuple-element(c), index=0
  ROOT m = f32[4] get-tuple-element(r), index=0
}
""",
    [V4, f32_10(4)],
    grad=[0, 1],
)
case(
    "reshape_inferred_dim",
    """
ENTRY main {
  x = f32[3,4] parameter(0)
  ROOT r = f32[2,6] reshape(x), inferred_dimension=1
}
""",
    [f32_10(3, 4)],
    grad=[0],
)
case(
    "opt_barrier_with_token",
    """
ENTRY main {
  x = f32[4] parameter(0)
  t = token[] after-all()
  b = (f32[4], token[]) tuple(x, t)
  o = (f32[4], token[]) opt-barrier(b)
  y = f32[4] get-tuple-element(o), index=0
  ROOT n = f32[4] sine(y)
}
""",
    [V4],
    grad=[0],
)
case(
    "iota_layout_broadcast_transpose",
    """
ENTRY main {
  i = s32[3,4]{0,1} iota(), iota_dimension=1
  x = f32[3,4]{0,1} parameter(0)
  c = f32[3,4]{0,1} convert(i)
  t = f32[4,3]{1,0} transpose(c), dimensions={1,0}
  xt = f32[4,3]{0,1} transpose(x), dimensions={1,0}
  b = f32[2,4,3] broadcast(t), dimensions={1,2}
  s = f32[4,3] add(t, xt)
  ROOT r = (f32[2,4,3], f32[4,3]) tuple(b, s)
}
""",
    [f32_10(3, 4)],
    grad=[0],
)
case(
    "all_reduce_global_ids_constrain",
    """HloModule m, replica_count=1, num_partitions=1
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY main {
  x = f32[4] parameter(0)
  ROOT r = f32[4] all-reduce(x), channel_id=5, replica_groups={{0}}, use_global_device_ids=true, constrain_layout=true, to_apply=add
}
""",
    [V4],
    grad=[0],
)
case(
    "rng_int_uniform",
    """
ENTRY main {
  lo = s32[] constant(3)
  hi = s32[] constant(4)
  ROOT i = s32[10] rng(lo, hi), distribution=rng_uniform
}
""",
    [],
)

# ---- batch 11 --------------------------------------------------------------------------------
V4 = np.arange(4, dtype=np.float32)
case(
    "empty_tuple_root",
    """
ENTRY main {
  x = f32[4] parameter(0)
  ROOT t = () tuple()
}
""",
    [V4],
    ref=lambda x: [],
)
case(
    "tuple_with_empty_tuple",
    """
ENTRY main {
  x = f32[4] parameter(0)
  e = () tuple()
  ROOT t = (f32[4], ()) tuple(x, e)
}
""",
    [V4],
)
case(
    "token_only_root",
    """
ENTRY main {
  ROOT t = token[] after-all()
}
""",
    [],
    ref=lambda: [],
)
case(
    "no_params_const_root",
    """
ENTRY main {
  ROOT c = f32[2,2] constant({{1, 2}, {3, 4}})
}
""",
    [],
)
case(
    "scalar_pred_param_select_tuple",
    """
ENTRY main {
  p = pred[] parameter(0)
  a = f32[4] parameter(1)
  b = f32[4] parameter(2)
  ROOT s = f32[4] select(p, a, b)
}
""",
    [np.bool_(True), V4, -V4],
    grad=[1, 2],
)

# ---- batch 12 --------------------------------------------------------------------------------
case(
    "int64_semantics",
    """
ENTRY main {
  a = s64[5] parameter(0)
  b = s64[5] parameter(1)
  d = s64[5] divide(a, b)
  r = s64[5] remainder(a, b)
  sh = s64[5] shift-left(a, b)
  sr = s64[5] shift-right-logical(a, b)
  p = s64[5] popcnt(a)
  ua = u64[5] convert(a)
  c = u64[] constant(18446744073709551615)
  cb = u64[5] broadcast(c), dimensions={}
  m = u64[5] multiply(ua, cb)
  f = f64[5] convert(a)
  ROOT t = (s64[5], s64[5], s64[5], s64[5], s64[5], u64[5], f64[5]) tuple(d, r, sh, sr, p, m, f)
}
""",
    [
        np.array([-9223372036854775808, 5, -7, 1 << 40, 3], np.int64),
        np.array([-1, 0, 2, 64, 63], np.int64),
    ],
)
case(
    "f64_math",
    """
ENTRY main {
  x = f64[4] parameter(0)
  e = f64[4] exponential(x)
  l = f64[4] log-plus-one(x)
  c = f32[4] convert(x)
  ROOT t = (f64[4], f64[4], f32[4]) tuple(e, l, c)
}
""",
    [np.array([1e-300, 0.1, 7, -0.5])],
    grad=[0],
)
