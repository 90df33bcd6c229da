"""What each stage of a split decode (or prefill) step takes and gives: a plan per stage.

An input of a stage's function is a parameter, a state argument (donated: the stage keeps it),
a feedback argument (the previous step's output), another plain input (the position) or a value
received from an earlier stage. An output is the new value of a state argument, a value sent to
later stages, and/or a program output (the feedback, the token).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np
from jax import numpy as jnp

from hlopipe.errors import Keyword, RuntimeConfigError, StageError
from hlopipe.generate._match import MatchedBy, counter_start, match_params
from hlopipe.io import Use


def _is_int(dtype: Any) -> bool:
    """Whether ``dtype`` (a dtype or its name) is an integer type, signed or not."""
    return bool(jnp.issubdtype(dtype, jnp.integer))


def _is_float(dtype: Any) -> bool:
    """Whether ``dtype`` (a dtype or its name) is a floating type (bfloat16 and float8 too)."""
    return bool(jnp.issubdtype(dtype, jnp.floating))


class InputKind(enum.StrEnum):
    """Where a stage's input comes from (see :class:`StagePlan`)."""

    PARAM = "param"  # a parameter, placed once on the stage
    STATE = "state"  # a state argument (a cache): the stage keeps it, donated
    FEEDBACK = "feedback"  # the previous step's output fed back (the token)
    INPUT = "input"  # another plain input (the position)
    RECV = "recv"  # a value received from an earlier stage


@dataclass(frozen=True)
class StagePlan:
    """Stage ``stage``: ``inputs`` as ``(kind, key)`` (key: the flat argument, or for ``recv``
    the ``(src stage, src output)``), ``donate`` the input positions of its state, ``state_out``
    ``{stage output: state argument}``, ``sends`` ``[(stage output, dst stage)]`` and
    ``program_out`` ``{stage output: program output}``; ``send_bytes`` what it sends per call
    (activations), ``state_send_bytes`` the pieces of state among its sends (stage markers
    that cut between a cache's update and a read of it), ``state_recvs`` the received values
    ``(src stage, src output)`` that are such pieces."""

    stage: int
    inputs: tuple[tuple[InputKind, Any], ...]
    donate: tuple[int, ...]
    state_out: dict[int, int]
    sends: tuple[tuple[int, int], ...]
    program_out: dict[int, int]
    send_bytes: int
    state_send_bytes: int = 0
    state_recvs: frozenset[tuple[int, int]] = frozenset()

    def recv_kind(self, key: tuple[int, int]) -> str:
        """How a received value's bytes count: ``state`` or ``activations``."""
        return "state" if key in self.state_recvs else "activations"


def plan_stages(
    staged: Any, kinds: dict[int, InputKind], state_slots: dict[int, Any], state_sent: Any = ()
) -> list[StagePlan]:
    """One :class:`StagePlan` per stage of ``staged``; ``kinds`` maps every flat argument to
    ``param`` / ``state`` / ``feedback`` / ``input``; ``state_slots`` maps a state argument to
    its slot (``stage_output``); ``state_sent`` the pieces of state sent (``StateSend``)."""
    pieces = {(x.src, x.output) for x in state_sent}
    plans = []
    for st in staged.stages:
        inputs: list[tuple[InputKind, Any]] = [(kinds[a], a) for a in st.params_needed]
        inputs += [(InputKind.RECV, (r.src, r.output)) for r in st.receives]
        donate = tuple(i for i, (k, _) in enumerate(inputs) if k is InputKind.STATE)
        state_out = {
            slot.stage_output: a
            for a, slot in state_slots.items()
            if slot.stage == st.index and slot.stage_output is not None
        }
        sends = tuple(sorted({(s.output, s.dst) for s in st.sends}))
        of_state = [(o, d) for o, d in sends if (st.index, o) in pieces]
        nbytes = sum(_nbytes(st.outputs[o]) for o, d in sends if (o, d) not in of_state)
        plans.append(
            StagePlan(
                st.index, tuple(inputs), donate, state_out, sends, dict(st.program_outputs),
                nbytes, sum(_nbytes(st.outputs[o]) for o, _ in of_state),
                frozenset(key for kind, key in inputs if kind is InputKind.RECV and key in pieces),
            )
        )  # fmt: skip
    return plans


def _nbytes(aval: Any) -> int:
    import numpy as np

    return int(np.prod(aval.shape, dtype=np.int64)) * np.dtype(aval.dtype).itemsize


def params_as(plans: list[StagePlan], param_of: dict[int, int]) -> list[StagePlan]:
    """A prefill's plans with each parameter input keyed by the decode step's argument
    (``param_of``: prefill argument -> decode parameter), so that both programs' stages take
    the same placed parameters."""
    from dataclasses import replace

    return [
        replace(
            p,
            inputs=tuple((k, param_of[a]) if k is InputKind.PARAM else (k, a) for k, a in p.inputs),
        )
        for p in plans
    ]


def counters_as_position(roles: Any) -> Any:
    """``roles`` with each counter (state that carries the position, one per layer in
    ``transformers``' ``StaticCache``) fed the position instead of carried: every counter holds
    the number of tokens written, so the generator puts the position on each stage that reads
    one, like a position argument, and a counter read on several stages (a mask or the
    positional embedding made from layer 0's) ties no stages together."""
    if not roles.counters:
        return roles
    from hlopipe.io import ArgRoles

    new = ArgRoles(
        replace(r, role=Use.INPUT, output=None,
                reason=r.reason + "; fed the position by the generator")
        if r.counter else r
        for r in roles
    )  # fmt: skip
    new.out_avals, new.unresolved, new.indexers = roles.out_avals, roles.unresolved, roles.indexers
    return new


def position_of(roles: Any, source: str, batch: int | None = None) -> Any:
    """The position's role: the one plain input, an integer of shape ``[]`` or ``[1]`` (int32
    or int64: a JAX step takes a scalar, a torch_xla one an ``int64[1]``), or ``[batch]``: a
    position per sequence; None when the position lives in the state (counters, as
    ``transformers``' ``StaticCache`` keeps them) and no argument is left over."""
    ins = roles.inputs
    if not ins and roles.counters:
        return None
    if len(ins) > 1 and all(r.counter for r in ins) and len({(r.shape, r.dtype) for r in ins}) == 1:
        return ins[0]  # counters fed the position (counters_as_position): one value for all
    shapes = ((), (1,)) if batch is None else ((), (1,), (batch,))
    if len(ins) != 1 or ins[0].shape not in shapes or not _is_int(ins[0].dtype):
        names = ", ".join(f"{r.path} {r.dtype}{list(r.shape)}" for r in ins) or "none"
        untold = "".join(f"; {u}" for u in getattr(roles, "unresolved", ()))
        per_seq = "" if batch is None else f", or [{batch}] (a position per sequence)"
        raise RuntimeConfigError(
            f"{source}: expected one integer input of shape [] or [1]{per_seq} (the position) "
            f"besides parameters, state and feedback, or a position kept in the state "
            f"(counters); found {names}{untold}"
        )
    return ins[0]


def logits_as_feedback(roles: Any) -> tuple[Any, int | None]:
    """A decode step returning logits: ``(roles, output)`` with its token argument made the
    feedback of its logits output (the token fed back is sampled from them), or ``(roles,
    None)`` when the step is not of that form.

    The form: no argument fed back by shape, one output besides the state, a float ``[b,
    vocab]`` (the logits), and integer ``[b]`` plain inputs, the first of which is the token
    (``(params, state, tokens, position)``, as the generation docs order them; when several
    are, the one data flow shows computing no write index of the cache, else refused); in a flat
    program whose position lives in the state (torch_xla's, ``transformers``' counters), where
    every other argument is taken for a parameter, the one integer ``[b]`` among them."""
    if roles.feedback:
        return roles, None
    taken = {r.output for r in roles if r.output is not None}
    free = [o for o in range(len(roles.out_avals)) if o not in taken]
    if len(free) != 1:  # counters fed the position (counters_as_position) return theirs too
        free = [o for o in free if len(roles.out_avals[o][0]) == 2]
    if len(free) != 1:
        return roles, None
    out = free[0]
    shape, dtype = roles.out_avals[out]
    if len(shape) != 2 or not _is_float(dtype):
        return roles, None
    ints = [r for r in roles.inputs if tuple(r.shape) == (shape[0],) and _is_int(r.dtype)]
    if not ints:  # a flat program (torch_xla) takes the token among what it takes for weights
        ints = [r for r in roles.parameters if tuple(r.shape) == (shape[0],) and _is_int(r.dtype)]
        if len(ints) != 1:
            return roles, None
    if len(ints) > 1:  # a position per sequence is [b] too: the one indexing the cache's writes
        ints = _token_among(roles, ints, out)
    token = ints[0].index
    from hlopipe.io import ArgRoles

    why = f"the token: sampled from output {out}'s logits {dtype}{list(shape)}"
    new = ArgRoles(
        replace(r, role=Use.FEEDBACK, output=out, reason=why) if r.index == token else r
        for r in roles
    )
    new.out_avals, new.unresolved, new.indexers = roles.out_avals, roles.unresolved, roles.indexers
    return new, out


def _token_among(roles: Any, ints: list[Any], out: int) -> list[Any]:
    """The token among several integer ``[b]`` inputs of a step returning logits: data flow
    shows the position (an index of the cache's in-place writes is computed from it) and the
    token (it only selects the embedding's rows, no write index); refused, naming the
    candidates, unless exactly one of them computes no write index."""
    token = [r for r in ints if r.index not in roles.indexers]
    if len(token) == 1:
        return token
    names = ", ".join(f"argument {r.index} ({r.path} {r.dtype}{list(r.shape)})" for r in ints)
    shown = ", ".join(str(r.index) for r in ints if r.index in roles.indexers) or "none"
    raise RuntimeConfigError(
        f"which integer input is the token fed back from output {out}'s logits is in doubt: "
        f"{names}; data flow shows the cache's write index computed from {shown}, so it "
        "does not tell the token from the position; export the step with exactly one "
        "position argument indexing the cache, ordered (params, state, tokens, position)"
    )


def position_value(role: Any, position: Any) -> Any:
    """``position`` as the position argument takes it (its dtype and shape: ``[]``, ``[1]``,
    or ``[b]``, where ``position`` may be each sequence's)."""
    import numpy as np

    return np.full(role.shape, position, dtype=role.dtype)


class PrefillArgs(NamedTuple):
    """What a prefill's arguments are: ``prompt`` (its argument), ``param_of`` ``{prefill
    argument: decode step's parameter}``, ``constants`` ``{prefill argument: value}``: the
    constants it lifted that the decode step has not (a counter's start or increment), and
    ``how`` ``{prefill argument: MatchedBy}``: how each parameter was matched (empty when
    the prefill's own arguments were given)."""

    prompt: int
    param_of: dict[int, int]
    constants: dict[int, Any]
    how: dict[int, MatchedBy] = {}

    def describe(self) -> str:
        """One line: how the arguments were matched, e.g. ``prefill arguments matched by
        shape 1, data flow 21; lifted constants: argument 12 = 0, ...; the prompt argument
        9``."""
        from collections import Counter

        if not self.how:
            line = f"prefill arguments given ({len(self.constants)}, prefill_params)"
        else:
            n = Counter(self.how.values())
            line = "prefill arguments matched by " + ", ".join(
                f"{m} {n[m]}" for m in MatchedBy if n[m]
            )  # fmt: skip
            if self.constants:
                values = (f"argument {i} = {np.asarray(v).tolist()}"
                          for i, v in self.constants.items())  # fmt: skip
                line += f"; lifted constants: {', '.join(values)} (each counter output then "
                line += "holds the prompt length)"
        return line + f"; the prompt argument {self.prompt}"


def prefill_args(
    prefill: Any,
    decode_roles: Any,
    what: str,
    own: Sequence[Any] | None = None,
    decode: Any = None,
    params: Mapping[int, Any] | None = None,
) -> PrefillArgs:
    """The prefill's prompt argument, its parameters as the decode step's, and its own lifted
    constants.

    With ``own`` (``prefill_params``: the prefill's own arguments, every one but the prompt in
    its order, or all of them with ``None`` at the prompt) nothing is matched: each becomes
    one of the prefill's constants, and the prompt is the argument left out.

    Else the prefill takes the decode step's parameters and one prompt, anywhere among them
    (last in a JAX export; where the tracer put it in a torch_xla one): the prompt is the
    argument without which the others' shapes and dtypes are the parameters', in their order.
    Else the prompt is the one integer ``[batch, length]`` argument that no parameter's shape
    and dtype is, and the others are matched to the decode step's parameters in their order
    (one tracer traced both), or where that order does not fit (another tracer: torch.export
    beside torch_xla's lazy tensors), with ``decode`` (the decode step's program), by name,
    shape and data flow (:mod:`hlopipe.generate._match`). An argument left over (a constant
    the prefill lifted) must be an integer scalar that only the prefill's counter outputs are
    computed from: it is given the value for which each of them holds the prompt length, as
    the decode step's counters hold the tokens written.

    A match (any rule) and its constants are then checked by running them, given ``decode``
    and ``params`` (the decode step's parameters, ``{its argument: value}``;
    ``_prefill_check.py``): the prefill on a random prompt against the decode loop fed it
    token by token.

    Raises:
      RuntimeConfigError naming what does not fit, arguments that several parameters fit
      alike, a match whose prefill computes other state or another first token than the
      decode loop (the arguments in doubt), and ``prefill_params`` (how to give the
      prefill's arguments)."""
    if own is not None:
        return _own_prefill_args(prefill, what, own)
    args = _matched_prefill_args(prefill, decode_roles, what, decode)
    if decode is not None and params is not None:
        from hlopipe.generate._prefill_check import check_prefill_args

        check_prefill_args(prefill, decode, decode_roles, args, what, params)
    return args


def _matched_prefill_args(prefill: Any, decode_roles: Any, what: str, decode: Any) -> PrefillArgs:
    """:func:`prefill_args` without ``own``: the prompt, the parameters matched and the
    constants solved, unchecked."""
    params = decode_roles.parameters
    avals = [(tuple(a.shape), str(a.dtype)) for a in prefill.in_avals]
    want = [(tuple(r.shape), r.dtype) for r in params]
    if len(avals) == len(want) + 1:
        fits = [k for k in range(len(avals)) if avals[:k] + avals[k + 1 :] == want]
        if fits:
            ints = [k for k in fits if _is_int(avals[k][1]) and len(avals[k][0]) == 2]
            if len(fits) > 1 and len(want) not in fits and len(ints) != 1:
                raise RuntimeConfigError(
                    f"{what}: arguments {fits} could each be the prompt; put it last"
                )
            k = len(want) if len(want) in fits else (ints or fits)[0]
            rest = [i for i in range(len(avals)) if i != k]
            param_of = {i: r.index for i, r in zip(rest, params, strict=True)}
            if decode is None or _names_agree(prefill, decode, param_of):
                return PrefillArgs(k, param_of, {}, dict.fromkeys(param_of, MatchedBy.ORDER))
    return _prefill_args_with_constants(prefill, decode_roles, what, avals, want, decode)


def _names_agree(prefill: Any, decode: Any, param_of: dict[int, int]) -> bool:
    """Whether no argument matched in order carries a name (both programs naming it) other
    than its parameter's."""
    from hlopipe.generate._match import real_name

    pre, dec = prefill.arg_names, decode.arg_names
    for i, a in param_of.items():
        x, y = real_name(pre[i]), real_name(dec[a])
        if x is not None and y is not None and x != y:
            return False
    return True


def _own_prefill_args(prefill: Any, what: str, own: Sequence[Any]) -> PrefillArgs:
    """:func:`prefill_args` given the prefill's own arguments."""
    import numpy as np

    avals = [(tuple(a.shape), str(a.dtype)) for a in prefill.in_avals]
    given = list(own)
    nones = [k for k, v in enumerate(given) if v is None]
    if len(given) == len(avals) and len(nones) == 1:
        prompt = nones[0]
    elif len(given) == len(avals) - 1 and not nones:
        prompts = [
            k for k, (shape, dtype) in enumerate(avals) if len(shape) == 2 and _is_int(dtype)
        ]
        if len(prompts) != 1:
            found = ", ".join(f"{k} ({avals[k][1]}{list(avals[k][0])})" for k in prompts)
            raise RuntimeConfigError(
                f"{what}: ", Keyword("prefill_params"), " leaves the prompt out, but the "
                f"integer [batch, length] arguments {found or '(none)'} could each be it; give "
                "every argument, with None at the prompt's place"
            )  # fmt: skip
        prompt = prompts[0]
        given.insert(prompt, None)
    else:
        raise RuntimeConfigError(
            f"{what}: ", Keyword("prefill_params"), f" holds {len(given)} arrays"
            f"{f' ({len(nones)} None)' if nones else ''}; the prefill takes {len(avals)} "
            f"arguments: give the {len(avals) - 1} besides the prompt, in its order"
        )  # fmt: skip
    constants: dict[int, Any] = {}
    for k, v in enumerate(given):
        if k == prompt:
            continue
        a = np.asarray(v)
        if (a.shape, str(a.dtype)) != avals[k]:
            raise RuntimeConfigError(
                f"{what}: ", Keyword("prefill_params"), f" gives argument {k} as "
                f"{a.dtype}{list(a.shape)}; the prefill takes {avals[k][1]}{list(avals[k][0])} "
                "there (the prompt taken as argument " + str(prompt) + ")"
            )  # fmt: skip
        constants[k] = a
    return PrefillArgs(prompt, {}, constants)


def _prefill_args_with_constants(
    prefill: Any, decode_roles: Any, what: str, avals: list[Any], want: list[Any], decode: Any
) -> PrefillArgs:
    """:func:`prefill_args` where the prefill's arguments are not the decode step's parameters
    and a prompt in order: the parameters in order with constants of its own, else matched.
    A constant left over is a counter's start (torch.export lifts it, and it feeds the
    positions too) or the length a counter advances by (torch_xla's lazy tensors): counter
    outputs are computed from it alone."""
    from hlopipe.io import output_sources

    refused = (
        f"{what}: takes {len(avals)} arguments; expected the decode step's {len(want)} "
        "parameters (in their order, same shapes and dtypes), one prompt and constants that "
        "only feed its counters"
    )
    own = (  # how to give them when they cannot be matched: the caller's keyword
        "; where the prefill orders its arguments its own way (torch.export) give them: ",
        Keyword("prefill_params"),
        " (every argument but the prompt, in the prefill's order)",
    )
    prompts = [k for k, (shape, dtype) in enumerate(avals)
               if len(shape) == 2 and _is_int(dtype) and (shape, dtype) not in want]  # fmt: skip
    if len(prompts) != 1:
        found = ", ".join(f"{k} ({avals[k][1]}{list(avals[k][0])})" for k in prompts) or "none"
        raise RuntimeConfigError(f"{refused}; integer [batch, length] arguments: {found}", *own)
    prompt = prompts[0]
    in_order = _in_order(avals, prompt, decode_roles.parameters)
    if in_order is not None and (decode is None or _names_agree(prefill, decode, in_order[0])):
        param_of, left = in_order
        how = dict.fromkeys(param_of, MatchedBy.ORDER)
    elif decode is not None:
        param_of, how, left = match_params(prefill, decode, decode_roles, prompt, what)
    else:
        others = [a for i, a in enumerate(avals) if i != prompt]
        raise RuntimeConfigError(f"{refused}; {_unmatched(others, want)}", *own)
    counters = {r.index for r in decode_roles.counters}
    token, state_of = prefill_outputs(prefill, decode_roles, decode_roles.feedback[0].index, what)
    outs = [(tuple(a.shape), str(a.dtype)) for a in prefill.out_avals]
    feeds = output_sources(prefill)

    def a_counter(o: int) -> bool:  # the decode step's counter, carried or fed the position
        made = state_of.get(o)
        return made in counters or (made is None and o != token and outs[o][0] in ((), (1,))
                                    and _is_int(outs[o][1]))  # fmt: skip

    length = int(avals[prompt][0][1])
    constants: dict[int, Any] = {}
    for i in left:
        shape, dtype = avals[i]
        # the counters computed from it alone (it may feed the positions read elsewhere too)
        made = [o for o, srcs in enumerate(feeds) if srcs == {i} and a_counter(o)]
        start = None
        if shape in ((), (1,)) and _is_int(dtype) and made:
            start = counter_start(prefill, i, made, length)
        if start is None:
            raise RuntimeConfigError(
                f"{refused}; argument {i} ({dtype}{list(shape)}) matches no parameter of the "
                "decode step and is no counter's start (an integer scalar from which alone "
                "counter outputs are computed, each then holding the prompt length)",
                *own,
            )
        constants[i] = np.full(shape, start, np.dtype(dtype))
    return PrefillArgs(prompt, param_of, constants, how)


def _in_order(
    avals: list[Any], prompt: int, params: Sequence[Any]
) -> tuple[dict[int, int], list[int]] | None:
    """The decode step's parameters matched in their order, by shape and dtype, to the
    prefill's arguments besides ``prompt``: ``(param_of, the arguments left over)``, or None
    when some parameter finds no argument."""
    param_of: dict[int, int] = {}
    left: list[int] = []
    j = 0
    for i, a in enumerate(avals):
        if i == prompt:
            continue
        if j < len(params) and a == (tuple(params[j].shape), params[j].dtype):
            param_of[i] = params[j].index
            j += 1
        else:
            left.append(i)
    return (param_of, left) if j == len(params) else None


def _unmatched(given: list[Any], want: list[Any]) -> str:
    """Which shapes and dtypes the prefill's arguments (besides the prompt) and the decode
    step's parameters hold in other numbers, or, where the numbers agree, that their order
    differs."""
    from collections import Counter

    have, need = Counter(given), Counter(want)
    diff = [f"{d}{list(sh)}: {need[(sh, d)]} parameters, {have[(sh, d)]} prefill arguments"
            for sh, d in sorted(set(have) | set(need), key=str)
            if have[(sh, d)] != need[(sh, d)]]  # fmt: skip
    if diff:
        return "they differ in " + "; ".join(diff[:6]) + ("; ..." if len(diff) > 6 else "")
    return "they hold the same shapes and dtypes in another order"


def prefill_outputs(
    prefill: Any, decode_roles: Any, token_arg: int, what: str = "the prefill"
) -> tuple[int, dict[int, int]]:
    """Which prefill output is the first token, and ``{prefill output: decode state argument}``.

    When the prefill returns what the decode step returns (the same shapes and dtypes in the
    same order: a torch_xla pair returns logits, tokens and caches from both), output for
    output; else the first output with the token's shape and dtype, and the rest in order.
    """
    outs = [(tuple(a.shape), str(a.dtype)) for a in prefill.out_avals]
    if outs == getattr(decode_roles, "out_avals", None):
        state = {r.output: r.index for r in decode_roles.state}
        return decode_roles[token_arg].output, state
    return _prefill_outputs_in_order(prefill, decode_roles, token_arg, what)


def _prefill_outputs_in_order(
    prefill: Any, decode_roles: Any, token_arg: int, what: str
) -> tuple[int, dict[int, int]]:
    """The first output with the token's shape and dtype (for a decode step returning logits,
    else the first float ``[b, vocab]`` or ``[b, length, vocab]`` output: the prefill's
    logits), the others the state in order; shapes and dtypes checked."""
    outs = list(prefill.out_avals)
    tok = decode_roles[token_arg]
    key = (tuple(tok.shape), str(tok.dtype))
    token_out = next((i for i, a in enumerate(outs) if (tuple(a.shape), str(a.dtype)) == key), None)
    vocab = _logits_vocab(decode_roles, token_arg)
    if token_out is None and vocab is not None:
        token_out = next((i for i, a in enumerate(outs) if _logits_like(a, key[0], vocab)), None)
    if token_out is None and vocab is None:
        floats = [i for i, a in enumerate(outs)
                  if a.shape and _logits_like(a, key[0], int(a.shape[-1]))]  # fmt: skip
        if floats:  # logits from the prefill, a token from the decode step: say so
            a = outs[floats[0]]
            raise RuntimeConfigError(
                f"{what}: output {floats[0]} is logits ({a.dtype}{list(a.shape)}) but the "
                f"decode step returns a token ({key[1]}{list(key[0])}); export both the same "
                "way: the prefill returning the argmax token as the decode step does, or the "
                "decode step returning logits too (then sampled)"
            )
    if token_out is None:
        logits = "" if vocab is None else (
            f" nor logits (float [b, {vocab}] of the prompt's last position, or [b, length, "
            f"{vocab}])"
        )  # fmt: skip
        raise RuntimeConfigError(
            f"{what}: no output has the shape and dtype of the decode step's token "
            f"({key[1]}{list(key[0])}){logits}; the prefill returns (next_tokens, state)"
            + ("" if vocab is None else " or (logits, state)")
        )
    rest = [i for i in range(len(outs)) if i != token_out]
    state = decode_roles.state
    if len(rest) != len(state):
        raise StageError(
            f"{what}: {len(rest)} outputs besides the token, but the decode step has "
            f"{len(state)} state arguments; the prefill must return the whole state"
        )
    mapping: dict[int, int] = {}
    for o, r in zip(rest, state, strict=True):
        a = outs[o]
        if (tuple(a.shape), str(a.dtype)) != (tuple(r.shape), str(r.dtype)):
            raise StageError(
                f"{what}: output {o} is {a.dtype}{list(a.shape)} but the decode step's state "
                f"{r.path} is {r.dtype}{list(r.shape)}"
            )
        mapping[o] = r.index
    return token_out, mapping


def _logits_vocab(decode_roles: Any, token_arg: int) -> int | None:
    """The vocabulary of a decode step returning logits (the token fed back from a float
    ``[b, vocab]`` output, ``logits_as_feedback``); ``None`` for one returning tokens."""
    out = decode_roles[token_arg].output
    avals = getattr(decode_roles, "out_avals", None)
    if out is None or avals is None:
        return None
    shape, dtype = avals[out]
    return int(shape[1]) if len(shape) == 2 and _is_float(dtype) else None


def _logits_like(aval: Any, token_shape: tuple[int, ...], vocab: int) -> bool:
    """A prefill's logits: float ``[b, vocab]`` or ``[b, length, vocab]``."""
    shape = tuple(aval.shape)
    b = token_shape[0] if token_shape else 1
    return _is_float(aval.dtype) and len(shape) in (2, 3) and shape[0] == b and shape[-1] == vocab


def prefill_returns_logits(prefill: Any, token_out: int) -> bool:
    """Whether the prefill's first-token output is logits (a float) to sample from."""
    return _is_float(prefill.out_avals[token_out].dtype)


def cache_length(roles: Any, split: Any, position: Any, batch: int, source: str) -> int:
    """The cache length: the size of the axis the position indexes in the state's update
    chain (the program's data flow, else the traced decode step's updates), never a guess;
    the smallest where caches differ.

    Raises:
      RuntimeConfigError naming the candidate axes and ``max_len`` when no update of the
      state is indexed by the position along one axis."""
    from hlopipe.stages import length_axes

    state = [r for r in roles.state if not r.counter]
    axes = {r.index: {r.axis} for r in state if r.axis is not None}
    if len(axes) < len(state) and position is not None:
        traced = length_axes(split.staged.jaxpr, [r.index for r in state], position.index)
        axes = {a: axes.get(a) or traced[a] for a in traced}
    axes = {r.index: axes.get(r.index, set()) for r in state}
    told = [(r, next(iter(axes[r.index]))) for r in state if len(axes[r.index]) == 1]
    if told:
        return min(int(r.shape[ax]) for r, ax in told)
    first = state[0]
    cands = axes[first.index] or {
        i for i, n in enumerate(first.shape) if n > 1 and not (i == 0 and n == batch)
    }
    named = ", ".join(f"axis {i} (size {first.shape[i]})" for i in sorted(cands)) or "none"
    by = "its counter" if position is None else position.path
    raise RuntimeConfigError(
        f"{source}: cannot tell the cache length of state {first.path} "
        f"{first.dtype}{list(first.shape)}: no update of it is indexed by the position "
        f"({by}) along one axis; the candidates are {named}; pass ",
        Keyword("max_len", "N"),
        " (the cache length)",
    )


def stage_layers(split: Any, stacked: Any) -> list[int]:
    """How many layers' state each stage of ``split`` keeps: the layers of a cache stacked
    over them (its pieces' ranges), else the layers of its state by data flow
    (``StatefulSplit.layer_keys``: a layer's K and V caches are one layer, whether named
    ``[1][3]['k']`` and ``[1][3]['v']`` or ``cache.3.keys`` and ``cache.3.values``)."""
    out = []
    keys = split.layer_keys() if stacked is None else {}
    for s in range(split.num_stages):
        slots = split.state_of(s)
        if stacked is not None:
            size = {a: hi - lo for st in stacked.stacks
                    for (lo, hi), a in zip(st.ranges, st.args, strict=True)}  # fmt: skip
            out.append(max((size.get(x.arg, 1) for x in slots), default=0))
        else:
            out.append(len({keys[x.arg] for x in slots}))
    return out


def split_warnings(layers: list[int], state_sent: Any) -> list[str]:
    """What ``print(generator)`` warns of: a stage keeping more than its share of the layers'
    state (``ceil(layers / stages)``) or none, and state sent between stages."""
    S, total = len(layers), sum(layers)
    share = -(-total // S)
    out = [
        f"warning: stage {s} keeps the state of {n} layers, more than its share ({share} of "
        f"{total} over {S} stages); place stage_boundary markers to balance them"
        for s, n in enumerate(layers)
        if n > share
    ]
    out += [
        f"warning: stage {s} keeps no layer's state (it only computes); fewer stages, or "
        "stage_boundary markers between layers, would give it some"
        for s, n in enumerate(layers)
        if n == 0
    ]
    out += [
        f"warning: stage {x.src} sends {x.nbytes} B of state {x.path} per token to stage "
        f"{x.dst} (read there after its update): move the stage_boundary marker after what "
        "reads it"
        for x in state_sent
    ]
    return out
