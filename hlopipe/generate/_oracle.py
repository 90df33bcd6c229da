"""The oracle of generation: the unsplit programs on one device, one group at a time."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jax
import numpy as np

from hlopipe.generate._plan import (
    logits_as_feedback,
    position_of,
    position_value,
    prefill_args,
    prefill_outputs,
    prefill_returns_logits,
)


def generate_unsplit(
    decode: Any,
    params: Any,
    n: int,
    *,
    prefill: Any = None,
    prompts: Any = None,
    tokens: Any = None,
    state: Any = None,
    position: int = 0,
    feedback: Mapping[Any, Any] | None = None,
    device: Any = None,
    prefill_params: Sequence[Any] | None = None,
) -> tuple[np.ndarray, list[list[np.ndarray]]]:
    """The same tokens as :class:`~hlopipe.Generator` from the unsplit programs on one device,
    one group at a time (``prefill_params`` as ``Generator`` takes them). A step (or a
    prefill) returning logits is greedy: each token the argmax of its logits (a prefill's
    ``[b, length, vocab]``: of the prompt's last position). Returns ``(tokens [groups, b, n],
    final state per group)``."""
    dev = device or jax.local_devices()[0]
    roles, logits_out = logits_as_feedback(decode.arg_roles())
    flat = jax.device_put(jax.tree_util.tree_leaves(params), dev)
    by_arg = dict(zip((r.index for r in roles.parameters), flat, strict=True))
    token = roles.feedback[0]
    given = dict(feedback or {})
    results, states = [], []
    for g in range(len(prompts) if prompts is not None else len(tokens)):
        fb = {
            r.index: np.asarray(given.get(r.path, given.get(r.index)))[g]
            for r in roles.feedback[1:]
        }
        if prompts is not None:
            tok, cache = _prefilled(prefill, decode, roles, by_arg, prompts[g], prefill_params)
            seq, pos, steps = [tok], np.shape(prompts)[2], n - 1
        else:
            tok = np.asarray(tokens[g], token.dtype)
            cache = (
                [np.zeros(r.shape, r.dtype) for r in roles.state]
                if state is None
                else list(state[g])
            )
            seq, pos, steps = [], position, n
        for t in range(steps):
            tok, cache, fb = _step(decode, roles, by_arg, tok, cache, fb, pos + t)
            if logits_out is not None:  # greedy: the most likely token
                tok = np.argmax(np.asarray(tok), axis=-1).astype(token.dtype)
            seq.append(tok)
        results.append(np.stack([np.asarray(x) for x in seq], axis=-1))
        states.append([np.asarray(c) for c in cache])
    return np.stack(results), states


def _prefilled(
    prefill: Any, decode: Any, roles: Any, by_arg: dict[int, Any], prompt: Any, own: Any
) -> tuple[Any, list]:
    """The prefill's first token and the state it makes, in the decode step's state order."""
    k, param_of, constants = prefill_args(prefill, roles, "the prefill", own, decode, by_arg)[:3]
    args: list[Any] = [None] * len(prefill.in_avals)
    for i, a in param_of.items():
        args[i] = by_arg[a]
    for i, v in constants.items():
        args[i] = v
    args[k] = np.asarray(prompt, np.dtype(prefill.in_avals[k].dtype))
    outs = _jitted(prefill)(*args)
    token = roles.feedback[0]
    tok_out, state_of = prefill_outputs(prefill, roles, token.index)
    made = {a: outs[o] for o, a in state_of.items()}
    first = outs[tok_out]
    if prefill_returns_logits(prefill, tok_out):  # greedy: the last position's argmax
        logits = np.asarray(first)
        logits = logits[:, -1] if logits.ndim == 3 else logits
        first = np.argmax(logits, axis=-1).astype(token.dtype).reshape(token.shape)
    return first, [made[r.index] for r in roles.state]


def _step(
    decode: Any, roles: Any, by_arg: dict[int, Any], tok: Any, cache: list, fb: dict, pos: int
) -> tuple[Any, list, dict]:
    """One call of the decode step: the next token, state and other feedback."""
    args: list[Any] = [None] * len(roles)
    for a, v in by_arg.items():
        args[a] = v
    for r, v in zip(roles.state, cache, strict=True):
        args[r.index] = v
    for a, v in fb.items():
        args[a] = v
    args[roles.feedback[0].index] = tok
    batch = tuple(roles.feedback[0].shape)[:1]  # a position per sequence is [b]
    where = position_of(roles, getattr(decode, "source", "the decode step"), *batch)
    if where is not None:  # else the position lives in the state (counters)
        args[where.index] = position_value(where, pos)
    outs = _jitted(decode)(*args)
    new_fb = {r.index: outs[r.output] for r in roles.feedback[1:]}
    return outs[roles.feedback[0].output], [outs[r.output] for r in roles.state], new_fb


# The flat function of the last few programs, jitted: generate_unsplit runs the same
# decode step (and prefill) many times, and callers check several runs against one program.
# A rehydrated function holds its program, so a cache keyed weakly would keep every program
# alive; this one holds at most _JITTED_KEEP of them.
_JITTED: list[tuple[Any, Any]] = []
_JITTED_KEEP = 4


def _jitted(program: Any) -> Any:
    """The program's flat function, jitted once per program (of the last few)."""
    for i, (prog, fn) in enumerate(_JITTED):
        if prog is program:
            _JITTED.append(_JITTED.pop(i))  # most recently used last
            return fn
    fn = jax.jit(program.as_function(flat=True))
    _JITTED.append((program, fn))
    del _JITTED[:-_JITTED_KEEP]
    return fn
