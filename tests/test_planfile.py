"""The plan file: its JSON round-trips, and each malformed field is an error naming it."""

from __future__ import annotations

import json
import re

import pytest

from hlopipe.errors import PlanFileError
from hlopipe.planfile import (
    Alternative,
    Cluster,
    Layout,
    Memory,
    PlanFile,
    Recompute,
    load_plan,
)


def _plan() -> PlanFile:
    layout = Layout(
        tp=2,
        pp=2,
        dp=2,
        cp=1,
        zero=1,
        recompute=Recompute.SELECTIVE,
        schedule="1f1b",
        virtual_stages=1,
        microbatch_size=2,
        microbatches=4,
        stage_layers=(3, 1),
        param_specs=("*wq*=None,model",),
    )
    other = Layout(
        tp=1,
        pp=4,
        dp=2,
        cp=1,
        zero=0,
        recompute=Recompute.FULL,
        schedule="interleaved",
        virtual_stages=2,
        microbatch_size=1,
        microbatches=8,
    )
    return PlanFile(
        cluster=Cluster("cpu", 8, 8, 10.0, 1.0),
        global_batch=16,
        layout=layout,
        program_path="model.hlo",
        program_sha256="ab" * 32,
        step_time_s=1.5,
        memory_per_device_bytes=123,
        memory=Memory(params=100, activations=23),
        fits=True,
        notes=("a note",),
        alternatives=(Alternative(other, 2.0, 99, True),),
    )


def test_round_trip(tmp_path):
    plan = _plan()
    path = tmp_path / "plan.json"
    plan.write(path)
    back = load_plan(path)
    assert back == plan
    assert back.layout.devices_needed == 8
    assert back.layout.recompute is Recompute.SELECTIVE
    obj = json.loads(path.read_text())
    assert obj["format"] == "hlopipe-plan" and obj["version"] == 1
    assert obj["plan"]["stage_layers"] == [3, 1] and obj["plan"]["zero"] == 1


def _edit(path: tuple[str, ...], value: object) -> str:
    obj = _plan().to_dict()
    target = obj
    for k in path[:-1]:
        target = target[k]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return json.dumps(obj)


@pytest.mark.parametrize(
    "path, value, named",
    [
        (("plan", "zero"), 4, "plan.zero"),
        (("plan", "recompute"), "some", "plan.recompute"),
        (("plan", "tp"), 0, "plan.tp"),
        (("plan", "tp"), True, "plan.tp"),
        (("plan", "stage_layers"), [4], "plan.stage_layers"),
        (("plan", "stage_mesh_axes"), ["data", "data"], "plan.stage_mesh_axes"),
        (("plan", "param_specs"), ["nospec"], "plan.param_specs[0]"),
        (("plan", "bogus"), 1, "plan.bogus"),
        (("plan", "microbatches"), KeyError, "plan.microbatches"),
        (("cluster", "devices"), 4, "plan"),  # needs 8
        (("cluster", "intra_node_gbps"), "fast", "cluster.intra_node_gbps"),
        (("global_batch",), 15, "global_batch"),
        (("format",), "other", "format"),
        (("version",), 2, "version"),
        (("program", "sha256"), "xyz", "program.sha256"),
        (("memory", "params"), -1, "memory.params"),
        (("alternatives",), [{"plan": {}}], "alternatives[0].step_time_s"),
        (("fits",), "yes", "fits"),
        (("surprise",), 1, "surprise"),
    ],
)
def test_malformed_field_is_named(path, value, named):
    with pytest.raises(PlanFileError, match=rf"p\.json: field {re.escape(named)} "):
        PlanFile.from_json(_edit(path, value), source="p.json")


def test_not_json():
    with pytest.raises(PlanFileError, match=r"p\.json: not a JSON plan file"):
        PlanFile.from_json("{", source="p.json")
