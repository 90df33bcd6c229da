"""Plans at real size (issue 32, part 7): a Llama-shaped loss at 70B's dimensions split from
abstract arguments, cut between layers (ties broken at layer boundaries, from Python and from
HLO text), the layers each stage holds, named devices and the per-stage memory report under a
schedule. Oracles: closed forms (parameter bytes from the model's shapes, 1F1B's
``min(S - s, M)`` microbatches in flight, GPipe's ``M``), the pytree's own flattening."""

import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hlopipe
from hlopipe import schedules, stages
from hlopipe.cli import main
from hlopipe.errors import StageError
from hlopipe.models import llama


def _hlo(cfg):
    return jax.jit(llama.loss_fn(cfg)).lower(*llama.abstract_args(cfg)).as_text("hlo")


def _layer_leaves(cfg):
    """Per layer, the flat argument indices of its parameters, from the pytree itself
    (``(params, tokens, labels)`` flattened in order), and the count of parameter leaves."""
    params, tokens, labels = llama.abstract_args(cfg)
    leaves = jax.tree_util.tree_flatten_with_path((params, tokens, labels))[0]
    per_layer = [[] for _ in range(cfg.layers)]
    for i, (path, _) in enumerate(leaves):
        keys = [getattr(k, "key", getattr(k, "idx", None)) for k in path]
        if keys[:2] == [0, "layers"]:
            per_layer[keys[2]].append(i)
    return per_layer, len(jax.tree_util.tree_leaves(params))


# --- how many microbatches a stage holds ----------------------------------------------------


@pytest.mark.parametrize("num_stages", [2, 4])
@pytest.mark.parametrize("num_microbatches", [1, 3, 8])
def test_in_flight_is_1f1bs_min_of_stages_left_and_microbatches_and_gpipes_all(
    num_stages, num_microbatches
):
    s, m = num_stages, num_microbatches
    one_f_one_b = schedules.get("1f1b", num_ranks=s, num_microbatches=m)
    assert schedules.peak_in_flight(one_f_one_b) == tuple(min(s - k, m) for k in range(s))
    gpipe = schedules.get("gpipe", num_ranks=s, num_microbatches=m)
    assert schedules.peak_in_flight(gpipe) == (m,) * s


# --- cuts at layer boundaries ----------------------------------------------------------------


@pytest.mark.parametrize("source", ["python", "hlo"])
@pytest.mark.parametrize(("layers", "num_stages"), [(2, 2), (4, 2), (3, 3)])
def test_a_small_llama_is_cut_between_layers(source, layers, num_stages):
    """After attention and after the MLP the same one value crosses (the residual stream):
    the cut falls where a layer ends, so each stage reads whole layers' parameters, the first
    stage the embedding, and only the residual stream is sent."""
    cfg = llama.SMALL._replace(layers=layers)
    fn, args = llama.loss_fn(cfg), llama.abstract_args(cfg)
    if source == "hlo":
        staged = hlopipe.split(hlopipe.load(_hlo(cfg)), num_stages=num_stages)
    else:
        staged = hlopipe.split(fn, *args, num_stages=num_stages)
    per = layers // num_stages
    assert [st.layers for st in staged.stages] == [per] * num_stages
    per_layer, _ = _layer_leaves(cfg)
    for s, st in enumerate(staged.stages):
        mine = set(st.params_needed)
        for k in range(layers):
            held = set(per_layer[k]) & mine
            expect = s * per <= k < (s + 1) * per
            assert held == (set(per_layer[k]) if expect else set()), (s, k)
        residual = [(1, cfg.seq, cfg.d)] if s else []
        assert [r.aval.shape for r in st.receives] == residual


def test_a_70b_shaped_loss_splits_into_stages_of_five_layers_sending_the_residual_stream():
    """80 layers at 70B's dimensions (d 8192, ff 28672, 64 heads sharing 8 K/V heads), from
    abstract arguments: 16 stages of 5 layers, each receiving only ``[1, 2048, 8192]`` bf16."""
    cfg = llama.LLAMA_70B
    staged = hlopipe.split(llama.loss_fn(cfg), *llama.abstract_args(cfg), num_stages=16)
    assert [st.layers for st in staged.stages] == [5] * 16
    for st in staged.stages[1:]:
        assert [(r.aval.shape, r.aval.dtype) for r in st.receives] == [
            ((1, 2048, 8192), jnp.bfloat16)
        ]
    report = staged.memory_report("h200", schedule="1f1b", num_microbatches=32)
    d, kv, ff = cfg.d, cfg.num_kv_heads * cfg.head_dim, cfg.ff
    layer_elements = 2 * d + 2 * d * d + 2 * d * kv + 3 * d * ff  # norms, q/o, k/v, MLP
    middle = report.stages[7]
    assert middle.params == middle.grads == 5 * layer_elements * 2  # bf16
    assert middle.optimizer == 5 * layer_elements * 8  # Adam: two fp32 moments
    assert [m.in_flight for m in report.stages] == [16 - s for s in range(16)]


def test_70b_dimensions_from_hlo_text_are_cut_between_layers():
    cfg = llama.LLAMA_70B._replace(layers=8)
    staged = hlopipe.split(hlopipe.load(_hlo(cfg)), num_stages=4)
    assert [st.layers for st in staged.stages] == [2] * 4
    assert [[r.aval.shape for r in st.receives] for st in staged.stages] == [[]] + [
        [(1, 2048, 8192)]
    ] * 3


# --- the memory report -------------------------------------------------------------------


@pytest.mark.parametrize(("schedule", "in_flight"), [("1f1b", (2, 1)), ("gpipe", (6, 6))])
def test_memory_report_counts_parameters_gradients_adam_and_in_flight_activations(
    schedule, in_flight
):
    cfg = llama.SMALL._replace(layers=4)
    staged = hlopipe.split(llama.loss_fn(cfg), *llama.abstract_args(cfg), num_stages=2)
    report = stages.memory_report(staged, "a100-40gb", schedule=schedule, num_microbatches=6)
    shapes = llama._param_shapes(cfg)
    elements = [
        math.prod(shapes["embed"]) + sum(math.prod(s) for s in shapes["layers"][0].values()) * 2,
        math.prod(shapes["norm"]) + math.prod(shapes["head"])
        + sum(math.prod(s) for s in shapes["layers"][0].values()) * 2,
    ]  # fmt: skip
    for m, n, held in zip(report.stages, elements, in_flight, strict=True):
        assert (m.params, m.grads, m.optimizer) == (4 * n, 4 * n, 8 * n)  # f32, Adam
        assert m.in_flight == held and m.layers == 2
        assert m.activations == held * m.activations_per_microbatch > 0
        assert m.total == m.params + m.grads + m.optimizer + m.activations
    assert report.fits() and report.device.memory_bytes == 40 * 10**9
    sgd = staged.memory_report("a100-40gb", schedule=schedule, num_microbatches=6,
                               optimizer="sgd")  # fmt: skip
    assert [m.optimizer for m in sgd.stages] == [0, 0]
    text = report.render()
    assert "a100-40gb" in text and "in flight" in text and schedule in text


def test_an_interleaved_rank_holds_the_sum_of_its_stages():
    cfg = llama.SMALL._replace(layers=4)
    staged = hlopipe.split(llama.loss_fn(cfg), *llama.abstract_args(cfg), num_stages=4)
    report = staged.memory_report("cpu", schedule="interleaved-1f1b", num_microbatches=4)
    assert [m.rank for m in report.stages] == [0, 1, 0, 1]
    totals = report.rank_totals()
    assert totals[0] == report.stages[0].total + report.stages[2].total


def test_devices_by_name_their_cost_model_and_a_memory_cap_from_one():
    assert stages.device("H100") is stages.device("h100") is stages.DEVICES["h100"]
    assert stages.device("A100") is stages.DEVICES["a100-80gb"]
    with pytest.raises(StageError, match=r"device=tpu9: unknown device; known devices: cpu, "):
        stages.device("tpu9")
    cfg = llama.SMALL._replace(layers=4)
    fn, args = llama.loss_fn(cfg), llama.abstract_args(cfg)
    assert hlopipe.split(fn, *args, num_stages=2, device="h100").cost_model.flops_per_s == 67e12
    bf16 = cfg._replace(dtype=jnp.bfloat16)
    staged = hlopipe.split(llama.loss_fn(bf16), *llama.abstract_args(bf16), num_stages=2,
                           device="h100")  # fmt: skip
    assert staged.cost_model.flops_per_s == 989e12  # the datasheet's dense BF16
    tiny = stages.Device("tiny", 1e12, 1e12, 1e11, 100_000, 1e10)
    with pytest.raises(StageError, match="fits the memory cap of 100000 bytes"):
        hlopipe.split(fn, *args, num_stages=2, memory_cap=stages.memory_cap(tiny))


# --- the command -------------------------------------------------------------------------


def test_split_command_reports_layers_and_memory_on_a_device(tmp_path, capsys):
    cfg = llama.SMALL._replace(layers=4)
    path = tmp_path / "llama.hlo"
    path.write_text(_hlo(cfg))
    out = tmp_path / "out"
    argv = ["split", str(path), "--stages", "2", "-o", str(out), "--no-autodiff",
            "--device", "h100", "--microbatches", "8"]  # fmt: skip
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "memory per stage on h100" in text and "1f1b with 8 microbatches" in text
    m = json.loads((out / "manifest.json").read_text())
    assert [st["layers"] for st in m["stages"]] == [2, 2]
    assert main(["split", str(path), "--stages", "2", "-o", str(tmp_path / "x"),
                 "--device", "tpu9"]) == 2  # fmt: skip
    assert capsys.readouterr().err.startswith("error: --device tpu9: unknown device")
    assert main(["inspect", str(path), "--device", "h200", "--no-cost"]) == 0
    assert "device h200: bf16 989 TFLOP/s" in capsys.readouterr().out
    params = np.array([math.prod(a.shape) for a in jax.tree.leaves(llama.abstract_args(cfg)[0])])
    assert main(["inspect", str(path), "--device", "h200", "--no-cost", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["device"]["float_argument_bytes"] == 4 * params.sum()


def _uneven_first_layer(params, x):
    """Layers of an attention-like half (``a_q``, ``c_o``) and an MLP-like half (``b_up``),
    whose parameters interleave when flattened; layer 0's first half has one more op, so the
    repetition starts inside layer 0 and only the residual stream crosses after either half."""
    h = x
    for k, p in enumerate(params):
        a = jnp.tanh(h @ p["a_q"])
        h = h + (a * 1.5 if k == 0 else a) @ p["c_o"]
        h = h + jnp.sin(h @ p["b_up"])
    return jnp.sum(h * h)


def test_on_a_tie_the_cut_is_where_a_layer_reads_its_parameters_together():
    d = 8
    layer = {k: jax.ShapeDtypeStruct((d, d), jnp.float32) for k in ("a_q", "b_up", "c_o")}
    params = [dict(layer) for _ in range(4)]
    staged = hlopipe.split(_uneven_first_layer, params, jax.ShapeDtypeStruct((2, d),
                           jnp.float32), num_stages=2)  # fmt: skip
    assert [sorted(st.params_needed) for st in staged.stages] == [
        [*range(6), 12],  # layers 0 and 1 (and x)
        list(range(6, 12)),  # layers 2 and 3
    ]


def _two_layer_loss(params, x, y):
    h = jnp.tanh(x @ params["w1"])
    return jnp.mean((h @ params["w2"] - y) ** 2)


def test_train_command_prints_the_memory_of_its_own_schedule(tmp_path, capsys):
    sds = jax.ShapeDtypeStruct
    args = ({"w1": sds((3, 4), jnp.float32), "w2": sds((4, 2), jnp.float32)},
            sds((4, 3), jnp.float32), sds((4, 2), jnp.float32))  # fmt: skip
    path = tmp_path / "mlp.hlo"
    path.write_text(jax.jit(_two_layer_loss).lower(*args).as_text(dialect="hlo"))
    base = ["train", str(path), "--stages", "2", "--stage-devices", "1", "--steps", "1",
            "--microbatches", "4", "--schedule", "gpipe"]  # fmt: skip
    assert main([*base, "--device", "tpu9"]) == 2
    assert "error: --device tpu9: unknown device" in capsys.readouterr().err
    assert main([*base, "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "memory per stage on cpu" in out and "gpipe with 4 microbatches" in out
    rows = [line.split() for line in out.splitlines() if line.split()[:2] in (["0", "0"],
            ["1", "1"])]  # fmt: skip
    assert [r[11] for r in rows] == ["4", "4"]  # GPipe holds every microbatch
    params = {int(r[0]): int(r[3]) for r in rows}  # bytes of the parameters (not x or y)
    assert sum(params.values()) == 4 * (12 + 8)  # w1 and w2 in f32


@pytest.mark.parametrize(("n_layers", "num_stages"), [(4, 2), (6, 3)])
def test_a_layer_loop_cut_into_stages_says_how_many_layers_each_holds(n_layers, num_stages):
    from hlopipe.models import gpt, gpt_scan

    cfg = gpt.GPTConfig(n_layers=n_layers)
    params = jax.eval_shape(lambda k: gpt_scan.init(k, cfg), jax.random.key(0))
    batch = jax.eval_shape(lambda k: gpt.batch(k, 2, cfg), jax.random.key(1))
    staged = hlopipe.split(lambda p, b: gpt_scan.loss(p, b, cfg), params, batch,
                           num_stages=num_stages)  # fmt: skip
    assert [st.layers for st in staged.stages] == [n_layers // num_stages] * num_stages
