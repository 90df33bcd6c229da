"""Linear algebra: dot_general, dot, cholesky, triangular_solve, einsum, and the LAPACK custom
calls JAX emits on CPU for ``jnp.linalg``."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.lax import linalg as lax_linalg

from hlopipe import _jax_compat  # geqrf: no public name in jax 0.10
from hlopipe.errors import UnsupportedOpError
from hlopipe.rehydrate._ir import DotDims
from hlopipe.rehydrate.custom_calls import builtin
from hlopipe.rehydrate.registry import RuleContext, rule

_PRECISION = {
    "DEFAULT": lax.Precision.DEFAULT,
    "HIGH": lax.Precision.HIGH,
    "HIGHEST": lax.Precision.HIGHEST,
}


def precision(config: Any) -> Any:
    """The ``precision=`` of ``lax.dot_general`` / ``lax.conv_general_dilated`` for an op's
    ``precision_config`` (one entry per operand); ``None`` when it has none."""
    if not config:
        return None
    vals = tuple(_PRECISION.get(str(c), lax.Precision.DEFAULT) for c in config)
    return vals if len(vals) == 2 else None


@rule("stablehlo.dot_general")
def dot_general(
    ctx: RuleContext,
    lhs: Any,
    rhs: Any,
    *,
    dot_dimension_numbers: DotDims,
    precision_config: Any = None,
    algorithm: Any = None,
) -> Any:
    d = dot_dimension_numbers
    dims = ((d.lhs_contract, d.rhs_contract), (d.lhs_batch, d.rhs_batch))
    return _dot(ctx, lhs, rhs, dims, precision_config)


def _dot(ctx: RuleContext, lhs: Any, rhs: Any, dims: Any, precision_config: Any) -> Any:
    out_dtype = np.dtype(ctx.aval.dtype)
    lhs, rhs = _byte_int(lhs), _byte_int(rhs)
    narrow = out_dtype.kind == "V" and not jnp.issubdtype(out_dtype, jnp.floating)
    out = lax.dot_general(
        lhs,
        rhs,
        dims,
        precision=precision(precision_config),
        preferred_element_type=_byte_int_dtype(out_dtype) if narrow else out_dtype,
    )
    return lax.convert_element_type(out, out_dtype) if narrow else out


def _byte_int_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.int8 if jnp.issubdtype(dtype, jnp.signedinteger) else np.uint8)


def _byte_int(x: Any) -> Any:
    """Sub-byte integers widened to 8 bits (exact): XLA on CPU rejects a dot of ``int4``
    operands with a wider result ("custom element sizes on non-sub-byte types")."""
    dtype = np.dtype(x.dtype)
    if dtype.kind != "V" or jnp.issubdtype(dtype, jnp.floating):
        return x
    return lax.convert_element_type(x, _byte_int_dtype(dtype))


@rule("stablehlo.dot")
def dot(ctx: RuleContext, lhs: Any, rhs: Any, *, precision_config: Any = None) -> Any:
    contract = ((np.ndim(lhs) - 1,), (0,))
    return _dot(ctx, lhs, rhs, (contract, ((), ())), precision_config)


# ---- factorizations and solves ------------------------------------------------------------------


def _tril_mask(shape: tuple[int, ...], lower: bool) -> Any:
    n, m = shape[-2], shape[-1]
    rows = lax.broadcasted_iota(np.int32, (n, m), 0)
    cols = lax.broadcasted_iota(np.int32, (n, m), 1)
    mask = lax.ge(rows, cols) if lower else lax.le(rows, cols)
    return lax.broadcast_in_dim(mask, shape, (len(shape) - 2, len(shape) - 1))


@rule("stablehlo.cholesky")
def cholesky(ctx: RuleContext, a: Any, *, lower: bool = False) -> Any:
    """The opposite triangle is implementation-defined; hlopipe sets it to zero. A matrix
    that is not positive definite (or holds a NaN) gives NaN in every element, as XLA does
    (JAX leaves the opposite triangle zero)."""
    if lower:
        factor = lax_linalg.cholesky(a, symmetrize_input=False)  # lower triangle of a is read
    else:
        # upper: U = L^H of the factor of the Hermitian matrix whose upper triangle a holds
        herm = lax.select(_tril_mask(tuple(a.shape), True), _adjoint(a), a)
        factor = _adjoint(lax_linalg.cholesky(herm, symmetrize_input=False))
    failed = jnp.any(jnp.isnan(factor), axis=(-2, -1), keepdims=True)
    return jnp.where(failed, jnp.array(np.nan, factor.dtype), factor)


def _adjoint(x: Any) -> Any:
    nd = np.ndim(x)
    perm = (*range(nd - 2), nd - 1, nd - 2)
    x = lax.transpose(x, perm)
    return lax.conj(x) if np.dtype(x.dtype).kind == "c" else x


@rule("stablehlo.triangular_solve")
def triangular_solve(
    ctx: RuleContext,
    a: Any,
    b: Any,
    *,
    left_side: bool,
    lower: bool,
    unit_diagonal: bool,
    transpose_a: str,
) -> Any:
    mode = str(transpose_a)
    if mode not in ("NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"):
        raise UnsupportedOpError(
            f"stablehlo.triangular_solve with transpose_a {mode} at {ctx.loc} is not supported"
        )
    return lax_linalg.triangular_solve(
        a,
        b,
        left_side=bool(left_side),
        lower=bool(lower),
        transpose_a=mode != "NO_TRANSPOSE",
        conjugate_a=mode == "ADJOINT",
        unit_diagonal=bool(unit_diagonal),
    )


@rule("stablehlo.einsum")
def einsum(ctx: RuleContext, lhs: Any, rhs: Any, *, einsum_config: str) -> Any:
    return jnp.einsum(einsum_config, lhs, rhs, preferred_element_type=ctx.aval.dtype)


@rule("stablehlo.unary_einsum")
def unary_einsum(ctx: RuleContext, x: Any, *, einsum_config: str) -> Any:
    spec = einsum_config.lstrip(",")
    return jnp.einsum(spec, x).astype(ctx.aval.dtype)


# ---- LAPACK custom calls (what JAX 0.10 emits on CPU for jnp.linalg) ----------------------------
#
# Each target computes on the logical (row-major) matrices of its operands; operand_layouts
# only say that LAPACK sees them column-major. Results that LAPACK leaves unspecified (a
# workspace-like first output of gesdd, the untouched triangle of potrf) are reproduced as
# jaxlib's kernels leave them where JAX reads them, and ``info`` is 0 on success, >0 on
# failure, as LAPACK's. Real and complex precisions share one implementation: s/d/c/z.


def _cfg(attrs: dict[str, Any]) -> dict[str, Any]:
    cfg = attrs.get("mhlo.backend_config")
    return cfg if isinstance(cfg, dict) else {}


def _char(cfg: dict[str, Any], key: str, default: str) -> str:
    v = cfg.get(key)
    return chr(int(v)) if v is not None else default


def _info(ctx: RuleContext, index: int, failed: Any) -> Any:
    aval = ctx.result_avals[index]
    return lax.convert_element_type(failed, aval.dtype).reshape(aval.shape)


def _not_finite(x: Any, batch: int) -> Any:
    bad = lax.bitwise_not(lax.is_finite(lax.abs(x) if np.dtype(x.dtype).kind == "c" else x))
    axes = tuple(range(batch, np.ndim(x)))
    return lax.reduce_or(bad, axes) if axes else bad


def _lapack(*kinds: str) -> Any:
    return builtin(*(f"lapack_{p}{k}_ffi" for k in kinds for p in "sdcz"))


def _real_or_complex(name: str, real: str, cplx: str) -> tuple[str, ...]:
    return tuple(f"lapack_{p}{real if p in 'sd' else cplx}_ffi" for p in "sdcz")


@_lapack("potrf")
def _potrf(ctx: RuleContext, a: Any, **attrs: Any) -> Any:
    lower = _char(_cfg(attrs), "uplo", "L") == "L"
    mask = _tril_mask(tuple(a.shape), lower)
    if lower:
        factor = lax_linalg.cholesky(a, symmetrize_input=False)
    else:
        herm = lax.select(_tril_mask(tuple(a.shape), True), _adjoint(a), a)
        factor = _adjoint(lax_linalg.cholesky(herm, symmetrize_input=False))
    out = lax.select(mask, factor, a)
    return out, _info(ctx, 1, _not_finite(factor, np.ndim(a) - 2))


@_lapack("getrf")
def _getrf(ctx: RuleContext, a: Any, **attrs: Any) -> Any:
    lu, pivots, _ = lax_linalg.lu(a)
    k = min(a.shape[-2], a.shape[-1])
    diag = jnp.diagonal(lu, axis1=-2, axis2=-1)[..., :k]
    zero = lax.eq(diag, lax.full_like(diag, 0))
    # info = 1-based index of the first exactly zero pivot, 0 when there is none
    first = jnp.argmax(zero, axis=-1).astype(np.int32) + 1
    info = jnp.where(jnp.any(zero, axis=-1), first, 0)
    piv = lax.convert_element_type(pivots, ctx.result_avals[1].dtype) + 1
    return lu, piv, _info(ctx, 2, info)


@_lapack("geqrf")
def _geqrf(ctx: RuleContext, a: Any, **attrs: Any) -> Any:
    out, taus = _qr_compact(a)
    if len(ctx.result_avals) == 3:
        return out, taus, _info(ctx, 2, lax.full(ctx.result_avals[2].shape, 0, np.int32))
    return out, taus


@builtin(*_real_or_complex("orgqr", "orgqr", "ungqr"))
def _orgqr(ctx: RuleContext, a: Any, taus: Any, **attrs: Any) -> Any:
    q = _q_from_compact(a, taus)
    if len(ctx.result_avals) == 2:
        return q, _info(ctx, 1, lax.full(ctx.result_avals[1].shape, 0, np.int32))
    return q


def _tuple_result(ctx: RuleContext, *outs: Any) -> Any:
    """The results of an XLA custom call with one tuple result, as the interpreter takes it
    (one value, a tuple), or as separate results where the program has them so."""
    return (tuple(outs),) if len(ctx.result_avals) == 1 else tuple(outs)


def _householder_qr(a: Any) -> tuple[Any, Any]:
    """LAPACK ``geqrf``'s compact QR of one real matrix in plain lax ops (differentiable):
    column by column, the reflector ``I - tau v v^T`` (``v[j] = 1``) that zeroes the column
    below the diagonal, ``tau = 0`` where it is zero already (``dlarfg``)."""
    m, n = a.shape
    rows = jnp.arange(m)
    cols = jnp.arange(n)

    def step(j: Any, carry: tuple) -> tuple:
        a, taus = carry
        col = lax.dynamic_index_in_dim(a, j, axis=1, keepdims=False)
        below = rows > j
        x = jnp.where(below, col, 0)
        alpha = lax.dynamic_index_in_dim(col, j, keepdims=False)
        sigma = jnp.sum(x * x)
        zero = sigma == 0
        norm = jnp.sqrt(alpha * alpha + jnp.where(zero, 1, sigma))
        beta = jnp.where(alpha >= 0, -norm, norm)
        tau = jnp.where(zero, 0, (beta - alpha) / beta)
        scale = 1 / jnp.where(zero, 1, alpha - beta)
        v = jnp.where(below, x * scale, 0) + (rows == j).astype(a.dtype)
        upd = a - tau * jnp.outer(v, v @ a)
        a = jnp.where(cols[None, :] > j, upd, a)
        new_col = jnp.where(
            rows == j, jnp.where(zero, alpha, beta), jnp.where(below, x * scale, col)
        )
        a = lax.dynamic_update_index_in_dim(a, new_col, j, axis=1)
        return a, taus.at[j].set(tau)

    k = min(m, n)
    return lax.fori_loop(0, k, step, (a, jnp.zeros((k,), a.dtype)))


def _householder_q(a: Any, taus: Any) -> Any:
    """LAPACK ``orgqr`` of one real matrix in plain lax ops: ``H_1 ... H_k`` applied to the
    first columns of the identity."""
    m, n = a.shape
    rows = jnp.arange(m)

    def step(i: Any, q: Any) -> Any:
        j = taus.shape[0] - 1 - i
        col = lax.dynamic_index_in_dim(a, j, axis=1, keepdims=False)
        v = jnp.where(rows > j, col, 0) + (rows == j).astype(a.dtype)
        tau = lax.dynamic_index_in_dim(taus, j, keepdims=False)
        return q - tau * jnp.outer(v, v @ q)

    return lax.fori_loop(0, taus.shape[0], step, jnp.eye(m, n, dtype=a.dtype))


def _lapack_with_lax_derivative(lapack: Any, algorithm: Any, signature: str, what: str) -> Any:
    """``lapack`` (LAPACK's values) differentiated as the same ``algorithm`` written in lax ops
    (on one matrix: vectorized over batches by its gufunc ``signature``); real types only."""

    @jax.custom_jvp
    def f(*args: Any) -> Any:
        return lapack(*args)

    @f.defjvp
    def f_jvp(primals: tuple, tangents: tuple) -> tuple:
        if jnp.iscomplexobj(primals[0]):
            raise UnsupportedOpError(f"no derivative of {what}")
        return jax.jvp(jnp.vectorize(algorithm, signature=signature), primals, tangents)

    return f


def _compact_qr_values(a: Any) -> tuple[Any, Any]:
    return tuple(_jax_compat.geqrf(a))


_qr_compact = _lapack_with_lax_derivative(
    _compact_qr_values,
    _householder_qr,
    "(m,n)->(m,n),(k)",
    "the compact QR form of a complex matrix",
)
_q_from_compact = _lapack_with_lax_derivative(
    lax_linalg.householder_product,
    _householder_q,
    "(m,n),(k)->(m,n)",
    "the Householder product of complex reflectors",
)


@builtin("Qr")
def _xla_qr(ctx: RuleContext, a: Any, **attrs: Any) -> Any:
    """XLA's ``Qr`` (TF's Qr, MatrixInverse, MatrixSolve): LAPACK ``geqrf``'s compact form, R
    on and above the diagonal, the Householder vectors below it, and their scales ``taus``;
    differentiable (real types) through the same algorithm in lax ops."""
    return _tuple_result(ctx, *_qr_compact(a))


@builtin("ProductOfElementaryHouseholderReflectors")
def _xla_householder_product(ctx: RuleContext, a: Any, taus: Any, **attrs: Any) -> Any:
    """XLA's product of the reflectors of a ``Qr`` (LAPACK ``orgqr``): Q."""
    return _q_from_compact(a, taus)


@builtin("Eigh")
def _xla_eigh(ctx: RuleContext, a: Any, **attrs: Any) -> Any:
    """XLA's ``Eigh`` (TF's SelfAdjointEigV2): ``(vectors, values)``; the backend config is
    ``lower,sort_eigenvalues,max_iter,tol`` (the last two are the Jacobi solver's, which
    LAPACK's does not need)."""
    cfg = str(attrs.get("backend_config") or "1,1").split(",")
    try:
        lower, sort = bool(int(cfg[0])), bool(int(cfg[1]))
    except (ValueError, IndexError):
        raise UnsupportedOpError(
            f"custom call Eigh at {ctx.loc}: backend_config {attrs.get('backend_config')!r} "
            "is not 'lower,sort_eigenvalues,max_iter,tol'"
        ) from None
    v, w = lax_linalg.eigh(a, lower=lower, symmetrize_input=False, sort_eigenvalues=sort)
    return _tuple_result(ctx, v, w)


@builtin(*_real_or_complex("syevd", "syevd", "heevd"))
def _syevd(ctx: RuleContext, a: Any, **attrs: Any) -> Any:
    cfg = _cfg(attrs)
    lower = _char(cfg, "uplo", "L") == "L"
    v, w = lax_linalg.eigh(a, lower=lower, symmetrize_input=False, sort_eigenvalues=True)
    if _char(cfg, "mode", "V") != "V":
        v = a  # LAPACK leaves the (destroyed) input where no vectors were asked for
    return v, w, _info(ctx, 2, _not_finite(w, np.ndim(a) - 2))


@_lapack("gesdd", "gesvd")
def _gesdd(ctx: RuleContext, a: Any, **attrs: Any) -> Any:
    mode = _char(_cfg(attrs), "mode", "A")
    u_aval, vt_aval = ctx.result_avals[2:4]
    if mode == "N":
        s = lax_linalg.svd(a, full_matrices=False, compute_uv=False)
        u = jnp.zeros(u_aval.shape, u_aval.dtype)
        vt = jnp.zeros(vt_aval.shape, vt_aval.dtype)
    else:
        u, s, vt = lax_linalg.svd(a, full_matrices=mode == "A", compute_uv=True)
    return a, s, u, vt, _info(ctx, 4, _not_finite(s, np.ndim(a) - 2))


@_lapack("trsm")
def _trsm(ctx: RuleContext, a: Any, b: Any, **attrs: Any) -> Any:
    cfg = _cfg(attrs)
    trans = _char(cfg, "trans_x", "N")
    return lax_linalg.triangular_solve(
        a,
        b,
        left_side=_char(cfg, "side", "L") == "L",
        lower=_char(cfg, "uplo", "L") == "L",
        transpose_a=trans != "N",
        conjugate_a=trans == "C",
        unit_diagonal=_char(cfg, "diag", "N") == "U",
    )


@_lapack("geev")
def _geev(ctx: RuleContext, a: Any, **attrs: Any) -> Any:
    cfg = _cfg(attrs)
    left = _char(cfg, "compute_left", "N") == "V"
    right = _char(cfg, "compute_right", "V") == "V"
    out = lax_linalg.eig(a, compute_left_eigenvectors=left, compute_right_eigenvectors=right)
    w = out[0]
    rest = list(out[1:])
    vl = rest.pop(0) if left else None
    vr = rest.pop(0) if right else None
    n_w = 2 if np.dtype(a.dtype).kind != "c" else 1
    vl_aval, vr_aval = ctx.result_avals[n_w], ctx.result_avals[n_w + 1]
    vl = vl if vl is not None else jnp.zeros(vl_aval.shape, vl_aval.dtype)
    vr = vr if vr is not None else jnp.zeros(vr_aval.shape, vr_aval.dtype)
    ws = (lax.real(w), lax.imag(w)) if n_w == 2 else (w,)
    return (*ws, vl, vr, _info(ctx, n_w + 2, _not_finite(w, np.ndim(a) - 2)))


@_lapack("gees")
def _gees(ctx: RuleContext, a: Any, **attrs: Any) -> Any:
    cfg = _cfg(attrs)
    if _char(cfg, "sort", "N") != "N":
        raise UnsupportedOpError(f"{attrs.get('call_target_name')} with sorting is not supported")
    vectors = _char(cfg, "mode", "V") == "V"
    out = lax_linalg.schur(a, compute_schur_vectors=vectors)
    t, vs = (out[0], out[1]) if vectors else (out[0], jnp.zeros_like(a))
    real = np.dtype(a.dtype).kind != "c"
    w = _schur_eigenvalues(t, real)
    ws = (lax.real(w), lax.imag(w)) if real else (w,)
    n = len(ctx.result_avals)
    sdim = jnp.zeros(ctx.result_avals[n - 2].shape, ctx.result_avals[n - 2].dtype)
    return (t, vs, *ws, sdim, _info(ctx, n - 1, _not_finite(t, np.ndim(a) - 2)))


def _schur_eigenvalues(t: Any, real: bool) -> Any:
    """Eigenvalues from a (quasi-)triangular Schur form, in diagonal order as LAPACK gives."""
    d = jnp.diagonal(t, axis1=-2, axis2=-1)
    if not real:
        return d
    n = t.shape[-1]
    if n == 1:
        return d.astype(jnp.result_type(d.dtype, np.complex64))
    sub = jnp.diagonal(t, offset=-1, axis1=-2, axis2=-1)  # t[i+1, i]
    sup = jnp.diagonal(t, offset=1, axis1=-2, axis2=-1)  # t[i, i+1]
    pair = sub != 0  # a 2x2 block starts at i
    im = jnp.sqrt(jnp.abs(sub * sup)).astype(d.dtype)
    zero = jnp.zeros_like(d[..., :1])
    im_first = jnp.concatenate([jnp.where(pair, im, 0), zero], axis=-1)
    im_second = jnp.concatenate([zero, jnp.where(pair, -im, 0)], axis=-1)
    imag = im_first + im_second
    return lax.complex(d, imag)


@_lapack("gehrd")
def _gehrd(ctx: RuleContext, a: Any, **attrs: Any) -> Any:
    out, taus = lax_linalg.hessenberg(a)
    return out, taus, _info(ctx, 2, lax.full(ctx.result_avals[2].shape, 0, np.int32))


@builtin(*_real_or_complex("sytrd", "sytrd", "hetrd"))
def _sytrd(ctx: RuleContext, a: Any, **attrs: Any) -> Any:
    lower = _char(_cfg(attrs), "uplo", "L") == "L"
    arr, d, e, taus = lax_linalg.tridiagonal(a, lower=lower)
    return arr, d, e, taus, _info(ctx, 4, lax.full(ctx.result_avals[4].shape, 0, np.int32))


@_lapack("gtsv")
def _gtsv(ctx: RuleContext, dl: Any, d: Any, du: Any, b: Any, **attrs: Any) -> Any:
    x = lax_linalg.tridiagonal_solve(dl, d, du, b)
    return dl, d, du, x, _info(ctx, 4, _not_finite(x, np.ndim(b) - 2))
