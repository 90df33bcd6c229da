"""The cross-process transfer programs (``Links``), run inside one process: the same
executables a multi-process job runs between two processes' devices (here both meshes are
this process's), so values, shardings and the number of collectives are checked cheaply."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from hlopipe.runtime._comm import Links


def _meshes():
    d = jax.devices()
    a = Mesh(np.array(d[:4]).reshape(2, 2), ("data", "model"))
    b = Mesh(np.array(d[4:8]).reshape(2, 2), ("data", "model"))
    return a, b


def _avals(vals):
    return [jax.ShapeDtypeStruct(v.shape, v.dtype) for v in vals]


def test_values_of_one_send_point_cross_in_one_executable_to_n_d_shardings():
    a, b = _meshes()
    vals = [
        jnp.arange(24.0).reshape(4, 6),
        jnp.arange(12, dtype=jnp.int32).reshape(3, 4),
        jnp.array(3.5),
        jnp.array([True, False, True]),
        jnp.arange(8.0).reshape(4, 2),
        jnp.arange(4, dtype=jnp.bfloat16),
    ]
    specs = [P("data", "model"), P(None, "model"), P(), P(), P("data"), P("model")]
    shardings = [NamedSharding(b, s) for s in specs]
    links = Links()
    # the sender holds them in another layout (replicated): they are laid out on the way
    sent = [jax.device_put(v, NamedSharding(a, P())) for v in vals]
    out = links.transfer(sent, a, b, _avals(vals), shardings)
    assert out is not None
    for got, want, sh in zip(out, vals, shardings, strict=True):
        assert got.sharding == sh
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        for shard in got.addressable_shards:  # each device holds its own block
            np.testing.assert_array_equal(shard.data, np.asarray(want)[shard.index])
    assert len(links) == 1  # one program for the whole group, one ppermute per value
    ((compiled, _, _),) = links._programs.values()
    hlo = compiled.as_text()
    assert hlo.count("collective-permute(") + hlo.count("collective-permute-start(") == len(vals)
    # a second step reuses the program
    links.transfer(sent, a, b, _avals(vals), shardings)
    assert len(links) == 1


def test_meshes_of_different_shapes_send_whole_arrays_laid_out_on_the_receiver():
    a, _ = _meshes()
    c = Mesh(np.array(jax.devices()[4:8]), ("data",))
    vals = [jnp.arange(24.0).reshape(4, 6), jnp.arange(12, dtype=jnp.int32).reshape(3, 4)]
    shardings = [NamedSharding(c, P("data")), NamedSharding(c, P())]
    sent = [jax.device_put(v, NamedSharding(a, P(None, "model"))) for v in vals[:1]]
    sent.append(jax.device_put(vals[1], NamedSharding(a, P())))
    out = Links().transfer(sent, a, c, _avals(vals), shardings)
    assert out is not None
    for got, want, sh in zip(out, vals, shardings, strict=True):
        assert got.sharding == sh
        np.testing.assert_array_equal(got, want)
