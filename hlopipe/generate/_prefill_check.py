"""A prefill's matched arguments checked by running them, before generation uses them.

Matching a prefill's arguments to its decode step's parameters (``_plan.prefill_args``: in
order, by name, shape or data flow, ``_match.py``) and solving its lifted constants
(``_match.counter_start``) are inferences: two weights of one shape taken in the wrong order
compile and run, and serve wrong tokens. So the match is run once, on one random prompt and
random parameters, unsplit on one device, against the decode loop fed the same prompt token by
token (the oracle's way, ``_oracle.py``): the state the prefill makes must be the state the loop
leaves, and its first token the loop's next. The parameters are the caller's own: a program
traced by torch_xla takes the constants it lifted (a mask's -inf, an attention scale, GELU's
0.7978) among its parameters, and random values there make the prefill and the loop differ
however they are matched; two weights equal in the caller's values are interchangeable.

A chunk step (``_chunk.py``) is run the same way (:func:`chunk_difference`): a prefill and a
chunk against the decode loop, its state and next token; then a right-padded chunk, whose
tokens after decide whether a last chunk may be padded.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
from jax import numpy as jnp

from hlopipe.errors import Keyword, RuntimeConfigError
from hlopipe.io import Use

# the largest difference between the prefill's values and the decode loop's, relative to the
# loop's largest magnitude: the two compute the same function in other orders (a prompt's
# attention at once, or a row at a time), so they differ by rounding, while a wrong match of
# random weights differs by the values themselves
_REL_TOL_16 = 5e-2  # bfloat16 / float16: 8 and 11 bits of mantissa
_REL_TOL = 1e-3

# matches checked, per (prefill, decode step) while both live: the oracle matches again per
# group of prompts, and the generate command before its generator does
_CHECKED: weakref.WeakKeyDictionary[Any, weakref.WeakKeyDictionary[Any, set[Any]]] = (
    weakref.WeakKeyDictionary()
)


class Difference(NamedTuple):
    """Where the prefill and the decode loop disagree: ``what`` (an output, in words) and by
    how much (``relative``: the largest difference over the loop's largest magnitude; inf
    where integers, or which values are finite, differ)."""

    what: str
    relative: float


def _fingerprint(value: Any) -> bytes:
    """64 evenly strided elements of a parameter: the check's verdict holds for the values
    it ran with (a swap of two weights equal at initialisation passes there), so a cached
    verdict is reused only for parameters that agree on these (another set of values, say
    trained ones, almost surely differs in some)."""
    flat = value.reshape(-1) if hasattr(value, "reshape") else np.asarray(value).reshape(-1)
    return np.asarray(flat[:: max(1, flat.shape[0] // 64)]).tobytes()


def check_prefill_args(
    prefill: Any, decode: Any, roles: Any, args: Any, what: str, params: Mapping[int, Any]
) -> None:
    """Run ``prefill`` with its arguments as ``args`` (a ``PrefillArgs``) says against
    ``decode``'s loop over the same random prompt, with ``params``; refuse a difference.
    Once per match of one pair of programs and parameter values (the oracle matches again
    for every group), and only where something was guessed (:func:`doubtful`,
    :func:`outputs_by_order`): a match that shapes force or that both programs' names
    confirm, with no lifted constant and the state outputs not taken in order among equal
    shapes, is taken as it is.

    Args:
      prefill, decode: the two programs (unsplit).
      roles: the decode step's argument roles, as the caller matched against them (a token
        fed back: the step's token, or the logits it is sampled from).
      args: the prefill's prompt argument, parameters (``param_of``) and constants.
      what: the prefill, in words, for the error.
      params: the decode step's parameters, ``{decode argument: value}``.

    Raises:
      RuntimeConfigError naming the first output that differs, the prefill's arguments whose
      match is in doubt (those sharing their shape and dtype with another parameter, and the
      lifted constants) and ``prefill_params``, the way to give the prefill's arguments."""
    from hlopipe.generate._plan import logits_as_feedback

    if not roles.feedback:
        roles, _ = logits_as_feedback(roles)
    key = (
        args.prompt,
        tuple(sorted(args.param_of.items())),
        tuple((i, np.asarray(v).tobytes()) for i, v in sorted(args.constants.items())),
        tuple((a, _fingerprint(params[a])) for a in sorted(params)),
    )
    done = _CHECKED.setdefault(prefill, weakref.WeakKeyDictionary()).setdefault(decode, set())
    if key in done:
        return
    doubt = doubtful(prefill, decode, roles, args)
    if not doubt and not args.constants and not outputs_by_order(prefill, roles):
        done.add(key)
        return
    diff = prefill_difference(prefill, decode, roles, args, params)
    if diff is not None:
        by_order = outputs_by_order(prefill, roles)
        doubt_words = in_doubt(roles, args, doubt) + (
            ", its state outputs taken in the decode step's state order (equal shapes)"
            if by_order
            else ""
        )
        raise RuntimeConfigError(
            f"{what}: run on a random prompt with its arguments as matched ({args.describe()}), "
            f"{diff.what} differs from the decode loop's fed the same prompt token by token "
            f"(largest difference {diff.relative:.3g} of its largest value); the match in "
            f"doubt: {doubt_words.lstrip(', ')}; give the prefill its own arguments: ",
            Keyword("prefill_params"),
            " (every argument but the prompt, in the prefill's order)"
            + (", and return the state in the decode step's order" if by_order else ""),
        )
    done.add(key)


def prefill_difference(
    prefill: Any, decode: Any, roles: Any, args: Any, params: Mapping[int, Any]
) -> Difference | None:
    """The first of the prefill's state outputs and first token that differs from the decode
    loop's over one random prompt (seed 0), with ``params`` (``{decode argument: value}``),
    or ``None``."""
    import jax

    from hlopipe.generate._oracle import _jitted
    from hlopipe.generate._plan import position_of, position_value, prefill_outputs

    rng = np.random.default_rng(0)
    token = roles.feedback[0]
    prompt_aval = prefill.in_avals[args.prompt]
    vocab = _vocab(roles, token)
    prompt = rng.integers(0, vocab, tuple(prompt_aval.shape)).astype(np.dtype(prompt_aval.dtype))
    dev = jax.local_devices()[0]
    order = [r.index for r in roles.parameters]
    on_dev = dict(zip(order, jax.device_put([params[a] for a in order], dev), strict=True))
    # the prefill, once over the whole prompt
    pre_in: list[Any] = [None] * len(prefill.in_avals)
    for i, a in args.param_of.items():
        pre_in[i] = on_dev[a]
    for i, v in args.constants.items():
        pre_in[i] = v
    pre_in[args.prompt] = prompt
    pre_out = _jitted(prefill)(*pre_in)
    tok_out, state_of = prefill_outputs(prefill, roles, token.index)
    # the decode loop, a token at a time from empty state
    step_in: list[Any] = [None] * len(roles)
    for a, v in on_dev.items():
        step_in[a] = v
    for r in [*roles.state, *roles.feedback[1:]]:
        step_in[r.index] = np.zeros(r.shape, r.dtype)
    batch = tuple(token.shape)[:1]
    position_of(roles, getattr(decode, "source", "the decode step"), *batch)  # one, or none
    step_out: Any = None
    for t in range(int(prompt.shape[1])):
        step_in[token.index] = prompt[:, t].reshape(token.shape).astype(np.dtype(token.dtype))
        for r in roles.inputs:  # the position, and counters fed it
            step_in[r.index] = position_value(r, t)
        step_out = _jitted(decode)(*step_in)
        for r in [*roles.state, *roles.feedback[1:]]:
            step_in[r.index] = step_out[r.output]
    state_path = {r.index: r.path for r in roles.state}
    for o, a in state_of.items():
        rel = _relative(pre_out[o], step_out[roles[a].output])
        if rel is not None:
            return Difference(f"the state {state_path[a]} (prefill output {o})", rel)
    rel = _first_token_relative(pre_out[tok_out], step_out[token.output])
    return None if rel is None else Difference(f"the first token (prefill output {tok_out})", rel)


def doubtful(prefill: Any, decode: Any, roles: Any, args: Any) -> list[int]:
    """The prefill's arguments whose match was guessed: a parameter of the same shape and
    dtype would fit too, and the two programs do not both name it alike (``real_name``)."""
    from hlopipe.generate._match import real_name

    shapes = [(tuple(r.shape), str(r.dtype)) for r in roles.parameters]
    pre_names = list(getattr(prefill, "arg_names", None) or [None] * len(prefill.in_avals))
    dec_names = list(getattr(decode, "arg_names", None) or [None] * len(roles))
    out = []
    for i, a in sorted(args.param_of.items()):
        if shapes.count((tuple(roles[a].shape), str(roles[a].dtype))) < 2:
            continue  # the one parameter of its shape and dtype
        name = real_name(pre_names[i])
        if name is None or name != real_name(dec_names[a]):
            out.append(i)
    return out


def outputs_by_order(prefill: Any, roles: Any) -> bool:
    """Whether the prefill's state outputs were taken for the decode step's state in order
    among equal shapes: its outputs are not the decode step's (another structure, another
    tracer) and two state arguments share a shape and dtype (``_plan.prefill_outputs``)."""
    outs = [(tuple(a.shape), str(a.dtype)) for a in prefill.out_avals]
    if outs == getattr(roles, "out_avals", None):
        return False  # output for output, as the decode step returns them
    state = [(tuple(r.shape), str(r.dtype)) for r in roles.state]
    return len(set(state)) < len(state)


def in_doubt(roles: Any, args: Any, doubt: list[int]) -> str:
    """The arguments ``doubt`` with the parameter each was taken for, and the lifted
    constants, in words (empty when there are none)."""
    path = {r.index: r.path for r in roles.parameters}
    parts = [f"argument {i} as parameter {args.param_of[i]} {path[args.param_of[i]]}"
             for i in doubt]  # fmt: skip
    parts += [f"argument {i} = {np.asarray(v).tolist()} (a lifted constant)"
              for i, v in sorted(args.constants.items())]  # fmt: skip
    return ", ".join(parts)


def _vocab(roles: Any, token: Any) -> int:
    """How many token ids a random prompt draws from: the logits' width when the step
    returns logits, else 2 (ids every embedding has)."""
    avals = getattr(roles, "out_avals", None)
    if avals is not None and token.output is not None:
        shape, dtype = avals[token.output]
        if len(shape) == 2 and jnp.issubdtype(dtype, jnp.floating):
            return int(shape[1])
    return 2


def _relative(got: Any, want: Any) -> float | None:
    """``None`` when ``got`` equals ``want`` (integers exactly, floats up to rounding), else
    their largest difference relative to ``want``'s largest magnitude."""
    x, y = np.asarray(got), np.asarray(want)
    if not jnp.issubdtype(y.dtype, jnp.inexact):
        return None if np.array_equal(x, y) else math.inf
    x, y = x.astype(np.float64), y.astype(np.float64)
    finite = np.isfinite(y)
    if not np.array_equal(np.isfinite(x), finite) or not np.array_equal(x[~finite], y[~finite]):
        return math.inf
    scale = float(np.max(np.abs(y[finite]), initial=0.0))
    err = float(np.max(np.abs(x[finite] - y[finite]), initial=0.0))
    rel = err / scale if scale > 0 else err
    tol = _REL_TOL_16 if np.asarray(want).dtype.itemsize <= 2 else _REL_TOL
    return None if rel <= tol else rel


def _first_token_relative(prefill_tok: Any, step_tok: Any) -> float | None:
    """The prefill's first token against the loop's next (tokens, or logits: the prefill's of
    the prompt's last position), as :func:`_relative`; a token against logits is their argmax."""
    x, y = np.asarray(prefill_tok), np.asarray(step_tok)
    if jnp.issubdtype(x.dtype, jnp.inexact) and x.ndim == y.ndim + 1:
        x = x[:, -1]  # [b, length, vocab]: the last position's
    if jnp.issubdtype(x.dtype, jnp.inexact) != jnp.issubdtype(y.dtype, jnp.inexact):
        x, y = (
            np.argmax(v, axis=-1) if jnp.issubdtype(v.dtype, jnp.inexact) else v for v in (x, y)
        )
        return None if np.array_equal(x.reshape(-1), y.reshape(-1)) else math.inf
    return _relative(x.reshape(y.shape), y)


class ChunkVerdict(NamedTuple):
    """What :func:`chunk_difference` found: where a chunk run as matched differs from the
    decode loop (``None``: nowhere), and whether a right-padded last chunk gives the loop's
    tokens after it; ``overlaps``: whether a last chunk ending at the prompt's end, started
    inside the chunk before (its first positions written again with the same tokens), leaves
    the loop's cache and gives its token; ``apart``: whether a chunk whose rows start at
    different positions (a position a row) leaves each row's cache and token as the loop
    left them at that row's end."""

    difference: Difference | None
    pads: bool
    overlaps: bool = False
    apart: bool = False  # the rows of a call may each start at its own position


def chunk_difference(
    chunk: Any, prefill: Any, decode: Any, roles: Any, params: Mapping[int, Any], max_len: int
) -> ChunkVerdict:
    """A prefill of ``P`` tokens and two chunks of ``C`` (the second right-padded), unsplit on
    one device, against the decode loop fed the same random prompt token by token (seed 0)
    with ``params`` (``{decode argument: value}``), in a cache of ``max_len`` (without room
    for the padded chunk, ``pads`` is False). ``chunk`` is a ``_chunk.ChunkStep``,
    ``prefill`` a ``_generator._Prefill`` (their programs and matched arguments).

    The first chunk (positions ``P .. P + C - 1``) must leave the loop's state after as many
    tokens and give its next token; else the difference. The padded one (``r < C`` tokens
    and junk after) then runs, the prompt's next token is fed to the decode step at its
    position and two more greedily: ``pads`` is whether those three tokens are the loop's
    (a causal chunk's padded positions are overwritten before they are read). Before it, a
    chunk of the prompt's last ``C`` tokens runs after the first (its first positions that
    chunk's again): ``overlaps`` is whether it leaves the loop's state after the whole prompt
    and gives its next token (a causal chunk writes the same keys and values again)."""
    import jax

    from hlopipe.generate._oracle import _jitted
    from hlopipe.generate._plan import logits_as_feedback, position_value, prefill_outputs

    if not roles.feedback:
        roles, _ = logits_as_feedback(roles)
    token = roles.feedback[0]
    P, C = int(prefill.prompt_aval.shape[-1]), chunk.length
    r = max(1, C // 2)
    n = P + C + r + 1  # the prompt: a prefill, a whole chunk, a padded one, a token
    padded = max(P + 2 * C, n + 2) <= max_len  # room for the padded chunk's check
    if not padded:
        n = P + C
    rng = np.random.default_rng(0)
    vocab = _vocab(roles, token)
    b = int(prefill.prompt_aval.shape[0])
    prompt = rng.integers(0, vocab, (b, n)).astype(np.int32)
    dev = jax.local_devices()[0]
    order = [x.index for x in roles.parameters]
    on_dev = dict(zip(order, jax.device_put([params[a] for a in order], dev), strict=True))
    step = _jitted(decode)

    def greedy(out: Any) -> np.ndarray:
        x = np.asarray(out)
        if jnp.issubdtype(x.dtype, jnp.inexact):
            x = np.argmax(x, axis=-1)
        return x.reshape(token.shape).astype(np.dtype(token.dtype))

    def loop(state: dict[int, Any], feeds: list[Any], start: int) -> tuple[list[Any], list[Any]]:
        """The decode step from ``state`` at ``start``: each of ``feeds`` (a token, or None:
        the last output's greedy token) fed in turn; each step's output and state."""
        step_in: list[Any] = [None] * len(roles)
        for a, v in on_dev.items():
            step_in[a] = v
        for x in roles.state:
            step_in[x.index] = state.get(x.index, np.zeros(x.shape, x.dtype))
        outs: list[Any] = []
        states: list[Any] = []
        for t, feed in enumerate(feeds):
            tok = greedy(outs[-1]) if feed is None else feed
            step_in[token.index] = np.asarray(tok).reshape(token.shape).astype(token.dtype)
            for x in roles.inputs:
                step_in[x.index] = position_value(x, start + t)
            got = step(*step_in)
            for x in roles.state:
                step_in[x.index] = got[x.output]
            outs.append(got[token.output])
            states.append({x.index: got[x.output] for x in roles.state})
        return outs, states

    after = [None, None] if padded else []  # two tokens the loop makes after the prompt
    want_out, want_state = loop({}, [prompt[:, t] for t in range(n)] + after, 0)
    # the prefill of the first P
    pre_in: list[Any] = [None] * len(prefill.unsplit.in_avals)
    for i, a in prefill.args.param_of.items():
        pre_in[i] = on_dev[a]
    for i, v in prefill.args.constants.items():
        pre_in[i] = v
    pre_in[prefill.args.prompt] = prompt[:, :P].astype(np.dtype(prefill.prompt_aval.dtype))
    pre_out = _jitted(prefill.unsplit)(*pre_in)
    _, state_of = prefill_outputs(prefill.unsplit, roles, token.index)
    state = {a: pre_out[o] for o, a in state_of.items()}

    def run_chunk(state: dict[int, Any], tokens: np.ndarray, position: Any) -> tuple[Any, Any]:
        args: list[Any] = [None] * len(chunk.roles)
        for x in chunk.roles:
            a = chunk.decode_arg.get(x.index)
            if x.role is Use.PARAMETER:
                args[x.index] = on_dev[a]
            elif x.role is Use.STATE:
                args[x.index] = state[a]
        args[chunk.tokens_arg] = tokens.astype(chunk.tokens_dtype())
        args[chunk.position_arg] = (chunk.position_value(position) if np.ndim(position) == 0
                                    else position)  # fmt: skip
        got = _jitted(chunk.unsplit)(*args)
        return got[chunk.token_out], {
            chunk.decode_arg[x.index]: got[x.output] for x in chunk.roles.state
        }

    made = state  # the prefill's
    tok, state = run_chunk(state, prompt[:, P : P + C], P)
    path = {x.index: x.path for x in roles.state}
    for a, v in state.items():
        rel = _relative(v, want_state[P + C - 1][a])
        if rel is not None:
            return ChunkVerdict(Difference(f"the cache {path[a]} after a chunk at {P}", rel), False)
    rel = _first_token_relative(tok, want_out[P + C - 1])
    if rel is not None:
        return ChunkVerdict(Difference(f"the token after a chunk at {P}", rel), False)
    apart = _rows_apart(chunk, prefill, made, prompt, run_chunk, want_out, want_state)
    if not padded:
        return ChunkVerdict(None, False, apart=apart)
    # a last chunk ending at the prompt's end (n - C .. n - 1), over part of the one before
    overlaps = False
    if r + 1 < C:
        tok, again = run_chunk(state, prompt[:, n - C : n], n - C)
        overlaps = _first_token_relative(tok, want_out[n - 1]) is None and all(
            _relative(v, want_state[n - 1][a]) is None for a, v in again.items()
        )
    junk = np.concatenate([prompt[:, P + C : P + C + r], prompt[:, : C - r][:, ::-1]], axis=1)
    _, state = run_chunk(state, junk, P + C)
    got, _ = loop(state, [prompt[:, n - 1], None, None], n - 1)
    pads = all(np.array_equal(greedy(x), greedy(y))
               for x, y in zip(got, want_out[n - 1 :], strict=True))  # fmt: skip
    return ChunkVerdict(None, pads, overlaps, apart)


def _rows_apart(
    chunk: Any,
    prefill: Any,
    made: dict[int, Any],
    prompt: np.ndarray,
    run_chunk: Any,
    want_out: list[Any],
    want_state: list[Any],
) -> bool:
    """Whether ``chunk``'s rows may each start at its own position: for a position with a
    row axis (``[b]``, or ``[b, C]``) at ``b > 1``, a chunk from the prefill's state
    ``made`` with the even rows at ``P`` and the odd ones at ``P - 1`` (their position
    ``P - 1`` written again with its token) must leave each row's cache (along the axis the
    prefill's rows land on) and its token as the decode loop left them after that row's
    last token. A position one for the call, or a state whose row axis cannot be told:
    ``False`` (rows run at one position)."""
    from hlopipe.errors import RuntimeConfigError

    role = chunk.roles[chunk.position_arg]
    shape, dtype = tuple(role.shape), np.dtype(role.dtype)
    b, C = int(prompt.shape[0]), chunk.length
    P = int(prefill.prompt_aval.shape[-1])
    if b < 2 or P < 1 or shape[:1] != (b,) or (shape == (C,) and b == C):
        return False
    try:
        axes = prefill.row_axes()
    except RuntimeConfigError:  # rows not followed to one axis of each cache: not told apart
        return False
    starts = np.asarray([P - (r % 2) for r in range(b)])
    tokens = np.stack([prompt[r, s : s + C] for r, s in enumerate(starts.tolist())])
    position = starts.astype(dtype)
    if len(shape) == 2:  # a cache_position a row
        position = position[:, None] + np.arange(C, dtype=dtype)
    values = dict(made)
    got_tok, got_state = run_chunk(values, tokens, position)
    for r, s in enumerate(starts.tolist()):
        end = s + C - 1
        if _first_token_relative(np.asarray(got_tok)[r : r + 1],
                                 np.asarray(want_out[end])[r : r + 1]) is not None:  # fmt: skip
            return False
        for a, v in got_state.items():
            ax = axes.get(a)
            if ax is None:
                return False
            want = np.take(np.asarray(want_state[end][a]), r, axis=ax)
            if _relative(np.take(np.asarray(v), r, axis=ax), want) is not None:
                return False
    return True
