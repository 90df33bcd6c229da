"""PyTorch/XLA layer loops (``torch_xla.experimental.scan``) recognised and split by ranges.

torch_xla's counter is s64, so the loop's row index is found by running the counter in
64-bit mode even when JAX's 64-bit mode is off (``inspect`` runs there). The torch values
and gradients stored with the fixture are the oracle.
"""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np
import pytest

import hlopipe
from hlopipe.stages import describe_loops

D = Path(__file__).resolve().parents[1] / "data" / "frameworks" / "torch_xla"
MLP = ["scan_stacked_mlp.hlo", "scan_stacked_mlp.mlir", "scan_stacked_mlp.opt.hlo"]
L = 4


def _values() -> dict[str, np.ndarray]:
    with np.load(D / "scan_stacked_mlp.npz") as z:
        return {k: z[k] for k in z.files}


@pytest.mark.parametrize("name", [*MLP, "scan_layers_block.hlo"])
def test_torch_xla_scan_is_a_layer_loop_outside_64bit_mode(name):
    assert not jax.config.read("jax_enable_x64")
    (line,) = describe_loops(hlopipe.load(D / name))
    assert line.startswith(f"while loop of {L} iterations over "), line
    assert line.endswith("splittable into ranges") or "stacked operands" in line, line
    want = "2 stacked parameters" if "mlp" in name else "6 stacked operands"
    assert want in line, line


@pytest.mark.parametrize("name", MLP)
def test_torch_xla_scan_splits_in_halves_with_torch_values_and_gradients(name):
    v = _values()
    args = [v[f"arg_{i}"] for i in range(3)]  # b [4, 8], w [4, 8, 8], x [3, 8]
    with jax.enable_x64(True):  # the program is s64: splitting needs 64-bit mode
        prog = hlopipe.load(D / name)
        staged = hlopipe.split(prog, num_stages=2)
        for s in range(2):  # each stage holds rows [2s, 2s + 2) of b and of w (stage 0's
            # first row a piece of its own: the loop's first iteration runs apart)
            pieces = [staged.arg_pieces[i] for i in staged.stage(s).params_needed]
            rows = {p.source: sorted({x for q in pieces if q.source == p.source
                                      for x in (q.start, q.stop)})
                    for p in pieces if p.source in (0, 1)}  # fmt: skip
            assert [(r[0], r[-1]) for r in rows.values()] == [(2 * s, 2 * s + 2)] * 2, rows
        outs = staged(*args)
        for k, o in enumerate(outs):
            np.testing.assert_allclose(np.asarray(o), v[f"out_{k}"], rtol=1e-5, atol=1e-5)

        f = prog.as_function()

        def loss(b, w, x):  # the generator's loss: cotangent-weighted sum of the outputs
            h, ys = f(b, w, x)
            return (h * v["ct_0"]).sum() + (ys * v["ct_1"]).sum()

        staged = hlopipe.split(loss, *args, num_stages=2)
        held = [[a.shape for a in st.param_avals] for st in staged.stages]
        # rows [0, 2) of b and of w on stage 0 (as two pieces each: the loop's first iteration
        # runs apart), rows [2, 4) on stage 1
        assert held[0][:4] == [(1, 8), (1, 8), (1, 8, 8), (1, 8, 8)], held
        assert held[1] == [(L // 2, 8), (L // 2, 8, 8)], held
        val, grads = staged.value_and_grad(*args, argnums=(0, 1, 2))
        assert np.isfinite(float(val))
        np.testing.assert_allclose(float(val), float(loss(*args)), rtol=1e-5)
        for i, g in enumerate(grads):
            np.testing.assert_allclose(np.asarray(g), v[f"grad_{i}"], rtol=1e-4, atol=1e-5)
