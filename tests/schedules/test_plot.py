"""Pictures: the Gantt chart files exist and are images; the Chrome trace is valid JSON."""

import json

import pytest

from hlopipe.schedules import get, lower, plot, simulate, to_chrome_trace


@pytest.mark.parametrize("suffix", ["png", "svg"])
def test_plot_writes_an_image(tmp_path, suffix):
    path = tmp_path / f"zb.{suffix}"
    plot(simulate(get("zb-h1", 4, 8), {"F": 1, "I": 1, "W": 1}), path)
    data = path.read_bytes()
    assert len(data) > 1000
    if suffix == "png":
        assert data.startswith(b"\x89PNG")
    else:
        assert b"<svg" in data[:1000]


def test_plot_many_stages_per_rank(tmp_path):
    path = tmp_path / "inter.png"
    plot(simulate(lower(get("interleaved-1f1b", 2, 4, 3))), path)
    assert path.stat().st_size > 1000


def test_chrome_trace(tmp_path):
    t = simulate(lower(get("1f1b", 4, 8)), {"send": 0.1})
    path = tmp_path / "trace.json"
    returned = to_chrome_trace(t, path)
    trace = json.loads(path.read_text())
    assert trace == json.loads(json.dumps(returned))
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(spans) == sum(len(evs) for evs in t.events.values())
    assert {e["tid"] for e in spans} == {0, 1, 2, 3}
    first = next(e for e in spans if e["name"] == "0F0")
    assert (first["ts"], first["dur"], first["args"]["kind"]) == (0.0, 1000.0, "F")
    names = [e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"]
    assert names == ["rank 0", "rank 1", "rank 2", "rank 3"]
