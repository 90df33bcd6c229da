"""File-level merge/split: forward + backward modules -> one merged module -> consistent parts."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import hlopipe
from hlopipe.errors import StageError
from hlopipe.stages import MergeLayout, merge_files, split_merged

from ._models import mlp_loss, mlp_params

_COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "collective-permute", "all-to-all")


def _collectives(compiled):
    text = compiled.as_text()
    return {c for c in _COLLECTIVES if re.search(rf"\b{c}(-start)?\(", text)}


def _leaves(shardings):
    return jax.tree_util.tree_leaves(
        shardings, is_leaf=lambda z: isinstance(z, jax.sharding.Sharding)
    )


def _call(compiled, args):
    shs = _leaves(compiled.input_shardings[0])
    return list(compiled(*[jax.device_put(a, s) for a, s in zip(args, shs, strict=True)]))


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    k1, k2, k3 = jax.random.split(jax.random.key(7), 3)
    params = mlp_params(k1, sizes=(8, 16, 8))
    x, y = jax.random.normal(k2, (8, 8)), jax.random.normal(k3, (8, 8))
    staged = hlopipe.split(mlp_loss, params, x, y)
    d = tmp_path_factory.mktemp("stages")
    staged.export(str(d), format="hlo")
    return params, x, y, staged, d


def test_merge_then_split_on_2x2_meshes_equals_value_and_grad(exported, tmp_path):
    params, x, y, staged, d = exported
    devs = np.array(jax.devices()[:8]).reshape(2, 2, 2)
    flat = jax.tree_util.tree_leaves((params, x, y))
    parts = []
    for s, fmt in ((0, "stablehlo"), (1, "hlo")):
        st = staged.stage(s)
        fb = st.forward_backward()
        mesh = Mesh(devs[s], ("data", "model"))
        sh = [
            NamedSharding(
                mesh, P(None, "model") if p.endswith("['w']") else P("data", None) if
                a.ndim == 2 else P()
            )
            for p, a in zip(st.param_paths, st.param_avals, strict=True)
        ]  # fmt: skip
        # (every residual here has the output's shape: the signatures alone are ambiguous)
        merged = merge_files(
            str(d / f"stage{s}.forward.hlo"), str(d / f"stage{s}.backward.hlo"),
            num_params=fb.num_params, num_outputs=fb.num_outputs,
            mesh=mesh, param_shardings=sh, format=fmt,
        )  # fmt: skip
        L = merged.layout
        assert (L.num_params, L.num_outputs, L.num_residuals) == (
            fb.num_params, fb.num_outputs, fb.num_residuals,
        )  # fmt: skip
        path = merged.write(str(tmp_path / f"s{s}"))
        split = split_merged(path, str(tmp_path / f"s{s}" / "merged.json"), mesh=mesh, format=fmt)
        f_path, b_path = split.write(str(tmp_path / f"s{s}"))
        for p in (path, f_path, b_path):  # every file re-loads
            hlopipe.load(p)
        c = split.consistent
        assert c is not None
        res_out = _leaves(c.forward.output_shardings)[L.num_outputs :]
        bwd_in = _leaves(c.backward.input_shardings[0])
        res_in = bwd_in[L.num_params : L.num_params + L.num_residuals]
        assert len(res_out) == len(res_in) == L.num_residuals > 0
        for a, b, aval in zip(res_out, res_in, fb.residual_avals, strict=True):
            assert a.is_equivalent_to(b, aval.ndim), (a, b)
        assert any(tuple(getattr(r, "spec", ())) != () for r in res_out)  # something is sharded
        assert _collectives(c.backward) <= _collectives(c.merged)
        assert _collectives(c.forward) <= _collectives(c.merged)
        parts.append((st, fb, c))

    # chain: forwards, then backwards, on the split executables
    (st0, fb0, c0), (st1, _, c1) = parts
    p0 = [flat[i] for i in st0.params_needed]
    p1 = [flat[i] for i in st1.params_needed]
    out0 = _call(c0.forward, p0)
    h, res0 = out0[: fb0.num_outputs], out0[fb0.num_outputs :]
    out1 = _call(c1.forward, [*p1, *h])
    loss, res1 = out1[0], out1[1:]
    gi, *g1 = _call(c1.backward, [*p1, *res1, jnp.ones((), jnp.float32)])
    g0 = _call(c0.backward, [*p0, *res0, gi])
    ref_loss, ref_grads = jax.value_and_grad(mlp_loss)(params, x, y)
    np.testing.assert_allclose(loss, ref_loss, rtol=1e-5)
    got = [*g0, *g1]  # [b0, w0, b1, w1]: both stages' parameters in path order
    for g, r in zip(got, jax.tree_util.tree_leaves(ref_grads), strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=1e-5, atol=1e-6)


def test_split_merged_without_mesh_and_its_refusals(tmp_path):
    def merged(p, x, ct):  # forward: x*p (output), x*2 (residual); backward: ct * residual
        r = x * 2
        return x * p, r, ct * r

    a = jax.ShapeDtypeStruct((4,), jnp.float32)
    text = jax.jit(merged).lower(a, a, a).as_text()
    layout = MergeLayout(1, 1, 1, 1, 1, 1)
    parts = split_merged(text, layout, format="stablehlo")
    fwd = hlopipe.load(parts.forward).as_function()
    bwd = hlopipe.load(parts.backward).as_function()
    v = jnp.arange(4.0)
    _, res = fwd(v, v + 1)
    np.testing.assert_allclose(bwd(v, res, v), v * (v + 1) * 2)

    def reads_input(p, x, ct):
        return x * p, x * 2, ct * x  # the backward reads x itself

    bad = jax.jit(reads_input).lower(a, a, a).as_text()
    with pytest.raises(StageError, match=r"reads input\(s\) \[0\].*not through a residual"):
        split_merged(bad, layout)
    with pytest.raises(StageError, match="takes 3 arguments and gives 3 results; its layout"):
        split_merged(text, MergeLayout(1, 1, 1, 1, 2, 1))
    with pytest.raises(StageError, match="not a merge layout"):
        split_merged(text, {"num_params": 1})


def test_merge_files_needs_counts_when_ambiguous(tmp_path):
    a = jax.ShapeDtypeStruct((3,), jnp.float32)
    fwd = jax.jit(lambda p, x: (p * x, x)).lower(a, a).as_text()
    bwd = jax.jit(lambda p, r, c: (c * p, c * r)).lower(a, a, a).as_text()
    with pytest.raises(StageError, match=r"groupings fit.*pass num_params and num_outputs"):
        merge_files(fwd, bwd)
    m = merge_files(fwd, bwd, num_params=1, num_outputs=1, format="stablehlo")
    assert m.layout == MergeLayout(1, 1, 1, 1, 1, 2)
    f = hlopipe.load(m.text).as_function()
    v = jnp.arange(3.0)
    np.testing.assert_allclose(jnp.stack(f(v, v + 1, v + 2)), jnp.stack(
        [v * (v + 1), v + 1, (v + 2) * v, (v + 2) * (v + 1)]))  # fmt: skip
    with pytest.raises(StageError, match=r"no grouping.*num_params=3"):
        merge_files(fwd, bwd, num_params=3)
    # distinct shapes: one grouping fits, and it is found
    p, x, c = (jax.ShapeDtypeStruct(s, jnp.float32) for s in ((3,), (2, 3), ()))
    fwd = jax.jit(lambda p, x: (jnp.sum(p * x), x)).lower(p, x).as_text()
    bwd = jax.jit(lambda p, r, c: (c * r * p, c * r.sum(0))).lower(p, x, c).as_text()
    assert merge_files(fwd, bwd).layout == MergeLayout(1, 1, 1, 1, 1, 2)
