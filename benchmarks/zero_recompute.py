"""ZeRO levels and recompute policies on 2 stages x (2 data x 2 model) CPU devices: the grid
of issue 48 (ZeRO 0/1/2/3 x recompute none/selective/full x 1F1B/interleaved 1F1B) trained 3
steps with adam, each against plain JAX and optax on one device, with what each keeps per
device, measured from the compiled stage-0 executables and the arrays a device holds.

Columns: ``|dloss|``/``|dparam|`` the largest difference from one device; ``F args`` and
``F out`` the compiled forward's ``memory_analysis()`` argument and output bytes per device
(the output holds the residuals the backward reads: it falls with the policy), ``F temp`` its
temporary bytes (ZeRO-3's gathered parameters live there); ``params`` and ``opt state`` the
bytes of stage 0's parameters and optimizer state on one of its devices; ``upd args`` the
compiled optimizer update's argument bytes per device (gradients, state, parameters);
``B out`` the compiled backward's output bytes per device (the input cotangents and the
gradient accumulators: ZeRO-2 and 3 halve the accumulators); the collectives XLA put in the
compiled executables: all-gathers in the forward, all-gathers,
all-reduces and reduce-scatters in the backward, all-gathers in the update.

A second table: the policies on a scanned GPT (its blocks stacked and run by one ``lax.scan``,
the loop cut into 2 stages), where each policy acts inside the loop's body: ``F out`` of each
stage's compiled forward per policy.

Run: ``.venv/bin/python benchmarks/zero_recompute.py``
"""

from __future__ import annotations

import functools
import time

import jax

jax.config.update("jax_num_cpu_devices", 8)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import hlopipe  # noqa: E402
from hlopipe.models import gpt, gpt_scan  # noqa: E402
from hlopipe.runtime import Pipeline  # noqa: E402
from hlopipe.runtime._compile import ExecKind  # noqa: E402

D, H, L, B, M, STEPS = 8, 16, 4, 8, 2, 3


def loss(params, batch, per):
    x, y = batch
    h = x
    for i, layer in enumerate(params["layers"]):
        if i and i % per == 0:
            h = hlopipe.stage_boundary(h)
        h = h + jnp.tanh(h @ layer["w1"] + layer["b1"]) @ layer["w2"]
    return jnp.mean((h - y) ** 2)


def _update_executable(pipe: Pipeline, state: object) -> object:
    """Stage 0's compiled optimizer update (its last phase), for the state it updates and the
    gradients as its backward leaves them (stage 0's accumulators, in their sharding)."""
    import jax as _jax

    ps = pipe.param_store
    fn = ps.optimizer_fns(0)[1][-1]
    ex = pipe.plan.execs[0]  # type: ignore[attr-defined]
    acc = dict(
        zip((ex.stage.params_needed[k] for k in ex.autodiff.diff_params), ex.zeros(), strict=True)
    )
    own = [state.values[pipe.owner_rank[p]][p] for p in pipe.plan.owned[0]]  # type: ignore[attr-defined]
    grads = [acc[p] for p in pipe.plan.owned[0]]  # type: ignore[attr-defined]
    return _jax.jit(fn).lower(grads, state.opt_states[0], own, ()).compile()  # type: ignore[attr-defined]


def _trained(pipe: Pipeline, params: object, batches: list, want: object) -> tuple:
    """``pipe`` from ``params``, a step a batch: its state, losses, and the largest
    difference of its parameters from ``want`` (one device's)."""
    state = pipe.init(params)
    losses = []
    for b in batches:
        state, m = pipe.step(state, b)
        losses.append(m.loss)
    got = jax.tree.leaves(jax.device_get(state.params))
    dp = max(float(np.max(np.abs(x - y))) for x, y in zip(got, jax.tree.leaves(want), strict=True))
    return state, losses, dp


def _count(hlo: str, op: str) -> int:
    return hlo.count(f" {op}(") + hlo.count(f" {op}-start(")


def main() -> None:
    k = jax.random.split(jax.random.key(0), 2 * L)
    layers = [
        {"w1": jax.random.normal(k[2 * i], (D, H)) / np.sqrt(D), "b1": jnp.full(H, 0.1),
         "w2": jax.random.normal(k[2 * i + 1], (H, D)) / np.sqrt(H)}
        for i in range(L)
    ]  # fmt: skip
    params = {"layers": layers}
    specs = {"layers": [{"w1": P(None, "model"), "b1": P("model"), "w2": P("model", None)}] * L}
    batches = [
        (jax.random.normal(jax.random.key(10 + s), (B, D)),
         jax.random.normal(jax.random.key(20 + s), (B, D))) for s in range(STEPS)
    ]  # fmt: skip
    opt = optax.adam(1e-2)
    p, s, ref = params, opt.init(params), []
    for b in batches:
        v, g = jax.value_and_grad(functools.partial(loss, per=L))(p, b)
        u, s = opt.update(g, s, p)
        p = optax.apply_updates(p, u)
        ref.append(float(v))
    head = (
        f"{'schedule':<17}{'zero':>5}{'recompute':>11}{'|dloss|':>10}{'|dparam|':>10}"
        f"{'F args':>8}{'F out':>7}{'F temp':>8}{'params':>8}{'opt state':>10}"
        f"{'upd args':>9}{'B out':>7}{'F AG/B AG/AR/RS/upd AG':>24}{'s':>6}"
    )
    print(head)
    for schedule, per in (("1f1b", 2), ("interleaved-1f1b", 1)):
        for zero in (0, 1, 2, 3):
            for recompute in ("none", "selective", "full"):
                t0 = time.perf_counter()
                pipe = Pipeline(
                    functools.partial(loss, per=per), params, batches[0], schedule=schedule,
                    num_microbatches=M, devices=jax.devices()[:8], stage_mesh_shape=(2, 2),
                    stage_mesh_axes=("data", "model"), param_specs=specs, optimizer=opt,
                    zero=zero, recompute=recompute,
                )  # fmt: skip
                state, losses, dp = _trained(pipe, params, batches, p)
                ex = pipe.plan.execs[0]
                fm = ex.get(ExecKind.F).memory_analysis()
                update = _update_executable(pipe, state)
                um = update.memory_analysis()
                f_text = ex.get(ExecKind.F).as_text()
                b_text = ex.get(ExecKind.B).as_text()
                colls = (f"{_count(f_text, 'all-gather')}/{_count(b_text, 'all-gather')}"
                         f"/{_count(b_text, 'all-reduce')}/{_count(b_text, 'reduce-scatter')}"
                         f"/{_count(update.as_text(), 'all-gather')}")  # fmt: skip
                held = sum(x.addressable_shards[0].data.nbytes for x in state.values[0].values())
                opt0 = sum(x.addressable_shards[0].data.nbytes
                           for x in jax.tree.leaves(state.opt_states[0]))  # fmt: skip
                print(
                    f"{schedule:<17}{zero:>5}{recompute:>11}"
                    f"{np.max(np.abs(np.array(losses) - ref)):>10.1e}{dp:>10.1e}"
                    f"{fm.argument_size_in_bytes:>8}{fm.output_size_in_bytes:>7}"
                    f"{fm.temp_size_in_bytes:>8}{held:>8}{opt0:>10}"
                    f"{um.argument_size_in_bytes:>9}"
                    f"{ex.get(ExecKind.B).memory_analysis().output_size_in_bytes:>7}{colls:>24}"
                    f"{time.perf_counter() - t0:>6.1f}",
                    flush=True,
                )


def scanned() -> None:
    """The recompute policies on a scanned GPT cut into 2 stages (1F1B on 2 devices), trained
    3 steps with SGD against one device: each stage's compiled forward's output bytes."""
    cfg = gpt.GPTConfig(vocab=16, seq=32, d_model=16, n_heads=4, n_layers=4, d_ff=32)
    fn = functools.partial(gpt_scan.loss, cfg=cfg)
    params = gpt_scan.init(jax.random.key(0), cfg)
    batches = [gpt.batch(jax.random.key(100 + s), 4, cfg) for s in range(STEPS)]
    opt = optax.sgd(0.05)
    p, ref = params, []
    for b in batches:
        v, g = jax.value_and_grad(fn)(p, b)
        p = optax.apply_updates(p, opt.update(g, opt.init(p), p)[0])
        ref.append(float(v))
    print("\nscanned GPT (4 blocks, one lax.scan) on 2 stages, 1F1B, M=2")
    print(f"{'recompute':<11}{'|dloss|':>10}{'|dparam|':>10}{'F0 out':>9}{'F1 out':>9}{'s':>6}")
    for recompute in ("none", "selective", "attention", "full"):
        t0 = time.perf_counter()
        pipe = Pipeline(
            fn, params, batches[0], schedule="1f1b", num_microbatches=M,
            devices=jax.devices()[:2], optimizer=opt, recompute=recompute,
        )  # fmt: skip
        _, losses, dp = _trained(pipe, params, batches, p)
        outs = [ex.get(ExecKind.F).memory_analysis().output_size_in_bytes for ex in pipe.plan.execs]
        print(
            f"{recompute:<11}{np.max(np.abs(np.array(losses) - ref)):>10.1e}{dp:>10.1e}"
            f"{outs[0]:>9}{outs[1]:>9}{time.perf_counter() - t0:>6.1f}",
            flush=True,
        )


if __name__ == "__main__":
    import sys

    if sys.argv[1:] != ["--scanned"]:
        main()
    scanned()
