"""Regenerate the demo program shipped in the package: the tiny GPT's loss as HLO text.

    .venv/bin/python scripts/export_demo.py

writes hlopipe/models/data/tiny_gpt_loss.hlo (pre-optimisation HLO of
``jax.jit(gpt.loss)`` on the default config, a batch of 8, with a stage marker every layer)
and tiny_gpt_loss.json (the parameter tree's leaf paths in argument order, the batch shape).
"""

from __future__ import annotations

import json
from pathlib import Path

import jax

from hlopipe.marker import stage_boundary
from hlopipe.models import gpt

OUT = Path(__file__).resolve().parents[1] / "hlopipe" / "models" / "data"
BATCH = 8


def main() -> None:
    cfg = gpt.GPTConfig()
    params = gpt.init(jax.random.key(0), cfg)
    batch = gpt.batch(jax.random.key(1), BATCH, cfg)

    def loss(params, batch):
        return gpt.loss(params, batch, cfg, boundary=stage_boundary, layers_per_stage=1)

    lowered = jax.jit(loss).lower(params, batch)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "tiny_gpt_loss.hlo").write_text(lowered.as_text(dialect="hlo"))
    paths = [
        jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_leaves_with_path((params, batch))
    ]
    meta = {
        "config": cfg.__dict__,
        "batch": BATCH,
        "param_seed": 0,
        "batch_seed": 1,
        "arguments": paths,
    }
    (OUT / "tiny_gpt_loss.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(f"wrote {OUT / 'tiny_gpt_loss.hlo'} ({len(paths)} arguments)")


if __name__ == "__main__":
    main()
