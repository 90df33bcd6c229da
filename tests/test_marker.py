"""The stage_boundary marker: identity under every transformation, survives lowering."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hlopipe
from hlopipe.marker import ATTRIBUTE, is_stage_boundary_attrs, stage_boundary, stage_boundary_p


def _model(w, x):
    h = jnp.tanh(x @ w[0])
    h = stage_boundary(h)
    return jnp.sum(jnp.sin(h @ w[1]))


def _unmarked(w, x):
    return jnp.sum(jnp.sin(jnp.tanh(x @ w[0]) @ w[1]))


@pytest.fixture
def args():
    k1, k2, k3 = jax.random.split(jax.random.key(0), 3)
    w = [jax.random.normal(k1, (3, 4)), jax.random.normal(k2, (4, 2))]
    return w, jax.random.normal(k3, (5, 3))


def _count(jaxpr):
    return sum(e.primitive is stage_boundary_p for e in jaxpr.jaxpr.eqns)


def test_identity_on_pytrees():
    tree = {"a": jnp.arange(3.0), "b": (jnp.ones(2), 4)}
    out = stage_boundary(tree)
    assert jax.tree_util.tree_structure(out) == jax.tree_util.tree_structure(tree)
    for a, b in zip(jax.tree_util.tree_leaves(out), jax.tree_util.tree_leaves(tree), strict=True):
        np.testing.assert_array_equal(a, b)
    x, y = stage_boundary(jnp.ones(2), jnp.zeros(3))
    assert x.shape == (2,) and y.shape == (3,)
    assert hlopipe.stage_boundary is stage_boundary


def test_jit_grad_vmap_jvp_linearize(args):
    w, x = args
    np.testing.assert_allclose(jax.jit(_model)(w, x), _unmarked(w, x), rtol=1e-6)
    g, g0 = jax.grad(_model)(w, x), jax.grad(_unmarked)(w, x)
    for a, b in zip(g, g0, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5)
    v = jax.vmap(_model, (None, 0))(w, x[:, None])
    np.testing.assert_allclose(v, jax.vmap(_unmarked, (None, 0))(w, x[:, None]), rtol=1e-6)
    t = jax.jvp(lambda x: _model(w, x), (x,), (jnp.ones_like(x),))
    t0 = jax.jvp(lambda x: _unmarked(w, x), (x,), (jnp.ones_like(x),))
    np.testing.assert_allclose(t[1], t0[1], rtol=1e-5)
    # derived programs keep the stage structure: one marker forward, one on tangents / cotangents
    assert _count(jax.make_jaxpr(jax.grad(_model))(w, x)) == 2
    lin = jax.make_jaxpr(lambda x: jax.linearize(lambda x: _model(w, x), x)[1](x))(x)
    assert _count(lin) == 2
    assert _count(jax.make_jaxpr(jax.vmap(_model, (None, 0)))(w, x[:, None])) == 1


def test_lowers_to_attributed_barrier(args):
    w, x = args
    lowered = jax.jit(_model).lower(w, x)
    text = lowered.as_text()
    assert "stablehlo.optimization_barrier" in text
    assert f'{ATTRIBUTE} = "true"' in text
    hlo = lowered.as_text(dialect="hlo")
    lines = [ln for ln in hlo.splitlines() if "opt-barrier" in ln]
    assert lines and f'frontend_attributes={{{ATTRIBUTE}="true"}}' in lines[0]
    np.testing.assert_allclose(lowered.compile()(w, x), _unmarked(w, x), rtol=1e-6)


def test_named_marker_and_attribute_check():
    lowered = jax.jit(lambda x: stage_boundary(x * 2, name="s1")).lower(jnp.ones(3))
    assert f'{ATTRIBUTE}="s1"' in lowered.as_text(dialect="hlo")
    module = lowered.compiler_ir("stablehlo")
    ops = module.body.operations[0].regions[0].blocks[0].operations
    flags = {op.name: is_stage_boundary_attrs(op) for op in ops}
    assert flags["stablehlo.optimization_barrier"] and not flags["stablehlo.multiply"]
    assert is_stage_boundary_attrs({ATTRIBUTE: "true"})
    assert not is_stage_boundary_attrs({"other": "x"})


@pytest.mark.parametrize("grad", [False, True])
def test_markers_survive_compilation_with_keep_markers(args, grad):
    w, x = args
    fn = jax.grad(_model) if grad else _model
    low = jax.jit(fn).lower(w, x)
    want = jax.tree_util.tree_leaves(fn(w, x))
    n = 2 if grad else 1  # the backward pass has a marker of its own
    assert hlopipe.load(low.compile().as_text()).stage_markers() == 0  # XLA drops them
    compiled = low.compile(compiler_options=hlopipe.marker.KEEP_MARKERS)
    for got, w_ in zip(jax.tree_util.tree_leaves(compiled(w, x)), want, strict=True):
        np.testing.assert_allclose(got, w_, rtol=1e-5, atol=1e-6)  # kept barriers: same values
    prog = hlopipe.load(compiled.as_text())
    assert prog.optimized and prog.stage_markers() == n
    got = jax.jit(prog.as_function())(*jax.tree_util.tree_leaves((w, x)))
    got = got if isinstance(got, tuple) else (got,)
    for g, w_ in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w_, rtol=1e-5, atol=1e-6)
    staged = hlopipe.split(prog)
    assert len(staged.stages) == n + 1
    ran = staged(*jax.tree_util.tree_leaves((w, x)))  # the stages one after the other
    for g, w_ in zip(jax.tree_util.tree_leaves(ran), want, strict=True):
        np.testing.assert_allclose(g, w_, rtol=1e-5, atol=1e-6)


# the two forms of a marker placed from PyTorch (hlopipe.torch), written as torch_xla and XLA
# write them: an attributed custom call (before XLA's passes) and the attribute XLA moved onto a
# barrier's get-tuple-element (after them, with other frontend attributes on the barrier)
_TORCH_MARKED = """HloModule m

ENTRY main {
  p0 = f32[2,3] parameter(0)
  t = f32[2,3] tanh(p0)
  tu = (f32[2,3]) tuple(t)
  b = (f32[2,3]) opt-barrier(tu)
  g = f32[2,3] get-tuple-element(b), index=0
  c = f32[2,3] custom-call(g), custom_call_target="LayoutConstraint", {ATTRS}
  ROOT s = f32[2,3] sine(c)
}
""".replace("{ATTRS}", 'frontend_attributes={hlopipe.stage_boundary="true"}')
_TORCH_MARKED_OPTIMISED = """HloModule m, is_scheduled=true

ENTRY main {
  p0 = f32[2,3] parameter(0)
  t = f32[2,3] tanh(p0)
  tu = (f32[2,3]) tuple(t)
  b = (f32[2,3]) opt-barrier(tu), frontend_attributes={other="x"}
  g = f32[2,3] get-tuple-element(b), index=0, frontend_attributes={hlopipe.stage_boundary="true"}
  ROOT s = f32[2,3] sine(g)
}
"""


@pytest.mark.parametrize("text", [_TORCH_MARKED, _TORCH_MARKED_OPTIMISED])
def test_markers_placed_from_torch_are_markers(text):
    """Both forms read as one marker that cuts there, the identity on values (the oracle: the
    same function in JAX)."""
    prog = hlopipe.io.load_bytes(text.encode(), name="torch.hlo")
    assert prog.stage_markers() == 1
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    staged = hlopipe.split(prog.as_function(flat=True), x)
    assert staged.num_stages == 2
    np.testing.assert_allclose(prog.as_function(flat=True)(x), np.sin(np.tanh(x)), rtol=1e-6)


def test_a_marked_custom_call_that_changes_shape_is_refused():
    text = _TORCH_MARKED.replace(
        "c = f32[2,3] custom-call(g)", "c = f32[3,2] custom-call(g)"
    ).replace("ROOT s = f32[2,3] sine(c)", "ROOT s = f32[3,2] sine(c)")
    prog = hlopipe.io.load_bytes(text.encode(), name="torch.hlo")
    with pytest.raises(hlopipe.UnsupportedOpError, match=r"carries the hlopipe\.stage_boundary"):
        prog.as_function(flat=True)(np.zeros((2, 3), np.float32))
