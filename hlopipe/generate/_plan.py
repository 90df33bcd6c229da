"""What each stage of a split decode (or prefill) step takes and gives: a plan per stage.

An input of a stage's function is a parameter, a state argument (donated: the stage keeps it),
a feedback argument (the previous step's output), another plain input (the position) or a value
received from an earlier stage. An output is the new value of a state argument, a value sent to
later stages, and/or a program output (the feedback, the token).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hlopipe.errors import RuntimeConfigError, StageError

PARAM, STATE, FEEDBACK, INPUT, RECV = "param", "state", "feedback", "input", "recv"


@dataclass(frozen=True)
class StagePlan:
    """Stage ``stage``: ``inputs`` as ``(kind, key)`` (key: the flat argument, or for ``recv``
    the ``(src stage, src output)``), ``donate`` the input positions of its state, ``state_out``
    ``{stage output: state argument}``, ``sends`` ``[(stage output, dst stage)]`` and
    ``program_out`` ``{stage output: program output}``."""

    stage: int
    inputs: tuple[tuple[str, Any], ...]
    donate: tuple[int, ...]
    state_out: dict[int, int]
    sends: tuple[tuple[int, int], ...]
    program_out: dict[int, int]
    send_bytes: int


def plan_stages(staged: Any, kinds: dict[int, str], state_slots: dict[int, Any]) -> list[StagePlan]:
    """One :class:`StagePlan` per stage of ``staged``; ``kinds`` maps every flat argument to
    ``param`` / ``state`` / ``feedback`` / ``input``; ``state_slots`` maps a state argument to
    its slot (``stage_output``)."""
    plans = []
    for st in staged.stages:
        inputs: list[tuple[str, Any]] = [(kinds[a], a) for a in st.params_needed]
        inputs += [(RECV, (r.src, r.output)) for r in st.receives]
        donate = tuple(i for i, (k, _) in enumerate(inputs) if k == STATE)
        state_out = {
            slot.stage_output: a
            for a, slot in state_slots.items()
            if slot.stage == st.index and slot.stage_output is not None
        }
        sends = tuple(sorted({(s.output, s.dst) for s in st.sends}))
        nbytes = sum(_nbytes(st.outputs[o]) for o, _ in sends)
        plans.append(
            StagePlan(
                st.index, tuple(inputs), donate, state_out, sends, dict(st.program_outputs), nbytes
            )
        )
    return plans


def _nbytes(aval: Any) -> int:
    import numpy as np

    return int(np.prod(aval.shape, dtype=np.int64)) * np.dtype(aval.dtype).itemsize


def prefill_outputs(
    prefill: Any, decode_roles: Any, token_arg: int, what: str = "the prefill"
) -> tuple[int, dict[int, int]]:
    """Which prefill output is the first token, and ``{prefill output: decode state argument}``.

    By path below the top level when both programs carry their trees (``[1][2]['k']``), else
    in order; shapes and dtypes checked.
    """
    outs = list(prefill.out_avals)
    tok = decode_roles[token_arg]
    key = (tuple(tok.shape), str(tok.dtype))
    token_out = next((i for i, a in enumerate(outs) if (tuple(a.shape), str(a.dtype)) == key), None)
    if token_out is None:
        raise RuntimeConfigError(
            f"{what}: no output has the shape and dtype of the decode step's token "
            f"({key[1]}{list(key[0])}); the prefill returns (next_tokens, state)"
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
