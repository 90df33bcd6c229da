"""Argument roles of a program called again and again (a decode step): which arguments are
parameters, which are state carried from one call to the next in place, which are fed back
from the previous call's outputs, and which are plain inputs.

* **state**: an argument updated in place (data flow, below) or aliased to an output:
  ``tf.aliasing_output`` on an entry argument (``jax.export`` and JAX's lowering of a donated
  argument), HLO's ``input_output_alias`` (HLO text and protos), or ``jax.buffer_donor`` (a
  donated argument whose output JAX left to XLA: matched to the output with the same path,
  shape and dtype). A **counter** is state too: an integer ``[]`` / ``[1]`` argument whose
  output is computed from it and scalars alone and which indexes the updates of other state
  (``transformers``' ``StaticCache`` keeps one per layer); the position then lives in the
  state, and no argument is the position.
* **feedback**: an argument that the next call takes from an output of this one (a token, a
  position, an RNG key): an output that is not state, with the argument's shape and dtype.
* **input**: the position the caller advances, by data flow: the integer argument of shape
  ``[]`` or ``[1]`` (int32 or int64) from which an index of every in-place update of the state
  is computed (the nearest such argument when several are); ``ArgRole.axis`` of each state
  argument is the axis it indexes (the cache length). Without ``feedback=`` or a position,
  other arguments with no output of their shape are inputs too.
* **parameter**: in the first argument of the program's tree (``params``); for a flat program
  (HLO, torch_xla: the token and position may come before the caches, constants among the
  weights), every argument that is not state, feedback or the position, or, when data flow
  shows no position, the arguments before the first state argument.

**Data flow wins over alias pairs.** Where the module shows it, an output that is a chain of
``dynamic_update_slice`` / ``scatter`` (through copies, reshapes, converts, bitcasts, identity
transposes, ``optimization_barrier``, fusions and ``func.call``) rooted at one entry argument of
its type updates that argument in place: the two are paired as state whatever the alias
attributes say. XLA's optimised ``input_output_alias`` pairs donated inputs with outputs by
shape, not by which output updates which input (a torch_xla decode step aliases the updated K
cache to the V cache's parameter), so it only decides the pairs data flow does not show. A
pairing that is still a guess among outputs of one shape is marked ``ambiguous`` (and said so in
its reason); :class:`~hlopipe.Generator` refuses it until ``state=`` / ``feedback=`` decide.

``state=`` and ``feedback=`` override what the program says, for programs exported without
donation; they are checked against shapes, dtypes and paths.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hlopipe.errors import RuntimeConfigError


class Use(enum.StrEnum):
    """What an argument of a decode step is to the calls that follow (see the module
    docstring); prints as its value, so a role table reads ``state``, not ``Use.STATE``."""

    PARAMETER = "parameter"
    STATE = "state"
    FEEDBACK = "feedback"
    INPUT = "input"


PARAMETER, STATE, FEEDBACK, INPUT = Use.PARAMETER, Use.STATE, Use.FEEDBACK, Use.INPUT

Selector = int | str


@dataclass(frozen=True)
class ArgRole:
    """The role of flat argument ``index``: ``role`` (``parameter`` / ``state`` /
    ``feedback`` / ``input``), ``output`` (the aliased output of state, the output fed back for
    feedback, else ``None``), ``reason`` (how it was told, in words), ``ambiguous`` (the output
    is a guess) and, for state, ``axis``: the axis the position indexes (None: not shown), and
    ``counter``: a position counter kept in the state (see the module docstring)."""

    index: int
    path: str
    role: Use
    reason: str
    output: int | None
    shape: tuple[int, ...]
    dtype: str
    ambiguous: bool = False
    axis: int | None = None
    counter: bool = False


class ArgRoles(tuple):
    """The :class:`ArgRole` of every flat argument, in order; prints as a table.
    ``out_avals``: the program's outputs as ``(shape, dtype)`` (None when not known);
    ``unresolved``: in words, each role data flow could not tell, naming the candidates;
    ``indexers``: the arguments from which an index of an in-place update is computed."""

    out_avals: list[tuple[tuple[int, ...], str]] | None = None
    unresolved: tuple[str, ...] = ()  # roles data flow could not tell, with their candidates
    # the arguments an index of a state update is computed from (data flow): the position's
    indexers: frozenset[int] = frozenset()

    @property
    def ambiguous(self) -> list[ArgRole]:
        """State or feedback whose output was guessed among several of its shape."""
        return [r for r in self if r.ambiguous]

    def of(self, role: Use | str) -> list[ArgRole]:
        """The arguments of ``role`` (a :class:`Use` or its value, such as ``"state"``)."""
        want = Use(role)
        return [r for r in self if r.role is want]

    @property
    def state(self) -> list[ArgRole]:
        return self.of(STATE)

    @property
    def feedback(self) -> list[ArgRole]:
        return self.of(FEEDBACK)

    @property
    def counters(self) -> list[ArgRole]:
        """The state that carries the position (per-layer counters)."""
        return [r for r in self if r.counter]

    @property
    def parameters(self) -> list[ArgRole]:
        return self.of(PARAMETER)

    @property
    def inputs(self) -> list[ArgRole]:
        return self.of(INPUT)

    def __str__(self) -> str:
        lines = [f"{'arg':>4}  {'role':<9}  {'output':>6}  {'shape':<22} path: reason"]
        for r in self:
            shape = f"{r.dtype}[{','.join(map(str, r.shape))}]"
            out = "" if r.output is None else str(r.output)
            lines.append(f"{r.index:>4}  {r.role:<9}  {out:>6}  {shape:<22} {r.path}: {r.reason}")
        return "\n".join(lines)


def _aval_key(a: Any) -> tuple[tuple[int, ...], str]:
    return tuple(getattr(a, "shape", ())), str(getattr(a, "dtype", "token"))


def _strip_top(path: str) -> str:
    """``[1][0]['k']`` -> ``[0]['k']``: a path below its top-level argument or result."""
    m = re.match(r"^\[\d+\]", path)
    return path[m.end() :] if m else path


def declared_aliases(program: Any) -> tuple[dict[int, int], set[int], str]:
    """What the program says: ``({arg: output}, donors without an output, where it says so)``."""
    aliases: dict[int, int] = {}
    donors: set[int] = set()
    how = ""
    from jaxlib.mlir import ir

    with program.context:
        func = program.entry_func
        if "arg_attrs" in func.attributes:
            for i, attrs in enumerate(ir.ArrayAttr(func.attributes["arg_attrs"])):
                d = ir.DictAttr(attrs)
                if "tf.aliasing_output" in d:
                    aliases[i] = ir.IntegerAttr(d["tf.aliasing_output"]).value
                    how = "tf.aliasing_output"
                elif "jax.buffer_donor" in d and ir.BoolAttr(d["jax.buffer_donor"]).value:
                    donors.add(i)
    if not aliases and program.hlo_proto is not None:
        header = program.hlo_module.to_string().split("\n", 1)[0]
        m = re.search(r"input_output_alias=\{(.*?)\}\s*(,\s*\w+=|$)", header)
        if m:
            for out, par in re.findall(r"\{(\d*)\}:\s*\((\d+),\s*\{\}", m.group(1)):
                aliases[int(par)] = int(out or 0)
            how = "HLO input_output_alias"
    return aliases, donors, how


def find_roles(
    program: Any,
    *,
    state: Mapping[Selector, Selector] | Iterable[Selector] | None = None,
    feedback: Mapping[Selector, Selector] | Iterable[Selector] | None = None,
) -> ArgRoles:
    """The roles of ``program``'s flat arguments (see the module docstring).

    Args:
      program: a loaded :class:`~hlopipe.io.Program`.
      state: arguments that are state, overriding the program's aliasing: a mapping
        argument -> output, or arguments alone (each matched to the output with its path below
        the top level, or else the first free output with its shape and dtype). An argument
        is a flat index, a path (``"[1][0]['k']"``), or a prefix of paths (``"[1]"``).
      feedback: the same for feedback (argument -> the output fed into it).

    Raises:
      RuntimeConfigError naming the argument when an override does not fit (no such argument,
      another shape or dtype than its output, an output taken twice).
    """
    c = _Claims(program)
    if state is not None:
        flow = {a: o for o, a in c.flow.items()}
        for arg, out in _resolve(state, *c.lists(), c.taken, c.src, flow):
            how = "; output by data flow" if flow.get(arg) == out else ""
            c.claim(arg, out, STATE, f"state= override{how}")
    else:
        _program_state(c)
    if feedback is not None:
        for arg, out in _resolve(feedback, *c.lists(), c.taken, c.src):
            if arg in c.roles:
                raise RuntimeConfigError(
                    f"{c.src}: argument {arg} ({c.in_paths[arg]}) is state and cannot be "
                    "feedback too"
                )
            c.claim(arg, out, FEEDBACK, "feedback= override")
    position, axes = _position(c)
    _the_rest(c, position, feedback is None, bool(c.counters))
    return c.result(axes)


def _the_rest(c: _Claims, position: int | None, by_shape: bool, counted: bool) -> None:
    """Arguments neither state nor named feedback: the position (``input``), parameters (the
    first argument of a tree; for a flat program, what is not state, fed back or the position,
    or, when data flow shows no position, what comes before the state), feedback by shape
    (when ``by_shape``: no ``feedback=`` given), and plain inputs. ``counted``: the position
    lives in the state (counters), so a flat program needs no position argument."""
    top = _top_levels(c.program, len(c.in_avals))
    first_state = min((a for a, r in c.roles.items() if r[0] is STATE), default=None)
    for i in range(len(c.in_avals)):
        if i in c.roles:
            continue
        if i == position:
            c.roles[i] = (INPUT, "the position: every update of the state is indexed by it "
                          "(data flow)", None)  # fmt: skip
        elif top is not None and top[i] == 0:
            c.roles[i] = (PARAMETER, "in the first argument (params)", None)
        elif (top is None and position is None and not counted and first_state is not None
              and i < first_state):  # fmt: skip
            c.roles[i] = (PARAMETER, "before the state", None)
        elif by_shape and c.feed_by_shape(i):
            pass
        elif top is None and position is not None:
            c.roles[i] = (PARAMETER, "not state, feedback or the position (data flow)", None)
        elif top is None and counted:
            c.roles[i] = (PARAMETER, "not state or feedback; the position lives in the state "
                          "(counters, data flow)", None)  # fmt: skip
        else:
            why = "no output has its shape and dtype" if by_shape else "not named in feedback="
            c.roles[i] = (INPUT, why, None)


class _Claims:
    """Roles being told: ``roles`` ``{argument: (role, reason, output)}``, ``taken``
    ``{output: argument}``, ``guessed`` (ambiguous arguments); ``claim`` checks each pair."""

    def __init__(self, program: Any) -> None:
        from hlopipe.io._inplace import counter_candidates, update_chains

        self.program = program
        self.in_avals, self.out_avals = list(program.in_avals), list(program.out_avals)
        self.in_paths = _paths(program.arg_names, len(self.in_avals), "arg")
        self.out_paths = _out_paths(program, len(self.out_avals))
        self.src = getattr(program, "source", "<program>")
        self.taken: dict[int, int] = {}
        self.roles: dict[int, tuple[Use, str, int | None]] = {}
        self.guessed: set[int] = set()
        self.counters: set[int] = set()  # state arguments claimed as counters
        self.unresolved: list[str] = []  # counters data flow does not tell, in words
        self.indexers: set[int] = set()  # arguments an update's index is computed from
        chains = update_chains(program, self.indexers)
        self.flow = {o: a for o, (a, _) in chains.items()}  # output -> argument updated
        self.reads = {a: r for a, r in chains.values()}  # argument -> what indexes its updates
        self.counter_cands = counter_candidates(program)  # output -> its possible counters

    def lists(self) -> tuple[list[str], list[str], list[Any], list[Any]]:
        return self.in_paths, self.out_paths, self.in_avals, self.out_avals

    def free(self, key: Any) -> list[int]:
        """The outputs not taken yet with aval ``key``."""
        return [o for o, a in enumerate(self.out_avals) if o not in self.taken
                and _aval_key(a) == key]  # fmt: skip

    def claim(self, arg: int, out: int, role: Use, reason: str) -> None:
        src, at = self.src, f"argument {arg} ({self.in_paths[arg]})"
        if arg in self.roles:
            was = self.roles[arg]
            raise RuntimeConfigError(
                f"{src}: {at} would be {role} of output {out} but is already {was[0]} of "
                f"output {was[2]}"
            )
        if not 0 <= out < len(self.out_avals):
            raise RuntimeConfigError(
                f"{src}: {at} is {role} of output {out}, but the program has "
                f"{len(self.out_avals)} outputs"
            )
        a, o = _aval_key(self.in_avals[arg]), _aval_key(self.out_avals[out])
        if a != o:
            raise RuntimeConfigError(
                f"{src}: argument {arg} ({self.in_paths[arg]}, {a[1]}{list(a[0])}) cannot be "
                f"{role} of output {out} ({self.out_paths[out]}, {o[1]}{list(o[0])}): shapes or "
                "dtypes differ"
            )
        if self.taken.get(out, arg) != arg:
            raise RuntimeConfigError(
                f"{src}: output {out} ({self.out_paths[out]}) would feed argument "
                f"{self.taken[out]} and {at}; each output feeds one argument"
            )
        self.taken[out] = arg
        self.roles[arg] = (role, reason, out)

    def feed_by_shape(self, i: int) -> bool:
        """Claim argument ``i`` as feedback of the first free output of its shape and dtype;
        ambiguous when several are free. False when none is."""
        many = self.free(_aval_key(self.in_avals[i]))
        if not many:
            return False
        match = many[0]
        if len(many) > 1:
            self.guessed.add(i)
            self.claim(i, match, FEEDBACK, f"output {match} has its shape and dtype; ambiguous: "
                       f"outputs {', '.join(map(str, many))} all do and data flow does not tell "
                       f"which feeds it; pass feedback={{{i}: output}} or state=")  # fmt: skip
        else:
            self.claim(i, match, FEEDBACK, f"output {match} has its shape and dtype")
        return True

    def result(self, axes: Mapping[int, int]) -> ArgRoles:
        roles = ArgRoles(
            ArgRole(
                i,
                self.in_paths[i],
                *self.roles[i],
                *_aval_key(self.in_avals[i]),
                ambiguous=i in self.guessed,
                axis=axes.get(i),
                counter=i in self.counters,
            )
            for i in range(len(self.in_avals))
        )
        roles.out_avals = [_aval_key(a) for a in self.out_avals]
        roles.unresolved = tuple(self.unresolved)
        roles.indexers = frozenset(self.indexers)
        return roles


def _position(c: _Claims) -> tuple[int | None, dict[int, int]]:
    """The position by data flow: the integer argument of shape ``[]`` or ``[1]``, not state or
    feedback, from which an index of every update of the state is computed (the nearest one
    when several are); and for each state argument the axis it indexes. ``(None, {})`` when
    data flow does not tell."""
    state = [a for a, r in c.roles.items() if r[0] is STATE]
    votes = [u for a in state for u in c.reads.get(a, []) if any(u.values())]
    if not votes:
        return None, {}
    if c.counters:  # the position lives in the state: the axis each update's counter indexes
        axes = {a: ax for a in state for u in c.reads.get(a, [])[:1]
                for ax, srcs in u.items() if c.counters & set(srcs)}  # fmt: skip
        return None, axes
    both: set[int] | None = None
    for u in votes:
        mine = {a for srcs in u.values() for a in srcs}
        both = mine if both is None else both & mine
    cands = [a for a in sorted(both or ()) if a not in c.roles
             and _aval_key(c.in_avals[a])[0] in ((), (1,))
             and np.dtype(_aval_key(c.in_avals[a])[1]).kind in "iu"]  # fmt: skip
    far = {a: max(min(s[a] for s in u.values() if a in s) for u in votes) for a in cands}
    best = sorted(cands, key=lambda a: far[a])
    if not best or (len(best) > 1 and far[best[0]] == far[best[1]]):
        return None, {}
    pos = best[0]
    axes = {a: ax for a in state for u in c.reads.get(a, [])[:1]
            for ax, srcs in u.items() if pos in srcs}  # fmt: skip
    return pos, axes


def _program_state(c: _Claims) -> None:
    """State as the program shows it: in-place updates by data flow first, then the declared
    aliases and donors for the arguments data flow does not pair."""
    aliases, donors, how = declared_aliases(c.program)
    alias_of = {o: a for a, o in aliases.items()}
    for out, arg in sorted(c.flow.items()):
        said = f"output {out} updates arg {arg} in place (data flow)"
        if aliases.get(arg) == out:
            why = f"{said}; {how} agrees"
        elif out in alias_of:
            why = f"{said}; {how} pairs it with arg {alias_of[out]} by shape"
        elif arg in aliases:
            why = f"{said}; {how} pairs arg {arg} with output {aliases[arg]} by shape"
        else:
            why = f"{said}; " + ("donated (jax.buffer_donor)" if arg in donors else
                                 "no alias declared")  # fmt: skip
        c.claim(arg, out, STATE, why)
    _counters(c, aliases, how)
    done = set(c.taken.values())
    for arg in sorted(set(aliases) | donors):
        if arg in done:
            continue
        if aliases.get(arg) is not None and aliases[arg] not in c.taken:
            _aliased_state(c, arg, aliases[arg], alias_of, done, how)
        else:
            _donated_state(c, arg, how)


def _counters(c: _Claims, aliases: Mapping[int, int], how: str) -> None:
    """Counters by data flow (see the module docstring); an output with several candidates
    names them and is left to ``state=``."""
    counts: dict[int, int] = {}
    for cands in c.counter_cands.values():
        for a in cands:
            counts[a] = counts.get(a, 0) + 1
    for out, cands in sorted(c.counter_cands.items()):
        if out in c.taken:
            continue
        free = [a for a in cands if a not in c.roles and counts[a] == 1]
        if len(free) != 1:
            c.unresolved.append(
                f"output {out} ({c.out_paths[out]}) is an integer counter updated from one of "
                f"arguments {', '.join(f'{a} ({c.in_paths[a]})' for a in cands)}; data flow "
                "does not tell which; pass state={argument: output}"
            )
            continue
        arg = free[0]
        said = f"a counter: output {out} is computed from it and scalars alone, and it indexes "
        said += "the updates of the state (data flow; the position lives in the state)"
        if aliases.get(arg) == out:
            said += f"; {how} agrees"
        c.claim(arg, out, STATE, said)
        c.counters.add(arg)


def _aliased_state(
    c: _Claims, arg: int, out: int, alias_of: Mapping[int, int], done: set[int], how: str
) -> None:
    """``arg`` aliased to ``out``: an HLO pair is a guess when other aliased outputs of its
    shape are left (XLA pairs donors by shape)."""
    rivals = [o for o, a in alias_of.items() if o != out and a not in done
              and _aval_key(c.out_avals[o]) == _aval_key(c.out_avals[out])]  # fmt: skip
    why = f"aliased to output {out} ({how})"
    if rivals and how == "HLO input_output_alias":
        c.guessed.add(arg)
        why += (f"; ambiguous: XLA pairs donors by shape and outputs "
                f"{', '.join(map(str, rivals))} have it too, data flow does not tell; "
                "pass state={argument: output}")  # fmt: skip
    c.claim(arg, out, STATE, why)


def _donated_state(c: _Claims, arg: int, how: str) -> None:
    """A donor without an output: the free output with its path, shape and dtype."""
    free = c.free(_aval_key(c.in_avals[arg]))
    found = _match_output(arg, *c.lists(), c.taken)
    if found is None:
        raise RuntimeConfigError(
            f"{c.src}: argument {arg} ({c.in_paths[arg]}) is donated "
            f"({how or 'jax.buffer_donor'}) but no free output has its path, shape and dtype; "
            "pass state={arg: output}"
        )
    why = f"donated, output {found} by path, shape"
    by_path = _strip_top(c.in_paths[arg]) == _strip_top(c.out_paths[found]) != ""
    if len(free) > 1 and not by_path:
        c.guessed.add(arg)
        why += (f"; ambiguous: outputs {', '.join(map(str, free))} all fit, data flow does "
                "not tell; pass state={argument: output}")  # fmt: skip
    c.claim(arg, found, STATE, why)


def _paths(names: Sequence[str | None], n: int, what: str) -> list[str]:
    return [n_ if n_ else f"{what} {i}" for i, n_ in enumerate(list(names)[:n])] + [
        f"{what} {i}" for i in range(len(names), n)
    ]


def _out_paths(program: Any, n: int) -> list[str]:
    exp = program.exported
    tree = getattr(exp, "out_tree", None)
    if tree is not None and tree.num_leaves == n:
        import jax

        value = jax.tree_util.tree_unflatten(tree, range(n))
        paths = [jax.tree_util.keystr(k) for k, _ in jax.tree_util.tree_leaves_with_path(value)]
        if len(paths) == n:
            return paths
    return [f"output {i}" for i in range(n)]


def _top_levels(program: Any, n: int) -> list[int] | None:
    """The top-level argument each flat argument belongs to, when the program has a tree."""
    tops = program.top_level_args()
    return tops if tops is not None and len(tops) == n else None


def _select(sel: Selector, paths: list[str], what: str, src: str) -> list[int]:
    if isinstance(sel, int) and not isinstance(sel, bool):
        if not 0 <= sel < len(paths):
            raise RuntimeConfigError(f"{src}: no {what} {sel} (the program has {len(paths)})")
        return [sel]
    if isinstance(sel, str):
        hits = [i for i, p in enumerate(paths) if p == sel]
        hits = hits or [i for i, p in enumerate(paths) if p.startswith(sel)]
        if hits:
            return hits
    raise RuntimeConfigError(
        f"{src}: no {what} {sel!r}; name one by index or by path, such as {paths[0]!r}"
    )


def _match_output(
    arg: int,
    in_paths: list[str],
    out_paths: list[str],
    in_avals: list[Any],
    out_avals: list[Any],
    taken: Mapping[int, int],
) -> int | None:
    """The free output for ``arg``: the one with its path below the top level and its aval,
    else the first free one with its aval."""
    key = _aval_key(in_avals[arg])
    free = [o for o in range(len(out_avals)) if o not in taken and _aval_key(out_avals[o]) == key]
    sub = _strip_top(in_paths[arg])
    by_path = [o for o in free if sub and _strip_top(out_paths[o]) == sub]
    pick = by_path or free
    return pick[0] if pick else None


def _resolve(
    spec: Mapping[Selector, Selector] | Iterable[Selector],
    in_paths: list[str],
    out_paths: list[str],
    in_avals: list[Any],
    out_avals: list[Any],
    taken: dict[int, int],
    src: str,
    flow: Mapping[int, int] | None = None,
) -> list[tuple[int, int]]:
    """``(argument, output)`` pairs an override names; an argument named alone gets the output
    data flow shows updating it in place (``flow``: argument -> output), else the free one with
    its path below the top level, else the first free one with its shape and dtype."""
    pairs: list[tuple[int, int]] = []
    if isinstance(spec, Mapping):
        for a_sel, o_sel in spec.items():
            args = _select(a_sel, in_paths, "argument", src)
            outs = _select(o_sel, out_paths, "output", src)
            if len(args) != len(outs):
                raise RuntimeConfigError(
                    f"{src}: {a_sel!r} names {len(args)} argument(s) but {o_sel!r} names "
                    f"{len(outs)} output(s)"
                )
            pairs += zip(args, outs, strict=True)
        return pairs
    claimed = dict(taken)
    for a_sel in [spec] if isinstance(spec, int | str) else spec:
        for arg in _select(a_sel, in_paths, "argument", src):
            out = (flow or {}).get(arg)
            if out is None or out in claimed:
                out = _match_output(arg, in_paths, out_paths, in_avals, out_avals, claimed)
            if out is None:
                a = _aval_key(in_avals[arg])
                raise RuntimeConfigError(
                    f"{src}: argument {arg} ({in_paths[arg]}, {a[1]}{list(a[0])}) has no free "
                    "output of its shape and dtype to be carried in; name the output: "
                    "{argument: output}"
                )
            claimed[out] = arg
            pairs.append((arg, out))
    return pairs
