"""The step protocol, written once (``runtime/_program.py``): one instruction list per pipeline
and mode, run by the asynchronous controller and the threaded (profiling) interpreter alike.

A small fresh MLP per test where compiles or calls are counted (split here, so that no
executable another test compiled is in the cache): what is asserted is which executables a step
calls and that the interpreters agree. The two tests that count nothing share one pipeline per
schedule (:func:`_shared_pipe`): building one compiles every stage.
"""

from __future__ import annotations

import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from _host_waits import trap_host_waits

import hlopipe
from hlopipe.runtime import Pipeline, _compile
from hlopipe.runtime._compile import ExecKind
from hlopipe.schedules import Kind

M = 4
WAYS_TO_WAIT = {
    "block_until_ready": lambda x: x.block_until_ready(),
    "jax.block_until_ready": lambda x: jax.block_until_ready({"a": x, "b": x + 1}),
    "jax.device_get": lambda x: jax.device_get(x),
    "np.asarray": lambda x: np.asarray(x),
    "np.array": lambda x: np.array(x),
    "float": lambda x: float(x[0]),
    "int": lambda x: int(x[0]),
    "bool": lambda x: bool(x[0] > 0),
    "item": lambda x: x[0].item(),
    "tolist": lambda x: x.tolist(),
    "is_ready polled": lambda x: x.is_ready(),
    "copy_to_host_async": lambda x: x.copy_to_host_async(),
    "index": lambda x: [0, 1][x[0].astype(int)],
}


@pytest.mark.parametrize("way", WAYS_TO_WAIT)
def test_the_host_wait_trap_catches_each_way_to_wait(monkeypatch, way):
    """The trap the step tests below rely on: each way to wait for a device value raises and is
    recorded (and numpy on host values is let through)."""
    x = jnp.arange(4.0) + 1
    waited = trap_host_waits(monkeypatch)
    assert np.asarray([1.0, 2.0]).sum() == 3.0
    with pytest.raises(AssertionError, match="waited on the host"):
        WAYS_TO_WAIT[way](x)
    assert len(waited) == 1, waited


def _loss(p, batch):
    x, y = batch
    h = hlopipe.stage_boundary(jnp.tanh(x @ p["w0"]))
    h = hlopipe.stage_boundary(jnp.tanh(h @ p["w1"]))
    h = hlopipe.stage_boundary(jnp.tanh(h @ p["w2"]))
    return jnp.mean((h @ p["w3"] - y) ** 2)


def _params():
    ks = jax.random.split(jax.random.key(0), 4)
    return {f"w{n}": jax.random.normal(k, (8, 8)) * 0.4 for n, k in enumerate(ks)}


def _batch(seed=1):
    kx, ky = jax.random.split(jax.random.key(seed))
    return jax.random.normal(kx, (16, 8)), jax.random.normal(ky, (16, 8))


def _pipe(schedule):
    return Pipeline(_loss, _params(), _batch(), schedule=schedule, num_microbatches=M,
                    devices=jax.devices()[:4], optimizer=optax.adam(1e-2))  # fmt: skip


@functools.cache
def _shared_pipe(schedule):
    return _pipe(schedule)


def test_a_profiled_zero_bubble_step_compiles_nothing(monkeypatch):
    """Every executable the program calls is compiled when the pipeline is built; the
    profiling interpreter runs the same instructions, so a profiled ZB-H1 step compiles no
    stage executable (it used to compile I and W inside the step it measured)."""
    pipe = _pipe("zb-h1")
    state = pipe.init(_params())
    state, _ = pipe.step(state, _batch())  # the optimizer's jitted functions trace here
    compiled = []
    real = _compile._compile

    def counting(*a, **k):
        compiled.append(a[0])
        return real(*a, **k)

    monkeypatch.setattr(_compile, "_compile", counting)
    state, metrics = pipe.step(state, _batch(2), profile=True)
    assert compiled == []
    assert np.isfinite(metrics.loss)
    # the timeline has one event per action of the lowered schedule, I and W included
    tl = pipe.timeline()
    kinds = {a.kind for evs in tl.events.values() for a, _, _ in evs}
    assert {Kind.F, Kind.I, Kind.W} <= kinds


@pytest.mark.parametrize("schedule", ["1f1b", "zb-h1", "interleaved-1f1b"])
def test_the_interpreters_agree_bit_for_bit(schedule):
    """The asynchronous controller and the profiling interpreter run one program: from one
    state, a normal and a profiled step give the same loss and the same parameters exactly
    (I+W fused or not, where the F and B are fused, are decided once, for both)."""
    pipe = _shared_pipe(schedule)
    a, ma = pipe.step(pipe.init(_params()), _batch())
    b, mb = pipe.step(pipe.init(_params()), _batch(), profile=True)
    assert ma.loss == mb.loss and ma.grad_norm == mb.grad_norm
    for x, y in zip(
        jax.tree.leaves(pipe.gather_params(a)), jax.tree.leaves(pipe.gather_params(b)), strict=True
    ):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("schedule", ["1f1b", "zb-h1"])
def test_one_program_per_mode_and_the_decided_fusions(schedule):
    """The program is built once per pipeline and mode; an I directly followed on its rank by
    its W runs as one B (the W action is a mark), and a loss stage's F directly followed by
    its B runs as one FB (the B action is a mark), in the program every interpreter runs."""
    pipe = _shared_pipe(schedule)
    prog = pipe._program(train=True)
    assert pipe._program(train=True) is prog
    plan = prog.plan
    # 1F1B's last stage runs F then B; ZB-H1's first stage runs I then W at the end
    assert plan.fused if schedule == "1f1b" else plan.fused_iw
    by_action = {}
    for ins in prog.instrs:
        by_action.setdefault(ins.where[2], []).append(ins)
    for s, i in plan.fused_iw:
        at_i = by_action[(s, Kind.I, i)]
        assert [x.fn for x in at_i if x.op == "compute"] == [(s, ExecKind.B)]
        assert [x.op for x in by_action[(s, Kind.W, i)]] == ["mark"]
    for s, i in plan.fused:
        assert [x.fn for x in by_action[(s, Kind.F, i)] if x.op == "compute"] == [(s, ExecKind.FB)]
        assert [x.op for x in by_action[(s, Kind.B, i)]] == ["mark"]
    # an I not directly followed by its W runs apart, and both are in the compiled kinds
    apart = [(s, i) for (s, k, i) in by_action if k is Kind.I and (s, i) not in plan.fused_iw]
    for s, i in apart:
        assert [x.fn for x in by_action[(s, Kind.W, i)] if x.op == "compute"] == [(s, ExecKind.W)]
        assert (s, ExecKind.I) in prog.kinds and (s, ExecKind.W) in prog.kinds


def test_the_loss_cotangent_is_made_once(monkeypatch):
    calls = []
    real = Pipeline._loss_ct

    def spy(self):
        calls.append(1)
        return real(self)

    monkeypatch.setattr(Pipeline, "_loss_ct", spy)
    pipe = _pipe("1f1b")
    state = pipe.init(_params())
    for seed in (1, 2):
        state, _ = pipe.step(state, _batch(seed))
    pipe.step(state, _batch(3), profile=True)
    assert len(calls) == 1


def test_a_step_waits_for_nothing_on_the_host(monkeypatch):
    """No value comes back from the devices during a step (the losses and the gradient norm
    are reduced there, floats only when read), so steps can be enqueued back to back: no way to
    wait on the host (:func:`trap_host_waits`) is taken; read afterwards, the loss and norm
    are the step's."""
    pipe = Pipeline(_loss, _params(), _batch(), schedule="1f1b", num_microbatches=M,
                    devices=jax.devices()[:4], optimizer=optax.sgd(0.1))  # fmt: skip
    state = pipe.init(_params())
    batches = {seed: _batch(seed) for seed in (1, 2)}
    metrics = []
    waited = trap_host_waits(monkeypatch)
    for seed in (1, 2):
        state, m = pipe.step(state, batches[seed])
        metrics.append(m)
    monkeypatch.undo()
    assert waited == []
    p, opt = _params(), optax.sgd(0.1)
    s = opt.init(p)
    for seed, m in zip((1, 2), metrics, strict=True):
        loss, g = jax.value_and_grad(_loss)(p, _batch(seed))
        norm = optax.tree.norm(g)
        u, s = opt.update(g, s, p)
        p = optax.apply_updates(p, u)
        assert m.loss == pytest.approx(float(loss), rel=1e-5)
        assert m.grad_norm == pytest.approx(float(norm), rel=1e-5)


def test_a_clipped_adamw_step_waits_for_nothing_on_the_host(monkeypatch):
    """With a global-norm clip before AdamW (the one cross-stage transformation) the norm is
    summed and sent between the stages on their devices: no value comes back to the host
    during a step; afterwards the parameters, loss and norm are one device's."""
    opt = optax.chain(optax.clip_by_global_norm(0.05), optax.adamw(1e-2, weight_decay=0.1))
    pipe = Pipeline(_loss, _params(), _batch(), schedule="1f1b", num_microbatches=M,
                    devices=jax.devices()[:4], optimizer=opt)  # fmt: skip
    state = pipe.init(_params())
    state, _ = pipe.step(state, _batch(3))  # the optimizer's jitted functions trace here
    batches = {seed: _batch(seed) for seed in (1, 2)}
    metrics = []
    waited = trap_host_waits(monkeypatch)
    for seed in (1, 2):
        state, m = pipe.step(state, batches[seed])
        metrics.append(m)
    monkeypatch.undo()
    assert waited == []
    p = _params()
    s = opt.init(p)
    for seed, m in zip((3, 1, 2), [None, *metrics], strict=True):
        loss, g = jax.value_and_grad(_loss)(p, _batch(seed))
        norm = optax.tree.norm(g)
        assert float(norm) > 0.05  # the clip is active
        u, s = opt.update(g, s, p)
        p = optax.apply_updates(p, u)
        if m is not None:
            assert m.loss == pytest.approx(float(loss), rel=1e-5)
            assert m.grad_norm == pytest.approx(float(norm), rel=1e-5)
    got = jax.device_get(state.params)
    for k in p:
        np.testing.assert_allclose(got[k], np.asarray(p[k]), rtol=1e-5, atol=1e-6)


def test_print_shows_each_ranks_mesh_axes_devices_and_processes():
    def loss(p, b):
        x, y = b
        return jnp.mean((hlopipe.stage_boundary(jnp.tanh(x @ p["w0"])) @ p["w1"] - y) ** 2)

    pipe = Pipeline(loss, _params(), _batch(), num_microbatches=2, devices=jax.devices()[:8],
                    stage_mesh_shape=(2, 2), stage_mesh_axes=("data", "model"))  # fmt: skip
    lines = str(pipe).splitlines()
    assert lines[0].startswith("Pipeline(2 stages, schedule '1f1b', 2 ranks x 4 devices")
    assert lines[1:] == [
        "  rank 0: stages [0], mesh 2x2 (data, model), devices [0, 1, 2, 3], process 0",
        "  rank 1: stages [1], mesh 2x2 (data, model), devices [4, 5, 6, 7], process 0",
    ]


def test_every_action_kind_maps_to_one_executable_or_none():
    """``executable_of`` answers for every ``Kind`` (the table written out from the rules in
    ``runtime/_program.py``'s docstring): a forward is INFER, F or FB; a B fused into an FB and
    a W fused into its I's B run nothing; sends and receives run nothing; an overlap is refused
    (a step runs its parts)."""
    E = ExecKind
    want = {  # (kind, train, fused_fb, fused_iw) -> executable, flags not listed irrelevant
        (Kind.F, False, False, False): E.INFER,
        (Kind.F, True, False, False): E.F,
        (Kind.F, True, True, False): E.FB,
        (Kind.B, True, False, False): E.B,
        (Kind.B, True, True, False): None,
        (Kind.I, True, False, False): E.I,
        (Kind.I, True, False, True): E.B,
        (Kind.W, True, False, False): E.W,
        (Kind.W, True, False, True): None,
    }
    for (kind, train, fb, iw), exe in want.items():
        assert _compile.executable_of(kind, train=train, fused_fb=fb, fused_iw=iw) is exe
    for kind in Kind:
        for train, fb, iw in itertools.product((False, True), repeat=3):
            if kind is Kind.OVERLAP_F_B:
                with pytest.raises(hlopipe.errors.ScheduleError, match="split_overlaps"):
                    _compile.executable_of(kind, train=train, fused_fb=fb, fused_iw=iw)
                continue
            got = _compile.executable_of(kind, train=train, fused_fb=fb, fused_iw=iw)
            if kind in (Kind.SEND_F, Kind.RECV_F, Kind.SEND_B, Kind.RECV_B):
                assert got is None
            else:
                assert got is None or isinstance(got, ExecKind)
