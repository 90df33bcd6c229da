"""One process of tests/runtime/test_launch_local.py's job (``hlopipe launch --nproc 4
--devices-per-process 2``): several pipelines, one after the other, each printing ``<TAG> ...``
lines that the test checks against plain JAX on one device.

1. ``LOCAL``: each process trains its own 2-stage pipeline on its own two devices, on its own
   data, and checkpoints and restores it (processes 0 and 1 build one more first, so the
   processes have built different numbers of pipelines before the shared ones below).
2. ``REFUSED`` / ``OWN``: a pipeline on process 0's devices only, built by every process:
   process 0 trains it, the others are refused by name.
3. ``BYSTANDER``: a pipeline on processes 0 and 1, stepped, inferred and gathered by all four
   (each writes the parameters it gathered to ``--params-out``, by path).
4. ``NANLOSS`` / ``INFGRAD``: ``check_finite`` on 2 ranks whose meshes span 2 processes each;
   step 2's batch holds a NaN (a NaN loss), then an inf (finite losses, a NaN gradient on
   stage 0): every process raises the same ``NonFiniteError`` each time.
5. ZB-V on 2 ranks spanning 2 processes each: ``--params-out`` gets the parameters, by path.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import hlopipe
from hlopipe.runtime import distributed

BATCH, M, STEPS = 16, 4, 2
DIMS = (8, 16, 16, 16, 8)


def loss_fn(params, batch, layers_per_stage=2):
    """A tanh MLP of 4 layers, a stage boundary every ``layers_per_stage`` layers."""
    import jax.numpy as jnp

    x, y = batch
    for i, w in enumerate(params["w"]):
        if i and i % layers_per_stage == 0:
            x = hlopipe.stage_boundary(x)
        x = jnp.tanh(x @ w)
    return jnp.mean((x - y) ** 2)


def init():
    import jax

    keys = jax.random.split(jax.random.key(0), len(DIMS) - 1)
    return {"w": [jax.random.normal(k, (a, b)) / a**0.5
                  for k, a, b in zip(keys, DIMS, DIMS[1:], strict=False)]}  # fmt: skip


def batch(seed: int):
    import jax

    kx, ky = jax.random.split(jax.random.key(seed))
    return jax.random.normal(kx, (BATCH, DIMS[0])), jax.random.normal(ky, (BATCH, DIMS[-1]))


def optimizer():
    """SGD behind global-norm clipping that acts (gradient norms 0.54-0.73 here): the
    parameters show the clip's norm (AdamW would hide its scale)."""
    import optax

    return optax.chain(optax.clip_by_global_norm(0.5), optax.sgd(0.1, momentum=0.9))


def reference(seeds: list[int]):
    """Plain JAX on one device: the losses, the parameters after a step per seed, and the
    global gradient norms (what the clip divides by; AdamW alone hardly shows a wrong one)."""
    import jax
    import optax

    opt = optimizer()

    @jax.jit
    def step(p, s, b):
        loss, g = jax.value_and_grad(loss_fn)(p, b)
        u, s = opt.update(g, s, p)
        return optax.apply_updates(p, u), s, loss, optax.tree.norm(g)

    p = init()
    s = opt.init(p)
    losses, norms = [], []
    for seed in seeds:
        p, s, loss, norm = step(p, s, batch(seed))
        losses.append(float(loss))
        norms.append(float(norm))
    return losses, by_path(p), norms


def by_path(tree) -> dict:
    """The leaves of ``tree`` keyed by their path (``['w'][2]``): a leaf put in another's place
    is found by its name, whatever its shape or values."""
    import jax

    return {jax.tree_util.keystr(k): v for k, v in jax.tree_util.tree_leaves_with_path(tree)}


def save_by_path(path: str, tree) -> None:
    """The leaves of ``tree`` in an .npz, each under its path (:func:`by_path`)."""
    import numpy as np

    np.savez(path, **{k: np.asarray(v) for k, v in by_path(tree).items()})


def pipeline(devices, **kw):
    return hlopipe.Pipeline(loss_fn, init(), batch(0), num_microbatches=M, devices=devices,
                            optimizer=optimizer(), recv_timeout=60.0, **kw)  # fmt: skip


def train(pipe, seeds):
    state = pipe.init(init())
    losses, norms = [], []
    for seed in seeds:
        state, metrics = pipe.step(state, batch(seed))
        losses.append(metrics.loss)
        norms.append(metrics.grad_norm)
    return state, losses, norms


def local(me: int) -> None:
    import jax
    import numpy as np

    if me < 2:  # another local pipeline first, in some processes only
        pipeline(jax.local_devices())
    pipe = pipeline(jax.local_devices())
    assert not pipe.layout.multi and pipe.schedule.num_ranks == 2
    seeds = [10 * me + k for k in range(STEPS)]
    state, losses, _ = train(pipe, seeds)
    with tempfile.TemporaryDirectory() as d:
        pipe.save(state, d)
        back = pipe.restore(d)
    diff = max(float(np.max(np.abs(a - b))) for a, b in zip(
        jax.tree_util.tree_leaves(pipe.gather_params(state)),
        jax.tree_util.tree_leaves(pipe.gather_params(back)), strict=True))  # fmt: skip
    print(f"LOCAL {me} seeds {seeds} losses {losses} restored_diff {diff}", flush=True)


def one_process(me: int) -> None:
    import jax

    own = [d for d in jax.devices() if d.process_index == 0]
    try:
        pipe = pipeline(own)
    except hlopipe.HlopipeError as e:
        print(f"REFUSED {me} {type(e).__name__}: {e}", flush=True)
        return
    _, losses, _ = train(pipe, [0])
    print(f"OWN {me} losses {losses}", flush=True)


def bystander(me: int, out_dir: str) -> None:
    import jax

    first = {}
    for d in jax.devices():
        first.setdefault(d.process_index, d)
    pipe = pipeline([first[0], first[1]])
    state, losses, _ = train(pipe, [0])
    out = float(pipe.infer(state, batch(1)))
    save_by_path(os.path.join(out_dir, f"params-bystander-{me}.npz"), pipe.gather_params(state))
    print(f"BYSTANDER {me} losses {losses} infer {out!r}", flush=True)


def nonfinite(me: int) -> None:
    """Step 2 again and again on one state (a refused step updates nothing): a NaN input
    makes microbatch 1's loss NaN; an inf input leaves every loss finite (tanh saturates) but
    makes stage 0's weight gradient NaN (inf x 0)."""
    import jax

    pipe = pipeline(jax.devices(), stage_mesh_shape=(4,), check_finite=True)
    assert pipe.layout.spans(0) and pipe.layout.spans(1)
    state = pipe.init(init())
    state, _ = pipe.step(state, batch(0))
    x, y = batch(1)
    for tag, bad in (("NANLOSS", float("nan")), ("INFGRAD", float("inf"))):
        try:
            pipe.step(state, (x.at[5, 3].set(bad), y))  # an example of microbatch 1 (of 4)
        except hlopipe.errors.NonFiniteError as e:
            print(f"{tag} {me} {e}", flush=True)


def zb_v(me: int, out: str) -> None:
    import jax

    loss = lambda p, b: loss_fn(p, b, layers_per_stage=1)  # noqa: E731
    pipe = hlopipe.Pipeline(loss, init(), batch(0), num_microbatches=M, schedule="zb-v",
                            devices=jax.devices(), stage_mesh_shape=(4,), optimizer=optimizer(),
                            recv_timeout=60.0)  # fmt: skip
    assert pipe.staged.num_stages == 4 and pipe.layout.spans(0) and pipe.layout.spans(1)
    state, losses, norms = train(pipe, list(range(STEPS)))
    params = pipe.gather_params(state)
    if me == 0:
        print(f"ZBV losses {losses} norms {norms}", flush=True)
        save_by_path(os.path.join(out, "params-zb-v.npz"), params)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--params-out", required=True)
    args = ap.parse_args()
    distributed.initialize()
    import jax

    me = jax.process_index()
    local(me)
    one_process(me)
    bystander(me, args.params_out)
    nonfinite(me)
    zb_v(me, args.params_out)
    print(f"DONE {me}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
