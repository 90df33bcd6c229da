"""Pipeline schedules as data: generators, lowering, validator, simulator, plots.

Pure Python: imports nothing of hlopipe but :mod:`hlopipe.errors`, and no JAX.

>>> from hlopipe import schedules
>>> s = schedules.get("1f1b", num_ranks=4, num_microbatches=8)
>>> str(s.actions[0][0]), schedules.validate(s)[3]
('0F0', 3)
>>> round(schedules.simulate(s, {"F": 1, "B": 1}).bubble_fraction, 3)
0.273
"""

from hlopipe.schedules._auto import Candidate, Search, best, rank_candidates
from hlopipe.schedules._costs import CostKey, CostKind
from hlopipe.schedules._decode import Phase, decode, steady_bubble
from hlopipe.schedules._generators import (
    GENERATORS,
    canonical_name,
    default_virtual_stages,
    dualpipev,
    get,
    gpipe,
    inference,
    interleaved_1f1b,
    interleaved_zb,
    looped_bfs,
    names,
    one_f_one_b,
    zb_h1,
    zb_h2,
    zb_v,
)
from hlopipe.schedules._grid import format_grid
from hlopipe.schedules._inflight import peak_in_flight
from hlopipe.schedules._ir import Action, Kind, Overlap, Schedule, split_overlaps
from hlopipe.schedules._lower import lower
from hlopipe.schedules._plot import plot, to_chrome_trace
from hlopipe.schedules._simulate import Timeline, align, parse_costs, resolve_costs, simulate
from hlopipe.schedules._validate import validate

available = names

__all__ = [
    "GENERATORS",
    "Action",
    "Candidate",
    "CostKey",
    "CostKind",
    "Kind",
    "Overlap",
    "Phase",
    "Schedule",
    "Search",
    "Timeline",
    "align",
    "available",
    "best",
    "canonical_name",
    "decode",
    "default_virtual_stages",
    "dualpipev",
    "format_grid",
    "get",
    "gpipe",
    "inference",
    "interleaved_1f1b",
    "interleaved_zb",
    "looped_bfs",
    "lower",
    "names",
    "peak_in_flight",
    "one_f_one_b",
    "parse_costs",
    "plot",
    "rank_candidates",
    "resolve_costs",
    "simulate",
    "split_overlaps",
    "steady_bubble",
    "to_chrome_trace",
    "validate",
    "zb_h1",
    "zb_h2",
    "zb_v",
]
