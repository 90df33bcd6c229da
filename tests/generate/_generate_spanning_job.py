"""One process of tests/generate/test_generate_spanning.py's job: ``hlopipe launch --nproc 4
--devices-per-process 2 -- python this.py OUT``. The tiny GPT's decode step and prefill split
into 2 stages, each on a (2 data x 2 model) mesh (Megatron specs) that spans 2 processes (one
data row each), from the default devices; 2 groups, 16 greedy tokens. Every process writes
``OUT/tokens-<p>.npy``, ``OUT/oracle-<p>.npy`` (the unsplit program's on one local device) and
``OUT/caches-<p>.npz`` (per cache its stage holds: whether it is close to the oracle's).
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from hlopipe.runtime import distributed

N = 16


def main() -> int:
    out = sys.argv[1]
    distributed.initialize()
    import jax
    import numpy as np
    from _generate_job import GROUPS, B, P, programs
    from test_generate_mesh import megatron_specs

    from hlopipe.generate import Generator, generate_unsplit
    from hlopipe.models import gpt_decode as gd

    me = jax.process_index()
    cfg = gd.DecodeConfig()
    params = gd.init(jax.random.key(0), cfg)
    dec, pre = programs(cfg, params)
    gen = Generator(
        dec, params, prefill=pre, groups=GROUPS, stage_mesh_shape=(2, 2),
        stage_mesh_axes=("data", "model"), param_specs=megatron_specs(params),
    )  # fmt: skip
    print(f"HOLDERS {me} {gen.place.layout.rank_procs}", flush=True)
    prompts = np.asarray(gd.prompts(jax.random.key(1), GROUPS, B, P, cfg))
    session = gen.start(prompts)
    toks = session.generate(N)
    ref, ref_states = generate_unsplit(dec, params, N, prefill=pre, prompts=prompts)
    np.save(os.path.join(out, f"tokens-{me}.npy"), toks)
    np.save(os.path.join(out, f"oracle-{me}.npy"), ref)
    paths = [r.path for r in gen.roles.state]
    close = {}
    for g in range(GROUPS):
        for path, mine in session.local_state(g).items():
            theirs = ref_states[g][paths.index(path)]
            close[f"{g}{path}"] = np.allclose(mine, theirs, rtol=1e-5, atol=1e-5)
    np.savez(os.path.join(out, f"caches-{me}.npz"), **close)
    print(f"SENT {me} {session.metrics.bytes_sent._asdict()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
