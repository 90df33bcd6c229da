"""Non-finite losses and gradients (runtime/_finite.py): never a match, found where they start.

The programs put the poison in one place on purpose (a square root of negative values in stage
1's forward on one microbatch, a square root at exactly 0 whose derivative is infinite in
stage 1's backward); the error must name that step, stage, microbatch and action.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hlopipe
from hlopipe.errors import NonFiniteError
from hlopipe.runtime import Pipeline
from hlopipe.runtime._finite import compare_losses


def _loss(p, batch):
    x, y = batch
    h = hlopipe.stage_boundary(x @ p["w0"])
    s = jnp.sqrt(h) @ p["w1"]
    return jnp.mean((s - y) ** 2)


def _setup(x):
    params = {"w0": np.eye(3, dtype=np.float32), "w1": np.ones((3, 2), np.float32)}
    y = np.ones((8, 2), np.float32)
    batch = (x, y)
    pipe = Pipeline(_loss, params, batch, schedule="1f1b", num_microbatches=4,
                    devices=jax.devices()[:2], check_finite=True)  # fmt: skip
    return pipe, params, batch


def test_a_forward_nan_names_its_step_stage_microbatch_and_action():
    x = np.full((8, 3), 2.0, np.float32)
    x[4:6] = -1.0  # microbatch 2 (rows 4, 5): sqrt of a negative in stage 1
    pipe, params, batch = _setup(x)
    state = pipe.init(params)
    with pytest.raises(NonFiniteError) as info:
        pipe.step(state, batch)
    msg = str(info.value)
    assert "step 1" in msg and "stage 1 on microbatch 2 (1F2)" in msg, msg
    assert "learning rate" in msg and "--lr" not in msg


def test_an_infinite_derivative_names_the_backward():
    x = np.full((8, 3), 2.0, np.float32)
    x[2, 0] = 0.0  # microbatch 1: sqrt at 0 is finite, its derivative is not
    pipe, params, batch = _setup(x)
    with pytest.raises(NonFiniteError) as info:
        pipe.step(pipe.init(params), batch)
    msg = str(info.value)
    assert "backward of stage 1 on microbatch 1 (1B1)" in msg, msg
    # the oracle: JAX's own gradient of the whole loss is not finite either
    g = jax.grad(_loss)(params, (x, np.ones((8, 2), np.float32)))
    assert not np.isfinite(np.asarray(g["w0"])).all()


def test_finite_steps_pass_and_the_option_is_off_by_default():
    x = np.full((8, 3), 2.0, np.float32)
    pipe, params, batch = _setup(x)
    _, metrics = pipe.step(pipe.init(params), batch)
    assert math.isfinite(metrics.loss)
    x[4:6] = -1.0
    quiet = Pipeline(_loss, params, (x, batch[1]), schedule="1f1b", num_microbatches=4,
                     devices=jax.devices()[:2])  # fmt: skip
    _, metrics = quiet.step(quiet.init(params), (x, batch[1]))
    assert math.isnan(metrics.loss)


def test_non_finite_losses_never_match():
    assert compare_losses([1.0, 0.5], [1.0, 0.5])[0]
    assert not compare_losses([1.0, 0.5], [1.0, 0.6])[0]
    for a, b in (([1.0, math.nan], [1.0, math.nan]), ([1.0, 0.5], [1.0, math.inf])):
        ok, verdict = compare_losses(a, b)
        assert not ok and "(match)" not in verdict and "not finite" in verdict, verdict


def test_train_stops_at_a_nan_naming_where_it_starts(tmp_path):
    """``hlopipe train`` runs with check_finite: a loss that is NaN for any parameters (log of
    a negative) is one error line naming step 1's forward, not a '(match)' or an --lr hint."""
    import os
    import subprocess
    import sys

    text = (
        "HloModule m, entry_computation_layout={(f32[3,2]{1,0}, s32[4,3]{1,0})->f32[]}\n"
        "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT r = f32[] add(a, b)\n}\n"
        "ENTRY e {\n  Arg_0.1 = f32[3,2]{1,0} parameter(0)\n"
        "  Arg_1.2 = s32[4,3]{1,0} parameter(1)\n  c = f32[4,3]{1,0} convert(Arg_1.2)\n"
        "  d = f32[4,2]{1,0} dot(c, Arg_0.1), lhs_contracting_dims={1}, "
        "rhs_contracting_dims={0}\n  sq = f32[4,2]{1,0} multiply(d, d)\n"
        "  one = f32[] constant(1)\n  ones = f32[4,2]{1,0} broadcast(one), dimensions={}\n"
        "  pos = f32[4,2]{1,0} add(sq, ones)\n  neg = f32[4,2]{1,0} negate(pos)\n"
        "  l = f32[4,2]{1,0} log(neg)\n  z = f32[] constant(0)\n"
        "  ROOT s = f32[] reduce(l, z), dimensions={0,1}, to_apply=add\n}\n"
    )
    path = tmp_path / "nan.hlo"
    path.write_text(text)
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    proc = subprocess.run(
        [sys.executable, "-m", "hlopipe", "train", str(path), "--stages", "1", "--steps", "2",
         "--check"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: step 1: not finite"), proc.stderr
    assert "(0F0)" in lines[0] and "--lr" not in proc.stdout + proc.stderr, lines[0]
    assert "(match)" not in proc.stdout
