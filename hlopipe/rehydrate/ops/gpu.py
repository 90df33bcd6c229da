"""The custom calls of XLA's GPU compiler, as an optimised GPU dump has them
(``--xla_dump_to``'s ``after_optimizations`` files): cuBLAS/cuBLASLt GEMMs, cuDNN convolutions
and fused attention, and the threefry kernel of jaxlib's GPU PRNG, each rehydrated to JAX ops by
its documented semantics, so that ``grad``, ``vmap``, splitting and decompiling work on them.

Every call reads its ``backend_config`` (the JSON text of XLA's ``GpuBackendConfig``,
``xla/service/gpu/backend_configs.proto``: ``gemm_backend_config``,
``cudnn_conv_backend_config``, ``cudnn_fmha_backend_config``). A convolution's ``window=`` and
``dim_labels=``, which XLA's HLO -> StableHLO conversion drops, reach it as the frontend
attributes ``hlopipe.window`` etc. (``io/_hlo.py``). A call's results are one tuple: the
values, then a scratch buffer (``s8[workspace]`` / ``u8[0]``), returned as zeros.

Semantics, by their public documentation:

- cuBLASLt matmul (``cublasLtMatmul``, NVIDIA's cuBLAS docs, "cublasLtMatmul()" and
  "cublasLtEpilogue_t"): ``D = epilogue(alpha * A.B + beta * C + bias)``; for FP8
  (``__cublas$lt$matmul$f8``) ``D = scale_d * epilogue(alpha * scale_a * scale_b * A.B +
  beta * scale_c * C + bias)``, ``amax_d = max |D|`` before ``scale_d``. GELU is the tanh
  approximation cuBLASLt documents; an ``_AUX`` epilogue also returns the GELU's input.
- cuDNN convolution (cuDNN's "cudnnConvolutionBiasActivationForward"): ``y = act(alpha1 *
  conv(x, w) + alpha2 * z + bias)`` with ``alpha1 = conv_result_scale``, ``alpha2 =
  side_input_scale``; backward input and filter are the transposes of the forward
  convolution their window and labels describe (XLA writes the forward convolution's).
- cuDNN fused attention (cuDNN frontend's "Scaled Dot Product Attention"): ``O =
  softmax(scale * Q.K + bias, masked) . V``; its training form also returns the softmax
  statistics (the log-sum-exp of each row); the backward calls return dQ, dK, dV (and dbias).
- ``cu_threefry2x32``: Threefry-2x32 with 20 rounds (Salmon et al., "Parallel random
  numbers: as easy as 1, 2, 3", SC 2011), as ``jax.random``'s threefry PRNG uses it.

What has no published bit-level semantics (cuDNN's dropout mask) is refused by name.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from hlopipe.errors import RehydrateError, UnsupportedOpError
from hlopipe.rehydrate.custom_calls import builtin
from hlopipe.rehydrate.registry import RuleContext

_BEFORE = (
    "dump the program before XLA's GPU passes instead (the '*.before_optimizations.txt' file "
    "next to it under --xla_dump_to)"
)


# ---- shared: backend configs, tuple results --------------------------------------------------


def _config(ctx: RuleContext, target: str, attrs: dict[str, Any], key: str) -> dict[str, Any]:
    """The ``key`` section of the call's ``backend_config`` JSON (older dumps have it at the
    top level, without the ``GpuBackendConfig`` wrapper)."""
    text = attrs.get("backend_config", "")
    text = text.decode() if isinstance(text, bytes) else str(text)
    if not text:
        return {}
    try:
        config = json.loads(text)
    except json.JSONDecodeError as e:
        raise UnsupportedOpError(
            f"custom call {target!r} at {ctx.loc}: its backend_config is not JSON ({e}); " + _BEFORE
        ) from None
    if not isinstance(config, dict):
        return {}
    section = config.get(key, config)
    return section if isinstance(section, dict) else {}


def _split_top(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


def _results(ctx: RuleContext) -> tuple[list[jax.ShapeDtypeStruct], bool]:
    """The call's result types, and whether they are one tuple (as XLA's GPU calls have)."""
    from hlopipe.io import aval_of_type

    if len(ctx.result_avals) == 1:
        text = str(getattr(ctx.result_avals[0], "text", ""))
        if text.startswith("tuple<"):
            avals = [aval_of_type(p) for p in _split_top(text[len("tuple<") : -1])]
            return [a for a in avals if isinstance(a, jax.ShapeDtypeStruct)], True
    return list(ctx.result_avals), False


def _is_scratch(aval: jax.ShapeDtypeStruct) -> bool:
    return len(aval.shape) == 1 and np.dtype(aval.dtype) in (np.dtype(np.int8), np.dtype(np.uint8))


def _values(ctx: RuleContext) -> list[jax.ShapeDtypeStruct]:
    """The result types that are values (every one but a trailing scratch buffer)."""
    avals, _ = _results(ctx)
    if len(avals) > 1 and _is_scratch(avals[-1]):
        return avals[:-1]
    return avals


def _pack(ctx: RuleContext, target: str, values: Sequence[Any]) -> Any:
    """``values`` as the call's results: checked against the result types, the scratch buffer
    appended as zeros, one tuple when the call returns a tuple."""
    avals, is_tuple = _results(ctx)
    out = []
    for i, aval in enumerate(avals):
        if i < len(values):
            value = values[i]
            if tuple(np.shape(value)) != tuple(aval.shape):
                raise RehydrateError(
                    f"custom call {target!r} at {ctx.loc}: result {i} computes shape "
                    f"{list(np.shape(value))} but the call declares {list(aval.shape)}"
                )
            out.append(lax.convert_element_type(value, aval.dtype))
        elif _is_scratch(aval):
            out.append(jnp.zeros(aval.shape, aval.dtype))
        else:
            raise RehydrateError(
                f"custom call {target!r} at {ctx.loc}: result {i} ({aval}) is not one its "
                "documented semantics produce"
            )
    if is_tuple:
        return (tuple(out),)
    return out[0] if len(out) == 1 else tuple(out)


class _Dims(NamedTuple):
    lhs_contract: tuple[int, ...]
    rhs_contract: tuple[int, ...]
    lhs_batch: tuple[int, ...]
    rhs_batch: tuple[int, ...]

    @staticmethod
    def of(json_dims: Any) -> _Dims:
        d = json_dims if isinstance(json_dims, dict) else {}

        def ints(key: str) -> tuple[int, ...]:
            return tuple(int(v) for v in d.get(key, ()))

        return _Dims(
            ints("lhs_contracting_dimensions"),
            ints("rhs_contracting_dimensions"),
            ints("lhs_batch_dimensions"),
            ints("rhs_batch_dimensions"),
        )

    def lax(self) -> Any:
        return ((self.lhs_contract, self.rhs_contract), (self.lhs_batch, self.rhs_batch))


def _enum(cls: type[enum.StrEnum], value: Any, ctx: RuleContext, target: str, field: str) -> Any:
    """A proto enum field of a JSON config: its name, or its number (proto3 JSON allows
    both)."""
    members = list(cls)
    try:
        return members[int(value)] if isinstance(value, int | float) else cls(str(value))
    except (ValueError, IndexError):
        raise UnsupportedOpError(
            f"custom call {target!r} at {ctx.loc}: {field} {value!r} is not one of "
            f"{[m.value for m in members]}; " + _BEFORE
        ) from None


def _compute_dtype(*dtypes: Any) -> Any:
    """The type a cuBLAS/cuDNN call accumulates in: f32 for narrower floats (cuBLAS's
    ``CUBLAS_COMPUTE_32F`` for half, bf16 and fp8), the operands' own type otherwise."""
    if any(np.dtype(d).itemsize == 1 and not jnp.issubdtype(d, jnp.integer) for d in dtypes):
        return np.dtype(np.float32)  # fp8 types, which have no implicit promotion
    wide = jnp.result_type(*dtypes)
    if jnp.issubdtype(wide, jnp.floating) and np.dtype(wide).itemsize < 4:
        return np.dtype(np.float32)
    return wide


# ---- cuBLAS / cuBLASLt GEMMs -----------------------------------------------------------------


class Epilogue(enum.StrEnum):
    """``GemmBackendConfig.Epilogue``, in the proto's order (its numbers are the indices)."""

    DEFAULT = "DEFAULT"
    BIAS = "BIAS"
    RELU = "RELU"
    BIAS_RELU = "BIAS_RELU"
    GELU = "GELU"
    GELU_AUX = "GELU_AUX"
    BIAS_GELU = "BIAS_GELU"
    BIAS_GELU_AUX = "BIAS_GELU_AUX"


_WITH_BIAS = {Epilogue.BIAS, Epilogue.BIAS_RELU, Epilogue.BIAS_GELU, Epilogue.BIAS_GELU_AUX}
_WITH_AUX = {Epilogue.GELU_AUX, Epilogue.BIAS_GELU_AUX}


def _epilogue(x: Any, epilogue: Epilogue) -> Any:
    if epilogue in (Epilogue.RELU, Epilogue.BIAS_RELU):
        return jnp.maximum(x, 0)
    if epilogue in (Epilogue.GELU, Epilogue.GELU_AUX, Epilogue.BIAS_GELU, Epilogue.BIAS_GELU_AUX):
        return jax.nn.gelu(x, approximate=True)
    return x


def _trailing(bias: Any, shape: tuple[int, ...], ctx: RuleContext, target: str) -> Any:
    """A bias broadcast along the output's last dimensions (cuBLASLt's bias vector runs along
    the rows of the column-major D: the minor dimension of the row-major output)."""
    n = np.ndim(bias)
    if tuple(np.shape(bias)) != tuple(shape[len(shape) - n :]):
        raise RehydrateError(
            f"custom call {target!r} at {ctx.loc}: bias of shape {list(np.shape(bias))} does "
            f"not run along the output {list(shape)}'s last dimensions"
        )
    return lax.broadcast_in_dim(bias, shape, tuple(range(len(shape) - n, len(shape))))


def _gemm(target: str, fp8: bool) -> Any:
    def impl(ctx: RuleContext, *operands: Any, **attrs: Any) -> Any:
        cfg = _config(ctx, target, attrs, "gemm_backend_config")
        epilogue = _enum(Epilogue, cfg.get("epilogue", "DEFAULT"), ctx, target, "epilogue")
        if epilogue is not Epilogue.DEFAULT and target == "__cublas$gemm":
            raise UnsupportedOpError(
                f"custom call {target!r} at {ctx.loc} with epilogue {epilogue}: the legacy "
                "cuBLAS GEMM has none (only __cublas$lt$matmul does); " + _BEFORE
            )
        beta = float(cfg.get("beta", 0.0))
        a, b, *rest = operands
        bias = rest.pop() if epilogue in _WITH_BIAS else None
        scales: list[Any] = []
        if fp8:
            if len(rest) not in (4, 5):
                raise UnsupportedOpError(
                    f"custom call {target!r} at {ctx.loc}: {len(operands)} operands; an FP8 "
                    "matmul takes a, b, [c], scale_a, scale_b, scale_c, scale_d, [bias]"
                )
            scales, rest = rest[-4:], rest[:-4]
        if len(rest) > 1:
            raise UnsupportedOpError(
                f"custom call {target!r} at {ctx.loc}: {len(operands)} operands for epilogue "
                f"{epilogue}; a GEMM takes a, b, [c], [bias]"
            )
        c = rest[0] if rest else None
        if beta != 0 and c is None:
            raise RehydrateError(f"custom call {target!r} at {ctx.loc}: beta={beta} without C")
        values = _values(ctx)
        out_aval = values[0]
        dtype = _compute_dtype(a.dtype, b.dtype, out_aval.dtype)
        alpha: complex | float = float(cfg.get("alpha_real", 1.0))
        if jnp.issubdtype(dtype, jnp.complexfloating):
            alpha = complex(alpha, float(cfg.get("alpha_imag", 0.0)))
        dims = _Dims.of(cfg.get("dot_dimension_numbers"))
        from hlopipe.rehydrate.ops.linalg import precision

        prec = cfg.get("precision_config") or {}
        a, b = a.astype(dtype), b.astype(dtype)
        if fp8:
            a = a * scales[0].astype(dtype)
            b = b * scales[1].astype(dtype)
        x = lax.dot_general(a, b, dims.lax(), precision=precision(prec.get("operand_precision")))
        if alpha != 1:
            x = x * jnp.asarray(alpha, dtype)
        if beta != 0 and c is not None:
            cc = c.astype(dtype) * (scales[2].astype(dtype) if fp8 else 1)
            x = x + jnp.asarray(beta, dtype) * cc
        if bias is not None:
            x = x + _trailing(bias.astype(dtype), tuple(np.shape(x)), ctx, target)
        aux = x
        d = _epilogue(x, epilogue)
        results: list[Any] = []
        if fp8:
            amax = jnp.max(jnp.abs(d)).astype(np.float32)
            d = d * scales[3].astype(dtype)
            out_dtype = np.dtype(out_aval.dtype)
            if out_dtype.kind == "V":  # cuBLASLt saturates to the fp8 type's range
                top = float(jnp.finfo(out_dtype).max)
                d = jnp.clip(d, -top, top)
            results = [d]
            if bool(cfg.get("damax_output", False)):
                results.append(amax.reshape(values[1].shape) if len(values) > 1 else amax)
        else:
            results = [d]
        if epilogue in _WITH_AUX:
            results.append(aux)
        return _pack(ctx, target, results)

    return impl


builtin("__cublas$gemm")(_gemm("__cublas$gemm", fp8=False))
builtin("__cublas$lt$matmul")(_gemm("__cublas$lt$matmul", fp8=False))
builtin("__cublas$lt$matmul$f8")(_gemm("__cublas$lt$matmul$f8", fp8=True))


# ---- cuDNN convolutions ----------------------------------------------------------------------


class Activation(enum.StrEnum):
    """``stream_executor.dnn.ActivationMode`` (``xla/tsl/protobuf/dnn.proto``), in order."""

    NONE = "kNone"
    SIGMOID = "kSigmoid"
    RELU = "kRelu"
    RELU6 = "kRelu6"
    RELUX = "kReluX"
    TANH = "kTanh"
    BAND_PASS = "kBandPass"
    ELU = "kElu"
    LEAKY_RELU = "kLeakyRelu"
    GELU_EXACT = "kGeluExact"


class _Conv(NamedTuple):
    """A convolution as XLA's HLO text writes it (``window=``, ``dim_labels=``)."""

    strides: tuple[int, ...]
    padding: tuple[tuple[int, int], ...]
    lhs_dilation: tuple[int, ...]
    rhs_dilation: tuple[int, ...]
    reversal: tuple[bool, ...]
    dnums: lax.ConvDimensionNumbers
    feature_group_count: int
    batch_group_count: int

    def apply(self, x: Any, w: Any, dtype: Any) -> Any:
        if any(self.reversal):
            w = lax.rev(w, [self.dnums.rhs_spec[2 + i] for i, r in enumerate(self.reversal) if r])
        return lax.conv_general_dilated(
            x.astype(dtype),
            w.astype(dtype),
            window_strides=self.strides,
            padding=self.padding,
            lhs_dilation=self.lhs_dilation,
            rhs_dilation=self.rhs_dilation,
            dimension_numbers=self.dnums,
            feature_group_count=self.feature_group_count,
            batch_group_count=self.batch_group_count,
        )


def _labels(text: str, batch: str, feature: str) -> tuple[int, ...]:
    """``b01f`` -> (batch dim, feature dim, spatial dims in order)."""
    spatial = sorted((int(ch), i) for i, ch in enumerate(text) if ch.isdigit())
    return (text.index(batch), text.index(feature), *(i for _, i in spatial))


def _conv_of(ctx: RuleContext, target: str, attrs: dict[str, Any]) -> _Conv:
    fa = attrs.get("mhlo.frontend_attributes") or {}
    labels = str(fa.get("hlopipe.dim_labels", ""))
    m = re.fullmatch(r"([\w]+)_([\w]+)->([\w]+)", labels)
    if m is None:
        raise UnsupportedOpError(
            f"custom call {target!r} at {ctx.loc} without its dim_labels: load the HLO text or "
            "HloModuleProto XLA dumped (hlopipe keeps a cuDNN convolution's window= and "
            "dim_labels= from them), or " + _BEFORE
        )
    lhs, rhs, out = m.groups()
    n = len(lhs) - 2
    fields = dict(f.split("=", 1) for f in str(fa.get("hlopipe.window", "")).split() if "=" in f)

    def per_dim(key: str, default: int) -> tuple[int, ...]:
        if key not in fields:
            return (default,) * n
        return tuple(int(v) for v in fields[key].split("x"))

    pads = []
    for p in fields.get("pad", "x".join(["0_0"] * n)).split("x") if n else []:
        pad = re.fullmatch(r"(-?\d+)_(-?\d+)", p)
        if pad is None:
            raise UnsupportedOpError(f"custom call {target!r} at {ctx.loc}: window pad {p!r}")
        pads.append((int(pad.group(1)), int(pad.group(2))))
    reversal = tuple(bool(int(v)) for v in fields.get("rhs_reversal", "x".join("0" * n)).split("x"))
    return _Conv(
        strides=per_dim("stride", 1),
        padding=tuple(pads),
        lhs_dilation=per_dim("lhs_dilate", 1),
        rhs_dilation=per_dim("rhs_dilate", 1),
        reversal=reversal if n else (),
        dnums=lax.ConvDimensionNumbers(
            lhs_spec=_labels(lhs, "b", "f"),
            rhs_spec=_labels(rhs, "o", "i"),
            out_spec=_labels(out, "b", "f"),
        ),
        feature_group_count=int(fa.get("hlopipe.feature_group_count", 1)),
        batch_group_count=int(fa.get("hlopipe.batch_group_count", 1)),
    )


def _activation(x: Any, mode: Activation, alpha: float, ctx: RuleContext, target: str) -> Any:
    if mode is Activation.NONE:
        return x
    if mode is Activation.RELU:
        return jnp.maximum(x, 0)
    if mode is Activation.RELU6:
        return jnp.clip(x, 0, 6)
    if mode is Activation.SIGMOID:
        return jax.nn.sigmoid(x)
    if mode is Activation.TANH:
        return jnp.tanh(x)
    if mode is Activation.ELU:
        return jax.nn.elu(x)
    if mode is Activation.LEAKY_RELU:
        return jnp.where(x > 0, x, alpha * x)
    if mode is Activation.GELU_EXACT:
        return jax.nn.gelu(x, approximate=False)
    raise UnsupportedOpError(
        f"custom call {target!r} at {ctx.loc} with activation_mode {mode}: its parameters are "
        "not in the backend config; " + _BEFORE
    )


def _conv_call(target: str) -> Any:
    def impl(ctx: RuleContext, *operands: Any, **attrs: Any) -> Any:
        cfg = _config(ctx, target, attrs, "cudnn_conv_backend_config")
        conv = _conv_of(ctx, target, attrs)
        scale = float(cfg.get("conv_result_scale", 1.0) or 1.0)
        out_aval = _values(ctx)[0]
        if target == "__cudnn$convBackwardInput":
            dy, w = operands[:2]
            dtype = _compute_dtype(dy.dtype, w.dtype)
            primal = jax.ShapeDtypeStruct(out_aval.shape, dtype)
            (value,) = jax.linear_transpose(lambda x: conv.apply(x, w, dtype), primal)(
                dy.astype(dtype)
            )
        elif target == "__cudnn$convBackwardFilter":
            x, dy = operands[:2]
            dtype = _compute_dtype(x.dtype, dy.dtype)
            primal = jax.ShapeDtypeStruct(out_aval.shape, dtype)
            (value,) = jax.linear_transpose(lambda w: conv.apply(x, w, dtype), primal)(
                dy.astype(dtype)
            )
        else:
            x, w, *rest = operands
            dtype = _compute_dtype(x.dtype, w.dtype)
            value = conv.apply(x, w, dtype)
        value = value * jnp.asarray(scale, value.dtype) if scale != 1 else value
        if target == "__cudnn$convBiasActivationForward":
            bias, *side = rest
            feature = conv.dnums.out_spec[1]
            shape = tuple(np.shape(value))
            value = value + lax.broadcast_in_dim(bias.astype(value.dtype), shape, (feature,))
            side_scale = float(cfg.get("side_input_scale", 0.0))
            if side and side_scale != 0:
                value = value + jnp.asarray(side_scale, value.dtype) * side[0].astype(value.dtype)
            mode = _enum(
                Activation, cfg.get("activation_mode", "kNone"), ctx, target, "activation_mode"
            )
            value = _activation(value, mode, float(cfg.get("leakyrelu_alpha", 0.0)), ctx, target)
        return _pack(ctx, target, [value])

    return impl


for _target in (
    "__cudnn$convForward",
    "__cudnn$convBackwardInput",
    "__cudnn$convBackwardFilter",
    "__cudnn$convBiasActivationForward",
):
    builtin(_target)(_conv_call(_target))


# ---- cuDNN fused attention -------------------------------------------------------------------


class MaskType(enum.StrEnum):
    """``CudnnfMHABackendConfig.MaskType``, in the proto's order."""

    NO_MASK = "NO_MASK"
    PADDING = "PADDING"
    CAUSAL = "CAUSAL"
    PADDING_CAUSAL = "PADDING_CAUSAL"
    ALIBI = "ALIBI"


class _Roles(NamedTuple):
    """Where a Q/K/V-like tensor keeps its batch (and head-count) dimensions, its sequence
    dimension and its feature dimension."""

    batch: tuple[int, ...]
    seq: int
    feature: int

    @staticmethod
    def of(
        rank: int, batch: Sequence[int], *, seq: int | None = None, feature: int | None = None
    ) -> _Roles:
        rest = [i for i in range(rank) if i not in batch and i not in (seq, feature)]
        if len(rest) != 1:
            raise ValueError(f"dimensions {batch}, {seq}, {feature} of a rank-{rank} tensor")
        return _Roles(
            tuple(batch), rest[0] if seq is None else seq, rest[0] if feature is None else feature
        )

    def canonical(self, x: Any) -> Any:
        return jnp.transpose(x, (*self.batch, self.seq, self.feature))


def _attend(q: Any, k: Any, v: Any, bias: Any, scale: float, causal: bool) -> tuple[Any, Any]:
    """Attention on canonical ``[batch..., seq, feature]`` operands: the output (in f32) and
    the softmax statistics (the log-sum-exp of each row of the scaled, masked scores)."""
    f32 = np.float32
    s = jnp.einsum("...tf,...sf->...ts", q.astype(f32), k.astype(f32)) * f32(scale)
    if bias is not None:
        s = s + bias.astype(f32)
    if causal:  # cuDNN's causal mask: query t sees the keys s <= t
        t_len, s_len = s.shape[-2:]
        keep = lax.broadcasted_iota(np.int32, (t_len, s_len), 1) <= lax.broadcasted_iota(
            np.int32, (t_len, s_len), 0
        )
        s = jnp.where(keep, s, -jnp.inf)
    stats = jax.nn.logsumexp(s, axis=-1)
    p = jnp.exp(s - stats[..., None])
    return jnp.einsum("...ts,...sf->...tf", p, v.astype(f32)), stats


def _attention_checks(
    ctx: RuleContext, target: str, cfg: dict[str, Any], dropout: bool
) -> tuple[float, bool]:
    rate = float(cfg.get("dropout_rate", 0.0))
    if rate > 0:
        raise UnsupportedOpError(
            f"custom call {target!r} at {ctx.loc} with dropout_rate={rate}: cuDNN draws its "
            "dropout mask with a generator whose stream (for seed "
            f"{cfg.get('seed', 0)}) has no published definition, so it cannot be reproduced; "
            + _BEFORE
        )
    mask = _enum(MaskType, cfg.get("mask_type", "NO_MASK"), ctx, target, "mask_type")
    if mask not in (MaskType.NO_MASK, MaskType.CAUSAL):
        raise UnsupportedOpError(
            f"custom call {target!r} at {ctx.loc} with mask_type {mask} is not supported "
            "(only NO_MASK and CAUSAL): " + _BEFORE
        )
    for field in ("sliding_window_length", "max_seg_per_batch"):
        if int(cfg.get(field, 0)) > (1 if field == "max_seg_per_batch" else 0):
            raise UnsupportedOpError(
                f"custom call {target!r} at {ctx.loc} with {field}={cfg[field]} is not "
                "supported: " + _BEFORE
            )
    if cfg.get("is_paged_attention"):
        raise UnsupportedOpError(
            f"custom call {target!r} at {ctx.loc}: paged attention is not supported: " + _BEFORE
        )
    del dropout
    return float(cfg.get("fmha_scale", 1.0)), mask is MaskType.CAUSAL or bool(
        cfg.get("is_causal_mask", False)
    )


def _attention_forward(target: str, has_bias: bool) -> Any:
    def impl(ctx: RuleContext, *operands: Any, **attrs: Any) -> Any:
        cfg = _config(ctx, target, attrs, "cudnn_fmha_backend_config")
        scale, causal = _attention_checks(ctx, target, cfg, "Dropout" in target)
        q, k, v = operands[:3]
        bias = operands[3] if has_bias else None
        if len(operands) > 3 + has_bias:
            raise UnsupportedOpError(
                f"custom call {target!r} at {ctx.loc}: {len(operands)} operands (sequence "
                "lengths of a padding mask?) are not supported: " + _BEFORE
            )
        bmm1 = _Dims.of(cfg.get("bmm1_dot_dimension_numbers"))
        bmm2 = _Dims.of(cfg.get("bmm2_dot_dimension_numbers"))
        rq = _Roles.of(q.ndim, bmm1.lhs_batch, feature=bmm1.lhs_contract[0])
        rk = _Roles.of(k.ndim, bmm1.rhs_batch, feature=bmm1.rhs_contract[0])
        rv = _Roles.of(v.ndim, bmm2.rhs_batch, seq=bmm2.rhs_contract[0])
        out, stats = _attend(rq.canonical(q), rk.canonical(k), rv.canonical(v), bias, scale, causal)
        values = _values(ctx)
        results = [out]
        if len(values) > 1:
            results.append(stats.reshape(values[1].shape))
        return _pack(ctx, target, results)

    return impl


def _attention_backward(target: str, has_bias: bool) -> Any:
    def impl(ctx: RuleContext, *operands: Any, **attrs: Any) -> Any:
        cfg = _config(ctx, target, attrs, "cudnn_fmha_backend_config")
        scale, causal = _attention_checks(ctx, target, cfg, "Dropout" in target)
        # Q, K, V, the forward's statistics, dO, [bias], O: the statistics and O are what
        # Q, K, V (and the bias) determine; the gradients are computed from those
        q, k, v, _stats, d_out = operands[:5]
        bias = operands[5] if has_bias else None
        if len(operands) != 6 + has_bias:
            raise UnsupportedOpError(
                f"custom call {target!r} at {ctx.loc}: {len(operands)} operands (sequence "
                "lengths of a padding mask?) are not supported: " + _BEFORE
            )
        # the backward config has the backward GEMMs only: dP.Q -> dK, dP.K -> dQ,
        # P.dO -> dV, dO.V -> dP; each names the batch and contracted dims of its operands
        g1 = _Dims.of(cfg.get("bmm1_grad_gemm1_dot_dimension_numbers"))
        g2 = _Dims.of(cfg.get("bmm1_grad_gemm2_dot_dimension_numbers"))
        g4 = _Dims.of(cfg.get("bmm2_grad_gemm2_dot_dimension_numbers"))
        rq = _Roles.of(q.ndim, g1.rhs_batch, seq=g1.rhs_contract[0])
        rk = _Roles.of(k.ndim, g2.rhs_batch, seq=g2.rhs_contract[0])
        rv = _Roles.of(v.ndim, g4.rhs_batch, feature=g4.rhs_contract[0])
        rdo = _Roles.of(d_out.ndim, g4.lhs_batch, feature=g4.lhs_contract[0])

        def forward(qc: Any, kc: Any, vc: Any, b: Any) -> Any:
            return _attend(qc, kc, vc, b, scale, causal)[0]

        primals = (rq.canonical(q), rk.canonical(k), rv.canonical(v), bias)
        _, vjp = jax.vjp(forward, *primals)
        dq, dk, dv, dbias = vjp(rdo.canonical(d_out).astype(np.float32))
        results = [dq, dk, dv]
        if len(_values(ctx)) > 3 and bias is not None:
            results.append(dbias)
        return _pack(ctx, target, results)

    return impl


for _bias in (False, True):
    for _dropout in (False, True):
        _name = "__cudnn$fmha" + ("ScaleBias" if _bias else "") + "Softmax"
        _name += "Dropout" if _dropout else ""
        builtin(_name)(_attention_forward(_name, _bias))
        builtin(_name + "Backward")(_attention_backward(_name + "Backward", _bias))


# ---- jaxlib's GPU threefry kernel ------------------------------------------------------------


@builtin("cu_threefry2x32", "cu_threefry2x32_ffi")
def _threefry(ctx: RuleContext, k0: Any, k1: Any, x0: Any, x1: Any, **attrs: Any) -> Any:
    """Threefry-2x32 (20 rounds) of the counters ``(x0, x1)`` under the key ``(k0, k1)``,
    broadcast to the result's shape, as jaxlib's GPU kernel computes it."""
    from jax.extend.random import threefry2x32_p

    shape = tuple(_values(ctx)[0].shape)
    k0, k1, x0, x1 = (jnp.broadcast_to(jnp.asarray(a, np.uint32), shape) for a in (k0, k1, x0, x1))
    y0, y1 = threefry2x32_p.bind(k0, k1, x0, x1)
    return _pack(ctx, "cu_threefry2x32", [y0, y1])
