"""Layer loops (a scan over parameters stacked [L, ...]) split by ranges of iterations.

The scanned GPT (8 blocks stacked, one lax.scan), as a JAX function (scan and fori_loop), as
HLO text, StableHLO and post-optimisation HLO; loops that are not layer stacks stay whole,
with the reason. JAX is the oracle.
"""

from __future__ import annotations

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import hlopipe
from hlopipe.models import gpt, gpt_scan
from hlopipe.stages import describe_loops

CFG = gpt.GPTConfig(vocab=16, seq=8, d_model=16, n_heads=2, n_layers=8, d_ff=32)
L = CFG.n_layers


@functools.cache
def _params():
    return gpt_scan.init(jax.random.key(0), CFG)


@functools.cache
def _batch():
    return gpt.batch(jax.random.key(1), 4, CFG)


def _loss(fori: bool):
    return functools.partial(gpt_scan.loss, cfg=CFG, fori=fori)


@functools.cache
def _split(fori: bool, S: int):
    """The scanned GPT split into ``S`` stages, once per module (several tests read it)."""
    return hlopipe.split(_loss(fori), _params(), _batch(), num_stages=S)


def _stacked_rows(staged, s: int) -> list[int]:
    """Rows of each block parameter (the stacked ones) stage ``s`` holds, its pieces summed
    (a cut loop's first iteration is a range of its own, with its own rows)."""
    st = staged.stage(s)
    rows: dict[str, int] = {}
    for a, p in zip(st.param_avals, st.param_paths, strict=True):
        if "blocks" in p:
            leaf = re.sub(r"\[\d+:\d+\]$", "", p)
            rows[leaf] = rows.get(leaf, 0) + a.shape[0]
    return list(rows.values())


def _held_rows(staged, s: int) -> list[tuple[int, int]]:
    """The rows ``[start, stop)`` of each caller argument stage ``s`` holds pieces of, its
    pieces joined (they are contiguous)."""
    held: dict[int, tuple[int, int]] = {}
    for pc in (staged.arg_pieces[i] for i in staged.stage(s).params_needed):
        if pc.start is not None:
            lo, hi = held.get(pc.source, (pc.start, pc.start))
            assert hi == pc.start, (held, pc)
            held[pc.source] = (lo, pc.stop)
    return list(held.values())


def _flops(fn, *args) -> float:
    """XLA's count of the floating-point operations of ``fn`` compiled for ``args``."""
    cost = jax.jit(fn).lower(*args).compile().cost_analysis()
    return float((cost[0] if isinstance(cost, list) else cost)["flops"])


@functools.cache
def _part_flops() -> tuple[float, float, float]:
    """The FLOPs XLA counts for the scanned GPT's parts, each compiled alone from the model's
    own functions (not from the split, nor the cost model): the embedding, one block, and the
    final norm with the head and the loss. (XLA counts a loop's body once, so the stages' own
    executables cannot be measured whole.)"""
    p, (tokens, targets) = _params(), _batch()

    def embed(p, tokens):
        return p["embed"][tokens] + p["pos"][: tokens.shape[1]]

    def head(p, x, targets):
        logp = jax.nn.log_softmax(gpt.layer_norm(p["ln_f"], x) @ p["embed"].T, axis=-1)
        return -jnp.take_along_axis(logp, targets[..., None], axis=-1)[..., 0].mean()

    x = embed(p, tokens)
    one_block = jax.tree.map(lambda w: w[0], p["blocks"])
    block = functools.partial(gpt.block, n_heads=CFG.n_heads)
    return _flops(embed, p, tokens), _flops(block, one_block, x), _flops(head, p, x, targets)


def _compositions(total: int, parts: int):
    """Every way to write ``total`` as ``parts`` positive integers, in order."""
    if parts == 1:
        yield (total,)
        return
    for first in range(1, total - parts + 2):
        for rest in _compositions(total - first, parts - 1):
            yield (first, *rest)


def _assert_balanced(layers_per_stage: list[int]) -> None:
    """The layers each stage holds (counted from its parameters) cost, in XLA's FLOPs of the
    model's parts, as little as the best of every contiguous split (brute force): the slowest
    stage's FLOPs are the least any split of the L layers into these stages reaches."""
    embed, block, head = _part_flops()

    def slowest(rows) -> float:
        per_stage = [n * block for n in rows]
        per_stage[0] += embed
        per_stage[-1] += head
        return max(per_stage)

    assert sum(layers_per_stage) == L, layers_per_stage
    best = min(slowest(rows) for rows in _compositions(L, len(layers_per_stage)))
    assert slowest(layers_per_stage) <= best * (1 + 1e-9), (layers_per_stage, best, block)


def _max_diff(a, b) -> float:
    return max(
        float(jnp.max(jnp.abs(x - y)))
        for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)
    )


@pytest.mark.parametrize("fori", [False, True], ids=["scan", "fori_loop"])
@pytest.mark.parametrize("S", [2, 4, 8])
def test_scanned_gpt_splits_into_balanced_ranges(S, fori):
    staged = _split(fori, S)
    assert staged.num_stages == S
    (loop,) = [r for r in staged.loops if r.splittable]
    assert loop.length == L and loop.num_params == 10
    for s in range(S):  # each stage holds L/S rows of each of the 10 stacked parameters
        assert _stacked_rows(staged, s) == [L // S] * 10
    _assert_balanced([_stacked_rows(staged, s)[0] for s in range(S)])


@pytest.mark.parametrize("fori,S,iw", [(False, 4, True), (True, 2, False)],
                         ids=["scan-4-stages-I-W", "fori_loop-2-stages"])  # fmt: skip
def test_scanned_gpt_stages_differentiate_like_jax(fori, S, iw):
    loss = _loss(fori)
    p, b = _params(), _batch()
    staged = _split(fori, S)
    ref_loss, ref_g = jax.value_and_grad(loss)(p, b)
    got_loss, got_g = staged.value_and_grad(p, b, split_backward=iw)
    assert abs(float(got_loss) - float(ref_loss)) <= 1e-5
    assert jax.tree.structure(got_g) == jax.tree.structure(ref_g)
    assert _max_diff(got_g, ref_g) <= 1e-5


def test_parameter_bytes_per_stage_fall_as_one_over_stages():
    p = _params()
    block_bytes = sum(x.nbytes for x in jax.tree.leaves(p["blocks"]))
    for S in (2, 4, 8):
        staged = _split(False, S)
        held = [
            sum(
                a.size * a.dtype.itemsize
                for a, n in zip(st.param_avals, st.param_paths, strict=True)
                if "blocks" in n
            )
            for st in staged.stages
        ]  # fmt: skip
        assert held == [block_bytes // S] * S
        table = repr(staged)
        assert "cut by the cost model" in table and f"{S} stages" in table


def test_the_caller_tree_round_trips_through_the_pieces():
    p, b = _params(), _batch()
    staged = _split(False, 4)
    flat = jax.tree.leaves((p, b))
    pieces = staged.expand_flat(flat)
    assert len(pieces) == len(staged.in_avals) > len(flat)
    assert [tuple(x.shape) for x in pieces] == [tuple(a.shape) for a in staged.in_avals]
    back = staged.gather_flat(pieces)
    assert all(np.array_equal(x, y) for x, y in zip(back, flat, strict=True))
    assert any("['blocks']['qkv'][2:4]" in n for n in staged.in_paths)


@pytest.fixture(scope="module")
def program_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("scanned")
    lowered = jax.jit(_loss(False)).lower(_params(), _batch())
    files = {
        "hlo": (lowered.as_text(dialect="hlo"), "m.hlo"),
        "stablehlo": (lowered.as_text(), "m.mlir"),
        "optimized": (lowered.compile().as_text(), "m.opt.hlo"),
    }
    out = {}
    for k, (text, name) in files.items():
        (d / name).write_text(text)
        out[k] = str(d / name)
    return out


@pytest.mark.parametrize("kind", ["hlo", "stablehlo", "optimized"])
def test_scanned_gpt_program_file_splits_into_ranges(program_files, kind):
    prog = hlopipe.load(program_files[kind])
    flat = jax.tree.leaves((_params(), _batch()))
    n_params = len(jax.tree.leaves(_params()))
    want = float(_loss(False)(_params(), _batch()))
    lines = describe_loops(prog)
    assert lines == [
        "while loop of 8 iterations over 10 stacked parameters: splittable into ranges"
    ]
    splits = {}
    for S in (2, 4, 8):
        staged = splits[S] = hlopipe.split(prog, num_stages=S)
        held = []
        for s in range(S):
            rows = _held_rows(staged, s)
            assert rows == [(s * L // S, (s + 1) * L // S)] * 10
            held.append(rows[0][1] - rows[0][0])
        _assert_balanced(held)
    out = staged(*flat)
    assert abs(float(out) - want) <= 1e-5
    if kind != "hlo":
        return
    # gradients of the rehydrated program (its 2-stage split, checked above) equal JAX's
    got_loss, got = splits[2].value_and_grad(*flat, argnums=tuple(range(n_params)))
    ref = jax.tree.leaves(jax.grad(_loss(False))(_params(), _batch()))
    assert abs(float(got_loss) - want) <= 1e-5
    assert max(float(jnp.max(jnp.abs(x - y))) for x, y in zip(got, ref, strict=True)) <= 1e-5


def test_markers_win_over_layer_loops():
    def f(p, b):
        tokens, _ = b
        x = p["embed"][tokens] + p["pos"][: tokens.shape[1]]
        x = hlopipe.stage_boundary(x)
        x, _ = lax.scan(lambda h, w: (gpt.block(w, h, CFG.n_heads), None), x, p["blocks"])
        return jnp.mean(x)

    staged = hlopipe.split(f, _params(), _batch())
    assert staged.num_stages == 2 and staged.partition is None
    assert _stacked_rows(staged, 1) == [L] * 10  # the loop stays whole, after the marker


# -- loops that are not layer stacks -------------------------------------------------------------

W = jnp.linspace(-1.0, 1.0, L * 8 * 8).reshape(L, 8, 8) * 0.3
X = jnp.ones((2, 8))


def _whole_reader(w, x):
    x = jnp.tanh(x * 2.0)
    h = lax.fori_loop(0, L, lambda i, h: jnp.tanh(h @ jnp.mean(w, 0)), x)
    return jnp.sum(jnp.sin(h) ** 2)


def _data_dependent(w, x):
    x = jnp.tanh(x * 2.0)
    h = lax.while_loop(lambda c: jnp.sum(c[1]) < 50.0, lambda c: (c[0] + 1, c[1] * 2 + 1), (0, x))
    return jnp.sum(jnp.sin(h[1] @ w[0]) ** 2)


@pytest.mark.parametrize(
    "fn,reason",
    [
        (_whole_reader, "its body reads the whole of operand 0 (float32[8, 8, 8])"),
        (_data_dependent, "trip count is not known when the program is traced"),
    ],
    ids=["reads-whole-array", "data-dependent-trip-count"],
)
def test_a_loop_that_is_no_layer_stack_stays_whole_with_the_reason(fn, reason):
    (line,) = describe_loops(fn, W, X)
    assert "left whole" in line and reason in line, line
    staged = hlopipe.split(fn, W, X, num_stages=2)
    assert staged.arg_pieces is None
    loops = [e for st in staged.stages for e in st.jaxpr.jaxpr.eqns
             if e.primitive.name in ("scan", "while")]  # fmt: skip
    assert len(loops) == 1  # one loop, whole, in one stage
    np.testing.assert_allclose(staged(W, X), fn(W, X), rtol=1e-6)


def test_a_scan_with_only_per_iteration_data_is_cut_and_the_whole_read_operand_is_shared():
    """xs are stacked; an operand read whole goes to every stage that runs a range."""
    v = jnp.ones((8, 8)) * 0.1

    def f(w, v, x):
        h, ys = lax.scan(lambda h, wi: (jnp.tanh(h @ wi + h @ v), jnp.sum(h)), x, w)
        return jnp.sum(h**2) + jnp.sum(ys)

    staged = hlopipe.split(f, W, v, X, num_stages=4)
    assert [st.param_avals[0].shape[0] for st in staged.stages] == [2, 2, 2, 2]
    assert all(any(a.shape == (8, 8) for a in st.param_avals) for st in staged.stages)
    ref = jax.value_and_grad(f, argnums=(0, 1))(W, v, X)
    got = staged.value_and_grad(W, v, X, argnums=(0, 1))
    assert abs(float(got[0]) - float(ref[0])) <= 1e-5
    assert _max_diff(got[1], ref[1]) <= 1e-5


def test_a_reversed_scan_is_cut_into_reversed_ranges():
    def f(w, x):
        h, ys = lax.scan(lambda h, wi: (jnp.tanh(h @ wi), h[0, 0]), x, w, reverse=True)
        return jnp.sum(h**2) + jnp.sum(ys * jnp.arange(L))

    staged = hlopipe.split(f, W, X, num_stages=2)
    assert staged.arg_pieces is not None
    ref = jax.value_and_grad(f)(W, X)
    got = staged.value_and_grad(W, X)
    assert abs(float(got[0]) - float(ref[0])) <= 1e-5
    assert _max_diff(got[1], ref[1]) <= 1e-5


def test_a_loop_reading_rows_out_of_step_with_its_counter_stays_whole():
    """``W[L - 1 - i]`` is not the row at the loop index: cutting it by ranges of rows would
    hand each stage the wrong layers, so the loop stays whole (and the result stays right)."""

    def f(w, x):  # w has 2L rows: rows L-1 .. 0 are read, all within bounds
        h = lax.fori_loop(0, L, lambda i, h: jnp.tanh(h @ w[L - 1 - i]), jnp.tanh(x * 2.0))
        return jnp.sum(jnp.sin(h) ** 2)

    w2 = jnp.concatenate([W, W[::-1] * 0.5])
    (line,) = describe_loops(f, w2, X)
    assert "left whole" in line and "not read at the loop index" in line, line
    staged = hlopipe.split(f, w2, X, num_stages=2)
    assert staged.arg_pieces is None
    np.testing.assert_allclose(staged(w2, X), f(w2, X), rtol=1e-6)


def test_inspect_says_what_splitting_makes_of_the_loop(program_files, capsys):
    from hlopipe.cli import main

    assert main(["inspect", program_files["hlo"], "--no-cost"]) == 0
    out = capsys.readouterr().out
    assert (
        "loop: while loop of 8 iterations over 10 stacked parameters: splittable into ranges" in out
    )
    assert main(["inspect", program_files["hlo"], "--no-cost", "--json"]) == 0
    assert '"loops": [' in capsys.readouterr().out
