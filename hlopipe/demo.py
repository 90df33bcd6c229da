"""The README's main job (``make demo`` -> ``hlopipe demo``).

Loads the tiny GPT loss shipped as HLO text in the package, rehydrates it into a JAX function,
and checks it against the original JAX model: the loss value, the gradient norm and the largest
difference of value and gradients.
"""

from __future__ import annotations

import json
import time
from importlib import resources
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


def demo_files() -> tuple[Any, dict[str, Any]]:
    data = resources.files("hlopipe.models") / "data"
    meta = json.loads((data / "tiny_gpt_loss.json").read_text())
    return data / "tiny_gpt_loss.hlo", meta


def run_rehydration_demo(print_fn: Any = print) -> dict[str, float]:
    """Rehydrate the shipped HLO and compare with the original model; returns the numbers."""
    from hlopipe.io import load
    from hlopipe.models import gpt

    path, meta = demo_files()
    cfg = gpt.GPTConfig(**meta["config"])
    params = gpt.init(jax.random.key(meta["param_seed"]), cfg)
    batch = gpt.batch(jax.random.key(meta["batch_seed"]), meta["batch"], cfg)

    t0 = time.perf_counter()
    prog = load(path.read_text())
    f = prog.as_function()
    t_load = time.perf_counter() - t0
    print_fn(
        f"loaded {path.name}: {prog.format}, {sum(prog.op_counts().values())} ops, "
        f"{len(prog.in_avals)} arguments, {prog.stage_markers()} stage markers "
        f"({t_load * 1e3:.0f} ms)"
    )

    leaves, treedef = jax.tree.flatten((params, batch))

    def rehydrated_loss(params: Any, batch: Any) -> jax.Array:
        return f(*jax.tree.leaves((params, batch)))

    def original_loss(params: Any, batch: Any) -> jax.Array:
        return gpt.loss(params, batch, cfg)

    del leaves, treedef
    v_r, g_r = jax.jit(jax.value_and_grad(rehydrated_loss))(params, batch)
    v_o, g_o = jax.jit(jax.value_and_grad(original_loss))(params, batch)
    gnorm = float(jnp.sqrt(sum(jnp.sum(g**2) for g in jax.tree.leaves(g_r))))
    dv = abs(float(v_r) - float(v_o))
    dg = max(
        float(jnp.max(jnp.abs(a - b))) for a, b in zip(jax.tree.leaves(g_r), jax.tree.leaves(g_o))
    )
    print_fn(f"loss (rehydrated)      {float(v_r):.6f}")
    print_fn(f"loss (original JAX)    {float(v_o):.6f}")
    print_fn(f"gradient norm          {gnorm:.6f}")
    print_fn(f"max |difference|       value {dv:.2e}, gradients {dg:.2e}")
    return {
        "loss": float(v_r),
        "grad_norm": gnorm,
        "max_value_diff": dv,
        "max_grad_diff": dg,
        "ok": float(np.isfinite(gnorm)),
    }


def main() -> int:
    from rich.console import Console

    console = Console(highlight=False)
    console.rule("[bold]hlopipe demo: rehydrate a tiny GPT loss from HLO text")
    out = run_rehydration_demo(console.print)
    ok = out["max_value_diff"] <= 1e-5 and out["max_grad_diff"] <= 1e-5
    console.print(
        "[green]rehydrated program matches the original[/]"
        if ok
        else "[red]rehydrated program differs from the original[/]"
    )
    return 0 if ok else 1
