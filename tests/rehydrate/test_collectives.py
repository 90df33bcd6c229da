"""Collectives under a mesh and sharding annotations, on 4 and 8 CPU devices.

Each case is a JAX program written with ``jax.shard_map``; it is lowered (the global
program, with ``sdy.manual_computation`` or, without Shardy, ``@SPMDFullToShardShape``
custom calls) and compiled (the partitioned per-device program with real all-reduce,
all-gather, collective-permute ops), both are rehydrated on the same mesh and compared with
the original: values, under ``jax.jit``, and ``jax.grad``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import hlopipe
from hlopipe.errors import UnsupportedOpError

AUTO = jax.sharding.AxisType.Auto


def mesh_of(shape: tuple[int, ...], names: tuple[str, ...]) -> jax.sharding.Mesh:
    return jax.make_mesh(shape, names, axis_types=(AUTO,) * len(shape))


@dataclass(frozen=True)
class Case:
    name: str
    mesh: tuple[tuple[int, ...], tuple[str, ...]]
    body: Callable
    in_specs: tuple
    out_specs: tuple
    shapes: tuple[tuple[int, ...], ...]
    grad: bool = True


def ring(n: int) -> list[tuple[int, int]]:
    return [(i, (i + 1) % n) for i in range(n)]


CASES = [
    Case(
        "psum_gather_scatter_permute_index",
        ((4,), ("x",)),
        lambda a, b: (
            lax.psum(a, "x") + lax.ppermute(a, "x", ring(4)) + lax.axis_index("x"),
            lax.psum_scatter(lax.all_gather(b, "x", axis=0, tiled=True), "x", tiled=True),
        ),
        (P("x"), P("x")),
        (P("x"), P("x")),
        ((8, 4), (8, 4)),
    ),
    Case(
        "all_to_all",
        ((4,), ("x",)),
        lambda a: lax.all_to_all(a, "x", 1, 0, tiled=True),
        (P("x"),),
        P("x"),
        ((8, 4),),
    ),
    Case(
        "pmax_pmin_partial_permute",
        ((4,), ("x",)),
        lambda a: lax.pmax(a, "x") - lax.pmin(a, "x") + lax.ppermute(a, "x", [(0, 2), (1, 3)]),
        (P("x"),),
        P("x"),
        ((8, 3),),
        grad=False,  # JAX has no derivative of pmax
    ),
    Case(
        "groups_on_2x4",  # collectives over one axis of two: several replica groups
        ((2, 4), ("a", "x")),
        lambda u, v: (
            lax.psum(u, "a") + lax.ppermute(u, "a", [(0, 1)]) + 10 * lax.axis_index("a"),
            lax.psum_scatter(
                lax.all_gather(v, "a", axis=1, tiled=True), "a", scatter_dimension=1, tiled=True
            ),
            lax.psum(v, "x") * lax.axis_index("x"),
        ),
        (P("a", "x"), P("x", "a")),
        (P("a", "x"), P("x", "a"), P("x", "a")),
        ((8, 8), (8, 8)),
    ),
    Case(
        "groups_all_to_all_pmax_8",
        ((2, 4), ("a", "x")),
        lambda v: (lax.all_to_all(v, "a", 0, 1, tiled=True), lax.pmax(v, "a")),
        (P("x", "a"),),
        (P("x", "a"), P("x", "a")),
        ((8, 8),),
        grad=False,
    ),
    Case(
        "eight_devices_one_axis",
        ((8,), ("x",)),
        lambda a: lax.psum(a * lax.axis_index("x"), "x") + lax.ppermute(a, "x", ring(8)),
        (P("x"),),
        P("x"),
        ((8, 2),),
    ),
]


def inputs(case: Case) -> list[jax.Array]:
    rng = np.random.default_rng(0)
    return [jnp.asarray(rng.standard_normal(s), jnp.float32) for s in case.shapes]


def original(case: Case) -> tuple[jax.sharding.Mesh, Callable]:
    mesh = mesh_of(*case.mesh)
    return mesh, jax.shard_map(
        case.body, mesh=mesh, in_specs=case.in_specs, out_specs=case.out_specs
    )


def loss(f: Callable) -> Callable:
    def scalar(*args):
        outs = f(*args)
        outs = outs if isinstance(outs, tuple) else (outs,)
        return sum(jnp.sum(jnp.sin(o)) for o in outs)

    return scalar


def check_same(got, want, atol: float = 1e-5) -> None:
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=atol)


@pytest.mark.parametrize("form", ["lowered", "compiled"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_shard_map_programs(case: Case, form: str) -> None:
    mesh, f = original(case)
    args = inputs(case)
    lowered = jax.jit(f).lower(*args)
    if form == "lowered":
        prog = hlopipe.load(lowered.as_text())
        g = prog.as_function(mesh=mesh)
    else:
        compiled = lowered.compile()
        prog = hlopipe.load(compiled.as_text())
        assert prog.in_avals[0].shape != args[0].shape  # per-device shapes
        g = prog.as_function(mesh=mesh, out_specs=compiled.output_shardings)
    want = jax.jit(f)(*args)
    if case is CASES[0]:  # eagerly too (slow: shard_map runs op by op)
        check_same(g(*args), want)
    check_same(jax.jit(g)(*args), want)
    if case.grad:
        argnums = tuple(range(len(args)))
        gw = jax.jit(jax.grad(loss(f), argnums=argnums))(*args)
        gg = jax.jit(jax.grad(loss(g), argnums=argnums))(*args)
        check_same(gg, gw, atol=1e-4)


def test_axis_names_map_onto_the_users_mesh() -> None:
    # a program over mesh axis "x" run on a mesh whose axis is called "d"
    case = CASES[0]
    _, f = original(case)
    args = inputs(case)
    text = jax.jit(f).lower(*args).as_text()
    g = hlopipe.load(text).as_function(mesh=mesh_of((4,), ("d",)), axis="d")
    check_same(jax.jit(g)(*args), jax.jit(f)(*args))


def test_per_device_results_without_shardings_come_back_stacked() -> None:
    case = CASES[0]
    mesh, f = original(case)
    args = inputs(case)
    prog = hlopipe.load(jax.jit(f).lower(*args).compile().as_text())
    got = jax.jit(prog.as_function(mesh=mesh))(*args)
    want = jax.jit(f)(*args)
    for g, w in zip(got, want, strict=True):
        assert g.shape == (4, *prog.out_avals[0].shape)
        np.testing.assert_allclose(np.asarray(g).reshape(w.shape), np.asarray(w), rtol=1e-5)


def test_collectives_without_a_mesh_are_refused_before_running() -> None:
    _, f = original(CASES[0])
    args = inputs(CASES[0])
    lowered = jax.jit(f).lower(*args)
    for text in (lowered.as_text(), lowered.compile().as_text()):
        with pytest.raises(UnsupportedOpError, match=r"mesh=\.\.\. axis=\.\.\."):
            hlopipe.load(text).as_function()


def test_device_ids_on_one_device_are_zero() -> None:
    text = """
    func.func @main() -> (tensor<ui32>, tensor<ui32>) {
      %0 = stablehlo.replica_id : tensor<ui32>
      %1 = stablehlo.partition_id : tensor<ui32>
      return %0, %1 : tensor<ui32>, tensor<ui32>
    }"""
    with pytest.raises(UnsupportedOpError, match="mesh"):
        hlopipe.load(text).as_function()
    got = hlopipe.load(text).as_function(mesh=mesh_of((4,), ("x",)), partitioned=False)()
    assert [int(v) for v in got] == [0, 0]


# ---- hand-written per-device programs: what JAX does not emit ----------------------------------

REPLICA_PARTITION = """
module attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 2 : i32} {
  func.func @main() -> (tensor<ui32>, tensor<ui32>) {
    %0 = stablehlo.replica_id : tensor<ui32>
    %1 = stablehlo.partition_id : tensor<ui32>
    return %0, %1 : tensor<ui32>, tensor<ui32>
  }
}"""


def test_replica_and_partition_ids() -> None:
    f = hlopipe.load(REPLICA_PARTITION).as_function(mesh=mesh_of((4,), ("x",)), axis="x")
    rep, part = f()
    assert rep.tolist() == [0, 0, 1, 1] and part.tolist() == [0, 1, 0, 1]


def _per_device(body: str, n: int = 4, shape: str = "tensor<2xf32>", out: str = "") -> str:
    out = out or shape
    return f"""
module attributes {{mhlo.num_partitions = {n} : i32, mhlo.num_replicas = 1 : i32}} {{
  func.func @main(%x: {shape}) -> {out} {{
{body}
  }}
}}"""


def _run_per_device(text: str, x: np.ndarray, n: int = 4) -> np.ndarray:
    """Runs a per-device program; x holds each device's operand stacked ([n, ...])."""
    f = hlopipe.load(text).as_function(mesh=mesh_of((n,), ("x",)), in_specs=[P("x")])
    flat = x.reshape((n * x.shape[1], *x.shape[2:]))
    return np.asarray(jax.jit(f)(jnp.asarray(flat)))


def test_all_reduce_with_a_multiply_region_and_groups() -> None:
    body = """
    %0 = "stablehlo.all_reduce"(%x) <{
        channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>,
        replica_groups = dense<[[0, 2], [3, 1]]> : tensor<2x2xi64>, use_global_device_ids}> ({
      ^bb0(%a: tensor<f32>, %b: tensor<f32>):
        %m = stablehlo.multiply %a, %b : tensor<f32>
        stablehlo.return %m : tensor<f32>
    }) : (tensor<2xf32>) -> tensor<2xf32>
    return %0 : tensor<2xf32>"""
    x = np.arange(1, 9, dtype=np.float32).reshape(4, 2)
    got = _run_per_device(_per_device(body), x)
    want = np.stack([x[0] * x[2], x[1] * x[3], x[0] * x[2], x[1] * x[3]])
    np.testing.assert_allclose(got, want)


def test_all_gather_with_a_permuted_group() -> None:
    body = """
    %0 = "stablehlo.all_gather"(%x) <{all_gather_dim = 0 : i64,
        channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>,
        replica_groups = dense<[[3, 0], [1, 2]]> : tensor<2x2xi64>, use_global_device_ids}>
        : (tensor<2xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>"""
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    got = _run_per_device(_per_device(body, out="tensor<4xf32>"), x)
    g30 = np.concatenate([x[3], x[0]])
    g12 = np.concatenate([x[1], x[2]])
    np.testing.assert_allclose(got, np.stack([g30, g12, g12, g30]))


def test_reduce_scatter_and_all_to_all_with_groups() -> None:
    body = """
    %0 = "stablehlo.reduce_scatter"(%x) <{scatter_dimension = 0 : i64,
        channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>,
        replica_groups = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, use_global_device_ids}> ({
      ^bb0(%a: tensor<f32>, %b: tensor<f32>):
        %m = stablehlo.add %a, %b : tensor<f32>
        stablehlo.return %m : tensor<f32>
    }) : (tensor<2xf32>) -> tensor<1xf32>
    %1 = "stablehlo.all_to_all"(%x) <{split_dimension = 0 : i64, concat_dimension = 0 : i64,
        split_count = 2 : i64, replica_groups = dense<[[1, 0], [2, 3]]> : tensor<2x2xi64>,
        channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>}>
        : (tensor<2xf32>) -> tensor<2xf32>
    %2 = stablehlo.concatenate %0, %1, dim = 0 : (tensor<1xf32>, tensor<2xf32>) -> tensor<3xf32>
    return %2 : tensor<3xf32>"""
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    got = _run_per_device(_per_device(body, out="tensor<3xf32>"), x)
    rs = [(x[0] + x[1])[0], (x[0] + x[1])[1], (x[2] + x[3])[0], (x[2] + x[3])[1]]
    # group [1, 0]: device 1 is position 0, device 0 position 1
    a2a = [[x[1][1], x[0][1]], [x[1][0], x[0][0]], [x[2][0], x[3][0]], [x[2][1], x[3][1]]]
    want = np.array([[r, *a] for r, a in zip(rs, a2a, strict=True)], np.float32)
    np.testing.assert_allclose(got, want)


def test_collective_broadcast_and_permute_without_a_source() -> None:
    body = """
    %0 = "stablehlo.collective_broadcast"(%x) <{replica_groups = dense<[[2, 1], [3, 0]]>
        : tensor<2x2xi64>, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>}>
        : (tensor<2xf32>) -> tensor<2xf32>
    %1 = "stablehlo.collective_permute"(%x) <{source_target_pairs = dense<[[0, 1], [1, 3]]>
        : tensor<2x2xi64>, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>}>
        : (tensor<2xf32>) -> tensor<2xf32>
    %2 = stablehlo.concatenate %0, %1, dim = 0 : (tensor<2xf32>, tensor<2xf32>) -> tensor<4xf32>
    return %2 : tensor<4xf32>"""
    x = np.arange(1, 9, dtype=np.float32).reshape(4, 2)
    got = _run_per_device(_per_device(body, out="tensor<4xf32>"), x)
    z = np.zeros(2, np.float32)
    want = [[*x[3], *z], [*x[2], *x[0]], [*x[2], *z], [*x[3], *x[1]]]
    np.testing.assert_allclose(got, np.array(want))


def test_tuple_all_to_all() -> None:
    text = """
module attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  func.func @main(%x: tensor<2xf32>, %y: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
    %0:2 = "mhlo.all_to_all"(%x, %y) <{channel_handle = #mhlo.channel_handle<handle = 1, type = 0>,
        replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>}>
        : (tensor<2xf32>, tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)
    return %0#0, %0#1 : tensor<2xf32>, tensor<2xf32>
  }
}"""
    f = hlopipe.load(text).as_function(
        mesh=mesh_of((2,), ("x",)), in_specs=[P("x"), P("x")], out_specs=[P("x"), P("x")]
    )
    x = jnp.arange(4.0)
    y = jnp.arange(4.0) + 10
    r0, r1 = f(x, y)
    # device d's result j is device j's operand d: r0 = (x@0, y@0), r1 = (x@1, y@1)
    np.testing.assert_allclose(r0, [0, 1, 10, 11])
    np.testing.assert_allclose(r1, [2, 3, 12, 13])


# ---- sharding annotations ----------------------------------------------------------------------


def annotated(mesh):
    def f(a, b):
        c = lax.with_sharding_constraint(a * 2 + b, NamedSharding(mesh, P(None, "x")))
        return jnp.tanh(c) @ b.T

    return f


@pytest.mark.parametrize("shardy", [True, False], ids=["shardy", "gspmd"])
@pytest.mark.parametrize("dialect", ["stablehlo", "hlo"])
def test_sharding_annotations(shardy: bool, dialect: str) -> None:
    mesh = mesh_of((4,), ("x",))
    f = annotated(mesh)
    a, b = inputs(Case("", mesh, f, (), (), ((8, 4), (8, 4))))
    sh = NamedSharding(mesh, P("x"))
    before = jax.config.jax_use_shardy_partitioner
    jax.config.update("jax_use_shardy_partitioner", shardy)
    try:
        jf = jax.jit(f, in_shardings=(sh, sh), out_shardings=sh)
        text = jf.lower(a, b).as_text(dialect=dialect)
        want = jf(a, b)
        prog = hlopipe.load(text)
        with_mesh = jax.jit(prog.as_function(mesh=mesh))
        got = with_mesh(a, b)
        check_same(got, want)
        assert got.sharding.spec == P("x")  # the result's sharding annotation was kept
        hlo = with_mesh.lower(a, b).as_text()
        assert '{}, {"x"}' in hlo or "devices=[1,4]" in hlo  # the constraint on c
        check_same(prog.as_function()(a, b), want)  # no mesh: annotations dropped
    finally:
        jax.config.update("jax_use_shardy_partitioner", before)


@pytest.mark.parametrize("shardy", [True, False], ids=["shardy", "gspmd"])
def test_shard_map_inside_a_global_program(shardy: bool) -> None:
    mesh = mesh_of((4,), ("x",))

    def f(a, b):
        s, t = jax.shard_map(
            lambda a, b: (lax.psum(a, "x") * lax.axis_index("x"), b * 2),
            mesh=mesh,
            in_specs=(P("x"), P()),
            out_specs=(P("x"), P()),
        )(a, jnp.sin(b))
        return lax.with_sharding_constraint(s + 1, NamedSharding(mesh, P(None, "x"))), t

    a, b = inputs(Case("", mesh, f, (), (), ((8, 4), (8, 4))))
    before = jax.config.jax_use_shardy_partitioner
    jax.config.update("jax_use_shardy_partitioner", shardy)
    try:
        lowered = jax.jit(f).lower(a, b)
        want = jax.jit(f)(a, b)
        gw = jax.jit(jax.grad(loss(f), argnums=(0, 1)))(a, b)
        for dialect in ("stablehlo", "hlo"):
            g = hlopipe.load(lowered.as_text(dialect=dialect)).as_function(mesh=mesh, axis="x")
            got = jax.jit(g)(a, b)
            check_same(got, want)
            assert got[0].sharding.spec == P(None, "x")
            check_same(jax.jit(jax.grad(loss(g), argnums=(0, 1)))(a, b), gw, atol=1e-4)
    finally:
        jax.config.update("jax_use_shardy_partitioner", before)


ONE_REPLICA_HLO = """
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}

ENTRY main {
  x = f32[4] parameter(0)
  r = f32[4] all-reduce(x), replica_groups={}, to_apply=add
  ROOT y = f32[4] multiply(r, x)
}
"""


def test_empty_replica_groups_mean_every_device() -> None:
    # replica_groups={} (XLA's test style): one group of all devices (was a reshape error)
    x = np.arange(1.0, 5.0, dtype=np.float32)
    f = hlopipe.load(ONE_REPLICA_HLO).as_function(mesh=mesh_of((1,), ("r",)), axis="r")
    got = np.asarray(jax.jit(f)(x)).reshape(-1)
    np.testing.assert_allclose(got, x * x)  # the all-reduce over one device is the identity


def _one_device_oracle(x):
    # what the one-replica program computes, written in JAX: all-reduce over one device
    mesh = jax.sharding.Mesh(np.asarray(jax.devices()[:1]), ("one",))
    reduce = jax.shard_map(lambda v: lax.psum(v, "one"), mesh=mesh, in_specs=P(), out_specs=P())
    return reduce(x) * x


@pytest.mark.parametrize(
    "header", ["", "HloModule m, replica_count=1, num_partitions=1\n", "HloModule m\n"]
)
def test_one_replica_hlo_runs_its_collectives_on_one_device(header: str) -> None:
    # XLA runs a program of one replica and one partition (declared, or left to its defaults)
    # on one device, where the all-reduce is the identity; no mesh is needed
    x = np.arange(1.0, 5.0, dtype=np.float32)
    f = hlopipe.load(header + ONE_REPLICA_HLO).as_function()
    check_same(f(x), _one_device_oracle(x))
    check_same(jax.jit(f)(x), _one_device_oracle(x))
    gw = jax.grad(loss(_one_device_oracle))(x)
    check_same(jax.jit(jax.grad(loss(f)))(x), gw)
    check_same(jax.jit(jax.vmap(f))(np.stack([x, 2 * x])), np.stack([x * x, 4 * x * x]))


def test_one_replica_hlo_proto_runs_on_one_device() -> None:
    # an HloModuleProto carries no replica or partition count: XLA runs it on its defaults
    from pathlib import Path

    path = Path(__file__).parent.parent / "data/frameworks/xla/all_reduce_single_replica.hlo.pb"
    x = np.arange(1.0, 5.0, dtype=np.float32)
    f = hlopipe.load(path).as_function()
    check_same(jax.jit(f)(x), _one_device_oracle(x))
    check_same(jax.jit(jax.grad(loss(f)))(x), jax.grad(loss(_one_device_oracle))(x))


@pytest.mark.parametrize("counts", ["replica_count=2", "num_partitions=2"])
def test_hlo_declaring_more_devices_is_refused_without_a_mesh(counts: str) -> None:
    text = f"HloModule m, {counts}\n" + ONE_REPLICA_HLO
    with pytest.raises(UnsupportedOpError, match=r"mesh=\.\.\. axis=\.\.\."):
        hlopipe.load(text).as_function()


# ---- the SPMD context belongs to one trace ------------------------------------------------------

RENDEZVOUS = _per_device(
    """
    %0 = stablehlo.custom_call @test.rendezvous(%x) : (tensor<2xf32>) -> tensor<2xf32>
    %1 = "stablehlo.all_reduce"(%0) <{
        channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>,
        replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids}> ({
      ^bb0(%a: tensor<f32>, %b: tensor<f32>):
        %s = stablehlo.add %a, %b : tensor<f32>
        stablehlo.return %s : tensor<f32>
    }) : (tensor<2xf32>) -> tensor<2xf32>
    return %1 : tensor<2xf32>"""
)


def test_two_threads_trace_one_rehydrated_function_at_once() -> None:
    # Thread "first" stops inside its trace (in the custom call) until "second" has started
    # its own trace; "second" stops there until "first" has finished. Each trace's
    # collective must still see its own per-device context: one trace ending must not take
    # the context away from the other (it did when the context lived in shared options).
    import threading

    second_in = threading.Event()
    first_done = threading.Event()

    def rendezvous(x):
        if threading.current_thread().name == "first":
            assert second_in.wait(30), "the second trace did not start"
        else:
            second_in.set()
            assert first_done.wait(30), "the first trace did not finish"
        return x

    hlopipe.register_custom_call("test.rendezvous", rendezvous, replace=True)
    f = hlopipe.load(RENDEZVOUS).as_function(mesh=mesh_of((4,), ("x",)), in_specs=[P("x")])
    x = jnp.arange(8, dtype=jnp.float32)
    results: dict[str, object] = {}

    def trace(name: str) -> None:
        try:
            results[name] = jax.jit(lambda v: f(v))(x)  # a fresh function: its own trace
        except BaseException as e:
            results[name] = e
        finally:
            if name == "first":
                first_done.set()

    threads = [threading.Thread(target=trace, args=(n,), name=n) for n in ("first", "second")]
    threads[0].start()
    threads[1].start()
    for t in threads:
        t.join(60)
    want = np.tile(np.asarray(x).reshape(4, 2).sum(0), (4, 1))  # every device's sum, stacked
    for name in ("first", "second"):
        got = results[name]
        assert not isinstance(got, BaseException), f"{name}: {got!r}"
        np.testing.assert_allclose(np.asarray(got), want)
