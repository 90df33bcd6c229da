"""The closed forms the planner prices a layout with, each from its source.

* Bytes a parameter takes in training by precision policy and ZeRO stage (Rajbhandari et al.,
  "ZeRO", SC'20, section 3: mixed-precision Adam keeps 2 + 2 + 12 bytes a parameter, 16-bit
  parameters and gradients and fp32 master weights, momentum and variance; Megatron-LM keeps
  its gradients in fp32 for accumulation over microbatches, Narayanan et al. 2021, so 2 + 4 +
  12 = 18). ZeRO-1 divides the 12 optimizer bytes over the data-parallel ranks, ZeRO-2 the 4
  gradient bytes too (DeepSpeed's stage 2, PyTorch FSDP's ``SHARD_GRAD_OP``), ZeRO-3 (FSDP)
  all 18.
* Collectives on a ring of ``n`` devices (Patarasuk & Yuan 2009; NCCL's "bus bandwidth"
  definition, nccl-tests PERFORMANCE.md): all-reduce moves ``2 (n - 1) / n`` of the buffer over
  each link, all-gather and reduce-scatter ``(n - 1) / n``.
* Microbatches in flight on a pipeline stage (read off hlopipe's own generators,
  ``schedules.peak_in_flight``, and checked against it in the tests): 1F1B holds
  ``min(p - s, m)`` on stage ``s`` of ``p``; GPipe holds all ``m``. What a rank holds at
  once under interleaved 1F1B is its warm-up's forwards and one (a rank runs its list in
  order: after the warm-up each forward is followed by a backward), not the sum of its stages'
  peaks, which come at different times: ``min(v m, (v - 1) k + 2 (p - r - 1) + 1)``
  stage-microbatches on rank ``r``, ``k`` the size of the first round of microbatches (``p``
  when ``p`` divides ``m``: Narayanan et al. 2021, section 2.2.2; Megatron-LM's
  ``get_num_warmup_microbatches``; Korthikanti et al. 2022, section 4.2.3: ``p (1 + (p - 1) /
  (p v))`` microbatches of the rank's layers on the first).
* The pipeline's time with per-rank times ``t_r`` (forward and backward of one microbatch):
  ``m * max t + (sum t - max t) / v``; uniform stages give the bubble fraction ``(p - 1) /
  (m + p - 1)`` for ``v = 1`` (Huang et al. 2019; Narayanan et al. 2021, eq. 1) and ``(p - 1) /
  (v m + p - 1)`` interleaved (ibid., section 2.2.2).
* The gradient accumulator's traffic per microbatch (:func:`grad_accumulation_bytes`): the
  microbatch's gradient added into the fp32 gradients the ``grads`` of
  :func:`split_bytes_per_param` hold.
"""

from __future__ import annotations

from collections.abc import Sequence


def bytes_per_param(itemsize: int, *, zero: int, dp: int) -> float:
    """Training bytes per parameter element on one device.

    Args:
      itemsize: the parameters' bytes per element (2: bf16/fp16 with fp32 master weights; 4:
        fp32, no master copy).
      zero: ZeRO stage 0, 1, 2 or 3.
      dp: data-parallel ranks the ZeRO stage shards over.

    Returns:
      bytes per element: parameters + gradients (fp32) + optimizer state (master weights when
      16-bit, Adam's two fp32 moments), the sharded ones divided by ``dp``.

    Example:
      >>> bytes_per_param(2, zero=0, dp=8), bytes_per_param(2, zero=1, dp=4)
      (18.0, 9.0)
      >>> bytes_per_param(2, zero=2, dp=4), bytes_per_param(2, zero=3, dp=4)
      (6.0, 4.5)
    """
    return sum(split_bytes_per_param(itemsize, zero=zero, dp=dp))


def split_bytes_per_param(itemsize: int, *, zero: int, dp: int) -> tuple[float, float, float]:
    """:func:`bytes_per_param` by kind: (parameters, gradients, optimizer state)."""
    params = float(itemsize)
    grads = 4.0
    optimizer = (4.0 if itemsize < 4 else 0.0) + 8.0
    if zero >= 1:
        optimizer /= dp
    if zero >= 2:
        grads /= dp
    if zero >= 3:
        params /= dp
    return params, grads, optimizer


def grad_accumulation_bytes(itemsize: int) -> float:
    """HBM bytes a parameter element's gradient moves when one microbatch's gradient is added
    into the step's fp32 accumulator: the gradient read (``itemsize``), the accumulator read
    and written (4 + 4). Megatron-LM does this once per microbatch in a hook after each
    parameter's backward (``param.main_grad.add_(param.grad.data)``,
    ``megatron/model/distributed.py``, ``DistributedDataParallel._make_param_hook``).

    Example:
      >>> grad_accumulation_bytes(2), grad_accumulation_bytes(4)
      (10.0, 12.0)
    """
    return float(itemsize) + 8.0


def ring_all_reduce_bytes(nbytes: float, n: int) -> float:
    """Bytes each device sends (and receives) in a ring all-reduce of ``nbytes`` over ``n``."""
    return 0.0 if n <= 1 else 2.0 * (n - 1) / n * nbytes


def ring_gather_bytes(nbytes: float, n: int) -> float:
    """Bytes each device sends in a ring all-gather (or reduce-scatter) of a ``nbytes`` whole."""
    return 0.0 if n <= 1 else (n - 1) / n * nbytes


def in_flight(schedule: str, num_ranks: int, num_microbatches: int, virtual: int) -> list[int]:
    """Microbatches each rank keeps activations of at once, counted over its stages (each of
    a rank's ``virtual`` stages holds ``1 / virtual`` of its layers), under hlopipe's generator
    of ``schedule`` (``1f1b``, ``gpipe``, ``interleaved-1f1b``).

    Interleaved (``virtual > 1``): the warm-up's forwards and one, ``(v - 1) k + 2 (p - r -
    1) + 1`` on rank ``r`` (at most ``v m``), in rounds of microbatches as Megatron-LM and
    hlopipe's generator form them: ``max(1, m // p)`` rounds of ``k = m / max(1, m // p)`` where
    that divides ``m`` (``k = p`` when ``p`` divides ``m``), else rounds of ``k = p`` with a
    shorter last. This is the textbook order, which hlopipe's generator runs when ``p v m``
    is beyond its search. Below that it simulates other round sizes and a warm-up of ``(v - 1)
    k + (p - r - 1)`` and may keep one of them: where ``p`` divides ``m`` this count bounds
    what it keeps (the tests check a grid), where it does not the kept order can hold more on
    the last ranks, so the planner walks it (``_schedules.in_flight``). Otherwise each stage's
    peak, summed.

    Example:
      >>> in_flight("1f1b", 4, 8, 2), in_flight("1f1b", 4, 6, 2)
      ([11, 9, 7, 5], [12, 11, 9, 7])
    """
    p, m, v = num_ranks, num_microbatches, virtual
    if schedule != "gpipe" and v > 1:
        rounds = max(1, m // p)
        k = m // rounds if m % rounds == 0 else p
        return [min(v * m, (v - 1) * k + 2 * (p - r - 1) + 1) for r in range(p)]
    stages = num_ranks * virtual
    per_stage = [
        num_microbatches if schedule == "gpipe" else min(stages - s, num_microbatches)
        for s in range(stages)
    ]
    return [sum(per_stage[r + k * num_ranks] for k in range(virtual)) for r in range(num_ranks)]


def pipeline_time(rank_times: Sequence[float], num_microbatches: int, virtual: int) -> float:
    """A step's pipeline time from each rank's time for one microbatch (forward + backward)."""
    worst = max(rank_times)
    return num_microbatches * worst + (sum(rank_times) - worst) / virtual


def bubble_fraction(num_ranks: int, num_microbatches: int, virtual: int = 1) -> float:
    """The idle fraction of uniform stages: ``(p - 1) / (v m + p - 1)``."""
    p, m, v = num_ranks, num_microbatches, virtual
    return (p - 1) / (v * m + p - 1)
