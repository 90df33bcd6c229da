"""The README's generation example runs as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_readme_generation_example(tmp_path) -> None:
    blocks = re.findall(r"^```python\n(.*?)^```", (ROOT / "README.md").read_text(), re.M | re.S)
    code = next(b for b in blocks if "hlopipe.Generator" in b)
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, env=env,
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "state" in out and "tf.aliasing_output" in out
    assert "(2, 2, 8)" in out
    # the cache stays, in theory and measured: no state bytes
    assert out.count("BytesSent(") == 2 and out.count("state=0)") == 2, out
