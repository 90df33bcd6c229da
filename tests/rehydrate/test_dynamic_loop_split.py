"""Splitting a program whose while loop cannot be reverse-differentiated (its trip count
depends on run-time values, as TF's own backward loops do): the error names the loop and says
that ``split --no-autodiff`` writes the stages without their backward, which then works."""

from __future__ import annotations

from pathlib import Path

from hlopipe.cli import main

DYNAMIC_LOOP = """HloModule dyn, entry_computation_layout={(f32[3]{0})->f32[]}

cond {
  s = (f32[3], f32[]) parameter(0)
  v = f32[] get-tuple-element(s), index=1
  ten = f32[] constant(10)
  ROOT lt = pred[] compare(v, ten), direction=LT
}

body {
  s = (f32[3], f32[]) parameter(0)
  x = f32[3] get-tuple-element(s), index=0
  v = f32[] get-tuple-element(s), index=1
  two = f32[] constant(2)
  twos = f32[3] broadcast(two), dimensions={}
  x2 = f32[3] multiply(x, twos)
  one = f32[] constant(1)
  v2 = f32[] add(v, one)
  ROOT t = (f32[3], f32[]) tuple(x2, v2)
}

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}

ENTRY e {
  x = f32[3] parameter(0)
  zero = f32[] constant(0)
  s0 = f32[] reduce(x, zero), dimensions={0}, to_apply=add
  init = (f32[3], f32[]) tuple(x, s0)
  w = (f32[3], f32[]) while(init), condition=cond, body=body
  y = f32[3] get-tuple-element(w), index=0
  ROOT l = f32[] reduce(y, zero), dimensions={0}, to_apply=add
}
"""


def test_split_of_a_dynamic_loop_points_at_no_autodiff(tmp_path: Path, capsys) -> None:
    path = tmp_path / "dyn.hlo"
    path.write_text(DYNAMIC_LOOP)
    assert main(["split", str(path), "--stages", "1", "-o", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: cannot reverse-differentiate"), err
    assert "dyn.hlo (w)" in err[0] and "--no-autodiff" in err[0], err[0]
    out = tmp_path / "b"
    assert main(["split", str(path), "--stages", "1", "--no-autodiff", "-o", str(out)]) == 0
    assert (out / "manifest.json").exists()
