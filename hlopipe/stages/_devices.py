"""Named devices: a roofline (peak FLOP/s, memory bandwidth) and the memory a stage may use.

The accelerator numbers are the vendors' public datasheet figures for the SXM parts, dense
(no structured sparsity): NVIDIA A100 Tensor Core GPU datasheet (2021: BF16 312 TFLOP/s,
FP32 19.5 TFLOP/s, HBM2e 1,555 GB/s for 40 GB and 2,039 GB/s for 80 GB), NVIDIA H100 Tensor
Core GPU datasheet (SXM: BF16 989 TFLOP/s dense, FP32 67 TFLOP/s, HBM3 3.35 TB/s, 80 GB) and
NVIDIA H200 Tensor Core GPU datasheet (SXM: the H100's compute, HBM3e 4.8 TB/s, 141 GB).
Link bandwidth is NVLink's per-direction rate per GPU (A100: 300 GB/s, H100/H200: 450 GB/s).
``cpu`` is a nominal host (the cost model's defaults) with this machine's physical memory.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from hlopipe.errors import Keyword, StageError
from hlopipe.stages._cost import CostModel

GB = 10**9


@dataclass(frozen=True)
class Device:
    """One accelerator (or host) as the cost model and the memory report see it.

    Attributes:
      name: the name ``--device`` takes.
      bf16_flops_per_s / fp32_flops_per_s: peak dense FLOP/s in bf16 (and fp16) and fp32.
      bytes_per_s: memory bandwidth.
      memory_bytes: memory per device.
      link_bytes_per_s: bandwidth to the next stage's device.
    """

    name: str
    bf16_flops_per_s: float
    fp32_flops_per_s: float
    bytes_per_s: float
    memory_bytes: int
    link_bytes_per_s: float

    def cost_model(self, dtype: Any = np.float32) -> CostModel:
        """The :class:`CostModel` of this device for a program computing in ``dtype``."""
        wide = np.dtype(dtype).itemsize >= 4
        flops = self.fp32_flops_per_s if wide else self.bf16_flops_per_s
        return CostModel(flops, self.bytes_per_s, self.link_bytes_per_s)


def _host_memory() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError):  # a platform without these names
        return 16 * GB


DEVICES: dict[str, Device] = {
    d.name: d
    for d in (
        Device("cpu", 1e11, 1e11, 2e10, _host_memory(), 1e10),
        Device("a100-40gb", 312e12, 19.5e12, 1555 * GB, 40 * GB, 300 * GB),
        Device("a100-80gb", 312e12, 19.5e12, 2039 * GB, 80 * GB, 300 * GB),
        Device("h100", 989e12, 67e12, 3350 * GB, 80 * GB, 450 * GB),
        Device("h200", 989e12, 67e12, 4800 * GB, 141 * GB, 450 * GB),
    )
}


def device(name: str | Device) -> Device:
    """The :class:`Device` called ``name`` (case, ``-``, ``_`` and spaces ignored; ``a100`` is
    the 80 GB part). Raises :class:`StageError` listing the known names."""
    if isinstance(name, Device):
        return name
    key = "".join(c for c in str(name).lower() if c.isalnum())
    aliases = {"a100": "a100-80gb", "a10040g": "a100-40gb", "a10080g": "a100-80gb"}
    for known in DEVICES:
        if key == "".join(c for c in known if c.isalnum()):
            return DEVICES[known]
    if key in aliases:
        return DEVICES[aliases[key]]
    raise StageError(
        Keyword("device", str(name)),
        f": unknown device; known devices: {', '.join(DEVICES)}",
    )
