"""The programs from other frameworks (tests/data/frameworks: TensorFlow, PyTorch/XLA,
XLA-style HLO), decompiled, imported and run under jit: equal to the source framework's
outputs. One format per case (StableHLO where there is one), to keep the suite short."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest
from decompile_helpers import load_module

from hlopipe.decompile import DecompileError, decompile

_spec = importlib.util.spec_from_file_location(
    "_frameworks", Path(__file__).resolve().parents[1] / "rehydrate" / "test_frameworks.py"
)
assert _spec is not None and _spec.loader is not None
fw = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fw)

PREFERRED = ("stablehlo", "hlo-text", "hlo-proto")

# Refused by name, as they should be until the decompiler has a source form for them.
REFUSED = {
    "tensorflow/dropout_random/stablehlo": "hlopipe_rng_bit_generator",  # PHILOX ui64[3] state
    # one replica: rehydration runs its all-reduce in a one-device shard_map
    "xla/all_reduce_single_replica/hlo-text": "shard_map",
    # torch's cummax: a selecting variadic reduce_window, its region carried as a jaxpr
    "torch_xla/arg_cumulative/stablehlo": "reduce_window",
    # XLA's Eigh and Qr custom calls: lax.linalg primitives without a public call
    "torch_xla/xla_linalg/stablehlo": "eigh|geqrf",
    "torch_xla/xla_eigvalsh/stablehlo": "eigh",
    "tensorflow/linalg_inverse_qr_eigh/stablehlo": "eigh|geqrf",
    # a reduce_window with a general region (TF's cumprod): its region is a jaxpr parameter
    "tensorflow/cumulative_prod_logsumexp/stablehlo": "reduce_window",
    "xla/reduce_window_init_padding/hlo-text": "reduce_window|custom_jvp",
    # one-replica collectives run in a one-device shard_map
    "xla/async_collective_pairs_one_replica/hlo-text": "shard_map",
    "xla/while_with_collectives_one_replica/hlo-text": "shard_map",
    "xla/manual_boundaries_one_device/hlo-text": "shard_map",
    # lax.linalg primitives the decompiler has no call for
    "xla/cholesky_not_positive_definite/hlo-text": "cholesky",
    "xla/triangular_solve_options/hlo-text": "triangular_solve",
}


def _cases() -> list[Any]:
    out = []
    for m in fw._manifests():
        fmts = [f for f in PREFERRED if f in m["formats"]] or list(m["formats"])
        fmt = next((f for f in fmts if fw._expect(m, f) == "pass"), None)
        fid = f"{m['framework']}/{m['case']}/{fmt}"
        if fmt is None or fid in fw.LEFT_OUT:
            continue
        out.append(pytest.param(m, fmt, id=f"{m['framework']}/{m['case']}/{fmt}"))
    return out


def _wide(values: dict[str, np.ndarray]) -> bool:
    return any(v.dtype.itemsize == 8 and v.dtype.kind in "iufc" for v in values.values())


@pytest.mark.parametrize("m,fmt", _cases())
def test_decompiled_framework_program_matches_its_framework(
    m: dict[str, Any], fmt: str, tmp_path: Path
) -> None:
    values = fw._values(m)
    refused = REFUSED.get(f"{m['framework']}/{m['case']}/{fmt}")
    if refused:
        with pytest.raises(DecompileError, match=refused):
            decompile(m["dir"] / m["formats"][fmt])
        return
    args = fw._args(m, values)
    path = m["dir"] / m["formats"][fmt]
    source = decompile(path)
    # 64-bit values, or 64-bit types inside (torch_xla's loop counters are s64)
    if _wide(values) or "jax.enable_x64(True)" in source.source:
        # a 64-bit program's module runs in a 64-bit scope of its own; called under the
        # test's jit, 64-bit arguments would be cut to 32 bits at its boundary
        with jax.enable_x64(True):
            mod = load_module(source, tmp_path)
            got = [np.asarray(o) for o in fw._as_tuple(jax.jit(mod.main)(*args))]
    else:
        mod = load_module(source, tmp_path)
        got = [np.asarray(o) for o in fw._as_tuple(jax.jit(mod.main)(*args))]
    assert len(got) == len(m["outputs"])
    for k, g in enumerate(got):
        fw._assert_close(g, values[f"out_{k}"], f"output {k} ({m['outputs'][k]})")
