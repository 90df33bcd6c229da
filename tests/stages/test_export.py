"""Export: per-stage HLO / StableHLO text with markers kept, and the manifest."""

import json
import os

import jax
import numpy as np
import pytest

import hlopipe
from hlopipe.marker import ATTRIBUTE
from hlopipe.stages import format_manifest

from ._models import mlp_loss, mlp_params


def _read(path):
    with open(path) as f:
        return f.read()


@pytest.fixture(scope="module")
def staged():
    k1, k2, k3 = jax.random.split(jax.random.key(5), 3)
    params = mlp_params(k1, sizes=(4, 8, 8, 2))
    x, y = jax.random.normal(k2, (3, 4)), jax.random.normal(k3, (3, 2))
    return hlopipe.split(mlp_loss, params, x, y)


@pytest.mark.parametrize("fmt", ["hlo", "stablehlo"])
def test_export_files_and_manifest(staged, tmp_path, fmt):
    path = staged.export(str(tmp_path), format=fmt)
    m = json.loads(_read(path))
    assert m["num_stages"] == 3 and m["format"] == fmt
    ext = ".hlo" if fmt == "hlo" else ".mlir"
    marker = f'{ATTRIBUTE}="true"' if fmt == "hlo" else f'{ATTRIBUTE} = "true"'
    program = _read(os.path.join(tmp_path, m["program"]["file"]))
    assert program.count(marker) >= 2 if fmt == "stablehlo" else marker in program
    for st in m["stages"]:
        assert st["file"].endswith(ext)
        text = _read(os.path.join(tmp_path, st["file"]))
        if st["index"] < 2:  # the marker ends each stage but the last
            assert marker in text
        for part in ("forward", "backward", "backward_input", "backward_weight"):
            assert os.path.exists(os.path.join(tmp_path, st["autodiff"][part]))
    assert [(t["src"], t["dst"]) for t in m["transfers"]] == [(0, 1), (1, 2)]
    assert m["stages"][1]["inputs"] == [
        {"from_stage": 0, "output": 0, "shape": [3, 8], "dtype": "float32"}
    ]
    table = format_manifest(path)
    assert "3 stages" in table and "stage0" in table


def test_format_manifest_rejects_other_json(tmp_path):
    p = tmp_path / "x.json"
    p.write_text("{}")
    with pytest.raises(hlopipe.StageError, match="not an hlopipe stage manifest"):
        format_manifest(str(p))


@pytest.mark.parametrize("fmt", ["hlo", "stablehlo"])
def test_exported_program_reloads_and_splits_again(staged, tmp_path, fmt):
    """Markers survive export; the loaded (rehydrated) program splits at them again."""
    path = staged.export(str(tmp_path), format=fmt, argnums=None)
    m = json.loads(_read(path))
    prog = hlopipe.load(os.path.join(tmp_path, m["program"]["file"]))
    again = hlopipe.split(prog, num_stages=3)
    assert again.num_stages == staged.num_stages
    flat = [jax.random.normal(jax.random.key(i), a.shape) for i, a in enumerate(prog.in_avals)]
    ref = jax.extend.core.jaxpr_as_fun(staged.jaxpr)(*flat)
    got = jax.tree_util.tree_leaves(again(*flat))
    np.testing.assert_allclose(np.asarray(got[0]), np.asarray(ref[0]), rtol=1e-5)
    assert [st.params_needed for st in again.stages] == [st.params_needed for st in staged.stages]


def test_cli_split(staged, tmp_path, capsys):
    from hlopipe.cli import main

    staged.export(str(tmp_path / "a"), format="stablehlo", argnums=None)
    src = str(tmp_path / "a" / "program.mlir")
    assert main(["split", src, "--at-markers", "-o", str(tmp_path / "b"), "--no-autodiff"]) == 0
    out = capsys.readouterr().out
    assert "3 stages" in out and "manifest.json" in out
    assert main(["split", src, "--stages", "2", "-o", str(tmp_path / "c")]) == 2
    assert "--stages 2 was asked for" in capsys.readouterr().err
