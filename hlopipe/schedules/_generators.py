"""Schedule generators: pure functions of (ranks, microbatches, virtual stages).

Each returns a compute-only :class:`Schedule` (F, B, I, W; no sends, no idle slots); the order
of a rank's list is the schedule. :func:`~hlopipe.schedules.lower` adds the transfers and
:func:`~hlopipe.schedules.align` lays the lists out in time steps for display.

This module is the registry (:func:`get` by name, aliases); the generators live by family:
``_gen_flush.py`` (gpipe, 1f1b, inference), ``_gen_interleaved.py`` (interleaved-1f1b,
interleaved-zb, looped-bfs), ``_gen_zero_bubble.py`` (zb-h1, zb-h2), ``_gen_v.py`` (zb-v,
dualpipev); what they share in ``_gen_common.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from hlopipe.errors import ScheduleError
from hlopipe.schedules._gen_flush import gpipe, inference, one_f_one_b
from hlopipe.schedules._gen_interleaved import interleaved_1f1b, interleaved_zb, looped_bfs
from hlopipe.schedules._gen_v import dualpipev, zb_v
from hlopipe.schedules._gen_zero_bubble import zb_h1, zb_h2
from hlopipe.schedules._ir import Schedule

Generator = Callable[..., Schedule]

GENERATORS: dict[str, Generator] = {
    "gpipe": gpipe,
    "1f1b": one_f_one_b,
    "interleaved-1f1b": interleaved_1f1b,
    "looped-bfs": looped_bfs,
    "zb-h1": zb_h1,
    "zb-h2": zb_h2,
    "zb-v": zb_v,
    "interleaved-zb": interleaved_zb,
    "dualpipev": dualpipev,
    "inference": inference,
}

_ALIASES = {
    "filldrain": "gpipe",
    "pipedreamflush": "1f1b",
    "interleaved": "interleaved-1f1b",
    "megatron": "interleaved-1f1b",
    "bfs": "looped-bfs",
    "zerobubble": "zb-h1",
    # torch.distributed.pipelining's class names, Schedule<Name>
    "zbvzerobubble": "zb-v",
    "interleavedzerobubble": "interleaved-zb",
    "forward": "inference",
    "forwardonly": "inference",
}


def _key(name: str) -> str:
    return re.sub(r"[\s_\-]", "", name.lower())


_LOOKUP = {_key(n): n for n in GENERATORS} | _ALIASES


def names() -> list[str]:
    """The canonical names :func:`get` knows.

    >>> "1f1b" in names()
    True
    """
    return list(GENERATORS)


def canonical_name(name: str) -> str:
    """The generator name ``name`` stands for (case, ``-``, ``_``, spaces and aliases as in
    :func:`get`); ScheduleError listing the valid names if none.

    >>> canonical_name("ZBVZeroBubble")
    'zb-v'
    """
    canonical = _LOOKUP.get(_key(name)) if isinstance(name, str) else None
    if canonical is None:
        raise ScheduleError(
            f"unknown schedule {name!r}{_did_you_mean(name)}; valid names: "
            f"{', '.join(GENERATORS)} (also: {', '.join(sorted(_ALIASES))})"
        )
    return canonical


def _did_you_mean(name: object) -> str:
    """``" (did you mean '1f1b'?)"`` when a known name or alias is close to ``name``."""
    import difflib

    if not isinstance(name, str):
        return ""
    close = difflib.get_close_matches(_key(name), list(_LOOKUP), n=1)
    return f" (did you mean {_LOOKUP[close[0]]!r}?)" if close else ""


def default_virtual_stages(name: str) -> int:
    """The stages per rank ``get(name, ...)`` makes when not told (no schedule built, so no
    size is refused: dualpipev needs 2p microbatches, but its default is still 2).

    >>> default_virtual_stages("dualpipev"), default_virtual_stages("1f1b")
    (2, 1)
    """
    import inspect

    default = inspect.signature(GENERATORS[canonical_name(name)]).parameters["virtual_stages"]
    return int(default.default)


def get(
    name: str,
    num_ranks: int,
    num_microbatches: int,
    virtual_stages: int | None = None,
) -> Schedule:
    """The schedule called ``name`` (case, ``-``, ``_`` and spaces ignored; aliases accepted).

    ``virtual_stages=None`` takes the generator's default (2 for interleaved-1f1b,
    interleaved-zb, looped-bfs, zb-v and dualpipev, else 1). A name gives the schedule it
    names, never another one. An unknown name raises ScheduleError listing the valid ones.

    >>> get("Interleaved_1F1B", 4, 8, virtual_stages=2).num_stages
    8
    """
    generator = GENERATORS[canonical_name(name)]
    if virtual_stages is None:
        return generator(num_ranks, num_microbatches)
    return generator(num_ranks, num_microbatches, virtual_stages)
