"""Argument roles of a program called again and again (a decode step): which arguments are
parameters, which are state carried from one call to the next in place, which are fed back
from the previous call's outputs, and which are plain inputs.

* **state**: an argument aliased to an output. Read from the program: ``tf.aliasing_output``
  on an entry argument (``jax.export`` and JAX's lowering of a donated argument), HLO's
  ``input_output_alias`` (HLO text and protos), or ``jax.buffer_donor`` (a donated argument
  whose output JAX left to XLA: matched to the output with the same path, shape and dtype).
* **feedback**: an argument that the next call takes from an output of this one (a token, a
  position, an RNG key): an output that is not state, with the argument's shape and dtype.
* **parameter**: the first argument of the program's tree (``params``), or, for a flat
  program, the leading arguments before the first state argument.
* **input**: the rest (a position the caller advances, say).

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

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hlopipe.errors import RuntimeConfigError

PARAMETER, STATE, FEEDBACK, INPUT = "parameter", "state", "feedback", "input"

Selector = int | str


@dataclass(frozen=True)
class ArgRole:
    """The role of flat argument ``index``: ``role`` (``parameter`` / ``state`` /
    ``feedback`` / ``input``), ``output`` (the aliased output of state, the output fed back for
    feedback, else ``None``) and ``reason`` (how it was told, in words)."""

    index: int
    path: str
    role: str
    reason: str
    output: int | None
    shape: tuple[int, ...]
    dtype: str
    ambiguous: bool = False


class ArgRoles(tuple):
    """The :class:`ArgRole` of every flat argument, in order; prints as a table."""

    @property
    def ambiguous(self) -> list[ArgRole]:
        """State or feedback whose output was guessed among several of its shape."""
        return [r for r in self if r.ambiguous]

    def of(self, role: str) -> list[ArgRole]:
        return [r for r in self if r.role == role]

    @property
    def state(self) -> list[ArgRole]:
        return self.of(STATE)

    @property
    def feedback(self) -> list[ArgRole]:
        return self.of(FEEDBACK)

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
    in_avals, out_avals = list(program.in_avals), list(program.out_avals)
    in_paths = _paths(program.arg_names, len(in_avals), "arg")
    out_paths = _out_paths(program, len(out_avals))
    src = getattr(program, "source", "<program>")
    taken: dict[int, int] = {}  # output -> argument
    roles: dict[int, tuple[str, str, int | None]] = {}

    def claim(arg: int, out: int, role: str, reason: str) -> None:
        if arg in roles:
            raise RuntimeConfigError(
                f"{src}: argument {arg} ({in_paths[arg]}) would be {role} of output {out} but "
                f"is already {roles[arg][0]} of output {roles[arg][2]}"
            )
        if not 0 <= out < len(out_avals):
            raise RuntimeConfigError(
                f"{src}: argument {arg} ({in_paths[arg]}) is {role} of output {out}, but the "
                f"program has {len(out_avals)} outputs"
            )
        if _aval_key(in_avals[arg]) != _aval_key(out_avals[out]):
            a, o = _aval_key(in_avals[arg]), _aval_key(out_avals[out])
            raise RuntimeConfigError(
                f"{src}: argument {arg} ({in_paths[arg]}, {a[1]}{list(a[0])}) cannot be {role} "
                f"of output {out} ({out_paths[out]}, {o[1]}{list(o[0])}): shapes or dtypes "
                "differ"
            )
        if out in taken and taken[out] != arg:
            raise RuntimeConfigError(
                f"{src}: output {out} ({out_paths[out]}) would feed argument {taken[out]} and "
                f"argument {arg} ({in_paths[arg]}); each output feeds one argument"
            )
        taken[out] = arg
        roles[arg] = (role, reason, out)

    guessed: set[int] = set()
    if state is not None:
        from hlopipe.io._inplace import in_place_updates

        flow = {a: o for o, a in in_place_updates(program).items()}
        resolved = _resolve(state, in_paths, out_paths, in_avals, out_avals, taken, src, flow)
        for arg, out in resolved:
            how = "; output by data flow" if flow.get(arg) == out else ""
            claim(arg, out, STATE, f"state= override{how}")
    else:
        _program_state(program, claim, guessed, in_paths, out_paths, in_avals, out_avals, taken)
    first_state = min((a for a, r in roles.items() if r[0] == STATE), default=None)
    if feedback is not None:
        for arg, out in _resolve(feedback, in_paths, out_paths, in_avals, out_avals, taken, src):
            if arg in roles:
                raise RuntimeConfigError(
                    f"{src}: argument {arg} ({in_paths[arg]}) is state and cannot be feedback too"
                )
            claim(arg, out, FEEDBACK, "feedback= override")
    top = _top_levels(program, len(in_avals))
    same_aval = {
        k: [o for o in range(len(out_avals)) if o not in taken and _aval_key(out_avals[o]) == k]
        for k in {_aval_key(a) for a in in_avals}
    }
    for i in range(len(in_avals)):
        if i in roles:
            continue
        if (top is not None and top[i] == 0) or (
            top is None and first_state is not None and i < first_state
        ):
            why = "in the first argument (params)" if top is not None else "before the state"
            roles[i] = (PARAMETER, why, None)
        elif feedback is None:
            free = [o for o in range(len(out_avals)) if o not in taken]
            match = next(
                (o for o in free if _aval_key(out_avals[o]) == _aval_key(in_avals[i])), None
            )
            many = same_aval[_aval_key(in_avals[i])]
            if match is not None and len(many) > 1:
                guessed.add(i)
                claim(i, match, FEEDBACK, f"output {match} has its shape and dtype; ambiguous: "
                      f"outputs {', '.join(map(str, many))} all do and data flow does not tell "
                      f"which feeds it; pass feedback={{{i}: output}} or state=")  # fmt: skip
            elif match is not None:
                claim(i, match, FEEDBACK, f"output {match} has its shape and dtype")
            else:
                roles[i] = (INPUT, "no output has its shape and dtype", None)
        else:
            roles[i] = (INPUT, "not named in feedback=", None)
    return ArgRoles(
        ArgRole(i, in_paths[i], *roles[i], *_aval_key(in_avals[i]), ambiguous=i in guessed)
        for i in range(len(in_avals))
    )


def _program_state(
    program: Any,
    claim: Any,
    guessed: set[int],
    in_paths: list[str],
    out_paths: list[str],
    in_avals: list[Any],
    out_avals: list[Any],
    taken: dict[int, int],
) -> None:
    """State as the program shows it: in-place updates by data flow first, then the declared
    aliases and donors for the arguments data flow does not pair."""
    from hlopipe.io._inplace import in_place_updates

    src = getattr(program, "source", "<program>")
    aliases, donors, how = declared_aliases(program)
    flow = in_place_updates(program)  # output -> argument
    alias_of = {o: a for a, o in aliases.items()}
    for out, arg in sorted(flow.items()):
        said = f"output {out} updates arg {arg} in place (data flow)"
        if aliases.get(arg) == out:
            why = f"{said}; {how} agrees"
        elif out in alias_of:
            why = f"{said}; {how} pairs it with arg {alias_of[out]} by shape"
        elif arg in aliases:
            why = f"{said}; {how} pairs arg {arg} with output {aliases[arg]} by shape"
        elif arg in donors:
            why = f"{said}; donated (jax.buffer_donor)"
        else:
            why = f"{said}; no alias declared"
        claim(arg, out, STATE, why)
    done = set(taken.values())
    for arg in sorted(set(aliases) | donors):
        if arg in done:
            continue
        said_out = aliases.get(arg)
        if said_out is not None and said_out not in taken:
            out = said_out
            rivals = [o for o, a in alias_of.items() if o != out and a not in done
                      and _aval_key(out_avals[o]) == _aval_key(out_avals[out])]  # fmt: skip
            why = f"aliased to output {out} ({how})"
            if rivals and how == "HLO input_output_alias":
                guessed.add(arg)
                why += (f"; ambiguous: XLA pairs donors by shape and outputs "
                        f"{', '.join(map(str, rivals))} have it too, data flow does not tell; "
                        "pass state={argument: output}")  # fmt: skip
            claim(arg, out, STATE, why)
            continue
        free = [o for o in range(len(out_avals)) if o not in taken
                and _aval_key(out_avals[o]) == _aval_key(in_avals[arg])]  # fmt: skip
        found = _match_output(arg, in_paths, out_paths, in_avals, out_avals, taken)
        if found is None:
            raise RuntimeConfigError(
                f"{src}: argument {arg} ({in_paths[arg]}) is donated ({how or 'jax.buffer_donor'}) "
                "but no free output has its path, shape and dtype; pass state={arg: output}"
            )
        why = f"donated, output {found} by path, shape"
        by_path = _strip_top(in_paths[arg]) == _strip_top(out_paths[found]) != ""
        if len(free) > 1 and not by_path:
            guessed.add(arg)
            why += (f"; ambiguous: outputs {', '.join(map(str, free))} all fit, data flow does "
                    "not tell; pass state={argument: output}")  # fmt: skip
        claim(arg, found, STATE, why)


def _paths(names: Sequence[str | None], n: int, what: str) -> list[str]:
    return [n_ if n_ else f"{what} {i}" for i, n_ in enumerate(list(names)[:n])] + [
        f"{what} {i}" for i in range(len(names), n)
    ]


def _out_paths(program: Any, n: int) -> list[str]:
    exp = program.extra.get("exported")
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
    exp = program.extra.get("exported")
    tree = getattr(exp, "in_tree", None)
    if tree is None or tree.num_leaves != n:
        return None
    import jax

    value = jax.tree_util.tree_unflatten(tree, range(n))
    if isinstance(value, tuple) and len(value) == 2 and value[1] == {}:
        value = value[0]
    out = [0] * n
    for top, sub in enumerate(value):
        for leaf in jax.tree_util.tree_leaves(sub):
            out[leaf] = top
    return out


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
