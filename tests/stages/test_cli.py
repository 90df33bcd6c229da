"""The stage commands end to end: split the shipped demo HLO, inspect its manifest, merge and
unmerge forward/backward modules on a 2x2 mesh."""

import json

import jax
import pytest

import hlopipe
from hlopipe.cli import main
from hlopipe.demo import demo_files

from ._models import mlp_loss, mlp_params


def test_split_demo_hlo_and_inspect_manifest(tmp_path, capsys):
    path, _ = demo_files()
    out = tmp_path / "markers"
    assert main(["split", str(path), "--at-markers", "-o", str(out)]) == 0
    assert "4 stages (hlo)" in capsys.readouterr().out
    m = json.loads((out / "manifest.json").read_text())
    assert m["num_stages"] == 4 and all(st["autodiff"]["backward"] for st in m["stages"])
    hlopipe.load(str(out / m["stages"][1]["autodiff"]["backward"]))
    assert main(["split", str(path), "--stages", "4", "-o", str(tmp_path / "n"),
                 "--no-autodiff", "--format", "stablehlo"]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["inspect", str(out / "manifest.json")]) == 0
    table = capsys.readouterr().out
    assert "4 stages" in table and "stage3.hlo" in table and "pred. ms" in table
    assert main(["split", str(path), "--stages", "2", "-o", str(tmp_path / "two")]) == 2
    assert "num_stages=2" in capsys.readouterr().err


def test_merge_and_unmerge_on_a_mesh(tmp_path, capsys):
    k1, k2, k3 = jax.random.split(jax.random.key(9), 3)
    params = mlp_params(k1, sizes=(8, 16, 8))
    x, y = jax.random.normal(k2, (8, 8)), jax.random.normal(k3, (8, 8))
    staged = hlopipe.split(mlp_loss, params, x, y)
    staged.export(str(tmp_path / "e"))
    fwd, bwd = (str(tmp_path / "e" / f"stage1.{p}.hlo") for p in ("forward", "backward"))
    assert main(["split", "--merge", fwd, bwd, "-o", str(tmp_path / "m"), "--mesh", "2x2"]) == 0
    out = capsys.readouterr().out
    assert "num_residuals=2" in out and "residual 0: P(" in out
    meta = json.loads((tmp_path / "m" / "merged.json").read_text())
    assert meta["mesh"] == {"data": 2, "model": 2}
    merged = str(tmp_path / "m" / "merged.hlo")
    assert main(["split", "--unmerge", merged, "-o", str(tmp_path / "u")]) == 0
    assert "wrote" in capsys.readouterr().out
    # the residual shardings pinned on the parts are those the merged compile chose
    split = json.loads((tmp_path / "u" / "split.json").read_text())
    assert split["residual_shardings"] == meta["residual_shardings"]
    for name in ("forward.hlo", "backward.hlo"):
        hlopipe.load(str(tmp_path / "u" / name))
    assert main(["split", "--unmerge", merged, "-o", str(tmp_path / "v"), "--layout",
                 str(tmp_path / "nope.json")]) == 2  # fmt: skip
    assert "cannot read the merge layout" in capsys.readouterr().err


def test_split_without_file_is_a_usage_error(capsys):
    assert main(["split", "--at-markers", "-o", "x"]) == 2
    assert "needs a FILE" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["split", "--merge", "only-one", "-o", "x"])


def test_split_at_markers_of_optimized_hlo_says_why_there_are_none(tmp_path, capsys):
    params = mlp_params(jax.random.key(3))
    x, y = jax.numpy.ones((2, 6)), jax.numpy.ones((2, 4))
    low = jax.jit(mlp_loss).lower(params, x, y)
    before, after = tmp_path / "before.hlo", tmp_path / "after.hlo"
    before.write_text(low.as_text(dialect="hlo"))
    after.write_text(low.compile().as_text())
    assert hlopipe.load(before).stage_markers() == 3 and not hlopipe.load(before).optimized
    assert hlopipe.load(after).stage_markers() == 0 and hlopipe.load(after).optimized
    assert main(["split", str(before), "--at-markers", "-o", str(tmp_path / "b")]) == 0
    assert "4 stages" in capsys.readouterr().out
    assert main(["split", str(after), "--at-markers", "-o", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "after XLA's optimisation passes" in err
    assert "lower(...).as_text()" in err and "--stages N" in err
    assert "hlopipe.marker.KEEP_MARKERS" in err
    # the same program split automatically still works
    assert main(["split", str(after), "--stages", "2", "-o", str(tmp_path / "s")]) == 0
    capsys.readouterr()
    # compiled with KEEP_MARKERS, the optimised program keeps its markers and splits at them
    kept = tmp_path / "kept.hlo"
    kept.write_text(low.compile(compiler_options=hlopipe.marker.KEEP_MARKERS).as_text())
    assert hlopipe.load(kept).optimized and hlopipe.load(kept).stage_markers() == 3
    assert main(["split", str(kept), "--at-markers", "-o", str(tmp_path / "k")]) == 0
    assert "4 stages" in capsys.readouterr().out
