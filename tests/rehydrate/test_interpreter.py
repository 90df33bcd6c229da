"""The rule registry, the missing-op report, custom calls, and the interpreter's hooks."""

from __future__ import annotations

import importlib
import pkgutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hlopipe
from hlopipe.errors import UnsupportedOpError
from hlopipe.rehydrate import CUSTOM_CALLS, RULES, Interpreter, module_ir, rule, scan_unsupported
from hlopipe.rehydrate import ops as ops_pkg

X = jnp.arange(6.0).reshape(2, 3)


def test_every_ops_module_is_imported() -> None:
    import ast
    from pathlib import Path

    tree = ast.parse(Path(ops_pkg.__file__).read_text())
    imported = {
        a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for a in node.names
    }
    modules = {m.name for m in pkgutil.iter_modules(ops_pkg.__path__) if not m.name.startswith("_")}
    assert modules
    missing = sorted(modules - imported)
    assert not missing, f"hlopipe/rehydrate/ops/__init__.py does not import: {missing}"


def test_registering_a_name_twice_is_an_error() -> None:
    assert "stablehlo.add" in RULES
    with pytest.raises(ValueError, match="already registered"):
        rule("stablehlo.add")(lambda ctx, x, y: x + y)
    assert RULES["stablehlo.add"].__name__ != "<lambda>"


def test_aliases_register_one_function() -> None:
    name_a, name_b = "test.alias_a", "test.alias_b"
    try:

        @rule(name_a, name_b)
        def fn(ctx, x):
            return x

        assert RULES[name_a] is RULES[name_b] is fn
    finally:
        RULES.pop(name_a, None)
        RULES.pop(name_b, None)


UNKNOWN = """
func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "foo.bar"(%x) : (tensor<3xf32>) -> tensor<3xf32>
  %1 = "foo.bar"(%0) : (tensor<3xf32>) -> tensor<3xf32>
  %2 = stablehlo.add %1, %1 : tensor<3xf32>
  %3 = "foo.baz"(%2) : (tensor<3xf32>) -> tensor<3xf32>
  %4 = stablehlo.custom_call @my_target(%3) : (tensor<3xf32>) -> tensor<3xf32>
  %5 = "foo.bar"(%4) : (tensor<3xf32>) -> tensor<3xf32>
  return %5 : tensor<3xf32>
}
"""


def test_missing_ops_reported_together_before_running() -> None:
    prog = hlopipe.load(UNKNOWN)
    found = scan_unsupported(module_ir(prog), prog.entry)
    assert [(n, c) for n, c, _ in found] == [
        ("foo.bar", 3),
        ("foo.baz", 1),
        ("stablehlo.custom_call @my_target", 1),
    ]
    assert found[0][2].endswith(":3")  # the first use's line
    with pytest.raises(UnsupportedOpError) as info:
        prog.as_function()  # refused when made, not when run
    msg = str(info.value)
    assert "3 unsupported operations" in msg
    assert "no rehydration rule for 'foo.bar' (3 uses, first at <bytes>:3)" in msg
    assert "no rehydration rule for 'foo.baz' (1 use, first at <bytes>:6)" in msg
    assert 'Add @rule("foo.bar") in hlopipe/rehydrate/ops/' in msg
    assert "hlopipe.register_custom_call('my_target', fn)" in msg


def test_family_hint_of_known_families() -> None:
    from hlopipe.rehydrate._interpreter import missing_rule_message

    assert "ops/collectives.py" in missing_rule_message("stablehlo.all_gather", 1, "x:1")
    assert "ops/control_flow.py" in missing_rule_message("stablehlo.while", 1, "x:1")
    assert "ops/slicing.py" in missing_rule_message("stablehlo.dynamic_slice", 1, "x:1")
    assert "ops/convolution.py" in missing_rule_message("stablehlo.convolution", 1, "x:1")
    assert "ops/windowed.py" in missing_rule_message("stablehlo.reduce_window", 1, "x:1")


def test_family_hint_names_a_module_that_holds_rules() -> None:
    """The hint is read from where rules are registered: for ops with no rule, near ones or
    none at all, it names an existing ops/ module, the one of the nearest registered op."""
    from pathlib import Path

    from hlopipe.rehydrate._interpreter import missing_rule_message
    from hlopipe.rehydrate.registry import family_of

    ops_dir = Path(ops_pkg.__file__).parent
    for name in ("stablehlo.all_gather_v2", "stablehlo.rng_foo", "chlo.new_op", "foo.bar", "x"):
        family = family_of(name)
        assert (ops_dir / f"{family}.py").is_file(), (name, family)
        assert any(fn.__module__.endswith(f".ops.{family}") for fn in RULES.values())
        assert f"hlopipe/rehydrate/ops/{family}.py" in missing_rule_message(name, 1, "x:1")
    assert family_of("stablehlo.all_gather_v2") == "collectives"  # beside all_gather
    assert family_of("stablehlo.batch_norm_foo") == "normalization"


def test_custom_call_builtin_and_emitter_refuse_a_second_registration() -> None:
    from hlopipe.decompile._prims import emitter
    from hlopipe.rehydrate.custom_calls import builtin

    with pytest.raises(ValueError, match="already registered"):
        builtin("Sharding")(lambda ctx, x: x)
    with pytest.raises(ValueError, match="already registered"):
        emitter("add")(lambda body, eqn: None)


CUSTOM = """
func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = stablehlo.custom_call @hlopipe_test_softplus(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
"""


def test_register_custom_call() -> None:
    target = "hlopipe_test_softplus"
    prog = hlopipe.load(CUSTOM)
    with pytest.raises(UnsupportedOpError, match=target):
        prog.as_function()
    try:
        hlopipe.register_custom_call(target, jax.nn.softplus)
        f = hlopipe.load(CUSTOM).as_function()
        np.testing.assert_allclose(f(X), jax.nn.softplus(X), rtol=1e-6)
        np.testing.assert_allclose(jax.grad(lambda x: f(x).sum())(X), jax.nn.sigmoid(X), rtol=1e-6)
        with pytest.raises(ValueError, match="replace=True"):
            hlopipe.register_custom_call(target, jnp.tanh)

        seen = {}

        def with_ctx(ctx, x, **attrs):
            seen["aval"] = ctx.result_avals[0]
            return jnp.tanh(x)

        hlopipe.register_custom_call(target, with_ctx, replace=True)
        f = hlopipe.load(CUSTOM).as_function()
        np.testing.assert_allclose(f(X), jnp.tanh(X), rtol=1e-6)
        assert seen["aval"].shape == (2, 3)
    finally:
        CUSTOM_CALLS.pop(target, None)


def test_interpreter_hooks_can_be_overridden() -> None:
    prog = hlopipe.load(jax.jit(lambda x: jnp.sin(x) * 2 + x).lower(X).as_text())
    mir = module_ir(prog)
    seen: list[str] = []

    class Tracing(Interpreter):
        def run_op(self, op, operands, env):
            seen.append(op.name)
            return super().run_op(op, operands, env)

    (out,) = Tracing(mir).run(prog.entry, X)
    np.testing.assert_allclose(out, jnp.sin(X) * 2 + X, rtol=1e-6)
    assert "stablehlo.sine" in seen and "stablehlo.multiply" in seen


def test_values_are_dropped_after_last_use() -> None:
    prog = hlopipe.load(jax.jit(lambda x: jnp.sin(jnp.cos(jnp.exp(x)))).lower(X).as_text())
    block = module_ir(prog).funcs["main"].block
    dropped = [v for d in block.drop_after for v in d]
    assert set(block.args) <= set(dropped)
    assert len(dropped) == len(set(dropped))


def test_rehydrate_accepts_a_program_a_str_and_a_path(tmp_path) -> None:
    from hlopipe.rehydrate import rehydrate

    text = jax.jit(lambda x: x * 3).lower(X).as_text()
    path = tmp_path / "f.mlir"
    path.write_text(text)
    for src in (hlopipe.load(text), text, path, str(path)):
        np.testing.assert_allclose(rehydrate(src)(X), X * 3)


def test_top_level_rehydrate_is_callable() -> None:
    # importing a submodule makes hlopipe.rehydrate the package; the package is callable
    import hlopipe.rehydrate.ops.shape

    assert callable(hlopipe.rehydrate)
    np.testing.assert_allclose(
        hlopipe.rehydrate(jax.jit(jnp.sin).lower(X).as_text())(X), jnp.sin(X)
    )


def test_registry_module_importable_alone() -> None:
    importlib.import_module("hlopipe.rehydrate.registry")


def test_a_kept_region_holds_no_tracer_of_the_trace_around_it() -> None:
    """``lax.reduce`` keeps its computation (the op's region, callable) in the equation it
    makes. The region sees the values it reads from outside, not the whole environment of
    the function around it: once the trace ends, no tracer of it is alive though the jaxpr
    is (a region that held the environment kept every tracer before the op: the whole trace
    of a served program, about 48 MiB of a 125M Llama's)."""
    import gc

    from hlopipe._jax_compat import Tracer

    text = jax.jit(
        lambda x: jax.lax.reduce(jnp.tanh(x) * 3 + 1, 0.0, lambda a, b: a * b + a, (0,))
    ).lower(X).as_text()  # fmt: skip
    f = hlopipe.load(text).as_function()
    gc.collect()
    # (what other tests of this process left alive is theirs: held, so no id is reused)
    before = [o for o in gc.get_objects() if isinstance(o, Tracer)]
    closed = jax.make_jaxpr(f)(X)
    assert any(e.primitive.name == "reduce" for e in closed.jaxpr.eqns)  # the region kept
    gc.collect()
    old = {id(o) for o in before}
    alive = [o for o in gc.get_objects() if isinstance(o, Tracer) and id(o) not in old]
    assert not alive, f"{len(alive)} tracers alive after the trace, e.g. {alive[:3]}"
    want = jax.lax.reduce(jnp.tanh(X) * 3 + 1, 0.0, lambda a, b: a * b + a, (0,))
    np.testing.assert_allclose(np.asarray(jax.jit(f)(X)), np.asarray(want), rtol=1e-6)
