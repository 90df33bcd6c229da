"""Splitting at markers and automatically; chained per-stage autodiff against jax.value_and_grad."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hlopipe
from hlopipe.errors import StageError
from hlopipe.marker import stage_boundary

from ._models import mlp_loss, mlp_params, tf_loss, tf_params


def _close(a, b, tol=1e-5):
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=tol, atol=tol)


@pytest.fixture(scope="module")
def mlp():
    k1, k2, k3 = jax.random.split(jax.random.key(1), 3)
    params = mlp_params(k1)
    x, y = jax.random.normal(k2, (5, 6)), jax.random.normal(k3, (5, 4))
    return params, x, y, hlopipe.split(mlp_loss, params, x, y)


@pytest.fixture(scope="module")
def tf():
    k1, k2, k3 = jax.random.split(jax.random.key(2), 3)
    params = tf_params(k1, layers=2)
    tok = jax.random.randint(k2, (2, 5), 0, 11)
    tgt = jax.random.randint(k3, (2, 5), 0, 11)

    def loss(p, a, b):
        return tf_loss(p, a, b, skip=True)

    return params, tok, tgt, loss, hlopipe.split(loss, params, tok, tgt)


def test_mlp_stages(mlp):
    params, x, y, staged = mlp
    assert staged.num_stages == 4
    _close(staged(params, x, y), mlp_loss(params, x, y))
    # each layer's parameters go straight to the stage that uses them
    assert staged.stage(0).param_paths == ("[0][0]['b']", "[0][0]['w']", "[1]")
    assert staged.stage(1).param_paths == ("[0][1]['b']", "[0][1]['w']")
    assert staged.stage(3).param_paths[-1] == "[2]"  # y, only used by the last stage
    for s in range(1, 4):
        (r,) = staged.stage(s).receives
        assert r.src == s - 1 and r.aval.shape == (5, 16)
    assert staged.stage(3).program_outputs == ((0, 0),)
    assert all(st.cost.flops > 0 for st in staged.stages)


@pytest.mark.parametrize("remat", [False, True])
def test_mlp_chained_grads(mlp, remat):
    params, x, y, staged = mlp
    ref = jax.value_and_grad(mlp_loss)(params, x, y)
    _close(staged.value_and_grad(params, x, y, remat=remat), ref)
    _close(staged.value_and_grad(params, x, y, remat=remat, split_backward=True), ref)


def test_transformer_tied_embedding_and_skip(tf):
    params, tok, tgt, loss, staged = tf
    assert staged.num_stages == 3
    _close(staged(params, tok, tgt), loss(params, tok, tgt))
    embed = "[0]['embed']"
    assert embed in staged.stage(0).param_paths and embed in staged.stage(2).param_paths
    assert embed not in staged.stage(1).param_paths
    srcs = sorted(r.src for r in staged.stage(2).receives)
    assert srcs == [0, 1]  # the skip connection jumps over stage 1
    assert any(s.dst == 2 for s in staged.stage(0).sends)


@pytest.mark.parametrize("split_backward", [False, True])
def test_transformer_chained_grads(tf, split_backward):
    params, tok, tgt, loss, staged = tf
    ref = jax.value_and_grad(loss)(params, tok, tgt)
    got = staged.value_and_grad(params, tok, tgt, split_backward=split_backward)
    _close(got, ref)
    # the tied embedding's gradient is the sum of both stages' contributions
    fb0, fb2 = staged.stage(0).forward_backward(), staged.stage(2).forward_backward()
    assert fb0.diff_params and fb2.diff_params


def test_stage_autodiff_signature(tf):
    params, tok, tgt, _, staged = tf
    st = staged.stage(1)
    fb = st.forward_backward()
    flat = jax.tree_util.tree_leaves((params, tok, tgt))
    p = [flat[i] for i in st.params_needed]
    xs = [jnp.ones(r.aval.shape, r.aval.dtype) for r in st.receives]
    outs, res = jax.jit(fb.forward)(p, xs)
    assert [o.shape for o in outs] == [a.shape for a in st.outputs]
    assert [r.shape for r in res] == [a.shape for a in fb.residual_avals]
    # parameters are never saved as residuals: backward takes them directly
    assert fb.forward_jaxpr.jaxpr.invars[0] not in fb.forward_jaxpr.jaxpr.outvars
    cts = [jnp.ones(st.outputs[i].shape) for i in fb.diff_outputs]
    gi, gp = jax.jit(fb.backward)(p, res, cts)
    gi2, wres = jax.jit(fb.backward_input)(p, res, cts)
    gp2 = jax.jit(fb.backward_weight)(p, wres)
    _close((gi, gp), (gi2, gp2))
    assert len(gp) == len(fb.diff_params) == len(st.params_needed)
    # W does no input-cotangent work: its jaxpr is smaller than the whole backward
    assert len(fb.weight_jaxpr.jaxpr.eqns) < len(fb.backward_jaxpr.jaxpr.eqns)
    # remat keeps only the stage inputs
    rm = st.forward_backward(remat=True)
    assert [a.shape for a in rm.residual_avals] == [r.aval.shape for r in st.receives]


def test_markers_inside_jit_are_inlined():
    inner = jax.jit(lambda x: stage_boundary(jnp.sin(x)) * 2)

    def f(x):
        return jnp.sum(inner(x) ** 2)

    staged = hlopipe.split(f, jnp.arange(3.0))
    assert staged.num_stages == 2
    _close(staged(jnp.arange(3.0)), f(jnp.arange(3.0)))


def test_errors_name_where():
    def two(x):
        return stage_boundary(stage_boundary(x * 2) + 1).sum()

    with pytest.raises(StageError, match=r"num_stages=5.*2 stage_boundary markers.*test_split"):
        hlopipe.split(two, jnp.ones(3), num_stages=5)

    def in_scan(x):
        return jax.lax.scan(lambda c, _: (stage_boundary(c * 2), None), x, None, length=2)[0]

    with pytest.raises(StageError, match=r"inside a scan body at .*test_split\.py:\d+"):
        hlopipe.split(in_scan, jnp.ones(3))

    with pytest.raises(StageError, match="no stage_boundary markers; pass num_stages"):
        hlopipe.split(lambda x: x * 2, jnp.ones(3))

    with pytest.raises(StageError, match="at most 1 stages"):
        hlopipe.split(lambda x: x * 2, jnp.ones(3), num_stages=2)


def test_auto_split_24_layers_cuts_between_layers():
    params = tf_params(jax.random.key(3), layers=24)
    tok = jnp.zeros((2, 5), jnp.int32)
    marked = jax.make_jaxpr(lambda p, a, b: tf_loss(p, a, b))(params, tok, tok)
    marks = [i for i, e in enumerate(marked.jaxpr.eqns) if e.primitive.name == "stage_boundary"]
    layer_bounds = {m - k for k, m in enumerate(marks)}  # same positions without the markers
    first = marks[0] - len(jax.make_jaxpr(lambda p: p)(1.0).jaxpr.eqns)
    del first

    def loss(p, a, b):
        return tf_loss(p, a, b, markers=False)

    staged = hlopipe.split(loss, params, tok, tok, num_stages=4)
    assert staged.repeated is not None and staged.repeated.count >= 23
    starts = np.cumsum([0] + [st.num_eqns for st in staged.stages])[1:-1]
    assert set(starts.tolist()) <= layer_bounds, (starts, sorted(layer_bounds))
    costs = [st.cost.time for st in staged.stages]
    assert max(costs) < 1.3 * min(costs)
    _close(staged(params, tok, tok), loss(params, tok, tok))


def test_auto_split_opens_a_jitted_model(mlp):
    params, x, y, _ = mlp
    f = jax.jit(lambda p, a, b: mlp_loss(p, a, b, markers=False))
    staged = hlopipe.split(f, params, x, y, num_stages=2)
    assert staged.num_stages == 2 and all(st.num_eqns > 1 for st in staged.stages)
    _close(staged(params, x, y), f(params, x, y))
    _close(staged.value_and_grad(params, x, y), jax.value_and_grad(f)(params, x, y))


def test_markers_in_cond_and_while_are_refused_with_where():
    def in_cond(x):
        return jax.lax.cond(x[0] > 0, lambda v: stage_boundary(v * 2), lambda v: v, x).sum()

    with pytest.raises(StageError, match=r"inside a cond branch at .*test_split\.py:\d+"):
        hlopipe.split(in_cond, jnp.ones(3))

    def in_while(x):
        return jax.lax.while_loop(lambda v: v[0] < 5, lambda v: stage_boundary(v + 1), x).sum()

    with pytest.raises(StageError, match=r"inside a while_loop body at .*test_split\.py:\d+"):
        hlopipe.split(in_while, jnp.ones(3))

    inner = jax.jit(lambda v: jax.lax.cond(v[0] > 0, stage_boundary, lambda u: u, v))
    with pytest.raises(StageError, match=r"inside a cond branch .*\(called from .*test_split"):
        hlopipe.split(lambda x: inner(x).sum(), jnp.ones(3))


def test_repr_is_a_one_screen_summary() -> None:
    import jax.numpy as jnp

    import hlopipe

    def model(p, x):
        h = hlopipe.stage_boundary(jnp.tanh(x @ p[0]))
        return (h @ p[1]).sum()

    staged = hlopipe.split(model, [jnp.ones((4, 8)), jnp.ones((8, 2))], jnp.ones((3, 4)))
    text = repr(staged)
    assert text.startswith("StagedProgram(2 stages, 3 arguments -> 1 outputs, cut at markers)")
    assert len(text.splitlines()) < 15 and "pred. ms" in text and "{ lambda" not in text
    assert "{ lambda" in staged.full_text() and "# stage 1" in staged.full_text()
    assert repr(staged.stage(1)).startswith("Stage(1: ") and "from stage 0" in repr(staged.stage(1))


def test_marker_location_of_a_program_file_is_the_file(tmp_path) -> None:
    import jax
    import jax.numpy as jnp
    import pytest

    import hlopipe
    from hlopipe.errors import StageError

    def body(c, x):
        c = hlopipe.stage_boundary(c * x)
        return c, c

    def model(w, xs):
        return jax.lax.scan(body, w, xs)[0].sum()

    path = tmp_path / "scan_marker.hlo"
    path.write_text(jax.jit(model).lower(jnp.ones(3), jnp.ones((4, 3))).as_text(dialect="hlo"))
    with pytest.raises(StageError, match=rf"inside a scan body in {path}: ") as e:
        hlopipe.split(hlopipe.load(path))
    assert "hlopipe/" not in str(e.value).replace(str(path), "")
    with pytest.raises(StageError, match=r"at .*test_split.py:\d+"):  # a function: its line
        hlopipe.split(model, jnp.ones(3), jnp.ones((4, 3)))


def test_an_unknown_cut_keyword_is_refused_by_name(mlp):
    """split's keywords are Cuts', checked at run time too (mypy checks them statically)."""
    params, x, y, _ = mlp
    with pytest.raises(StageError, match="split: unknown keyword 'num_stage'; the keywords"):
        hlopipe.split(mlp_loss, params, x, y, num_stage=2)  # type: ignore[call-arg]
    closed = jax.make_jaxpr(mlp_loss)(params, x, y)
    with pytest.raises(StageError, match="split_jaxpr: unknown keyword 'memory_caps'"):
        hlopipe.stages.split_jaxpr(closed, num_stages=2, memory_caps=1.0)  # type: ignore[call-arg]
    assert list(hlopipe.stages.Cuts.__annotations__) == [
        "num_stages", "cost_model", "memory_cap", "max_candidates", "slice_args", "local_state",
        "device", "stage_layers",
    ]  # fmt: skip


def _late_cache_write(x, w0, w1, c0, c1, pos):
    """Two layers, each attending over its cache with the new row, the way XLA's optimised
    dump writes it: layer 0's cache update is written only after layer 1 is done."""
    h0 = jnp.tanh(x @ w0)
    a0 = h0 + jnp.sum(c0, 0) + h0  # layer 0 reads its old cache and its new row
    h1 = jnp.tanh(a0 @ w1)
    c1 = jax.lax.dynamic_update_slice(c1, h1, (pos, 0))
    a1 = h1 + jnp.sum(c1, 0)
    c0 = jax.lax.dynamic_update_slice(c0, h0, (pos, 0))  # layer 0's cache, written last
    return a1, c0, c1


def test_a_late_cache_write_is_made_on_its_layers_stage():
    """Without markers, a cache update the program writes after the next layer has started
    is made with its own layer (by data flow): each stage keeps its layer's cache, and the
    split computes what the unsplit function does."""
    k = jax.random.split(jax.random.key(3), 5)
    x, w0, w1 = (jax.random.normal(k[i], s) for i, s in enumerate([(1, 8), (8, 8), (8, 8)]))
    c0, c1 = jax.random.normal(k[3], (4, 8)), jax.random.normal(k[4], (4, 8))
    args = (x, w0, w1, c0, c1, jnp.int32(2))
    staged = hlopipe.split(_late_cache_write, *args, num_stages=2, local_state=[(3, 1), (4, 2)])
    assert [(s.kind, s.stage) for s in staged.out_sources[1:]] == [("stage", 0), ("stage", 1)]
    assert [3 in st.params_needed for st in staged.stages] == [True, False]
    _close(staged(*args), _late_cache_write(*args))


def test_state_updates_move_before_a_marker_only_as_whole_chains():
    """A cache update written after a marker it does not depend on goes before it; the free
    part of a chain whose update needs the marker's result stays after it (moved alone it
    would only be sent on). The program's values stay those of the function run directly."""
    from jax import lax

    from hlopipe.stages._split import Landing, move_state_updates

    def f(cache, cache2, x):
        h = jnp.sin(x)
        y = stage_boundary(h)
        part = jnp.cos(h)  # free of the marker, but its update needs y
        new = lax.dynamic_update_slice(cache, (part + y)[None], (0, 0))
        new2 = lax.dynamic_update_slice(cache2, jnp.exp(h)[None], (0, 0))  # free: moves
        return y.sum(), new, new2

    args = (jnp.zeros((2, 3)), jnp.ones((2, 3)), jnp.arange(3.0))
    closed = jax.make_jaxpr(f)(*args)
    moved = move_state_updates(closed, [1, 2], Landing.BEFORE_MARKERS)
    names = [e.primitive.name for e in moved.jaxpr.eqns]
    marker = next(i for i, e in enumerate(moved.jaxpr.eqns) if "stage_boundary" in str(e))
    assert names.index("exp") < marker < names.index("cos")
    updates = [i for i, n in enumerate(names) if n == "dynamic_update_slice"]
    assert updates[0] < marker < updates[1]
    got = jax.core.eval_jaxpr(moved.jaxpr, moved.consts, *args)
    for a, b in zip(got, f(*args), strict=True):
        np.testing.assert_array_equal(a, b)
