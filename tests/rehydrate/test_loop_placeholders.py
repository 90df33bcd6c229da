"""A while loop whose trip count is worked out at trace time carries values the count does not
read (a layer stack): the count never allocates them, so a program far larger than memory
traces from abstract arguments (``hlopipe plan`` of a 405B-wide model)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

import hlopipe


def test_a_loop_over_a_stack_larger_than_memory_traces(tmp_path):
    def f(stack, x):  # a fori_loop over 64 rows of a [64, 65536, 65536] bf16 stack: 512 GiB
        def body(i, h):
            return jnp.tanh(h @ jax.lax.dynamic_index_in_dim(stack, i, keepdims=False))

        return jax.lax.fori_loop(0, stack.shape[0], body, x)

    args = (
        jax.ShapeDtypeStruct((64, 65536, 65536), jnp.bfloat16),
        jax.ShapeDtypeStruct((1, 65536), jnp.bfloat16),
    )
    path = tmp_path / "f.jax_export"
    path.write_bytes(jax.export.export(jax.jit(f))(*args).serialize())
    program = hlopipe.load(str(path))
    jaxpr = jax.make_jaxpr(program.as_function(flat=True))(*args)
    (loop,) = [e for e in jaxpr.eqns if e.primitive.name in ("scan", "while")]
    assert loop.primitive.name == "scan" and loop.params["length"] == 64  # the count was found
