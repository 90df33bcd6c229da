"""A small transformer's loss in the form XLA's GPU compiler leaves it (its dots as
``__cublas$gemm``, its MLP's first layer as ``__cublas$lt$matmul`` with the BIAS_GELU epilogue,
its attention as ``__cudnn$fmhaSoftmax``, workspace tuples and layout bitcasts;
scripts/gpu_form_fixture.py makes it from the JAX program tests/data/gpu/tiny_transformer.hlo):
it loads, runs, splits into 2 stages and trains equal to the program it was made from.
"""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np
import optax
import pytest

import hlopipe
from hlopipe.models import gpt
from hlopipe.runtime import Pipeline

DATA = Path(__file__).resolve().parents[1] / "data" / "gpu"
ORIGINAL = DATA / "tiny_transformer.hlo"
GPU_FORM = DATA / "tiny_transformer.gpu.hlo"
# the generator's sizes (scripts/gpu_form_fixture.py)
CFG = gpt.GPTConfig(vocab=16, seq=8, d_model=16, n_heads=2, n_layers=2, d_ff=32)
MICROBATCH, M = 4, 2


def _params() -> gpt.Params:
    # weights 25x gpt.init's, so that attention is far from uniform and a wrong mask, layout
    # or scale changes the loss in its leading digits
    p = gpt.init(jax.random.key(0), CFG)
    return jax.tree.map(lambda x: x * 25 if x.ndim == 2 else x, p)


def _batches(n: int) -> list:
    return [gpt.batch(jax.random.key(10 + k), MICROBATCH * M, CFG) for k in range(n)]


def test_gpu_form_has_the_gpu_calls_and_computes_the_original() -> None:
    gpu = hlopipe.load(GPU_FORM.read_text())
    text = gpu.to_text()
    for target in ("__cublas$gemm", "__cublas$lt$matmul", "__cudnn$fmhaSoftmax"):
        assert f"custom_call @{target}(" in text
    assert "stablehlo.dot" not in text  # every dot is a cuBLAS call
    assert gpu.stage_markers() == 1
    leaves = jax.tree.leaves((_params(), gpt.batch(jax.random.key(1), MICROBATCH, CFG)))
    want = hlopipe.rehydrate(hlopipe.load(ORIGINAL.read_text()))(*leaves)
    got = hlopipe.rehydrate(gpu)(*leaves)
    np.testing.assert_allclose(float(got), float(want), rtol=1e-6)


@pytest.mark.slow  # two pipelines compiled
def test_gpu_form_splits_and_trains_equal_to_the_original() -> None:
    opt = optax.sgd(0.01, momentum=0.9)
    batches = _batches(3)
    devices = jax.devices()[:2]
    runs = []
    for path in (ORIGINAL, GPU_FORM):
        pipe = Pipeline(
            str(path),
            _params(),
            batches[0],
            schedule="1f1b",
            num_microbatches=M,
            devices=devices,
            optimizer=opt,
        )
        assert pipe.plan.staged.num_stages == 2
        state = pipe.init(_params())
        losses = []
        for b in batches:
            state, metrics = pipe.step(state, b)
            losses.append(metrics.loss)
        runs.append((losses, jax.device_get(state.params)))
    (want_losses, want_params), (losses, params) = runs
    assert want_losses[-1] < want_losses[0]  # it trains
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
    for got, want in zip(jax.tree.leaves(params), jax.tree.leaves(want_params), strict=True):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)
