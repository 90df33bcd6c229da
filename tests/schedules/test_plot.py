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


def _legend(fig) -> list[str]:
    return [t.get_text() for t in fig.legends[0].get_texts()]


def test_figure_reads_at_a_glance():
    from hlopipe.schedules._plot import _figure

    t = simulate(lower(get("dualpipev", 4, 8)), {"send": 0.25})
    fig = _figure(t)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "time (cost units)"
    assert _figure(t, unit="ms").axes[0].get_xlabel() == "time (ms)"
    # The title is figure text inside the figure, above the axes, not an axes title.
    (title,) = fig.texts
    assert title.get_text().startswith("dualpipev: 4 ranks, 8 microbatches, 8 stages")
    x, y = title.get_position()
    assert 0 < x < 1 and ax.get_position().y1 < y < 1
    # The legend sits below the axes, so it never covers a bar.
    fig.canvas.draw()
    box = fig.legends[0].get_window_extent().transformed(fig.transFigure.inverted())
    assert box.y1 <= ax.get_position().y0
    labels = _legend(fig)
    assert "F&B overlap (F above, B below)" in labels
    assert "F (forward), chunk 0" in labels and "F (forward), chunk 1" in labels
    assert "transfer / waiting to receive" in labels
    # Chunks by shade: the two stages of rank 0 get two colours for F.
    colours = {
        p.get_facecolor()
        for p in ax.patches
        if abs(p.get_height() - 0.8) < 1e-9 and p.get_fill() and p.get_y() == -0.4
    }
    assert len(colours) >= 4  # F, I, W in two shades at least


def test_wide_schedules_stay_readable():
    from hlopipe.schedules._plot import _figure

    fig = _figure(simulate(get("zb-v", 16, 64)))
    w, h = fig.get_size_inches()
    assert w <= 36 and h <= 10
    # Labels only where they fit: fewer texts than boxes, and none of them wider than its box.
    boxes = sum(len(evs) for evs in simulate(get("zb-v", 16, 64)).events.values())
    assert 0 < len(fig.axes[0].texts) < boxes


def test_chrome_trace_names_an_overlap_parts():
    t = simulate(get("dualpipev", 2, 4))
    spans = [e for e in to_chrome_trace(t)["traceEvents"] if e.get("cat") == "OVERLAP_F_B"]
    assert spans and spans[0]["name"].endswith(")OVERLAP_F_B")
    assert len(spans[0]["args"]["parts"]) == 2


@pytest.mark.parametrize("ranks", [2, 4])
def test_a_long_title_fits_the_figure(ranks):
    """The demo's measured-timeline title used to run past the right edge: now it wraps, all of
    it inside the figure and above the axes."""
    from hlopipe.schedules._plot import _figure

    title = (
        f"measured 1F1B step on {ranks} ranks x 2 CPU devices (ms): bubble 71%, "
        "simulated with measured costs 58%"
    )
    fig = _figure(simulate(get("1f1b", ranks, 4)), title=title)
    (text,) = fig.texts
    assert " ".join(text.get_text().split("\n")) == title
    fig.canvas.draw()
    box = text.get_window_extent().transformed(fig.transFigure.inverted())
    assert box.x0 > 0 and box.x1 <= 1 and box.y1 <= 1
    assert box.y0 >= fig.axes[0].get_position().y1
