"""A decode step (and its prefills) exported at batch 1, served at a batch of ``rows``: the
rehydrated program vmapped over sequences (:func:`widen`).

Each sequence is a row of its own: its cache a row of every state argument (a new leading
axis of ``rows``), its token, its position. The parameters are not mapped, so one step
reads the weights once for every row. The widened step takes a position per row, so the
generator serves it as it serves a step exported with one (``Generator.per_sequence``: a
row refilled while the others carry on, a prompt prefilled into its row alone). The
prefill is widened alike: its prompt ``[rows, P]``, its state outputs in the step's layout.

An argument or output of the batch-1 program led by its batch axis (a token ``[1]``, logits
``[1, vocab]``, a prompt ``[1, P]``, a position ``[1]``) has that axis taken by the rows; a
state argument keeps its own shape under the new axis (wherever its batch axis lies); a
scalar position becomes one per row.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import numpy as np

from hlopipe.errors import Keyword, RuntimeConfigError
from hlopipe.generate._plan import counters_as_position, logits_as_feedback, prefill_outputs


class Widened(NamedTuple):
    """The widened programs (loaded ``Program``s) and the cache length of the batch-1 step
    when its roles tell it (``None``: the generator works it out, or ``max_len`` is given)."""

    decode: Any
    prefills: tuple[Any, ...]
    max_len: int | None


def widen(
    decode: Any,
    prefills: Any = (),
    rows: int = 1,
) -> Widened:
    """``decode`` (a batch-1 step) and its ``prefills`` vmapped over ``rows`` sequences.

    Raises:
      RuntimeConfigError: ``rows`` is not a positive integer; the step's batch is not 1; its
        position lives in its state (counters) rather than in an argument."""
    if not isinstance(rows, int) or isinstance(rows, bool) or rows < 1:
        raise RuntimeConfigError(Keyword("max_batch", rows), " must be a positive integer")
    source = getattr(decode, "source", "the decode step")
    roles = counters_as_position(decode.arg_roles())
    roles, _ = logits_as_feedback(roles)
    if not roles.feedback or not roles.state:
        raise RuntimeConfigError(
            f"{source}: its state and fed-back token cannot be told, so it cannot be served "
            "at another batch; serve it at its own (no ", Keyword("max_batch"), ")"
        )  # fmt: skip
    token = roles.feedback[0]
    b = token.shape[0] if token.shape else 1
    if b != 1:
        raise RuntimeConfigError(
            f"{source}: exported at batch {b}; ", Keyword("max_batch"), " widens a step "
            "exported at batch 1 (export it at batch 1, or serve it at its own batch)"
        )  # fmt: skip
    if any(r.counter for r in roles):
        raise RuntimeConfigError(
            f"{source}: its position lives in its state (counters), which a batch of rows "
            "would share; export it with the position as an argument to serve it at ",
            Keyword("max_batch"),
        )  # fmt: skip
    params = {r.index for r in roles.parameters}
    states = {r.index for r in roles.state}
    state_outs = {r.output for r in roles.state}
    wide = _widened(decode, rows, params, states, state_outs)
    pres = []
    for p in prefills:
        what = f"the prefill {getattr(p, 'source', '')}".rstrip()
        _, state_of_out = prefill_outputs(p, roles, token.index, what)
        prompt = _prompt_arg(p, what)
        p_params = set(range(len(p.in_avals))) - {prompt}
        pres.append(_widened(p, rows, p_params, set(), set(state_of_out)))
    lengths = [int(r.shape[r.axis]) for r in roles.state if r.axis is not None]
    told = len(lengths) == len(roles.state)
    return Widened(wide, tuple(pres), min(lengths) if told and lengths else None)


def _widened(program: Any, rows: int, params: set[int], states: set[int], keep: set[int]) -> Any:
    """``program`` vmapped over ``rows``: arguments in ``params`` not mapped, those in
    ``states`` and outputs in ``keep`` under a new leading axis, every other argument and
    output led by a batch axis of 1 has it taken by the rows (a scalar gets one per row);
    the state donated, so that the widened program's roles are the program's."""
    from hlopipe.io import load

    fn = program.as_function(flat=True)
    ins, outs = program.in_avals, program.out_avals
    squeezed = [i not in params and i not in states and tuple(a.shape[:1]) == (1,)
                for i, a in enumerate(ins)]  # fmt: skip
    out_squeezed = [k not in keep and tuple(a.shape[:1]) == (1,) for k, a in enumerate(outs)]
    single = len(outs) == 1

    def row(*args: Any) -> tuple[Any, ...]:
        full = [a[None] if s else a for a, s in zip(args, squeezed, strict=True)]
        got = fn(*full)
        got = (got,) if single else tuple(got)
        return tuple(o[0] if s else o for o, s in zip(got, out_squeezed, strict=True))

    in_axes = [None if i in params else 0 for i in range(len(ins))]
    mapped = jax.vmap(row, in_axes=in_axes)
    avals = []
    for i, a in enumerate(ins):
        shape = tuple(a.shape)
        if i not in params:
            shape = (rows, *shape[1:]) if squeezed[i] else (rows, *shape)
        avals.append(jax.ShapeDtypeStruct(shape, np.dtype(a.dtype)))
    exp = program.exported
    tree = getattr(exp, "in_tree", None)
    if tree is not None and tree.num_leaves == len(ins):  # its paths kept (names matched)
        args, kwargs = jax.tree.unflatten(tree, avals)

        def traced(*a: Any, **k: Any) -> tuple[Any, ...]:
            return mapped(*jax.tree.leaves((a, k)))

        jitted = jax.jit(traced, donate_argnums=tuple(_top_donated(tree, states)))
        exported = jax.export.export(jitted)(*args, **kwargs)
    else:
        exported = jax.export.export(jax.jit(mapped, donate_argnums=tuple(sorted(states))))(*avals)
    widened = load(exported.serialize())
    widened.source = f"{getattr(program, 'source', 'the program')} (at {rows} rows)"
    return widened


def _prompt_arg(prefill: Any, what: str) -> int:
    """The prefill's prompt: its one integer argument shaped ``[1, length]`` (every other
    argument is a parameter, not mapped).

    Raises:
      RuntimeConfigError: none or several such arguments."""
    found = [
        i
        for i, a in enumerate(prefill.in_avals)
        if len(a.shape) == 2 and a.shape[0] == 1 and np.dtype(a.dtype).kind in "iu"
    ]
    if len(found) != 1:
        shown = ", ".join(f"argument {i}" for i in found) or "none"
        raise RuntimeConfigError(
            f"{what}: its prompt (an integer argument shaped [1, length]) cannot be told "
            f"({shown}), so its rows cannot be widened; export it at batch 1, or serve "
            "without ", Keyword("max_batch"),
        )  # fmt: skip
    return found[0]


def _top_donated(tree: Any, states: set[int]) -> list[int]:
    """The top-level positional arguments holding a flat argument of ``states``."""
    args, _ = jax.tree.unflatten(tree, list(range(tree.num_leaves)))
    return [k for k, a in enumerate(args) if set(jax.tree.leaves(a)) & states]
