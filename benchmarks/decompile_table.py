"""Decompiled source of the zoo models and the demo: lines and equations, lax and jnp styles.

    python benchmarks/decompile_table.py

Equations are counted in every loop and branch body, a call (jit, custom_jvp) as one; the
rehydrated function is the reference the decompiled source must not exceed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import jax

sys.path.insert(0, str(Path(__file__).parents[1] / "tests" / "rehydrate"))
sys.path.insert(0, str(Path(__file__).parents[1] / "tests" / "decompile"))

import hlopipe
from hlopipe.decompile import decompile


def main() -> None:
    from decompile_helpers import equations, from_source
    from zoo_programs import CASES, case, program

    rows = []
    items = [(m, "stablehlo", program(m, "stablehlo"), case(m).args) for m in CASES]
    items += [(m, "hlo-opt", program(m, "hlo-opt"), case(m).args) for m in ("transformer",)]
    demo = hlopipe.load(Path(hlopipe.__file__).parent / "models" / "data" / "tiny_gpt_loss.hlo")
    f = demo.as_function()
    items.append(
        (
            "demo gpt (4 layers)",
            "hlo",
            demo,
            tuple(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in f.in_avals),
        )
    )
    for name, fmt, prog, args in items:
        ref = equations(jax.make_jaxpr(prog.as_function())(*args))
        row = [name, fmt, str(ref)]
        for style in ("lax", "jnp"):
            d = decompile(prog, style=style)
            n = equations(jax.make_jaxpr(from_source(d))(*args))
            body = d.source.split("def main", 1)[1]
            row += [str(n), str(len(body.splitlines()))]
        rows.append(row)
    head = [
        "program",
        "format",
        "rehydrated eqns",
        "lax eqns",
        "lax lines",
        "jnp eqns",
        "jnp lines",
    ]
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
