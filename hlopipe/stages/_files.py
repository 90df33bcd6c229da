"""Merge and split forward/backward *modules* (files), for users who work on HLO directly.

:func:`merge_files` takes a forward module ``(params, inputs) -> (outputs, residuals)`` and a
backward module ``(params, residuals, cotangents) -> results`` (input cotangents, then
parameter gradients), rehydrates both, composes them and lowers the result as one module
``(params, inputs, cotangents) -> (outputs, residuals, results)``; with a mesh, the
parameters carry their shardings and sharding propagation over the merged program decides
those of the residuals. :func:`split_merged` is the inverse: it cuts a merged module back
into its forward and backward, compiles the merged module once on the mesh, and lowers the
two parts with the shardings it chose pinned on every boundary value (parameters, inputs,
residuals, cotangents, results), so forward and backward agree on the residuals' layout and
the backward needs no collective the merged program lacks.

Both read and write HLO text or StableHLO text; a merged module's argument and result
grouping is a :class:`MergeLayout`, kept next to the file as JSON by the CLI.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import jax
from jax.extend import core as jcore
from jax.extend import source_info_util

from hlopipe.errors import Keyword, StageError
from hlopipe.stages import _jaxpr as J
from hlopipe.stages._sharding import Consistent, MergedCompile, compile_merged, merge

_EXT = {"hlo": ".hlo", "stablehlo": ".mlir"}
# identity-like equations a residual output may pass through on its way out of the merged
# program (a rehydrated result sharding is a with_sharding_constraint)
_PASS_THROUGH = frozenset({"sharding_constraint", "copy", "copy_p", "device_put"})


@dataclass(frozen=True)
class MergeLayout:
    """How a merged module's flat arguments and results group.

    Arguments: ``num_params`` parameters, ``num_inputs`` inputs, ``num_cotangents`` output
    cotangents. Results: ``num_outputs`` outputs, ``num_residuals`` residuals,
    ``num_results`` backward results (input cotangents, then parameter gradients).
    """

    num_params: int
    num_inputs: int
    num_outputs: int
    num_residuals: int
    num_cotangents: int
    num_results: int

    def to_json(self) -> dict[str, int]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any] | str | os.PathLike[str]) -> MergeLayout:
        """A layout from a dict, or from a JSON file holding one (or ``{"layout": {...}}``)."""
        doc: Any = d
        if not isinstance(d, dict):
            try:
                with open(d) as f:
                    doc = json.load(f)
            except (OSError, ValueError) as e:
                raise StageError(f"{d}: cannot read a merge layout: {e}") from e
        doc = doc.get("layout", doc) if isinstance(doc, dict) else doc
        try:
            return cls(**{k: int(doc[k]) for k in cls.__dataclass_fields__})
        except (KeyError, TypeError, ValueError) as e:
            raise StageError(f"not a merge layout (missing or bad {e}): {doc}") from e


@dataclass(eq=False)
class MergedModule:
    """What :func:`merge_files` gives.

    ``text`` is the merged module (``format``: ``"hlo"`` or ``"stablehlo"``); ``compiled``
    the merged executable on the mesh (``None`` without one) and ``residual_shardings`` the
    shardings propagation chose for the residuals.
    """

    text: str
    format: str
    layout: MergeLayout
    mesh: Any = None
    compiled: Any = None
    param_shardings: list[Any] | None = None
    residual_shardings: list[Any] | None = None

    def write(self, directory: str, name: str = "merged") -> str:
        """Write ``<name>.hlo``/``.mlir`` and ``<name>.json`` (the layout); returns the module's
        path."""
        return _write(directory, name, self.format, self.text, self._meta())

    def _meta(self) -> dict[str, Any]:
        return {
            "layout": self.layout.to_json(),
            "mesh": _mesh_json(self.mesh),
            "param_shardings": _sh_json(self.param_shardings),
            "residual_shardings": _sh_json(self.residual_shardings),
        }


@dataclass(eq=False)
class SplitModules:
    """What :func:`split_merged` gives: ``forward`` and ``backward`` module texts, and with a
    mesh their executables (``consistent.forward`` / ``.backward`` / ``.merged``) and the
    residual shardings pinned on both."""

    forward: str
    backward: str
    format: str
    layout: MergeLayout
    mesh: Any = None
    consistent: Consistent | None = None
    residual_shardings: list[Any] | None = None

    def write(self, directory: str, prefix: str = "") -> tuple[str, str]:
        """Write ``<prefix>forward`` and ``<prefix>backward`` modules plus
        ``<prefix>split.json``; returns the two module paths."""
        meta = {
            "layout": self.layout.to_json(),
            "mesh": _mesh_json(self.mesh),
            "residual_shardings": _sh_json(self.residual_shardings),
        }
        f = _write(directory, f"{prefix}forward", self.format, self.forward, None)
        b = _write(directory, f"{prefix}backward", self.format, self.backward, None)
        with open(os.path.join(directory, f"{prefix}split.json"), "w") as fh:
            json.dump({**meta, "forward": os.path.basename(f), "backward": os.path.basename(b)},
                      fh, indent=1)  # fmt: skip
        return f, b


def merge_files(
    forward: Any,
    backward: Any,
    *,
    num_params: int | None = None,
    num_outputs: int | None = None,
    mesh: jax.sharding.Mesh | None = None,
    param_shardings: Sequence[jax.sharding.Sharding | None] | None = None,
    input_shardings: Sequence[jax.sharding.Sharding | None] | None = None,
    format: str = "hlo",
) -> MergedModule:
    """Join a forward and a backward module into one ``(params, inputs, cts) -> (outputs,
    residuals, results)`` module.

    Args:
      forward: ``(params, inputs) -> (outputs, residuals)``: a path, module text, or a
        ``hlopipe.Program``.
      backward: ``(params, residuals, cts) -> results``, likewise.
      num_params: how many leading arguments are parameters (shared by both modules);
        with ``num_outputs`` (how many of the forward's results are outputs, the rest being
        residuals) worked out from the signatures when only one grouping fits.
      mesh: a ``jax.sharding.Mesh`` (``AxisType.Auto`` axes); the modules' own sharding
        annotations are kept, and the merged module is compiled once to read out the
        residual shardings.
      param_shardings: one per parameter (``None``: the forward module's annotation, else
        left to propagation).
      input_shardings: one per forward input (``None``: propagation).
      format: ``"hlo"`` or ``"stablehlo"`` text.

    Returns:
      a :class:`MergedModule` (``.write(dir)`` writes it with its layout).

    Example:
      >>> m = merge_files("stage1.forward.hlo", "stage1.backward.hlo", num_params=2,
      ...                 num_outputs=1, mesh=mesh, param_shardings=shardings)  # doctest: +SKIP
      >>> m.write("out")                                           # doctest: +SKIP
      'out/merged.hlo'
    """
    _check_format(format)
    fj = _trace(forward, mesh, "forward")
    bj = _trace(backward, mesh, "backward")
    layout = infer_layout(fj, bj, num_params=num_params, num_outputs=num_outputs)
    P, X = layout.num_params, layout.num_inputs
    merged = merge(fj, bj, num_params=P, num_outputs=layout.num_outputs)
    if mesh is None:
        return MergedModule(_unsharded_text(merged, format), format, layout)
    own_p = _constraint_shardings(fj)[:P]
    m, res_sh = _compile_on_mesh(
        fj, bj, merged, layout, (param_shardings, own_p), (input_shardings, [None] * X)
    )
    return MergedModule(
        text=_text(m.lowered, format),
        format=format,
        layout=layout,
        mesh=mesh,
        compiled=m.compiled,
        param_shardings=m.in_shardings[:P],
        residual_shardings=res_sh,
    )


def _compile_on_mesh(
    fwd: Any,
    bwd: Any,
    merged: Any,
    layout: MergeLayout,
    params: tuple[Sequence[Any] | None, Sequence[Any]],
    inputs: tuple[Sequence[Any] | None, Sequence[Any]],
) -> tuple[MergedCompile, Any]:
    """Compile the merged program on the mesh; ``params`` and ``inputs`` are ``(shardings the
    caller gave, the defaults for those it left None)``. Returns the compile and the
    residuals' shardings."""
    P, X = layout.num_params, layout.num_inputs
    m = compile_merged(
        fwd, bwd, num_params=P, num_outputs=layout.num_outputs,
        param_shardings=_defaults(params[0], P, "parameter", params[1]),
        input_shardings=_defaults(inputs[0], X, "input", inputs[1]), merged=merged,
    )  # fmt: skip
    O, R = layout.num_outputs, layout.num_residuals
    return m, m.out_shardings[O : O + R]


def split_merged(
    merged: Any,
    layout: MergeLayout | dict[str, Any] | str | os.PathLike[str],
    *,
    mesh: jax.sharding.Mesh | None = None,
    param_shardings: Sequence[jax.sharding.Sharding | None] | None = None,
    input_shardings: Sequence[jax.sharding.Sharding | None] | None = None,
    format: str = "hlo",
) -> SplitModules:
    """Cut a merged module back into its forward and backward modules (:func:`merge_files`'
    inverse), with the merged compile's shardings pinned on the values between them.

    The forward is what the outputs and residuals need of ``(params, inputs)``; the backward
    is what the results need of ``(params, residuals, cts)``. A backward that reads an input
    other than through a residual, or a forward that reads a cotangent, is refused.

    Args:
      merged: ``(params, inputs, cts) -> (outputs, residuals, results)``: a path, module
        text or ``hlopipe.Program``.
      layout: a :class:`MergeLayout`, its dict, or the JSON file :meth:`MergedModule.write`
        wrote.
      mesh: the mesh to compile on; without one the parts carry no shardings.
      param_shardings: one per parameter (``None``: the merged module's own annotation,
        else propagation); ``input_shardings`` likewise for the inputs.
      format: ``"hlo"`` or ``"stablehlo"`` text.

    Returns:
      a :class:`SplitModules`.

    Example:
      >>> parts = split_merged("out/merged.hlo", "out/merged.json", mesh=mesh)  # doctest: +SKIP
      >>> parts.write("out")                                       # doctest: +SKIP
    """
    _check_format(format)
    if not isinstance(layout, MergeLayout):
        layout = MergeLayout.from_json(layout)
    mj = _trace(merged, mesh, "merged module")
    L = layout
    _check_layout_fits(mj, L)
    fwd, bwd = cut_merged(mj, L)
    P, X = L.num_params, L.num_inputs
    if mesh is None:
        return SplitModules(_unsharded_text(fwd, format), _unsharded_text(bwd, format), format, L)
    own = _constraint_shardings(mj)
    m, res_sh = _compile_on_mesh(
        fwd, bwd, mj, L, (param_shardings, own[:P]), (input_shardings, own[P : P + X])
    )
    c = m.consistent()
    return SplitModules(
        forward=_text(c.forward_lowered, format),
        backward=_text(c.backward_lowered, format),
        format=format,
        layout=L,
        mesh=mesh,
        consistent=c,
        residual_shardings=res_sh,
    )


def _check_layout_fits(merged: Any, layout: MergeLayout) -> None:
    """Refuse a merged module whose argument and result counts are not the layout's."""
    L = layout
    n_in = L.num_params + L.num_inputs + L.num_cotangents
    n_out = L.num_outputs + L.num_residuals + L.num_results
    if (len(merged.in_avals), len(merged.out_avals)) != (n_in, n_out):
        raise StageError(
            f"the merged module takes {len(merged.in_avals)} arguments and gives "
            f"{len(merged.out_avals)} results; its layout says {n_in} and {n_out} ({L})"
        )


def infer_layout(
    forward: Any,
    backward: Any,
    *,
    num_params: int | None = None,
    num_outputs: int | None = None,
) -> MergeLayout:
    """The :class:`MergeLayout` of a forward and backward pair (ClosedJaxprs or ``Program``s:
    anything with ``in_avals`` and ``out_avals``).

    Every ``(num_params, num_outputs)`` is tried (or only the given ones): the backward's
    first arguments must match the forward's parameters, the next ones the forward's
    residuals (its last results), and the cotangents left over must be at most as many as the
    outputs. Exactly one grouping must fit.
    """
    fi = [J.sds(a) for a in forward.in_avals]
    fo = [J.sds(a) for a in forward.out_avals]
    bi = [J.sds(a) for a in backward.in_avals]
    bo = [J.sds(a) for a in backward.out_avals]
    fits = _fitting_layouts(fi, fo, bi, bo, num_params, num_outputs)
    if len(fits) == 1:
        return fits[0]
    sig = (
        f"forward {len(fi)} arguments -> {len(fo)} results, backward {len(bi)} arguments -> "
        f"{len(bo)} results"
    )
    if not fits:
        given = [
            part
            for k, v in (("num_params", num_params), ("num_outputs", num_outputs))
            if v is not None
            for part in ("; ", Keyword(k, v))
        ]
        raise StageError(
            "no grouping of the arguments fits a forward (params, inputs) -> (outputs, "
            f"residuals) and a backward (params, residuals, cotangents) -> results ({sig}",
            *given,
            ")",
        )
    options: list[Any] = []
    for f in fits:
        options += [", (" if options else "(", Keyword("num_params", f.num_params), ", "]
        options += [Keyword("num_outputs", f.num_outputs), ")"]
    raise StageError(
        f"{len(fits)} groupings fit the signatures ({sig}): ",
        *options,
        "; pass ",
        Keyword("num_params"),
        " and ",
        Keyword("num_outputs"),
    )


def _fitting_layouts(
    fi: list[Any],
    fo: list[Any],
    bi: list[Any],
    bo: list[Any],
    num_params: int | None,
    num_outputs: int | None,
) -> list[MergeLayout]:
    """Every layout of a forward ``fi -> fo`` and a backward ``bi -> bo`` (avals) that fits,
    over the given parameter and output counts or all of them."""
    fits = []
    for P in range(len(fi) + 1) if num_params is None else [num_params]:
        if len(fi) < P or fi[:P] != bi[:P]:
            continue
        for O in range(len(fo) + 1) if num_outputs is None else [num_outputs]:
            R = len(fo) - O
            C = len(bi) - P - R
            if R < 0 or C < 0 or C > O or fo[O:] != bi[P : P + R]:
                continue
            # cotangents: of some outputs, in order; results: cotangents of some inputs,
            # then gradients of some parameters, in order
            if not _subsequence(bi[P + R :], fo[:O]) or not any(
                _subsequence(bo[:k], fi[P:]) and _subsequence(bo[k:], fi[:P])
                for k in range(len(bo) + 1)
            ):
                continue
            fits.append(MergeLayout(P, len(fi) - P, O, R, C, len(bo)))
    return fits


def cut_merged(merged: Any, layout: MergeLayout) -> tuple[Any, Any]:
    """Cut a merged ClosedJaxpr into its forward and backward ClosedJaxprs."""
    L = layout
    jaxpr = merged.jaxpr
    eqns = jaxpr.eqns
    P, X = L.num_params, L.num_inputs
    pvars = jaxpr.invars[:P]
    xvars = jaxpr.invars[P : P + X]
    cvars = jaxpr.invars[P + X :]
    O, R = L.num_outputs, L.num_residuals
    outs, res, results = jaxpr.outvars[:O], jaxpr.outvars[O : O + R], jaxpr.outvars[O + R :]

    cset = set(cvars)
    fwd = _forward_of_merged(merged, [*pvars, *xvars], [*outs, *res], cset)

    # backward: what the results need of (params, residuals, cts).
    pset = set(pvars)
    alias = _residual_aliases(eqns, res, pset)
    bwd_eqns = _backward_eqns(eqns, results, pset | cset | set(alias), xvars)
    consts = dict(zip(jaxpr.constvars, merged.consts, strict=True))

    def backward(*a: Any) -> list[Any]:
        env: dict[Any, Any] = dict(consts)
        env.update(zip(pvars, a[:P], strict=True))
        env.update((v, a[P + k]) for v, k in alias.items())
        env.update(zip(cvars, a[P + R :], strict=True))

        def read(v: Any) -> Any:
            return v.val if isinstance(v, J.Literal) else env[v]

        for e in bwd_eqns:
            if all(v in env for v in e.outvars):
                continue
            with source_info_util.user_context(e.source_info.traceback):
                params = e.primitive.get_bind_params(e.params)
                ans = e.primitive.bind(*map(read, e.invars), **params)
            for v, x in zip(e.outvars, ans if e.primitive.multiple_results else [ans], strict=True):
                env.setdefault(v, x)
        return [read(v) for v in results]

    b_avals = [J.sds(v.aval) for v in [*pvars, *res, *cvars]]
    bwd = jax.make_jaxpr(backward)(*b_avals)
    return fwd, bwd


def _backward_eqns(
    eqns: Sequence[Any], results: Sequence[Any], provided: set[Any], xvars: Sequence[Any]
) -> list[Any]:
    """The equations the backward's ``results`` need beyond the values ``provided``
    (parameters, residuals and what they stand for, cotangents); refused if they read one of
    the merged module's inputs ``xvars`` other than through a residual."""
    live = {v for v in results if not isinstance(v, J.Literal)}
    need_b = [False] * len(eqns)
    for i in range(len(eqns) - 1, -1, -1):
        e = eqns[i]
        if any(v in live and v not in provided for v in e.outvars):
            need_b[i] = True
            live.update(v for v in e.invars if not isinstance(v, J.Literal))
    xset = set(xvars)
    direct = [k for k, v in enumerate(xvars) if v in live and v not in provided]
    if direct:
        users = [
            e for e, m in zip(eqns, need_b, strict=True) if m and any(v in xset for v in e.invars)
        ]
        at = f" (first read at {J.where(users[0])})" if users else ""
        raise StageError(
            f"the backward part reads input(s) {direct} of the merged module directly, not "
            f"through a residual{at}; make them residuals of the forward"
        )
    return [e for e, m in zip(eqns, need_b, strict=True) if m]


def _forward_of_merged(merged: Any, ins: list[Any], outs: list[Any], cset: set[Any]) -> Any:
    """The merged module's forward: what ``outs`` (outputs and residuals) need of ``ins``;
    refused if it reads a cotangent."""
    eqns = merged.jaxpr.eqns
    need_f = J.needed_eqns(eqns, outs)
    for i, e in enumerate(eqns):
        if need_f[i] and any(v in cset for v in e.invars if not isinstance(v, J.Literal)):
            raise StageError(
                f"the merged module's outputs or residuals depend on a cotangent (at "
                f"{J.where(e)}): it is not a forward followed by a backward"
            )
    for k, v in enumerate(outs):
        if v in cset:
            raise StageError(f"forward result {k} of the merged module is a cotangent")
    return J.make_closed(merged, ins, [e for e, m in zip(eqns, need_f, strict=True) if m], outs)


def _residual_aliases(eqns: Sequence[Any], res: Sequence[Any], pset: set[Any]) -> dict[Any, int]:
    """Variable -> residual index: a residual stands for its output variable and for what
    that passes through on its way out (a sharding constraint, say)."""
    defining = {v: e for e in eqns for v in e.outvars}
    alias: dict[Any, int] = {}
    for k, v in enumerate(res):
        while not isinstance(v, J.Literal) and v not in pset and v not in alias:
            alias[v] = k
            e = defining.get(v)
            if e is None or e.primitive.name not in _PASS_THROUGH or len(e.invars) != 1:
                break
            v = e.invars[0]
    return alias


# --- helpers ----------------------------------------------------------------------------------


def _subsequence(xs: Sequence[Any], ys: Sequence[Any]) -> bool:
    it = iter(ys)
    return all(any(x == y for y in it) for x in xs)


def _check_format(format: str) -> None:
    if format not in _EXT:
        raise StageError(f"unknown module format {format!r}; use 'hlo' or 'stablehlo'")


def _trace(source: Any, mesh: Any, what: str) -> Any:
    """Rehydrate a module (path, text or Program) and trace it to a flat ClosedJaxpr."""
    from hlopipe.io import Program, TokenType, load

    prog = source if isinstance(source, Program) else load(source)
    avals = prog.in_avals
    if any(isinstance(a, TokenType) for a in [*avals, *prog.out_avals]):
        raise StageError(f"the {what} ({prog.source}) takes or returns tokens: not supported")
    fn = prog.as_function(flat=True, **({"mesh": mesh} if mesh is not None else {}))

    def flat(*a: Any) -> list[Any]:
        out = fn(*a)
        return list(out) if isinstance(out, tuple) else [out]

    return jax.make_jaxpr(flat)(*[J.sds(a) for a in avals])


def _constraint_shardings(closed: Any) -> list[Any]:
    """Per argument, the sharding a ``with_sharding_constraint`` applied directly to it
    gives (a rehydrated ``mhlo.sharding`` annotation), else ``None``."""
    found: dict[Any, Any] = {}
    for e in closed.jaxpr.eqns:
        if e.primitive.name == "sharding_constraint" and not isinstance(e.invars[0], J.Literal):
            found.setdefault(e.invars[0], e.params.get("sharding"))
    return [found.get(v) for v in closed.jaxpr.invars]


def _defaults(given: Any, n: int, what: str, fallback: Sequence[Any]) -> list[Any]:
    if given is None:
        return list(fallback)
    given = list(given)
    if len(given) != n:
        raise StageError(f"{n} {what} shardings needed, got {len(given)}")
    return [g if g is not None else f for g, f in zip(given, fallback, strict=True)]


def _unsharded_text(closed: Any, format: str) -> str:
    """``closed`` lowered without shardings, as module text."""
    fn = jcore.jaxpr_as_fun(closed)
    avals = [J.sds(a) for a in closed.in_avals]
    return _text(jax.jit(lambda *a: tuple(fn(*a)), keep_unused=True).lower(*avals), format)


def _text(lowered: Any, format: str) -> str:
    return lowered.as_text(dialect="hlo") if format == "hlo" else lowered.as_text()


def _write(directory: str, name: str, format: str, text: str, meta: dict[str, Any] | None) -> str:
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, name + _EXT[format])
    with open(path, "w") as f:
        f.write(text)
    if meta is not None:
        with open(os.path.join(directory, name + ".json"), "w") as f:
            json.dump({**meta, "module": os.path.basename(path)}, f, indent=1)
    return path


def _mesh_json(mesh: Any) -> dict[str, int] | None:
    return None if mesh is None else {str(k): int(v) for k, v in mesh.shape.items()}


def _sh_json(shardings: Sequence[Any] | None) -> list[str] | None:
    if shardings is None:
        return None
    return [str(getattr(s, "spec", s)) for s in shardings]
