"""Per-stage autodiff on a rehydrated HLO program (constants arrive as broadcast equations)."""

import jax
import numpy as np

import hlopipe
from hlopipe.demo import demo_files
from hlopipe.models import gpt


def test_stage_autodiff_of_rehydrated_gpt_loss():
    # The HLO's attention mask constant is a broadcast_in_dim of a literal feeding a select
    # whose result the backward needs: the forward must compute the broadcast too.
    path, meta = demo_files()
    cfg = gpt.GPTConfig(**meta["config"])
    params = gpt.init(jax.random.key(meta["param_seed"]), cfg)
    batch = gpt.batch(jax.random.key(meta["batch_seed"]), meta["batch"], cfg)
    staged = hlopipe.split(hlopipe.load(str(path)))
    flat = jax.tree.leaves((params, batch))
    n = len(jax.tree.leaves(params))
    for split_backward in (False, True):
        loss, grads = staged.value_and_grad(*flat, argnums=tuple(range(n)),
                                            split_backward=split_backward)  # fmt: skip
        ref_loss, ref_grads = jax.value_and_grad(gpt.loss)(params, batch, cfg)
        np.testing.assert_allclose(loss, ref_loss, rtol=1e-6)
        for g, r in zip(grads, jax.tree.leaves(ref_grads), strict=True):
            np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-6)
