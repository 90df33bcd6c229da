"""The oracle of pipelined generation: the unsplit programs on one device, group by group."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax
import numpy as np

from hlopipe.generate._plan import prefill_outputs


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
) -> tuple[np.ndarray, list[list[np.ndarray]]]:
    """The oracle: the same tokens from the unsplit programs on one device, one group at a
    time. Returns ``(tokens [groups, b, n], final state per group)``."""
    dev = device or jax.local_devices()[0]
    fdec = _jitted(decode)
    roles = decode.arg_roles()
    flat_params = jax.device_put(jax.tree_util.tree_leaves(params), dev)
    st_idx = [r.index for r in roles.state]
    tok_i = roles.feedback[0].index
    tok_o = roles.feedback[0].output
    results, states = [], []
    groups = len(prompts) if prompts is not None else len(tokens)
    given = dict(feedback or {})
    for g in range(groups):
        seq = []
        fb = {
            r.index: np.asarray(given.get(r.path, given.get(r.index)))[g]
            for r in roles.feedback[1:]
        }
        if prompts is not None:
            outs = _jitted(prefill)(*flat_params, np.asarray(prompts[g], np.int32))
            pre_tok = prefill_outputs(prefill, roles, tok_i)[0]
            tok = outs[pre_tok]
            cache = [o for i, o in enumerate(outs) if i != pre_tok]
            pos = np.asarray(prompts).shape[2]
            seq.append(tok)
            steps = n - 1
        else:
            tok = np.asarray(tokens[g], np.int32)
            cache = (
                [np.zeros(roles[i].shape, roles[i].dtype) for i in st_idx]
                if state is None
                else list(state[g])
            )
            pos, steps = position, n
        for t in range(steps):
            outs = fdec(*_decode_args(roles, flat_params, cache, fb, tok, pos + t))
            tok = outs[tok_o]
            fb = {r.index: outs[r.output] for r in roles.feedback[1:]}
            cache = [outs[roles[i].output] for i in st_idx]
            seq.append(tok)
        results.append(np.stack([np.asarray(x) for x in seq], axis=-1))
        states.append([np.asarray(c) for c in cache])
    return np.stack(results), states


def _decode_args(
    roles: Any, params: list[Any], cache: list[Any], fb: dict[int, Any], tok: Any, pos: int
) -> list[Any]:
    """The decode step's flat arguments, each in its place."""
    args: list[Any] = [None] * len(roles)
    for r, v in zip(roles.parameters, params, strict=True):
        args[r.index] = v
    for r, v in zip(roles.state, cache, strict=True):
        args[r.index] = v
    for r in roles.feedback[1:]:
        args[r.index] = fb[r.index]
    args[roles.feedback[0].index], args[roles.inputs[0].index] = tok, np.int32(pos)
    return args


def _jitted(program: Any) -> Any:
    """The program's flat function, jitted once per program."""
    fn = program.extra.get("generate_jit")
    if fn is None:
        fn = program.extra["generate_jit"] = jax.jit(program.as_function(flat=True))
    return fn
