"""``Pipeline``'s facts read through to its frozen plan, and cannot be set."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

import hlopipe
from hlopipe.runtime import Pipeline

FACTS = (
    "num_microbatches", "microbatch_size", "batch_size", "remat", "staged", "schedule",
    "placement", "layout", "execs", "num_params", "param_treedef", "param_avals", "param_names",
    "owner_rank", "holders", "owned",
)  # fmt: skip


def _loss(p, batch):
    h = hlopipe.stage_boundary(jnp.tanh(batch @ p["w0"]))
    return jnp.mean(h @ p["w1"])


def test_facts_are_the_plans_and_read_only():
    params = {"w0": jnp.ones((4, 8)), "w1": jnp.ones((8, 2))}
    pipe = Pipeline(
        _loss, params, jnp.ones((8, 4)), schedule="gpipe", num_microbatches=4,
        devices=jax.devices()[:2],
    )  # fmt: skip
    for name in FACTS:
        assert getattr(pipe, name) is getattr(pipe.plan, name), name
        with pytest.raises(AttributeError, match=f"Pipeline.{name} is its plan's"):
            setattr(pipe, name, None)
    assert (pipe.num_microbatches, pipe.microbatch_size, pipe.batch_size) == (4, 2, 8)
    assert pipe.schedule.name == "gpipe" and pipe.param_names == ("['w0']", "['w1']")
    assert pipe.devices == list(jax.devices()[:2])
