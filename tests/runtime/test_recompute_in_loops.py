"""Recompute policies inside a layer loop: a scanned GPT (4 blocks stacked ``[4, ...]``, one
``lax.scan``) cut into 2 stages of 2 iterations each, differentiated under each policy.

The policies act inside the scan's body as they act on a stage's top-level equations: the
bytes each stage's forward keeps for its backward equal a hand count from the model's shapes,
fall from none to full, and the chained forwards and backwards give ``jax.value_and_grad`` of
the program run directly on one device. (Before, a scan was one equation to the cut: under
``selective`` and ``attention`` it was recomputed whole, so both kept what ``full`` keeps.)
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

import hlopipe
from hlopipe import stages
from hlopipe.models import gpt, gpt_scan

# h * s (attention's scores a token) above 2d + f: a selective that kept the scores (every
# dot_general, as dots_saveable) would keep more than attention
CFG = gpt.GPTConfig(vocab=16, seq=32, d_model=16, n_heads=4, n_layers=4, d_ff=32)
B = 2
POLICIES = ("none", "selective", "attention", "full")
loss_fn = functools.partial(gpt_scan.loss, cfg=CFG)


def _kept_by_hand(policy: str) -> list[int]:
    """Bytes (fp32) each of the two stages' forwards keeps (2 layers each), counted from the
    shapes, in elements a token (``B * seq`` tokens), the same for the scanned and the
    unrolled form:

    * selective, a layer: its input ``d`` and the weight matmuls' outputs the backward reads:
      ``qkv`` 3d, the projection ``d`` (the second norm's input is the input plus it), ``fc1``
      ``f`` (the GELU's input); ``fc2``'s output no backward reads, and attention's batched
      products (the scores ``h * s``, the weighted sum ``d``) are recomputed. After the loop,
      on stage 1: the loop's last carry ``d`` (the final norm's input) and the logits ``V``;
    * attention, a layer: its input ``d``, and the weight matmuls' inputs and outputs: the
      first norm ``d``, ``qkv`` 3d, attention's output ``d``, the projection ``d``, the second
      norm ``d``, ``fc1`` ``f``, the GELU ``f``: 8d + 2f in all, Korthikanti et al. 2022's
      32 sbh a layer at 2 bytes and f = 4d (section 4.1, no dropout). After the loop: the
      last carry ``d``, the final norm ``d``, the logits ``V``;
    * full: stage 1's received activation ``d`` (stage 0 receives nothing: the tokens are an
      argument its backward takes).

    Stage 0's first layer input is not kept under selective and attention: the embedding,
    redone in the backward from the tokens (a gather and the positions added, no matmul). The
    unrolled form redoes it as it redoes every non-matmul value; the scanned form peels the
    loop's first iteration out of the loop, which otherwise stacks each iteration's carry,
    the first one included. A later layer's input is the loop's carry (scanned), or the
    previous one's plus its ``fc2`` (unrolled, the ``fc2`` output kept): as many bytes."""
    d, f, s, V = CFG.d_model, CFG.d_ff, CFG.seq, CFG.vocab
    layer = {"selective": d + 3 * d + d + f, "attention": d + d + 3 * d + d + d + d + 2 * f}
    after = {"selective": d + V, "attention": 2 * d + V}
    if policy == "full":
        per_token = [0, d]
    else:
        per_token = [2 * layer[policy] - d, 2 * layer[policy] + after[policy]]
    return [4 * B * s * n for n in per_token]


def _nbytes(a) -> int:
    return a.size * a.dtype.itemsize


def test_policies_act_inside_a_scanned_layer_loop():
    params = gpt_scan.init(jax.random.key(0), CFG)
    batch = gpt.batch(jax.random.key(1), B, CFG)
    staged = stages.split(loss_fn, params, batch, num_stages=2)
    assert staged.num_stages == 2
    s0, s1 = staged.stages
    scans = [e for st in staged.stages for e in st.jaxpr.eqns if e.primitive.name == "scan"]
    # the loop cut in two, stage 0's first iteration a range of its own
    assert [int(e.params["length"]) for e in scans] == [1, 1, 2]
    kept, chains, grads_of = {}, [], []
    for policy in POLICIES:
        f0, f1 = (st.forward_backward(0, remat=policy) for st in staged.stages)
        kept[policy] = sum(a.size * a.dtype.itemsize for fb in (f0, f1) for a in fb.residual_avals)

        def chain(flat, f0=f0, f1=f1):
            p0 = [flat[i] for i in s0.params_needed]
            p1 = [flat[i] for i in s1.params_needed]
            y0, r0 = f0.forward(p0, [])
            y1, r1 = f1.forward(p1, [y0[r.output] for r in s1.receives])
            gx1, gp1 = f1.backward(p1, r1, [jnp.ones(())])
            _, gp0 = f0.backward(p0, r0, gx1)
            return y1[0], [*gp0, *gp1]

        chains.append(chain)
        # the flat argument each gradient is of
        grads_of.append([st.params_needed[k] for st, fb in ((s0, f0), (s1, f1))
                         for k in fb.diff_params])  # fmt: skip
    for policy in ("selective", "attention", "full"):
        assert kept[policy] == sum(_kept_by_hand(policy)), (policy, kept)
    assert kept["none"] > kept["attention"] > kept["selective"] > kept["full"], kept

    # every chain and the program's own gradient in one executable (one compile, unoptimised:
    # the values are what is checked)
    def everything(params, batch, flat):
        return jax.value_and_grad(loss_fn)(params, batch), [c(flat) for c in chains]

    flat = staged.flatten((params, batch))
    fast = {"xla_backend_optimization_level": 0, "xla_llvm_disable_expensive_passes": True}
    run = jax.jit(everything).lower(params, batch, flat).compile(fast)
    (want_loss, want), got = run(params, batch, flat)
    for policy, (loss, grads), of in zip(POLICIES, got, grads_of, strict=True):
        np.testing.assert_allclose(loss, want_loss, rtol=1e-6, err_msg=policy)
        total: dict[int, jax.Array] = {}
        for i, g in zip(of, grads, strict=True):
            total[i] = total[i] + g if i in total else g
        # the stages' pieces (a stacked parameter's rows per stage) joined into the caller's
        pieces = [total.get(i, jnp.zeros(a.shape, a.dtype)) for i, a in enumerate(staged.in_avals)]
        joined = jax.tree.unflatten(staged.in_tree, staged.gather_flat(pieces))[0]
        assert jax.tree.structure(joined) == jax.tree.structure(want)
        for g, w in zip(jax.tree.leaves(joined), jax.tree.leaves(want), strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-7, err_msg=policy)


def test_policies_act_inside_a_rehydrated_while_loop(tmp_path):
    """The same program as an HLO text file: its layer loop is a ``while`` rehydrated as a
    scan, and each policy keeps the same hand-counted bytes."""
    params = gpt_scan.init(jax.random.key(0), CFG)
    batch = gpt.batch(jax.random.key(1), B, CFG)
    (tmp_path / "m.hlo").write_text(jax.jit(loss_fn).lower(params, batch).as_text(dialect="hlo"))
    staged = stages.split(hlopipe.load(str(tmp_path / "m.hlo")), num_stages=2)
    trained = tuple(range(len(jax.tree.leaves(params))))
    kept = {
        policy: sum(
            a.size * a.dtype.itemsize
            for st in staged.stages
            for a in st.forward_backward(trained, remat=policy).residual_avals
        )
        for policy in ("selective", "attention")
    }
    assert kept == {p: sum(_kept_by_hand(p)) for p in kept}


def test_the_planner_prices_what_each_policy_keeps():
    """One meaning of each policy in the planner and the runtime: for the scanned GPT and its
    unrolled form, the residual bytes a stage keeps as ``hlopipe.planner`` prices them
    (``profile_staged`` + ``activation_bytes``, per stage) equal what the runtime's stage
    forwards return, the hand count, and (all the forwards of a form in one executable) the
    output bytes of the compiled executable's memory analysis."""
    from hlopipe import planner
    from hlopipe.planfile import Layout, Recompute

    batch = gpt.batch(jax.random.key(1), B, CFG)
    forms = {
        "scanned": (loss_fn, gpt_scan.init(jax.random.key(0), CFG)),
        "unrolled": (functools.partial(gpt.loss, cfg=CFG), gpt.init(jax.random.key(0), CFG)),
    }
    fast = {"xla_backend_optimization_level": 0, "xla_llvm_disable_expensive_passes": True}
    for form, (fn, params) in forms.items():
        staged = stages.split(fn, params, batch, num_stages=2)
        prof = planner.profile_staged(staged, (0,))
        fbs, kept, outputs = [], {}, 0
        for policy in POLICIES:
            lay = Layout(tp=1, pp=2, dp=1, cp=1, zero=0, recompute=Recompute(policy),
                         schedule="1f1b", virtual_stages=1, microbatch_size=B,
                         microbatches=1)  # fmt: skip
            # unfused attention: the runtime keeps attention's values as the program writes it
            planned = [planner.activation_bytes(c, lay, 1.0, False) for c in prof.marked]
            runs = [st.forward_backward(0, remat=policy) for st in staged.stages]
            kept[policy] = [sum(_nbytes(a) for a in fb.residual_avals) for fb in runs]
            assert planned == kept[policy], (form, policy, planned, kept[policy])
            if policy != "none":
                assert kept[policy] == _kept_by_hand(policy), (form, policy)
            fbs += runs
            outputs += sum(_nbytes(o) for st in staged.stages for o in st.outputs)
        total = {policy: sum(k) for policy, k in kept.items()}
        assert total["none"] > total["attention"] > total["selective"] > total["full"], total

        # every stage forward of every policy in one executable: its output bytes are their
        # residuals and outputs (and the output tuple's table, 8 bytes a buffer on CPU)
        def forwards(*args, fbs=fbs):
            return [fb.forward(args[2 * i], args[2 * i + 1]) for i, fb in enumerate(fbs)]

        args = []
        for i in range(len(fbs)):
            st = staged.stages[i % 2]
            args += [list(st.param_avals), [jax.ShapeDtypeStruct(r.aval.shape, r.aval.dtype)
                                            for r in st.receives]]  # fmt: skip
        exe = jax.jit(forwards).lower(*args).compile(fast)
        n = sum(len(fb.forward_jaxpr.out_avals) for fb in fbs)
        measured = exe.memory_analysis().output_size_in_bytes - 8 * n - outputs
        assert measured == sum(total.values()), (form, measured, total)


def test_a_loops_first_carry_made_by_the_stage_is_redone_not_kept():
    """A loop whose first carry the stage makes from its input without a matmul (``tanh(2x)``,
    as stage 0 makes the embedding from the tokens), forwards and in reverse, with per-
    iteration outputs, cut into 2 stages of 2 iterations. Under selective, stage 0 runs its
    first iteration apart (a range of its own) and keeps each iteration's matmul output (the
    ``tanh``'s input) only: the first carry and the second (the first plus its ``tanh``) are
    redone from ``x`` in the backward. Stage 1's loop starts from the activation it receives
    and keeps its two carries and two matmul outputs. Value and gradients equal
    ``jax.value_and_grad`` of the program run directly."""
    L, b, d = 4, 4, 8
    k1, k2 = jax.random.split(jax.random.key(3))
    ws = jax.random.normal(k1, (L, d, d)) / d**0.5
    x = jax.random.normal(k2, (b, d))
    for reverse in (False, True):

        def loss(ws, x, reverse=reverse):
            def body(h, w):
                y = jnp.tanh(h @ w)
                return h + y, jnp.sum(y * y, -1)

            h, ys = jax.lax.scan(body, jnp.tanh(2.0 * x), ws, reverse=reverse)
            # each iteration's output weighted by its place: a misplaced one changes the loss
            # (the last carry summed: no backward reads it)
            return jnp.sum(h) + jnp.sum(ys * jnp.arange(1.0, L + 1)[:, None])

        staged = stages.split(loss, ws, x, num_stages=2)
        assert [st.layers for st in staged.stages] == [2, 2]
        kept = [
            sum(_nbytes(a) for a in st.forward_backward(0, remat="selective").residual_avals)
            for st in staged.stages
        ]
        assert kept == [4 * b * d * 2, 4 * b * d * 4], reverse
        got = staged.value_and_grad(ws, x, remat="selective")
        want = jax.value_and_grad(loss)(ws, x)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-6, err_msg=str(reverse))
        # near-zero entries are sums of terms of the gradients' size: bounded by that size
        scale = float(np.abs(want[1]).max())
        np.testing.assert_allclose(
            got[1], want[1], rtol=1e-5, atol=1e-5 * scale, err_msg=str(reverse)
        )
