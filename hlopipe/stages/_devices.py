"""Named devices: a roofline (peak FLOP/s, memory bandwidth), the memory a stage may use, and
the links between devices inside a node and across nodes.

The accelerator numbers are the vendors' public datasheet figures, dense (no structured
sparsity), per device:

* NVIDIA A100 Tensor Core GPU datasheet (2021), SXM: BF16 312 TFLOP/s, FP32 19.5 TFLOP/s,
  HBM2e 1,555 GB/s (40 GB) and 2,039 GB/s (80 GB), NVLink 600 GB/s (both directions: 300 GB/s
  each way); 108 SMs (NVIDIA A100 Tensor Core GPU Architecture whitepaper). DGX A100
  datasheet: 8 GPUs a node, eight 200 Gb/s HDR InfiniBand ports for the cluster (25 GB/s a
  GPU each way).
* NVIDIA H100 Tensor Core GPU datasheet, SXM: BF16 989 TFLOP/s dense, FP32 67 TFLOP/s, HBM3
  3.35 TB/s, 80 GB, NVLink 900 GB/s (450 GB/s each way); 132 SMs (H100 architecture
  whitepaper). DGX H100 datasheet: 8 GPUs, eight 400 Gb/s NDR ports (50 GB/s a GPU).
* NVIDIA H200 Tensor Core GPU datasheet, SXM: the H100's compute and NVLink, HBM3e 4.8 TB/s,
  141 GB; DGX H200 as DGX H100.
* NVIDIA DGX B200 datasheet: 8 B200 GPUs with 1,440 GB HBM3e (180 GB each) at 64 TB/s (8 TB/s
  each), 72 PFLOP/s FP8 training for 8 GPUs (4.5 dense a GPU; BF16 half of it, 2.25 PFLOP/s),
  NVLink 5 1.8 TB/s a GPU (900 GB/s each way), 400 Gb/s ConnectX-7 a GPU (50 GB/s); 148 SMs.
  Its FP32 rate is not on that datasheet: taken as 80 TFLOP/s (an assumption; no program here
  plans in fp32 on it).
* AMD Instinct MI300X datasheet: BF16 1,307.4 TFLOP/s dense, FP32 163.4 TFLOP/s, HBM3
  192 GB at 5.3 TB/s, 304 CUs; Infinity Fabric 896 GB/s aggregate peer bandwidth (448 GB/s
  each way), 8 GPUs a node (AMD Instinct MI300X platform); 400 Gb/s a GPU across nodes.
* Google Cloud TPU system architecture pages (per chip): v4 275 TFLOP/s BF16, 32 GiB HBM2 at
  1,200 GB/s, ICI 2,400 Gb/s; v5e 197 TFLOP/s BF16, 16 GB at 819 GB/s, ICI 1,600 Gb/s; v5p
  459 TFLOP/s BF16, 95 GB at 2,765 GB/s, ICI 4,800 Gb/s. Chips of a slice talk over ICI, so
  inside and across hosts (4 chips a host) the link is ICI (half its rate each way). XLA's
  default precision runs an FP32 matmul as one BF16 pass on TPU, so FP32 costs as BF16.

``link_bytes_per_s`` is the rate to the next stage's device inside a node (each way); a
device that needs another node uses ``inter_node_bytes_per_s``. ``compute_units`` (SMs, CUs,
TensorCores) sets the wave quantization of the planner's matmul model. ``cpu`` is a nominal
host (the cost model's defaults) with this machine's physical memory.
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
      link_bytes_per_s: bandwidth to another device of the node (each way).
      inter_node_bytes_per_s: bandwidth to a device of another node (each way, per device).
      devices_per_node: devices sharing the node's fast links.
      compute_units: SMs, CUs or TensorCores (the matmul model's wave quantization).
    """

    name: str
    bf16_flops_per_s: float
    fp32_flops_per_s: float
    bytes_per_s: float
    memory_bytes: int
    link_bytes_per_s: float
    inter_node_bytes_per_s: float = 0.0
    devices_per_node: int = 1
    compute_units: int = 1

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
        Device("cpu", 1e11, 1e11, 2e10, _host_memory(), 1e10, 1e10, 8, 1),
        Device("a100-40gb", 312e12, 19.5e12, 1555 * GB, 40 * GB, 300 * GB, 25 * GB, 8, 108),
        Device("a100-80gb", 312e12, 19.5e12, 2039 * GB, 80 * GB, 300 * GB, 25 * GB, 8, 108),
        Device("h100", 989e12, 67e12, 3350 * GB, 80 * GB, 450 * GB, 50 * GB, 8, 132),
        Device("h200", 989e12, 67e12, 4800 * GB, 141 * GB, 450 * GB, 50 * GB, 8, 132),
        Device("b200", 2250e12, 80e12, 8000 * GB, 180 * GB, 900 * GB, 50 * GB, 8, 148),
        Device("mi300x", 1307.4e12, 163.4e12, 5300 * GB, 192 * GB, 448 * GB, 50 * GB, 8, 304),
        Device("tpu-v4", 275e12, 275e12, 1200 * GB, 32 * 2**30, 150 * GB, 150 * GB, 4, 2),
        Device("tpu-v5e", 197e12, 197e12, 819 * GB, 16 * GB, 100 * GB, 100 * GB, 4, 1),
        Device("tpu-v5p", 459e12, 459e12, 2765 * GB, 95 * GB, 300 * GB, 300 * GB, 4, 2),
    )
}


def device(name: str | Device) -> Device:
    """The :class:`Device` called ``name`` (case, ``-``, ``_`` and spaces ignored; ``a100`` is
    the 80 GB part). Raises :class:`StageError` listing the known names."""
    if isinstance(name, Device):
        return name
    key = "".join(c for c in str(name).lower() if c.isalnum())
    aliases = {
        "a100": "a100-80gb", "a10040g": "a100-40gb", "a10080g": "a100-80gb",
        "v4": "tpu-v4", "v5e": "tpu-v5e", "v5p": "tpu-v5p",
    }  # fmt: skip
    for known in DEVICES:
        if key == "".join(c for c in known if c.isalnum()):
            return DEVICES[known]
    if key in aliases:
        return DEVICES[aliases[key]]
    raise StageError(
        Keyword("device", str(name)),
        f": unknown device; known devices: {', '.join(DEVICES)}",
    )
