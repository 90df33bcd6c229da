"""The custom calls of XLA's GPU compiler (``rehydrate/ops/gpu.py``), from HLO text written here
in the form an optimised GPU dump has (tuple results with a scratch buffer read by
``get-tuple-element``, backend configs as JSON, a convolution's ``window=``/``dim_labels=``,
layouts in the shapes). Values against NumPy computing the documented semantics; gradients
against JAX differentiating the same semantics written with ``jnp``/``lax``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from jax import lax

import hlopipe
from hlopipe.errors import UnsupportedOpError

F32 = np.float32
_rng = np.random.default_rng(52)


def _f(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (_rng.standard_normal(shape) * scale).astype(F32)


def _hlo(body: str, pre: str = "") -> str:
    return f"HloModule m, is_scheduled=true\n\n{pre}\nENTRY main {{\n  {body}\n}}\n"


def _config(key: str, **fields: Any) -> str:
    return json.dumps(
        {"operation_queue_id": "0", "wait_on_operation_queues": [], key: fields},
        separators=(",", ":"),
    )


def _dnums(lc: list[int], rc: list[int], lb: list[int] = [], rb: list[int] = []) -> dict:  # noqa: B006
    return {
        "lhs_contracting_dimensions": [str(i) for i in lc],
        "rhs_contracting_dimensions": [str(i) for i in rc],
        "lhs_batch_dimensions": [str(i) for i in lb],
        "rhs_batch_dimensions": [str(i) for i in rb],
    }


def _gemm_config(dnums: dict, epilogue: str = "DEFAULT", **extra: Any) -> str:
    fields = {
        "alpha_real": 1,
        "alpha_imag": 0,
        "beta": 0,
        "dot_dimension_numbers": dnums,
        "precision_config": {"operand_precision": ["DEFAULT", "DEFAULT"], "algorithm": "ALG_UNSET"},
        "epilogue": epilogue,
        "lhs_stride": "0",
        "rhs_stride": "0",
        "grad_x": False,
        "grad_y": False,
        "damax_output": False,
    }
    fields.update(extra)
    return _config("gemm_backend_config", **fields)


# ---- NumPy: the documented semantics -----------------------------------------------------------


def np_dot_general(a: np.ndarray, b: np.ndarray, dims: dict) -> np.ndarray:
    lc = [int(i) for i in dims["lhs_contracting_dimensions"]]
    rc = [int(i) for i in dims["rhs_contracting_dimensions"]]
    lb = [int(i) for i in dims["lhs_batch_dimensions"]]
    rb = [int(i) for i in dims["rhs_batch_dimensions"]]
    lf = [i for i in range(a.ndim) if i not in lc + lb]
    rf = [i for i in range(b.ndim) if i not in rc + rb]
    a2 = a.astype(np.float64).transpose(lb + lf + lc)
    b2 = b.astype(np.float64).transpose(rb + rc + rf)
    bs = a2.shape[: len(lb)]
    fa = a2.shape[len(lb) : len(lb) + len(lf)]
    fb = b2.shape[len(rb) + len(rc) :]
    k = int(np.prod(a2.shape[len(lb) + len(lf) :]))
    out = a2.reshape(*bs, int(np.prod(fa)), k) @ b2.reshape(*bs, k, int(np.prod(fb)))
    return out.reshape(*bs, *fa, *fb)


def np_gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def np_conv_nhwc(x: np.ndarray, w: np.ndarray, stride: int, pad: int, dil: int) -> np.ndarray:
    """2-D convolution (cross-correlation), x [b, h, w, i], w [kh, kw, i, o], by loops."""
    b, h, wd, _ = x.shape
    kh, kw, _, o = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    oh = (h + 2 * pad - dil * (kh - 1) - 1) // stride + 1
    ow = (wd + 2 * pad - dil * (kw - 1) - 1) // stride + 1
    out = np.zeros((b, oh, ow, o))
    for r in range(oh):
        for c in range(ow):
            for i in range(kh):
                for j in range(kw):
                    out[:, r, c, :] += (
                        xp[:, r * stride + i * dil, c * stride + j * dil, :] @ w[i, j]
                    )
    return out


def np_conv_nhwc_grads(
    x: np.ndarray, w: np.ndarray, dy: np.ndarray, stride: int, pad: int, dil: int
) -> tuple[np.ndarray, np.ndarray]:
    """(dx, dw) of :func:`np_conv_nhwc` for the cotangent dy, by the same loops scattered."""
    kh, kw = w.shape[:2]
    xp = np.pad(x.astype(np.float64), ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    dxp = np.zeros_like(xp)
    dw = np.zeros(w.shape)
    for r in range(dy.shape[1]):
        for c in range(dy.shape[2]):
            for i in range(kh):
                for j in range(kw):
                    hi, wi = r * stride + i * dil, c * stride + j * dil
                    dxp[:, hi, wi, :] += dy[:, r, c, :] @ w[i, j].T
                    dw[i, j] += xp[:, hi, wi, :].T @ dy[:, r, c, :]
    h, wd = x.shape[1:3]
    return dxp[:, pad : pad + h, pad : pad + wd, :], dw


def np_attention(q, k, v, bias, scale, causal):
    """q [b, n, t, h], k/v [b, n, s, h]: (O, log-sum-exp of each row, P)."""
    s = np.einsum("bnth,bnsh->bnts", q.astype(np.float64), k) * scale
    if bias is not None:
        s = s + bias
    if causal:
        t, sl = s.shape[-2:]
        s = np.where(np.arange(sl)[None, :] <= np.arange(t)[:, None], s, -np.inf)
    m = s.max(-1, keepdims=True)
    e = np.exp(s - m)
    lse = (m + np.log(e.sum(-1, keepdims=True)))[..., 0]
    p = e / e.sum(-1, keepdims=True)
    return np.einsum("bnts,bnsh->bnth", p, v), lse, p


def np_attention_grads(q, k, v, bias, scale, causal, d_out):
    """dQ, dK, dV, dbias of :func:`np_attention` for the cotangent d_out (softmax's
    derivative written out: dS = P * (dP - rowsum(dP * P)))."""
    _, _, p = np_attention(q, k, v, bias, scale, causal)
    dv = np.einsum("bnts,bnth->bnsh", p, d_out)
    dp = np.einsum("bnth,bnsh->bnts", d_out, v)
    ds = p * (dp - (dp * p).sum(-1, keepdims=True))
    dq = np.einsum("bnts,bnsh->bnth", ds, k) * scale
    dk = np.einsum("bnts,bnth->bnsh", ds, q) * scale
    return dq, dk, dv, ds


def np_threefry2x32(k0, k1, x0, x1):
    """Threefry-2x32, 20 rounds (Salmon et al., SC 2011; Random123's threefry2x32_20)."""
    u32 = np.uint32
    rot = [13, 15, 26, 6, 17, 29, 16, 24]
    ks = [u32(k0), u32(k1), u32(k0) ^ u32(k1) ^ u32(0x1BD11BDA)]
    x = [np.asarray(x0, u32) + ks[0], np.asarray(x1, u32) + ks[1]]
    with np.errstate(over="ignore"):
        for group in range(5):
            for r in rot[(group % 2) * 4 : (group % 2) * 4 + 4]:
                x[0] = x[0] + x[1]
                x[1] = (x[1] << u32(r)) | (x[1] >> u32(32 - r))
                x[1] = x[1] ^ x[0]
            x[0] = x[0] + ks[(group + 1) % 3]
            x[1] = x[1] + ks[(group + 2) % 3] + u32(group + 1)
    return x[0], x[1]


# ---- the cases ----------------------------------------------------------------------------------


class Case(NamedTuple):
    name: str
    text: str
    args: tuple[np.ndarray, ...]
    numpy: Callable[..., Any]  # the values, one array or a tuple
    jax_ref: Callable[..., Any] | None = None  # the same semantics in JAX, for gradients
    tol: float = 2e-5


MM = _dnums([1], [0])
A, B, C = _f(4, 8), _f(8, 16), _f(4, 16)
BIAS16 = _f(16)


def _gemm_case(
    name: str, target: str, epilogue: str, *, beta: float = 0.0, alpha: float = 1.0
) -> Case:
    has_bias = epilogue.startswith("BIAS")
    aux = epilogue.endswith("_AUX")
    params = ["a = f32[4,8]{1,0} parameter(0)", "b = f32[8,16]{1,0} parameter(1)"]
    operands, args = ["a", "b"], [A, B]
    if beta:
        params.append("c = f32[4,16]{1,0} parameter(2)")
        operands.append("c")
        args.append(C)
    if has_bias:
        params.append(f"bias = f32[16]{{0}} parameter({len(params)})")
        operands.append("bias")
        args.append(BIAS16)
    results = ["f32[4,16]{1,0}"] + (["f32[4,16]{1,0}"] if aux else []) + ["s8[4194304]{0}"]
    config = _gemm_config(MM, epilogue, beta=beta, alpha_real=alpha)
    body = "\n  ".join(params) + (
        f"\n  cc = ({', '.join(results)}) custom-call({', '.join(operands)}), "
        f'custom_call_target="{target}", backend_config={config}'
        "\n  d = f32[4,16]{1,0} get-tuple-element(cc), index=0"
    )
    if aux:
        body += "\n  x = f32[4,16]{1,0} get-tuple-element(cc), index=1"
        body += "\n  ROOT r = (f32[4,16]{1,0}, f32[4,16]{1,0}) tuple(d, x)"
    else:
        body += "\n  ROOT r = f32[4,16]{1,0} copy(d)"

    def pre(*xs: Any, xp: Any) -> Any:
        a, b, *rest = xs
        x = alpha * (a @ b)
        if beta:
            x = x + beta * rest.pop(0)
        if has_bias:
            x = x + rest.pop(0)
        return x

    def act(x: Any, xp: Any) -> Any:
        if "RELU" in epilogue:
            return xp.maximum(x, 0)
        if "GELU" in epilogue:
            return np_gelu_tanh(x) if xp is np else jax.nn.gelu(x, approximate=True)
        return x

    def numpy_fn(*xs: Any) -> Any:
        x = pre(*[np.asarray(v, np.float64) for v in xs], xp=np)
        return (act(x, np), x) if aux else act(x, np)

    def jax_fn(*xs: Any) -> Any:
        x = pre(*xs, xp=jnp)
        return (act(x, jnp), x) if aux else act(x, jnp)

    return Case(name, _hlo(body), tuple(args), numpy_fn, jax_fn)


GEMMS = [
    _gemm_case("gemm", "__cublas$gemm", "DEFAULT"),
    _gemm_case("gemm_alpha_beta", "__cublas$gemm", "DEFAULT", alpha=0.5, beta=2.0),
    *(
        _gemm_case(f"lt_{e.lower()}", "__cublas$lt$matmul", e, beta=1.0 if e == "BIAS" else 0.0)
        for e in ("DEFAULT", "BIAS", "RELU", "BIAS_RELU", "GELU", "GELU_AUX", "BIAS_GELU")
    ),
    _gemm_case("lt_bias_gelu_aux", "__cublas$lt$matmul", "BIAS_GELU_AUX"),
]

# a batched GEMM of transposed operands: lhs [batch, k, m] laid out {1,2,0}, rhs [batch, n, k]
BD = _dnums([1], [2], [0], [0])
BA, BB = _f(3, 8, 4), _f(3, 5, 8)
BATCHED = Case(
    "gemm_batched_transposed",
    _hlo(
        "a = f32[3,8,4]{1,2,0} parameter(0)\n  b = f32[3,5,8]{2,1,0} parameter(1)\n"
        "  cc = (f32[3,4,5]{2,1,0}, s8[0]{0}) custom-call(a, b), "
        f'custom_call_target="__cublas$gemm", backend_config={_gemm_config(BD)}\n'
        "  ROOT r = f32[3,4,5]{2,1,0} get-tuple-element(cc), index=0"
    ),
    (BA, BB),
    lambda a, b: np_dot_general(a, b, BD),
    lambda a, b: jnp.einsum("zkm,znk->zmn", a, b),
)

# FP8: D = scale_d * (alpha * scale_a * scale_b * A.B + beta * scale_c * C), amax before scale_d
F8 = ml_dtypes.float8_e4m3fn
A8 = (_f(4, 8) * 4).astype(F8)
B8 = (_f(8, 16) * 4).astype(F8)
SCALES = tuple(np.asarray(s, F32) for s in (0.5, 0.25, 2.0, 0.125))
FP8 = Case(
    "lt_matmul_f8",
    _hlo(
        "a = f8e4m3fn[4,8]{1,0} parameter(0)\n  b = f8e4m3fn[8,16]{1,0} parameter(1)\n"
        "  c = f32[4,16]{1,0} parameter(2)\n"
        + "".join(f"  scale_{n} = f32[] parameter({3 + i})\n" for i, n in enumerate("abcd"))
        + "  cc = (f32[4,16]{1,0}, f32[], s8[1024]{0}) custom-call(a, b, c, scale_a, scale_b, "
        "scale_c, scale_d), "
        'custom_call_target="__cublas$lt$matmul$f8", backend_config='
        + _gemm_config(MM, "DEFAULT", beta=1.0, alpha_real=2.0, damax_output=True)
        + "\n  d = f32[4,16]{1,0} get-tuple-element(cc), index=0\n"
        "  m = f32[] get-tuple-element(cc), index=1\n"
        "  ROOT r = (f32[4,16]{1,0}, f32[]) tuple(d, m)"
    ),
    (A8, B8, C, *SCALES),
    lambda a, b, c, sa, sb, sc, sd: (lambda x: (x * sd, np.abs(x).max()))(
        2.0 * sa * sb * (a.astype(np.float64) @ b.astype(np.float64)) + sc * c
    ),
)

X, W = _f(2, 6, 6, 3), _f(3, 3, 3, 4)
DY = _f(2, 3, 3, 4)
CONV_ATTRS = "window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=b01f_01io->b01f"


def _conv_text(target: str, a: str, b: str, out: str, extra: str = "", config: str = "") -> str:
    config = config or _config("cudnn_conv_backend_config", conv_result_scale=1)
    operands = "x, w" + extra
    params = f"x = {a} parameter(0)\n  w = {b} parameter(1)\n"
    for i, o in enumerate(extra.split(", ")[1:]):
        shape = "f32[4]{0}" if o == "bias" else "f32[2,3,3,4]{3,2,1,0}"
        params += f"  {o} = {shape} parameter({2 + i})\n"
    return _hlo(
        params + f"  cc = ({out}, u8[0]{{0}}) custom-call({operands}), {CONV_ATTRS}, "
        f'custom_call_target="{target}", backend_config={config}\n'
        f"  ROOT r = {out} get-tuple-element(cc), index=0"
    )


def _jax_conv(x: Any, w: Any) -> Any:
    return lax.conv_general_dilated(
        x, w, (2, 2), ((1, 1), (1, 1)), dimension_numbers=("NHWC", "HWIO", "NHWC")
    )


BIAS4, SIDE = _f(4), _f(2, 3, 3, 4)
FUSED_CONFIG = _config(
    "cudnn_conv_backend_config",
    conv_result_scale=0.5,
    activation_mode="kRelu",
    side_input_scale=2.0,
    leakyrelu_alpha=0,
)
CONVS = [
    Case(
        "conv_forward",
        _conv_text(
            "__cudnn$convForward",
            "f32[2,6,6,3]{3,2,1,0}",
            "f32[3,3,3,4]{3,2,1,0}",
            "f32[2,3,3,4]{3,2,1,0}",
        ),
        (X, W),
        lambda x, w: np_conv_nhwc(x, w, 2, 1, 1),
        _jax_conv,
    ),
    Case(
        "conv_backward_input",
        # operands: dy and the filter; result: the input's gradient
        _conv_text(
            "__cudnn$convBackwardInput",
            "f32[2,3,3,4]{3,2,1,0}",
            "f32[3,3,3,4]{3,2,1,0}",
            "f32[2,6,6,3]{3,2,1,0}",
        ),
        (DY, W),
        lambda dy, w: np_conv_nhwc_grads(X, w, dy, 2, 1, 1)[0],
        lambda dy, w: jax.vjp(lambda x: _jax_conv(x, w), jnp.asarray(X))[1](dy)[0],
    ),
    Case(
        "conv_backward_filter",
        # operands: the input and dy; result: the filter's gradient
        _conv_text(
            "__cudnn$convBackwardFilter",
            "f32[2,6,6,3]{3,2,1,0}",
            "f32[2,3,3,4]{3,2,1,0}",
            "f32[3,3,3,4]{3,2,1,0}",
        ),
        (X, DY),
        lambda x, dy: np_conv_nhwc_grads(x, W, dy, 2, 1, 1)[1],
        lambda x, dy: jax.vjp(lambda w: _jax_conv(x, w), jnp.asarray(W))[1](dy)[0],
    ),
    Case(
        "conv_bias_activation",
        _conv_text(
            "__cudnn$convBiasActivationForward",
            "f32[2,6,6,3]{3,2,1,0}",
            "f32[3,3,3,4]{3,2,1,0}",
            "f32[2,3,3,4]{3,2,1,0}",
            extra=", bias, side",
            config=FUSED_CONFIG,
        ),
        (X, W, BIAS4, SIDE),
        lambda x, w, b, z: np.maximum(0.5 * np_conv_nhwc(x, w, 2, 1, 1) + 2.0 * z + b, 0),
        lambda x, w, b, z: jnp.maximum(0.5 * _jax_conv(x, w) + 2.0 * z + b, 0),
    ),
]

# attention in the BTNH layout (batch, sequence, heads, head dim), as JAX's cuDNN lowering
# writes it: BMM1 BTNH,BSNH->BNTS; BMM2 BNTS,BSNH->BNTH
Bt, T, N, H = 2, 4, 2, 8
Q, K, V = _f(Bt, T, N, H), _f(Bt, T, N, H), _f(Bt, T, N, H)
ABIAS = _f(1, N, T, T)
DO = _f(Bt, T, N, H)
SCALE = 0.35
FMHA_FWD = {
    "bmm1_dot_dimension_numbers": _dnums([3], [3], [0, 2], [0, 2]),
    "bmm2_dot_dimension_numbers": _dnums([3], [1], [0, 1], [0, 2]),
}
FMHA_BWD = {
    "bmm1_grad_gemm1_dot_dimension_numbers": _dnums([2], [1], [0, 1], [0, 2]),
    "bmm1_grad_gemm2_dot_dimension_numbers": _dnums([3], [1], [0, 1], [0, 2]),
    "bmm2_grad_gemm1_dot_dimension_numbers": _dnums([2], [1], [0, 1], [0, 2]),
    "bmm2_grad_gemm2_dot_dimension_numbers": _dnums([3], [3], [0, 2], [0, 2]),
}
QT = "f32[2,4,2,8]{3,2,1,0}"  # BTNH
OT = "f32[2,2,4,8]{3,1,2,0}"  # BNTH logically, laid out as BTNH (as cuDNN writes it)
ST = "f32[2,2,4]{2,1,0}"


def _fmha_config(mask: str, bwd: bool = False, **extra: Any) -> str:
    return _config(
        "cudnn_fmha_backend_config",
        fmha_scale=SCALE,
        dropout_rate=0,
        seed=42,
        is_flash_attention=True,
        mask_type=mask,
        **(FMHA_BWD if bwd else FMHA_FWD),
        **extra,
    )


def _bnth(x: np.ndarray) -> np.ndarray:
    return np.transpose(x, (0, 2, 1, 3))


def _fmha_fwd_case(bias: bool, mask: str) -> Case:
    target = "__cudnn$fmhaScaleBiasSoftmax" if bias else "__cudnn$fmhaSoftmax"
    operands = "q, k, v" + (", bias" if bias else "")
    params = f"q = {QT} parameter(0)\n  k = {QT} parameter(1)\n  v = {QT} parameter(2)\n"
    if bias:
        params += "  bias = f32[1,2,4,4]{3,2,1,0} parameter(3)\n"
    text = _hlo(
        params + f"  cc = ({OT}, {ST}, u8[0]{{0}}) custom-call({operands}), "
        f'custom_call_target="{target}", backend_config={_fmha_config(mask)}\n'
        f"  o = {OT} get-tuple-element(cc), index=0\n"
        f"  s = {ST} get-tuple-element(cc), index=1\n"
        f"  ROOT r = ({OT}, {ST}) tuple(o, s)"
    )
    causal = mask == "CAUSAL"

    def numpy_fn(q: Any, k: Any, v: Any, b: Any = None) -> Any:
        o, lse, _ = np_attention(_bnth(q), _bnth(k), _bnth(v), b, SCALE, causal)
        return o, lse

    def jax_fn(q: Any, k: Any, v: Any, b: Any = None) -> Any:
        s = jnp.einsum("btnh,bsnh->bnts", q, k) * SCALE
        if b is not None:
            s = s + b
        if causal:
            s = jnp.where(jnp.tril(jnp.ones((T, T), bool)), s, -jnp.inf)
        o = jnp.einsum("bnts,bsnh->bnth", jax.nn.softmax(s, axis=-1), v)
        return o, jax.nn.logsumexp(s, axis=-1)

    args = (Q, K, V, ABIAS) if bias else (Q, K, V)
    return Case(f"fmha_{'bias_' if bias else ''}{mask.lower()}", text, args, numpy_fn, jax_fn)


def _fmha_bwd_case(bias: bool, mask: str) -> Case:
    target = "__cudnn$fmhaScaleBiasSoftmaxBackward" if bias else "__cudnn$fmhaSoftmaxBackward"
    params = (
        f"q = {QT} parameter(0)\n  k = {QT} parameter(1)\n  v = {QT} parameter(2)\n"
        f"  stats = {ST} parameter(3)\n  do = {QT} parameter(4)\n  o = {QT} parameter(5)\n"
    )
    operands = "q, k, v, stats, do, " + ("bias, " if bias else "") + "o"
    if bias:
        params += "  bias = f32[1,2,4,4]{3,2,1,0} parameter(6)\n"
    grads = [OT, OT, OT] + (["f32[1,2,4,4]{3,2,1,0}"] if bias else [])
    gtes = "".join(f"  g{i} = {t} get-tuple-element(cc), index={i}\n" for i, t in enumerate(grads))
    text = _hlo(
        params + f"  cc = ({', '.join(grads)}, u8[0]{{0}}) custom-call({operands}), "
        f'custom_call_target="{target}", backend_config={_fmha_config(mask, bwd=True)}\n'
        + gtes
        + f"  ROOT r = ({', '.join(grads)}) tuple({', '.join(f'g{i}' for i in range(len(grads)))})"
    )
    causal = mask == "CAUSAL"
    b = ABIAS if bias else None
    o, lse, _ = np_attention(_bnth(Q), _bnth(K), _bnth(V), b, SCALE, causal)
    args = (Q, K, V, lse.astype(F32), DO, _bnth(o).astype(F32)) + ((ABIAS,) if bias else ())

    def numpy_fn(q: Any, k: Any, v: Any, stats: Any, do: Any, out: Any, bb: Any = None) -> Any:
        dq, dk, dv, ds = np_attention_grads(
            _bnth(q), _bnth(k), _bnth(v), bb, SCALE, causal, _bnth(do)
        )
        return (dq, dk, dv, ds.sum(0, keepdims=True)) if bias else (dq, dk, dv)

    return Case(f"fmha_backward_{'bias_' if bias else ''}{mask.lower()}", text, args, numpy_fn)


FMHAS = [
    _fmha_fwd_case(False, "NO_MASK"),
    _fmha_fwd_case(False, "CAUSAL"),
    _fmha_fwd_case(True, "NO_MASK"),
    _fmha_bwd_case(False, "CAUSAL"),
    _fmha_bwd_case(True, "NO_MASK"),
]

KEYS = (np.array([0, 7, 0x13198A2E], np.uint32), np.array([0, 9, 0x03707344], np.uint32))
CTRS = (np.array([0, 1, 0x243F6A88], np.uint32), np.array([0, 2, 0x85A308D3], np.uint32))
THREEFRY = Case(
    "cu_threefry2x32",
    _hlo(
        "".join(f"{n} = u32[3]{{0}} parameter({i})\n  " for i, n in enumerate("abcd"))
        + "cc = (u32[3]{0}, u32[3]{0}) custom-call(a, b, c, d), "
        'custom_call_target="cu_threefry2x32", api_version=API_VERSION_STATUS_RETURNING, '
        'backend_config="\\003\\000\\000\\000"\n'
        "  y0 = u32[3]{0} get-tuple-element(cc), index=0\n"
        "  y1 = u32[3]{0} get-tuple-element(cc), index=1\n"
        "  ROOT r = (u32[3]{0}, u32[3]{0}) tuple(y0, y1)"
    ),
    (*KEYS, *CTRS),
    np_threefry2x32,
)

# a Triton GEMM fusion (kind=kCustom): its computation is HLO, run as written
TRITON = Case(
    "triton_gemm_fusion",
    _hlo(
        "a = f32[4,8]{1,0} parameter(0)\n  b = f32[8,16]{1,0} parameter(1)\n"
        "  ROOT f = f32[4,16]{1,0} fusion(a, b), kind=kCustom, calls=triton_gemm_r, "
        'backend_config={"fusion_backend_config":{"kind":"__triton_gemm","triton_gemm_config":'
        '{"block_m":"16","block_n":"16","block_k":"16","split_k":"1","num_stages":"1",'
        '"num_warps":"2","num_ctas":"1"}}}',
        pre="triton_gemm_r {\n  p0 = f32[4,8]{1,0} parameter(0)\n"
        "  p1 = f32[8,16]{1,0} parameter(1)\n"
        "  n = f32[4,8]{1,0} negate(p0)\n"
        "  ROOT d = f32[4,16]{1,0} dot(n, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
        "}\n",
    ),
    (A, B),
    lambda a, b: -a.astype(np.float64) @ b,
    lambda a, b: -a @ b,
)

# layouts: a bitcast to the transposed layout is a transpose; a copy changing the layout is
# the identity on values; the GEMM reads the bitcast's logical shape
LAYOUTS = Case(
    "bitcast_copy_layouts",
    _hlo(
        "a = f32[4,8]{1,0} parameter(0)\n  b = f32[8,16]{1,0} parameter(1)\n"
        "  t = f32[8,4]{0,1} bitcast(a)\n"
        "  u = f32[8,4]{1,0} copy(t)\n"
        "  cc = (f32[4,16]{1,0}, s8[0]{0}) custom-call(u, b), "
        f'custom_call_target="__cublas$gemm", backend_config={_gemm_config(_dnums([0], [0]))}\n'
        "  ROOT r = f32[4,16]{1,0} get-tuple-element(cc), index=0"
    ),
    (A, B),
    lambda a, b: a.astype(np.float64) @ b,
    lambda a, b: a @ b,
)

CASES = {c.name: c for c in [*GEMMS, BATCHED, FP8, *CONVS, *FMHAS, THREEFRY, TRITON, LAYOUTS]}


def _outs(out: Any) -> list[np.ndarray]:
    return [np.asarray(o) for o in (out if isinstance(out, tuple | list) else (out,))]


@pytest.mark.parametrize("name", list(CASES))
def test_values_match_numpy(name: str) -> None:
    case = CASES[name]
    f = hlopipe.rehydrate(hlopipe.load(case.text.encode()))
    got = _outs(jax.jit(f)(*case.args))
    want = _outs(case.numpy(*case.args))
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        if np.issubdtype(w.dtype, np.integer):
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=case.tol, atol=case.tol)


GRADS = [n for n, c in CASES.items() if c.jax_ref is not None]


@pytest.mark.parametrize("name", GRADS)
def test_gradients_match_jax(name: str) -> None:
    case = CASES[name]
    f = hlopipe.rehydrate(hlopipe.load(case.text.encode()))
    cotangents = [_f(*np.shape(o)) for o in _outs(case.numpy(*case.args))]

    def loss(fn: Callable[..., Any]) -> Callable[..., Any]:
        def inner(*xs: Any) -> Any:
            return sum(jnp.vdot(o, c) for o, c in zip(_outs_j(fn(*xs)), cotangents, strict=True))

        return inner

    argnums = tuple(range(len(case.args)))
    got = jax.grad(loss(f), argnums)(*case.args)
    want = jax.grad(loss(case.jax_ref), argnums)(*case.args)  # type: ignore[arg-type]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=5e-5, atol=5e-5)


def _outs_j(out: Any) -> list[Any]:
    return list(out) if isinstance(out, tuple | list) else [out]


def test_threefry_known_answer() -> None:
    # Random123's known-answer vector for threefry2x32_20: key 0, counter 0
    y0, y1 = np_threefry2x32(0, 0, np.uint32(0), np.uint32(0))
    assert (int(y0), int(y1)) == (0x6B200159, 0x99BA4EFE)


def test_fmha_backward_is_the_forward_differentiated() -> None:
    # the backward call of a program equals JAX differentiating its forward call
    fwd = hlopipe.rehydrate(hlopipe.load(CASES["fmha_bias_no_mask"].text.encode()))
    bwd = hlopipe.rehydrate(hlopipe.load(CASES["fmha_backward_bias_no_mask"].text.encode()))
    (o, stats), vjp = jax.vjp(lambda q, k, v, b: fwd(q, k, v, b), Q, K, V, ABIAS)
    dq, dk, dv, db = vjp((jnp.transpose(DO, (0, 2, 1, 3)), jnp.zeros_like(stats)))
    got = bwd(Q, K, V, stats, DO, np.transpose(np.asarray(o), (0, 2, 1, 3)), ABIAS)
    for g, w in zip(got, (dq, dk, dv, db), strict=True):
        # the backward call returns dQ, dK, dV in BNTH; the forward's operands are BTNH
        w = w if g.shape == w.shape else jnp.transpose(w, (0, 2, 1, 3))
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=5e-5, atol=5e-5)


def test_vmap_over_a_gemm_with_epilogue() -> None:
    f = hlopipe.rehydrate(hlopipe.load(CASES["lt_bias_relu"].text.encode()))
    a = np.stack([A, -A])
    got = jax.vmap(f, in_axes=(0, None, None))(a, B, BIAS16)
    want = np.maximum(np.einsum("zmk,kn->zmn", a.astype(np.float64), B) + BIAS16, 0)
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize(
    ("text", "what"),
    [
        (
            _hlo(
                "a = f32[8,128]{1,0} parameter(0)\n  ROOT r = f32[8,128]{1,0} custom-call(a), "
                'custom_call_target="tpu_custom_call", '
                'backend_config="{\\"custom_call_config\\": {}}"'
            ),
            r"'tpu_custom_call'.*before_optimizations",
        ),
        (
            _hlo(
                "a = f32[4,8]{1,0} parameter(0)\n  cc = (f32[4,8]{1,0}, u8[0]{0}) custom-call(a), "
                'custom_call_target="__cudnn$norm", backend_config={}\n'
                "  ROOT r = f32[4,8]{1,0} get-tuple-element(cc), index=0"
            ),
            r"'__cudnn\$norm'.*before_optimizations",
        ),
        (
            CASES["fmha_no_mask"]
            .text.replace("fmhaSoftmax", "fmhaSoftmaxDropout")
            .replace('"dropout_rate":0', '"dropout_rate":0.1'),
            r"__cudnn\$fmhaSoftmaxDropout.*dropout_rate=0.1.*seed 42.*before_optimizations",
        ),
        (
            CASES["fmha_no_mask"].text.replace('"NO_MASK"', '"PADDING"'),
            r"mask_type PADDING is not supported.*before_optimizations",
        ),
    ],
    ids=["tpu_kernel", "unknown_gpu_kernel", "dropout", "padding_mask"],
)
def test_refused_naming_the_target_and_the_dump_to_use(text: str, what: str) -> None:
    with pytest.raises(UnsupportedOpError, match=what):
        f = hlopipe.rehydrate(hlopipe.load(text.encode()))
        jax.eval_shape(f, *f.in_avals)


def test_convolution_window_from_an_hlo_module_proto() -> None:
    # the .pb of a dump: XLA's conversion drops the window there too; the loader keeps it
    from hlopipe.io import _xla

    proto = _xla.hlo_module_from_text(CASES["conv_forward"].text).as_serialized_hlo_module_proto()
    f = hlopipe.rehydrate(hlopipe.load(proto))
    want = np_conv_nhwc(X, W, 2, 1, 1)
    np.testing.assert_allclose(np.asarray(f(X, W)), want, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("name", ["lt_bias_gelu_aux", "conv_bias_activation", "fmha_causal"])
def test_decompiled_source_computes_the_same(name: str) -> None:
    # the decompiler writes the calls' JAX ops as Python source; that source runs and agrees
    case = CASES[name]
    d = hlopipe.decompile(hlopipe.load(case.text.encode()))
    assert not d.constants
    ns: dict[str, Any] = {}
    exec(compile(d.source, "<decompiled>", "exec"), ns)
    got = _outs(ns[d.function](*case.args))
    for g, w in zip(got, _outs(case.numpy(*case.args)), strict=True):
        np.testing.assert_allclose(np.asarray(g), w, rtol=case.tol, atol=case.tol)


def test_a_scheduled_call_is_the_same_call() -> None:
    # a scheduling hint keeps the call an mhlo.custom_call after XLA's conversion
    case = CASES["lt_bias_gelu_aux"]
    text = case.text.replace(
        'custom_call_target="__cublas$lt$matmul"',
        'custom_call_target="__cublas$lt$matmul", schedule=SCHEDULE_EARLIEST',
    )
    program = hlopipe.load(text.encode())
    assert "mhlo.custom_call @__cublas$lt$matmul" in program.to_text()
    got = _outs(hlopipe.rehydrate(program)(*case.args))
    for g, w in zip(got, _outs(case.numpy(*case.args)), strict=True):
        np.testing.assert_allclose(g, w, rtol=case.tol, atol=case.tol)


def test_fp8_matmul_gradients_in_c_and_the_scales() -> None:
    # the fp8 operands are data; C and the four scales are differentiable
    case = CASES["lt_matmul_f8"]
    f = hlopipe.rehydrate(hlopipe.load(case.text.encode()))
    a, b = case.args[:2]
    cot = _f(4, 16)

    def got(c: Any, *scales: Any) -> Any:
        d, amax = f(a, b, c, *scales)
        return jnp.vdot(d, cot) + amax

    def want(c: Any, sa: Any, sb: Any, sc: Any, sd: Any) -> Any:
        ab = jnp.asarray(a, F32) @ jnp.asarray(b, F32)
        x = 2.0 * sa * sb * ab + sc * c
        return jnp.vdot(x * sd, cot) + jnp.max(jnp.abs(x))

    argnums = tuple(range(5))
    for g, w in zip(
        jax.grad(got, argnums)(*case.args[2:]),
        jax.grad(want, argnums)(*case.args[2:]),
        strict=True,
    ):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=5e-5, atol=5e-5)
