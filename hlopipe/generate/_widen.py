"""A decode step (and its prefills) served at a batch of ``rows``: the rehydrated program
vmapped over sequences (:func:`widen`).

Each sequence is a row of its own: its cache a row of every state argument, its token, its
position. The parameters are not mapped, so one step reads the weights once for every row.
The widened step takes a position per row, so the generator serves it as it serves a step
exported with one (``Generator.per_sequence``: a row refilled while the others carry on, a
prompt prefilled into its row alone). The prefill is widened alike: its prompt ``[rows, P]``,
its state outputs in the step's layout. A chunk step among the prefills (``_chunk.py``: it
takes the cache in) is widened as the step is: its caches under the rows, its tokens
``[rows, C]``, its position one a row (``[rows]``, or ``[rows, C]`` from a ``cache_position``),
so that chunks of several rows run in one call, each row at its own position.

Three forms, by what the exported step takes:

* **batch 1, a position argument**: vmapped over ``rows``. An argument or output led by its
  batch axis of 1 (a token ``[1]``, logits ``[1, vocab]``, a prompt ``[1, P]``, a position
  ``[1]``) has that axis taken by the rows; a state argument keeps its own shape under a new
  leading axis (wherever its batch axis lies); a scalar position becomes one per row.
* **batch b, a position per sequence** ``[b]``: vmapped over ``rows / b`` groups of ``b``
  rows, each group one call of the step with its own cache rows and positions. The caches
  must hold the batch on their first axis (the widened state is that axis of ``rows``, so
  that one sequence's rows lie along one axis); ``rows`` a multiple of ``b``.
* **one position for the whole batch** (a scalar or ``[1]`` at ``b > 1``, or ``StaticCache``
  counters, the torch_xla form of ``hlopipe.torch.export_generation``, at any ``b``): the
  rows of a group share their position, so each row is a group of its own, its sequence in
  each of the ``b`` rows and row 0 read back; the counters are fed the row's position and no
  longer carried (the widened step takes ``(params, state, tokens [rows], position [rows])``).
  This costs ``b`` times the compute and cache of a batch-1 export: export at batch 1 to
  serve at ``--max-batch`` without it.

The prefill of the last two forms runs each row's prompt in all ``b`` rows of a call, so that
the prompt's rows lie whole along the state's leading axis (its data flow shows where a row
lands, and a row is prefilled alone); its lifted constants (a counter's start) are given the
values :func:`hlopipe.generate._plan.prefill_args` solves. A chunk step beside them is
widened alike (:func:`_grouped_chunk`): each row a call of its own, at its own position.
"""

from __future__ import annotations

import enum
from typing import Any, NamedTuple

import jax
import numpy as np

from hlopipe.errors import Keyword, RuntimeConfigError
from hlopipe.generate._chunk import takes_cache
from hlopipe.generate._plan import counters_as_position, logits_as_feedback, prefill_outputs
from hlopipe.io import Use


class WidenForm(enum.StrEnum):
    """Which of the module docstring's three forms a step was widened as."""

    BATCH_1 = "batch-1"  # vmapped over the rows
    PACKED = "packed"  # batch b, a position per sequence: groups of b rows a call
    SHARED = "shared"  # one position for the batch (a scalar, or counters): a row a call

    def says(self, b: int, counters: bool) -> str:
        """What the startup summary says of a step exported at batch ``b`` served so."""
        if self is WidenForm.BATCH_1:
            return "a batch-1 step vmapped"
        if self is WidenForm.PACKED:
            return f"a batch-{b} step vmapped over groups of {b} rows"
        kept = "in StaticCache counters" if counters else "for its whole batch"
        return f"a batch-{b} step (one position {kept}) vmapped, each row a call of its own"


class Widened(NamedTuple):
    """The widened programs (loaded ``Program``s) and the cache length of the batch-1 step
    when its roles tell it (``None``: the generator works it out, or ``max_len`` is given).
    ``narrow``: ``{n: the prefills at n rows, in their order}`` for the powers of two ``n``
    below ``rows`` (batch-1 form only; ``Generator(row_prefills=...)``), so that a prompt
    admitted into a few rows is prefilled at the fewest rows holding it, not at ``rows``; a
    chunk step among the prefills is widened alike, in its place. ``says``: the form served,
    as the startup summary names it (:meth:`WidenForm.says`). ``steps``: ``{n: the decode
    step computing its first n rows}`` for the same ``n`` (batch-1 form only;
    ``Generator(row_steps=...)``): it takes and gives the whole state at ``rows`` (donated),
    its tokens and positions at ``rows``, computes the step vmapped over the first ``n`` of
    them and writes only their cache rows back in place; its token or logits are padded with
    zeros to ``rows``. A turn whose running rows are the first ``n`` then costs ``n`` rows'
    compute, not ``rows``'."""

    decode: Any
    prefills: tuple[Any, ...]
    max_len: int | None
    narrow: dict[int, tuple[Any, ...]] = {}
    says: str = WidenForm.BATCH_1.says(1, False)
    steps: dict[int, Any] = {}


def widen(
    decode: Any,
    prefills: Any = (),
    rows: int = 1,
) -> Widened:
    """``decode`` and its ``prefills`` vmapped over ``rows`` sequences (the module docstring
    says how, by the form of the step).

    Raises:
      RuntimeConfigError: ``rows`` is not a positive integer, or not a multiple of a batch
        ``b`` step's batch when it takes a position per sequence; such a step's caches not
        told to hold the batch on their first axis; outputs besides the token, state and
        counters; state and token not told apart."""
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
    if b != 1 or any(r.counter for r in roles):
        return _grouped(decode, tuple(prefills), rows, roles, b)
    params = {r.index for r in roles.parameters}
    states = {r.index for r in roles.state}
    state_outs = {r.output for r in roles.state}
    wide = _widened(decode, rows, params, states, state_outs)
    counts = [n for n in (1 << k for k in range(rows.bit_length())) if n < rows]
    arg_of_out = {r.output: r.index for r in roles.state}
    steps = {n: _widened(decode, rows, params, states, state_outs, (n, arg_of_out))
             for n in counts}  # fmt: skip
    pres: list[tuple[Any, set[int], set[int], set[int]]] = []
    for p in prefills:
        if takes_cache(p):  # a chunk step: its caches under the rows as the step's, a
            own = p.arg_roles()  # position per row, its tokens [rows, C]
            pres.append((p, {r.index for r in own.parameters}, {r.index for r in own.state},
                         {r.output for r in own.state}))  # fmt: skip
            continue
        what = f"the prefill {getattr(p, 'source', '')}".rstrip()
        _, state_of_out = prefill_outputs(p, roles, token.index, what)
        prompt = _prompt_arg(p, what)
        p_params = set(range(len(p.in_avals))) - {prompt}
        pres.append((p, p_params, set(), set(state_of_out)))
    narrow = {n: tuple(_widened(p, n, ps, ss, ks) for p, ps, ss, ks in pres)
              for n in counts if pres}  # fmt: skip
    lengths = [int(r.shape[r.axis]) for r in roles.state if r.axis is not None]
    told = len(lengths) == len(roles.state)
    return Widened(wide, tuple(_widened(p, rows, ps, ss, ks) for p, ps, ss, ks in pres),
                   min(lengths) if told and lengths else None, narrow,
                   steps=steps)  # fmt: skip


def _widened(
    program: Any,
    rows: int,
    params: set[int],
    states: set[int],
    keep: set[int],
    first: tuple[int, dict[int, int]] | None = None,
) -> Any:
    """``program`` vmapped over ``rows``: arguments in ``params`` not mapped, those in
    ``states`` and outputs in ``keep`` under a new leading axis, every other argument and
    output led by a batch axis of 1 has it taken by the rows (a scalar gets one per row);
    the state donated, so that the widened program's roles are the program's. ``first``:
    ``(n, {state output: its argument})``, the program computing its first ``n`` rows only
    (``Widened.steps``): its arguments sliced to them, each state output written over its
    argument's first ``n`` rows (a dynamic update slice of the donated buffer, in place),
    every other output padded with zeros to ``rows``."""
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
    if first is not None:
        mapped = _first_rows(row, in_axes, avals, rows, params, states, *first)
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
    at = f"{rows} rows" if first is None else f"the first {first[0]} of {rows} rows"
    widened.source = f"{getattr(program, 'source', 'the program')} (at {at})"
    return widened


# what taking a cache's rows traces to (``a[:n]``, ``a[0]``)
_TAKE_ROWS = frozenset({"slice", "dynamic_slice", "squeeze", "reshape"})


def _first_rows(
    row: Any,
    in_axes: list[int | None],
    avals: list[Any],
    rows: int,
    params: set[int],
    states: set[int],
    n: int,
    arg_of_out: dict[int, int],
) -> Any:
    """``row`` (one row's step, vmapped over ``rows`` as ``in_axes`` say, taking ``avals``)
    computing the first ``n`` rows (see ``_widened``), as a function of its flat arguments:
    vmapped over ``n``, or at ``n = 1`` called on row 0 alone (XLA copies every cache twice
    a step to write back one row computed by a vmap of one: measured on its compiled
    program, none without the vmap).

    Each state's slice is traced right before the first equation reading it, not at the
    program's start: a split cuts in program order, and a cache sliced before the first
    stage's marker would be read by the first stage and written by its own."""
    import jax.numpy as jnp
    from jax import lax
    from jax.extend import core as jcore

    mapped = jax.vmap(row, in_axes=in_axes)

    def first(*args: Any) -> tuple[Any, ...]:
        if n == 1:
            got = tuple(v[None] for v in row(*(a if i in params else a[0]
                                               for i, a in enumerate(args))))  # fmt: skip
        else:
            got = mapped(*(a if i in params else a[:n] for i, a in enumerate(args)))
        return tuple(
            lax.dynamic_update_slice(args[arg_of_out[o]], v, (0,) * v.ndim)
            if o in arg_of_out
            else jnp.pad(v, [(0, rows - n)] + [(0, 0)] * (v.ndim - 1))
            for o, v in enumerate(got)
        )

    closed = jax.make_jaxpr(first)(*avals)
    jaxpr = closed.jaxpr
    cached = {v for i, v in enumerate(jaxpr.invars) if i in states}
    eqns = list(jaxpr.eqns)
    # a cache's row taken (a slice, an index: its shape ops, in a chain), moved to right
    # before the first equation reading what it made (later than it was: its operands exist)
    late: set[int] = set()
    taken = set(cached)
    for k, e in enumerate(eqns):
        if e.primitive.name in _TAKE_ROWS and any(
            not isinstance(v, jcore.Literal) and v in taken for v in e.invars
        ):
            late.add(k)
            taken.update(e.outvars)
    made = {v: k for k in late for v in eqns[k].outvars}
    reader: dict[int, int] = {}
    for k, e in enumerate(eqns):
        for v in e.invars:
            if not isinstance(v, jcore.Literal) and v in made:
                reader.setdefault(made[v], k)
    before: dict[int, list[int]] = {}
    for j in sorted(reader):
        before.setdefault(reader[j], []).append(j)
    order: list[Any] = []

    def emit(k: int) -> None:
        for j in before.get(k, ()):
            emit(j)
        order.append(eqns[k])

    for k in range(len(eqns)):
        if k not in reader:
            emit(k)
    return jcore.jaxpr_as_fun(jcore.ClosedJaxpr(jaxpr.replace(eqns=order), closed.consts))


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


class _Layout(NamedTuple):
    """How the rows of a widened step meet the exported batch ``b``: ``packed``, ``b`` rows a
    group (each its own position: a position per sequence ``[b]``), ``rows // b`` groups, the
    state's rows along its leading batch axis; else one row a group (the group's rows share a
    position: a scalar position, or counters), its sequence in each of the ``b`` rows (the
    state a new leading axis of rows over the exported shape) and row 0 read back."""

    b: int
    groups: int
    packed: bool

    @property
    def rows(self) -> int:
        return self.groups * self.b if self.packed else self.groups


def _grouped(decode: Any, prefills: tuple[Any, ...], rows: int, roles: Any, b: int) -> Widened:
    """``widen`` for a step exported at batch ``b > 1`` or keeping its position in counters:
    the step vmapped over groups of its own batch (:class:`_Layout`), each group its own cache
    rows and position, taking ``(params, state, tokens [rows], position [rows])``; the
    counters fed each group's position, not carried (the widened step has none)."""
    from hlopipe.generate._plan import position_of

    source = getattr(decode, "source", "the decode step")
    token = roles.feedback[0]
    position = position_of(roles, source, b)
    counters = [r for r in roles if r.counter]
    if position is None:
        raise RuntimeConfigError(f"{source}: no position argument or counter to give each row")
    packed = not counters and b > 1 and tuple(position.shape) == (b,)
    if packed and rows % b:
        raise RuntimeConfigError(
            Keyword("max_batch", rows), f" is not a multiple of {b}, the batch {source} was "
            f"exported at (each group of {b} rows is one call of the step); give a multiple of "
            f"{b}, or export the step at batch 1",
        )  # fmt: skip
    states = list(roles.state)
    counter_outs = {r.output for r in decode.arg_roles() if r.counter}
    known = {token.output} | {r.output for r in states} | counter_outs
    other = [o for o in range(len(decode.out_avals)) if o not in known]
    if other:
        raise RuntimeConfigError(
            f"{source}: outputs {other} are neither the token (or logits), state nor a "
            "counter, so its rows cannot be widened; serve it at its own batch (no ",
            Keyword("max_batch"), ")",
        )  # fmt: skip
    if packed:  # (a chunk step among the prefills takes the cache in: not a prefill)
        plain = tuple(p for p in prefills if not takes_cache(p))
        _check_batch_first(decode, plain, roles, b, source)
    layout = _Layout(b, rows // b if packed else rows, packed)
    wide = _grouped_decode(decode, roles, position, counters, layout)
    pres = tuple(_grouped_chunk(p, layout) if takes_cache(p)
                 else _grouped_prefill(p, decode, roles, layout) for p in prefills)  # fmt: skip
    lengths = [int(r.shape[r.axis]) for r in states if r.axis is not None]
    told = len(lengths) == len(states)
    form = WidenForm.PACKED if packed else WidenForm.SHARED
    return Widened(wide, pres, min(lengths) if told and lengths else None,
                   says=form.says(b, bool(counters)))  # fmt: skip


def _check_batch_first(
    decode: Any, prefills: tuple[Any, ...], roles: Any, b: int, source: str
) -> None:
    """That each state argument's batch axis is its first (the rows of groups of ``b`` then
    lie whole along it): axis 0 of size ``b``, the only such axis besides the cache length,
    or, where several are, the one along which the first prefill's state rolls when its
    prompt's rows are rolled (the prefill run twice on random weights: rows are computed
    alike whatever the weights).

    Raises:
      RuntimeConfigError naming a state argument whose batch axis is not told to be its
      first."""
    fits = {r.index: [k for k, n in enumerate(r.shape) if n == b and k != r.axis]
            for r in roles.state}  # fmt: skip
    rolled: dict[int, set[int]] = {}
    if prefills and any(len(f) > 1 for f in fits.values()):
        rolled = _rolled_axes(decode, prefills[0], roles, b)
    for r in roles.state:
        f = fits[r.index]
        if f[:1] == [0] and (len(f) == 1 or rolled.get(r.index) == {0}):
            continue
        seen = f"; the prefill rolls it along {sorted(rolled[r.index])}" if rolled else ""
        raise RuntimeConfigError(
            f"{source}: its state {r.path} ({r.dtype}{list(r.shape)}) is not told to hold its "
            f"batch of {b} along axis 0 (axes {f} fit{seen}), so groups of its rows cannot be "
            "widened; export the step with its caches batch-first, or at batch 1 for ",
            Keyword("max_batch"),
        )  # fmt: skip


def _rolled_axes(decode: Any, prefill: Any, roles: Any, b: int) -> dict[int, set[int]]:
    """``{state argument: the axes of size b along which the prefill's state output rolls by
    one when the prompt's rows do}``, the prefill run on random weights and prompts."""
    from hlopipe.generate._plan import prefill_args, prefill_outputs

    what = f"the prefill {getattr(prefill, 'source', '')}".rstrip()
    pa = prefill_args(prefill, roles, what, decode=decode)
    _, state_of_out = prefill_outputs(prefill, roles, roles.feedback[0].index, what)
    rng = np.random.default_rng(0)
    args: list[Any] = []
    for i, a in enumerate(prefill.in_avals):
        dtype, shape = np.dtype(a.dtype), tuple(a.shape)
        if i in pa.constants:
            args.append(np.asarray(pa.constants[i], dtype).reshape(shape))
        elif dtype.kind in "iu":  # small ids: inside any vocabulary
            args.append(rng.integers(0, 4, shape).astype(dtype))
        else:  # positive: an epsilon or a mask value stays one a square root takes
            args.append(rng.uniform(0.5, 1.5, shape).astype(dtype))
    fn = jax.jit(prefill.as_function(flat=True))
    base = fn(*args)
    args[pa.prompt] = np.roll(args[pa.prompt], 1, axis=0)
    moved = fn(*args)
    found: dict[int, set[int]] = {}
    for o, arg in state_of_out.items():
        x, y = np.asarray(base[o]), np.asarray(moved[o])
        found[arg] = {k for k, n in enumerate(x.shape) if n == b
                      and np.allclose(np.roll(x, 1, axis=k), y, equal_nan=True)
                      and not np.allclose(x, y, equal_nan=True)}  # fmt: skip
    return found


def _grouped_decode(
    decode: Any, roles: Any, position: Any, counters: list[Any], layout: _Layout
) -> Any:
    """The decode step vmapped over ``layout``'s groups: ``(params, state, tokens, position)
    -> (token or logits, *state)``, the state donated. The state is only reshaped on the way
    (no transpose, broadcast or slice), so that data flow still shows each state output
    updating its argument in place, indexed by the position."""
    import jax.numpy as jnp

    fn = decode.as_function(flat=True)
    n_in, single = len(decode.in_avals), len(decode.out_avals) == 1
    token = roles.feedback[0]
    params, states = list(roles.parameters), list(roles.state)
    tok_rest, G, b = tuple(token.shape[1:]), layout.groups, layout.b

    def group(ps: Any, st: Any, tok: Any, pos: Any) -> tuple[Any, ...]:
        args: list[Any] = [None] * n_in
        for r, v in zip(params, ps, strict=True):
            args[r.index] = v
        for r, v in zip(states, st, strict=True):
            args[r.index] = v
        if not layout.packed:  # one sequence in each of the b rows, at one position
            tok = jnp.broadcast_to(tok, (b, *tok_rest))
        args[token.index] = tok.astype(token.dtype)
        for r in counters or [position]:
            args[r.index] = jnp.broadcast_to(pos, tuple(r.shape)).astype(r.dtype)
        got = fn(*args)
        got = (got,) if single else tuple(got)
        first = got[token.output]
        return (first if layout.packed else first[0], *(got[r.output] for r in states))

    def step(ps: Any, st: Any, tokens: Any, pos: Any) -> tuple[Any, ...]:
        if layout.packed:
            st = tuple(v.reshape(G, b, *v.shape[1:]) for v in st)
            tokens = tokens.reshape(G, b, *tok_rest)
            pos = pos.reshape(G, b)
        first, *outs = jax.vmap(group, in_axes=(None, 0, 0, 0))(ps, st, tokens, pos)
        if layout.packed:
            first = first.reshape(G * b, *first.shape[2:])
            outs = [v.reshape(G * b, *v.shape[2:]) for v in outs]
        return (first, *outs)

    ins = decode.in_avals
    p_avals = tuple(jax.ShapeDtypeStruct(tuple(ins[r.index].shape), ins[r.index].dtype)
                    for r in params)  # fmt: skip
    s_avals = tuple(jax.ShapeDtypeStruct(_wide_shape(tuple(r.shape), layout), r.dtype)
                    for r in states)  # fmt: skip
    pos_dtype = (counters or [position])[0].dtype
    avals = (p_avals, s_avals, jax.ShapeDtypeStruct((layout.rows, *tok_rest), token.dtype),
             jax.ShapeDtypeStruct((layout.rows,), pos_dtype))  # fmt: skip
    return _exported(step, avals, (1,), decode, layout.rows)


def _wide_shape(shape: tuple[int, ...], layout: _Layout) -> tuple[int, ...]:
    """A state's shape widened: the batch axis (first) of ``rows``, or a new leading axis."""
    return (layout.rows, *shape[1:]) if layout.packed else (layout.rows, *shape)


def _grouped_prefill(prefill: Any, decode: Any, roles: Any, layout: _Layout) -> Any:
    """The prefill widened for the grouped step: ``(params, prompt [rows, P]) -> (first, *state)``
    in the widened step's parameters' order and state layout. Each row's prompt is prefilled
    in every one of the exported ``b`` rows (packed: row 0 kept), so that the prompt's rows
    lie whole along the state's leading axis (a row is prefilled alone); the prefill's own
    lifted constants (a counter's start) given their solved values."""
    import jax.numpy as jnp

    from hlopipe.generate._plan import prefill_args, prefill_outputs

    what = f"the prefill {getattr(prefill, 'source', '')}".rstrip()
    pa = prefill_args(prefill, roles, what, decode=decode)
    first_out, state_of_out = prefill_outputs(prefill, roles, roles.feedback[0].index, what)
    out_of_state = {a: o for o, a in state_of_out.items()}
    fn = prefill.as_function(flat=True)
    ins, b = prefill.in_avals, layout.b
    params, states = list(roles.parameters), list(roles.state)
    slot = {r.index: k for k, r in enumerate(params)}
    prompt_aval = ins[pa.prompt]

    def one(ps: Any, prompt: Any) -> tuple[Any, ...]:
        args: list[Any] = [None] * len(ins)
        for i, d in pa.param_of.items():
            args[i] = ps[slot[d]]
        for i, v in pa.constants.items():
            args[i] = jnp.asarray(v, ins[i].dtype).reshape(ins[i].shape)
        args[pa.prompt] = jnp.broadcast_to(prompt, (b, *prompt.shape)).astype(prompt_aval.dtype)
        got = fn(*args)
        got = (got,) if len(prefill.out_avals) == 1 else tuple(got)
        outs = (got[out_of_state[r.index]] for r in states)
        return (got[first_out][0], *(v[0] if layout.packed else v for v in outs))

    def pre(ps: Any, prompts: Any) -> tuple[Any, ...]:
        return tuple(jax.vmap(one, in_axes=(None, 0))(ps, prompts))

    p_avals = tuple(jax.ShapeDtypeStruct(tuple(r.shape), r.dtype) for r in params)
    prompt = jax.ShapeDtypeStruct((layout.rows, int(prompt_aval.shape[-1])), prompt_aval.dtype)
    return _exported(pre, (p_avals, prompt), (), prefill, layout.rows)


def _grouped_chunk(chunk: Any, layout: _Layout) -> Any:
    """A chunk step (``_chunk.py``) widened for the grouped step: ``(params, state, tokens
    [rows, C], position [rows] or [rows, C]) -> (token or logits, *state)``, its parameters
    in its own order, its state in the widened step's layout. Each row is a call of its own,
    its sequence in every one of the exported ``b`` rows (packed: its row of the group's
    cache given to each, row 0's kept; else the row's whole cache), at its own position;
    row 0's token kept. The ``b`` rows of one call share a position (the chunk step is
    checked with its rows alike), and a group's rows are admitted apart, so a group's rows
    are not chunked in one call: a chunk computes ``b`` rows a sequence, as the grouped
    prefill and (one position a batch) the grouped decode step do.

    Raises:
      RuntimeConfigError: its position lives in counters, or its tokens and position are not
        told apart (named)."""
    import jax.numpy as jnp

    what = f"the chunk step {getattr(chunk, 'source', '')}".rstrip()
    own = chunk.arg_roles()
    if own.counters:
        raise RuntimeConfigError(
            f"{what}: its position lives in the state counter {own.counters[0].path}, which "
            "advances by what the program says, not from the position a chunk starts at; "
            "export it with the position as an argument (cache_position)"
        )
    b = layout.b
    params, states = list(own.parameters), list(own.state)
    rest = [r for r in own if r.role is not Use.PARAMETER and r.role is not Use.STATE]
    tokens = [r for r in rest if len(r.shape) == 2 and r.shape[0] == b]
    C = int(tokens[0].shape[1]) if len(tokens) == 1 else -1
    position = [r for r in rest if r not in tokens and tuple(r.shape) in ((), (1,), (b,), (C,))]
    if len(rest) != 2 or len(tokens) != 1 or len(position) != 1:
        raise RuntimeConfigError(
            f"{what}: besides its parameters and caches it must take the tokens int[{b}, C] "
            f"and the position (int[], int[{b}] or int[C]); it takes "
            + (", ".join(f"{r.index} {r.dtype}{list(r.shape)}" for r in rest) or "none")
        )
    tok, pos = tokens[0], position[0]
    if b == C and tuple(pos.shape) == (b,):
        raise RuntimeConfigError(
            f"{what}: its position int[{b}] could be one a sequence or one a token (the chunk "
            f"of {C} tokens is as long as the batch); export it at another length"
        )
    per_token = tuple(pos.shape) == (C,) and C > 1
    state_outs = {r.output for r in states}
    others = [o for o in range(len(chunk.out_avals)) if o not in state_outs]
    if len(others) != 1:
        raise RuntimeConfigError(
            f"{what}: besides its caches it must return one output (the token or logits after "
            f"its last token); it returns {len(others)}"
        )
    first = others[0]
    fn = chunk.as_function(flat=True)
    n_in, single = len(chunk.in_avals), len(chunk.out_avals) == 1

    def one(ps: Any, st: Any, t: Any, at: Any) -> tuple[Any, ...]:
        args: list[Any] = [None] * n_in
        for r, v in zip(params, ps, strict=True):
            args[r.index] = v
        for r, v in zip(states, st, strict=True):
            args[r.index] = jnp.broadcast_to(v, (b, *v.shape)) if layout.packed else v
        args[tok.index] = jnp.broadcast_to(t, (b, C)).astype(tok.dtype)
        args[pos.index] = jnp.broadcast_to(at, tuple(pos.shape)).astype(pos.dtype)
        got = fn(*args)
        got = (got,) if single else tuple(got)
        kept = (got[r.output][0] if layout.packed else got[r.output] for r in states)
        return (got[first][0], *kept)

    def step(ps: Any, st: Any, t: Any, at: Any) -> tuple[Any, ...]:
        return tuple(jax.vmap(one, in_axes=(None, 0, 0, 0))(ps, st, t, at))

    ins = chunk.in_avals
    p_avals = tuple(jax.ShapeDtypeStruct(tuple(ins[r.index].shape), ins[r.index].dtype)
                    for r in params)  # fmt: skip
    s_avals = tuple(jax.ShapeDtypeStruct(_wide_shape(tuple(r.shape), layout), r.dtype)
                    for r in states)  # fmt: skip
    at = (layout.rows, C) if per_token else (layout.rows,)
    avals = (p_avals, s_avals, jax.ShapeDtypeStruct((layout.rows, C), tok.dtype),
             jax.ShapeDtypeStruct(at, pos.dtype))  # fmt: skip
    return _exported(step, avals, (1,), chunk, layout.rows)


def _exported(fn: Any, avals: tuple[Any, ...], donate: tuple[int, ...], program: Any,
              rows: int) -> Any:  # fmt: skip
    """``fn`` exported at ``avals`` (``donate``: its donated arguments) and loaded back."""
    from hlopipe.io import load

    exported = jax.export.export(jax.jit(fn, donate_argnums=donate))(*avals)
    widened = load(exported.serialize())
    widened.source = f"{getattr(program, 'source', 'the program')} (at {rows} rows)"
    return widened
