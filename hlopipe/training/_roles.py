"""Which arguments of a loss program are the batch, the trained parameters and the frozen
constants, and why.

The order of evidence: the caller's ``batch_args``; then the program's own tree (a
``jax.export`` artifact of ``loss(params, x, y)``: the leaves of argument 0 are the parameters,
those of the later arguments the batch, as ``Program.arg_roles`` reads it); then the argument
names (a pytree root ``params``/``variables``/``state``/``weights`` is a parameter, every other
named argument is the batch); then, when the names show no roles, the dtypes (the trailing
integer arguments, else the last one; with either, every integer argument whose leading
dimension is the batch's: labels or token ids are data, never trained). Scalars that are not
named as parameters are constants a framework lifted into arguments (torch_xla lifts GELU's
0.7978, attention scales, the -inf of masks): they are frozen, never initialised at random nor
trained.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hlopipe.errors import Keyword, RuntimeConfigError
from hlopipe.io import format_aval

# pytree roots whose leaves are the model's parameters (or state that goes with them)
PARAMETER_ROOTS = frozenset(
    {"params", "param", "parameters", "variables", "state", "weights", "model"}
)

BATCH_ARGS_SYNTAX = (
    "positions from 0 such as 0 (one argument), 0,1 or 2-4 (a range, both ends included), or "
    "last:N for the last N arguments"
)


class Role(enum.StrEnum):
    PARAMETER = "parameter"  # initialised (by role) and trained
    BATCH = "batch"  # one microbatch of data per call
    FROZEN = "frozen"  # a constant lifted into an argument: given, never trained


@dataclass(frozen=True)
class Argument:
    """One argument of the program and its training role."""

    position: int
    name: str | None
    aval: Any  # jax.ShapeDtypeStruct
    role: Role

    @property
    def label(self) -> str:
        return self.name or f"argument {self.position}"

    def describe(self) -> str:
        return f"{self.position} {self.name + ' ' if self.name else ''}({format_aval(self.aval)})"


@dataclass(frozen=True)
class ArgumentRoles:
    """Every argument with its role, and ``how`` the batch was chosen (one sentence, as text
    and :class:`~hlopipe.errors.Keyword` parts: see :func:`hlopipe.errors.render`)."""

    arguments: tuple[Argument, ...]
    how: tuple[Any, ...]

    def _of(self, role: Role) -> tuple[Argument, ...]:
        return tuple(a for a in self.arguments if a.role is role)

    @property
    def parameters(self) -> tuple[Argument, ...]:
        return self._of(Role.PARAMETER)

    @property
    def batch(self) -> tuple[Argument, ...]:
        return self._of(Role.BATCH)

    @property
    def frozen(self) -> tuple[Argument, ...]:
        return self._of(Role.FROZEN)

    @property
    def given(self) -> tuple[Argument, ...]:
        """Parameters and frozen constants, in argument order: what an initial-values file
        holds."""
        return tuple(a for a in self.arguments if a.role is not Role.BATCH)


def name_root(name: str | None) -> str | None:
    """The pytree root of an argument name as JAX writes it: ``params['l1']['w']``,
    ``params__l1____w__`` (HLO text), ``batch_0_`` (HLO's ``batch[0]``), ``model.ln.weight``;
    for a ``jax.export`` path by position, ``[0]`` (``[0]['w']``); ``None`` without a name."""
    if not name:
        return None
    if name.startswith("["):
        return name[: name.index("]") + 1] if "]" in name else None
    head = re.split(r"\[|\]|\.|'|\"|__", name, maxsplit=1)[0]
    head = re.sub(r"(_\d+)+_?$", "", head)
    return head.lower() or None


def is_parameter_name(name: str | None) -> bool:
    """Whether a name puts its argument in the model's parameters: under a root named
    ``params``/``variables``/``state``/``weights``/..., or (a ``jax.export`` path by position)
    a leaf of a dict (``[0]['w']``) where data comes as arrays or tuples of them."""
    root = name_root(name)
    if root is None:
        return False
    if root.startswith("["):
        return name is not None and name[len(root) :].startswith("['")
    return root in PARAMETER_ROOTS


def parse_batch_args(spec: str | Sequence[int], n: int) -> list[int]:
    """Positions of the batch arguments from ``spec`` (see ``BATCH_ARGS_SYNTAX``) for a program
    of ``n`` arguments."""
    text = spec if isinstance(spec, str) else ",".join(map(str, spec))
    kw = Keyword("batch_args", text)
    try:
        positions = _positions(text.strip(), n)
    except ValueError:
        raise RuntimeConfigError(
            kw, f": expected {BATCH_ARGS_SYNTAX} (the program has {n} arguments)"
        ) from None
    bad = [i for i in positions if not 0 <= i < n]
    if bad or not positions or len(set(positions)) != len(positions) or len(positions) >= n:
        raise RuntimeConfigError(
            kw,
            f": positions must be distinct, from 0 to {n - 1} (the program has {n} "
            f"arguments), and leave at least one parameter; syntax: {BATCH_ARGS_SYNTAX}",
        )
    return positions


def _positions(text: str, n: int) -> list[int]:
    if text.lower().startswith("last:"):
        count = int(text[5:])
        if count < 1:
            raise ValueError(text)
        return list(range(n - count, n))
    out: list[int] = []
    for part in text.split(","):
        lo, sep, hi = part.strip().partition("-")
        if sep and lo:
            out += range(int(lo), int(hi) + 1)
        else:
            out.append(int(part))
    return out


def infer_roles(
    avals: Sequence[Any],
    names: Sequence[str | None],
    batch_args: Any = None,
    tops: Sequence[int] | None = None,
) -> ArgumentRoles:
    """The role of each argument (see the module's docstring); ``batch_args`` as in
    :func:`parse_batch_args` (a string or positions) overrides the inference of the batch;
    ``tops``: the top-level argument of each (``Program.top_level_args()``), when the program
    has a tree."""
    n = len(avals)
    roots = [name_root(x) for x in names]
    param_named = [is_parameter_name(x) for x in names]
    # a tree of two or more top-level arguments: argument 0 holds the parameters
    by_tree = tops is not None and len(tops) == n and max(tops, default=0) >= 1
    if tops is not None and by_tree:
        param_named = [t == 0 for t in tops]
    if batch_args is not None:
        batch = parse_batch_args(batch_args, n)
        how: tuple[Any, ...] = ("as ", Keyword("batch_args", _spec_text(batch_args)), " says")
    elif by_tree:
        batch = [i for i in range(n) if not param_named[i] and avals[i].shape]
        how = (
            "by the program's tree (jax.export): the leaves of argument 0 are the parameters, "
            "those of the later arguments the batch",
        )
    elif any(param_named):
        batch = [i for i in range(n) if roots[i] is not None and not param_named[i]]
        batch = [i for i in batch if avals[i].shape]
        outside = sorted({str(r) for r, p in zip(roots, param_named, strict=True) if p})
        how = (f"by name: the arguments outside {'/'.join(outside)}",)
    else:
        batch, how = _batch_by_dtype(avals)
    if not batch:
        raise RuntimeConfigError(
            "no argument is taken as the batch (every named argument is under "
            f"{'/'.join(sorted(PARAMETER_ROOTS))}); name the batch with ",
            Keyword("batch_args", "I,J"),
        )
    scalars = [avals[i] for i in batch if not avals[i].shape]
    if scalars:
        raise RuntimeConfigError(
            f"arguments {', '.join(map(str, batch))} "
            f"({', '.join(format_aval(avals[i]) for i in batch)}) are taken as the batch, but a "
            "scalar has no batch axis; set ",
            Keyword("batch_args"),
            f" ({BATCH_ARGS_SYNTAX})",
        )
    args = []
    for i, (a, name) in enumerate(zip(avals, names, strict=True)):
        if i in batch:
            role = Role.BATCH
        elif not a.shape and not param_named[i]:
            role = Role.FROZEN  # a lifted constant, unless named as a parameter
        else:
            role = Role.PARAMETER
        args.append(Argument(i, name, a, role))
    return ArgumentRoles(tuple(args), how)


def _spec_text(spec: Any) -> str:
    return spec if isinstance(spec, str) else ",".join(map(str, spec))


def _batch_by_dtype(avals: Sequence[Any]) -> tuple[list[int], tuple[Any, ...]]:
    """The trailing integer arguments (token ids, labels), else the last non-scalar one; with
    them, the other integer arguments of the batch's leading dimension (torch_xla puts its
    ``labels`` first)."""
    n = len(avals)
    shaped = [i for i in range(n) if avals[i].shape]
    is_int = [np.issubdtype(np.dtype(a.dtype), np.integer) for a in avals]
    ints: list[int] = []
    for i in reversed(shaped):
        if not is_int[i]:
            break
        ints.insert(0, i)
    if ints and len(ints) < len(shaped):
        batch = ints
        why = "by dtype (no argument names show the roles): the trailing integer ones"
    else:
        batch = shaped[-1:] if shaped else [n - 1]
        why = (
            "by dtype (no argument names show the roles, no trailing integer arguments): the "
            "last one"
        )
    rows = avals[batch[0]].shape[:1]
    more = [i for i in shaped if is_int[i] and i not in batch and avals[i].shape[:1] == rows]
    if more and len(batch) + len(more) < len(shaped):
        batch = sorted(batch + more)
        why += (
            f", with the integer argument(s) {', '.join(map(str, more))} of the same leading "
            "dimension (labels, token ids: data, never trained)"
        )
    if ints and len(ints) < len(shaped):
        return batch, (why,)
    return batch, (why, "; name the batch with ", Keyword("batch_args", "I,J"))


def init_by_role(name: str | None, aval: Any, rng: Any) -> tuple[Any, str]:
    """An initial value for a parameter whose name (``params['ln1']['g']``, ``fc1_b``, ...)
    may show its role: norm scales 1 (a vector named ``ln*``/``norm*``, or ``g``, ``gamma``,
    ``*_scale``, or the ``weight`` of a norm), biases 0, matrices ~ N(0, 1/fan_in); without a role,
    matrices as such and vectors 0. Returns the value and the role's words."""
    import math

    dt = np.dtype(aval.dtype)
    shape = tuple(aval.shape)
    if not np.issubdtype(dt, np.inexact):
        return np.zeros(shape, dt), "integer parameters = 0"
    words = [w.lower() for w in re.split(r"[^A-Za-z0-9]+", name or "") if w]
    last = words[-1] if words else ""
    normish = any(w.startswith(("ln", "norm", "layernorm", "rmsnorm", "bn")) for w in words)
    vector = len(shape) == 1
    if (
        last in ("g", "gamma", "scale", "scales")
        or (last in ("w", "weight") and normish and vector)
        # the norm's own name as the gain's (params['ln1'], params['lnf'], norm_2)
        or (vector and last.startswith(("ln", "norm", "layernorm", "rmsnorm")))
    ):
        return np.ones(shape, dt), "norm scales = 1"
    if last in ("b", "bias", "biases", "beta") or len(shape) < 2:
        return np.zeros(shape, dt), "biases = 0" if last else "vectors = 0"
    fan_in = math.prod(shape[:-1])
    std = 1.0 / math.sqrt(max(fan_in, 1))
    return (rng.standard_normal(shape) * std).astype(dt), "matrices ~ N(0, 1/fan_in)"
