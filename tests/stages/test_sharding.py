"""Merge-then-split sharding: forward/backward agree on residual shardings, no new collectives."""

import re

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import hlopipe
from hlopipe.stages import shard_stage

from ._models import mlp_loss, mlp_params

_COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "collective-permute", "all-to-all")


def _collectives(compiled):
    text = compiled.as_text()
    return {c for c in _COLLECTIVES if re.search(rf"\b{c}(-start)?\(", text)}


def test_two_stages_on_2x2_meshes():
    k1, k2, k3 = jax.random.split(jax.random.key(4), 3)
    params = mlp_params(k1, sizes=(8, 16, 16, 8))
    x, y = jax.random.normal(k2, (8, 8)), jax.random.normal(k3, (8, 8))

    staged = hlopipe.split(mlp_loss, params, x, y)
    devs = np.array(jax.devices()[:8]).reshape(2, 2, 2)
    for s in (0, staged.num_stages - 1):
        st = staged.stage(s)
        mesh = Mesh(devs[s % 2], ("data", "model"))
        shardings = []
        for path, aval in zip(st.param_paths, st.param_avals, strict=True):
            if path.endswith("['w']"):
                spec = P(None, "model") if aval.shape[0] <= aval.shape[1] else P("model", None)
            elif aval.ndim == 2:
                spec = P("data", None)
            else:
                spec = P()
            shardings.append(NamedSharding(mesh, spec))
        fb = st.forward_backward()
        ss = shard_stage(fb, mesh, shardings)
        fwd_out = jax.tree_util.tree_leaves(
            ss.forward.output_shardings, is_leaf=lambda z: isinstance(z, jax.sharding.Sharding)
        )
        bwd_in = jax.tree_util.tree_leaves(
            ss.backward.input_shardings[0],
            is_leaf=lambda z: isinstance(z, jax.sharding.Sharding),
        )
        res_out = fwd_out[fb.num_outputs :]
        res_in = bwd_in[fb.num_params : fb.num_params + fb.num_residuals]
        assert len(res_out) == len(res_in) == fb.num_residuals > 0
        for a, b, aval in zip(res_out, res_in, fb.residual_avals, strict=True):
            assert a.is_equivalent_to(b, len(aval.shape)), (a, b)
        assert _collectives(ss.backward) <= _collectives(ss.merged)
        assert _collectives(ss.forward) <= _collectives(ss.merged)
        # and the sharded executables compute the right thing
        flat = jax.tree_util.tree_leaves((params, x, y))
        p = [jax.device_put(flat[i], sh) for i, sh in zip(st.params_needed, shardings, strict=True)]
        xs = [np.ones(r.aval.shape, r.aval.dtype) for r in st.receives]
        xs = [jax.device_put(v, sh) for v, sh in zip(xs, ss.input_shardings, strict=True)]
        out = ss.forward(*p, *xs)
        ref_out, ref_res = jax.jit(fb.forward)([flat[i] for i in st.params_needed], xs)
        for a, b in zip(out, [*ref_out, *ref_res], strict=True):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-5)
