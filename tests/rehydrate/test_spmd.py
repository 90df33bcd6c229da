"""The steps of SPMD rehydration (rehydrate/_spmd.py, _outline.py, _sharding_text.py) one by
one: ordering the ops around an outlined manual part, reading a program's device counts, the
plan for a one-device program, reading sharding strings."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from jax import lax
from jax.sharding import PartitionSpec as P

import hlopipe
from hlopipe.errors import UnsupportedOpError
from hlopipe.rehydrate import module_ir
from hlopipe.rehydrate._ir import Op
from hlopipe.rehydrate._outline import outline_manual_parts, toposort


def op(name: str, operands: tuple[int, ...], results: tuple[int, ...], captures=()) -> Op:
    return Op(name, operands, results, {}, (), name, (), (), captures)


def names(ops: list[Op]) -> list[str]:
    return [o.name for o in ops]


def test_toposort_puts_users_after_producers_and_keeps_the_order_otherwise() -> None:
    a = op("a", (0,), (1,))
    b = op("b", (3,), (4,))  # uses c's result, listed before c
    c = op("c", (1,), (3,))
    d = op("d", (0,), (5,))  # independent: stays where it was among the ready ops
    assert names(toposort([a, b, c, d])) == ["a", "c", "b", "d"]
    assert names(toposort([a, c, b, d])) == ["a", "c", "b", "d"]
    assert names(toposort([d, a, c, b])) == ["d", "a", "c", "b"]


def test_toposort_counts_values_a_region_captures() -> None:
    loop = op("loop", (), (7,), captures=(6,))
    make = op("make", (0,), (6,))
    assert names(toposort([loop, make])) == ["make", "loop"]


def test_toposort_refuses_a_cycle() -> None:
    with pytest.raises(UnsupportedOpError, match="cycle"):
        toposort([op("x", (2,), (1,)), op("y", (1,), (2,))])


def test_toposort_of_a_long_reversed_chain() -> None:
    # each op uses the next one's result: the order is the reverse (the old quadratic
    # search scanned the whole list for each op)
    n = 3000
    ops = [op(f"o{i}", (i + 1,), (i,)) for i in range(n)]
    ops[-1] = op(f"o{n - 1}", (), (n - 1,))
    assert names(toposort(ops)) == [f"o{i}" for i in reversed(range(n))]


def test_outline_manual_parts_moves_a_shard_map_into_one_op() -> None:
    mesh = jax.make_mesh((4,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
    inner = jax.shard_map(lambda a: lax.psum(a, "x"), mesh=mesh, in_specs=P("x"), out_specs=P())

    def f(a):
        return inner(jnp.sin(a)) + 1

    before = jax.config.jax_use_shardy_partitioner
    jax.config.update("jax_use_shardy_partitioner", False)  # SPMDFullToShardShape boundaries
    try:
        text = jax.jit(f).lower(jnp.ones((8, 2))).as_text()
    finally:
        jax.config.update("jax_use_shardy_partitioner", before)
    prog = hlopipe.load(text)
    func = module_ir(prog).funcs[prog.entry]
    kept = list(func.block.ops)
    out = outline_manual_parts(func)
    ops = names(out.block.ops)
    targets = [o.attrs.get("call_target_name") for o in out.block.ops]
    assert ops.count("hlopipe.manual_computation") == 1, ops
    assert not {"SPMDFullToShardShape", "SPMDShardToFullShape"} & set(targets), targets
    m = ops.index("hlopipe.manual_computation")
    assert ops.index("stablehlo.sine") < m < ops.index("stablehlo.add"), ops
    (part,) = [o for o in out.block.ops if o.name == "hlopipe.manual_computation"]
    assert "devices=[4" in part.attrs["in_specs"][0], part.attrs  # P("x") on 4 devices
    assert list(func.block.ops) == kept  # the cached function is left as it is


@pytest.mark.parametrize(
    ("header", "counts"),
    [
        ("HloModule m, replica_count=2, num_partitions=4\n\n", (2, 4)),
        ("HloModule m, num_partitions=4\n\n", (None, 4)),
        ("HloModule m, replica_count=8\n\n", (8, None)),
        ("HloModule m\n\n", (None, None)),
        ("", (None, None)),  # no header: XLA's defaults (1, 1) hold
    ],
)
def test_hlo_text_device_counts_come_from_its_header(header: str, counts: tuple) -> None:
    text = header + "ENTRY main {\n  ROOT x = f32[2] parameter(0)\n}\n"
    assert hlopipe.load(text).device_counts == counts


_ADD = "add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n"


@pytest.mark.parametrize(
    "op",
    [
        "f32[16] all-gather(p), replica_groups={}, dimensions={0}",  # the group is implicit
        "f32[1] reduce-scatter(p), replica_groups={}, dimensions={0}, to_apply=add",
        "f32[8] all-reduce(p), replica_groups={{0,1,2,3},{4,5,6,7}}, to_apply=add",
        "f32[8] collective-permute(p), source_target_pairs={{0,7},{7,0}}",
    ],
)
def test_a_multi_device_program_without_its_device_counts_asks_for_a_mesh(op: str) -> None:
    # no replica_count / num_partitions in the header (as in an HloModuleProto): XLA's
    # defaults say one device, but the collective shows more, so the program needs mesh=
    p = "f32[2]" if "all-gather" in op else "f32[8]"
    text = f"HloModule m\n\n{_ADD}\nENTRY main {{\n  p = {p} parameter(0)\n  ROOT r = {op}\n}}\n"
    program = hlopipe.load(text)
    with pytest.raises(UnsupportedOpError, match=r"multi-device program .*on 8 devices.*mesh="):
        program.as_function()  # refused before running (it was an all_gather shape error)


def test_a_one_device_program_without_device_counts_still_runs_without_a_mesh() -> None:
    text = (
        f"HloModule m\n\n{_ADD}\nENTRY main {{\n  p = f32[8] parameter(0)\n"
        "  ROOT r = f32[8] all-reduce(p), replica_groups={}, to_apply=add\n}\n"
    )
    x = jnp.arange(8.0)
    assert jnp.array_equal(hlopipe.load(text).as_function()(x), x)


_AXES = [("x", 2), ("y", 4)]


@pytest.mark.parametrize(
    ("text", "ndim", "axes", "want"),
    [
        ("{devices=[2,4]<=[8]}", 2, _AXES, P("x", "y")),
        ("{devices=[4,2]<=[2,4]T(1,0)}", 2, _AXES, P("y", "x")),
        ("{devices=[8,1]<=[8]}", 2, _AXES, P(("x", "y"), None)),
        ("{devices=[1,8]<=[2,4]T(1,0)}", 2, _AXES, P(None, ("y", "x"))),
        ("{devices=[2,1,4]<=[8] last_tile_dim_replicate}", 2, _AXES, P("x", None)),
        ("{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}", 2, _AXES, P("y", None)),
        ("{devices=[2,2,2]<=[2,2,2]T(2,0,1)}", 3, [("a", 2), ("b", 2), ("c", 2)], P("c", "a", "b")),
        ("{devices=[4]<=[4]}", 1, [("one", 1), ("x", 4)], P("x")),
    ],
)
def test_iota_shardings_are_read_from_their_structure_as_the_search_reads_them(
    text: str, ndim: int, axes: list, want: P, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hlopipe.rehydrate import _sharding_text

    searched = _sharding_text.hlo_sharding_spec(text, ndim, axes)  # either way
    with monkeypatch.context() as m:  # the structure alone, no search
        m.setattr(_sharding_text, "_find_spec", lambda *a: pytest.fail("searched"))
        assert _sharding_text.hlo_sharding_spec(text, ndim, axes) == want
    with monkeypatch.context() as m:  # the search alone (explicit device lists take it)
        m.setattr(_sharding_text, "_iota_spec", lambda *a: None)
        assert _sharding_text.hlo_sharding_spec(text, ndim, axes) == want == searched


def test_an_iota_run_that_splits_a_mesh_axis_falls_back_to_the_search() -> None:
    from hlopipe.rehydrate._sharding_text import hlo_sharding_spec

    # [2,2] runs over a size-4 axis: no run lines up, the search says what it is
    assert hlo_sharding_spec("{devices=[4,1]<=[2,2]}", 2, [("x", 4)]) == P("x", None)
    with pytest.raises(UnsupportedOpError, match="cannot be expressed"):
        hlo_sharding_spec("{devices=[2,2]<=[2,2]T(1,0)}", 2, [("x", 4)])
