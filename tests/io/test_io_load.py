"""Loading: format detection from content, the Program's signature and contents, XLA dump
folders, elided constants."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hlopipe
from hlopipe._jax_compat import hlo_module_from_text
from hlopipe._jax_compat import mlir as jax_mlir
from hlopipe.errors import LoadError
from hlopipe.io import detect_format, dump_modules


def f(w, x):
    return jnp.tanh(x @ w).sum(0), (x * 2).astype(jnp.int32)


W = jnp.ones((3, 4), jnp.float32) * 0.1
X = jnp.arange(6.0, dtype=jnp.float32).reshape(2, 3)


@pytest.fixture(scope="module")
def sources():
    low = jax.jit(f).lower(W, X)
    hlo = low.as_text(dialect="hlo")
    return {
        "stablehlo-text": low.as_text(),
        "hlo-text": hlo,
        "hlo-opt": low.compile().as_text(),
        "hlo-proto": hlo_module_from_text(hlo).as_serialized_hlo_module_proto(),
        "mlir-bytecode": jax_mlir.module_to_bytecode(low.compiler_ir("stablehlo")),
        "jax-export": bytes(jax.export.export(jax.jit(f))(W, X).serialize()),
    }


@pytest.mark.parametrize(
    "fmt",
    ["stablehlo-text", "hlo-text", "hlo-opt", "hlo-proto", "mlir-bytecode", "jax-export"],
)
def test_every_format_loads(sources, fmt, tmp_path) -> None:
    src = sources[fmt]
    want = "hlo-text" if fmt == "hlo-opt" else fmt
    data = src.encode() if isinstance(src, str) else src
    assert detect_format(data) == want
    path = tmp_path / "program.bin"  # the suffix says nothing: content decides
    path.write_bytes(data)
    for prog in (hlopipe.load(src), hlopipe.load(path), hlopipe.load(str(path))):
        assert prog.format == want
        assert prog.entry == "main"
        assert prog.in_avals == [
            jax.ShapeDtypeStruct((3, 4), jnp.float32),
            jax.ShapeDtypeStruct((2, 3), jnp.float32),
        ]
        assert prog.out_avals == [
            jax.ShapeDtypeStruct((4,), jnp.float32),
            jax.ShapeDtypeStruct((2, 3), jnp.int32),
        ]
    got = prog.as_function()(W, X)
    for a, b in zip(got, f(W, X), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)


@pytest.mark.parametrize("version", ["0.9.0", "0.19.0", "1.0.0", "current"])
def test_portable_artifacts_of_older_versions_and_vhlo_text_load(sources, version) -> None:
    # jaxlib registers the VHLO dialect, so an artifact parses as VHLO ops (nothing to run)
    # unless the loader converts it with StableHLO's deserializer
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import stablehlo

    from hlopipe.io._xla import make_context

    if version == "current":
        version = stablehlo.get_current_version()
    art = stablehlo.serialize_portable_artifact_str(sources["stablehlo-text"], version)
    with make_context():
        vhlo_text = str(ir.Module.parse(art))
    assert "vhlo.func_v1" in vhlo_text
    for src in (art, vhlo_text):
        prog = hlopipe.load(src)
        assert prog.format == "vhlo-artifact" and prog.entry == "main"
        got = prog.as_function()(W, X)
        for a, b in zip(got, f(W, X), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-6)


def test_program_contents(sources) -> None:
    prog = hlopipe.load(sources["stablehlo-text"])
    counts = prog.op_counts()
    assert counts["stablehlo.dot_general"] == 1 and counts["stablehlo.tanh"] == 1
    assert "func.func public @main" in prog.to_text("stablehlo")
    hlo = prog.to_text("hlo")
    assert hlo.startswith("HloModule") and " dot(" in hlo
    again = hlopipe.load(hlo)
    np.testing.assert_allclose(again.as_function()(W, X)[0], f(W, X)[0], rtol=1e-6)
    assert prog.cost_analysis()["flops"] > 0
    assert prog.stage_markers() == 0
    assert "f32[3,4]" in repr(prog)
    with pytest.raises(ValueError, match="dialect"):
        prog.to_text("tosa")


def test_stage_markers_survive_hlo() -> None:
    from hlopipe.marker import stage_boundary

    g = lambda x: jnp.sin(stage_boundary(x * 2))  # noqa: E731
    prog = hlopipe.load(jax.jit(g).lower(X).as_text(dialect="hlo"))
    assert prog.stage_markers() == 1
    np.testing.assert_allclose(prog.as_function()(X), g(X), rtol=1e-6)


DUMP_SCRIPT = textwrap.dedent(
    """
    import jax, jax.numpy as jnp, numpy as np
    big = np.arange(4096, dtype=np.float32).reshape(64, 64) / 4096
    def f(x):
        return jnp.tanh(x @ big) + 1.0
    def other(x):
        return x * 3
    jax.jit(f).lower(jnp.ones((2, 64), jnp.float32)).compile()
    jax.jit(other).lower(jnp.ones((2,), jnp.float32)).compile()
    """
)


@pytest.fixture(scope="module")
def dump_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("dump")
    env = dict(
        os.environ,
        JAX_PLATFORMS="cpu",
        XLA_FLAGS=f"--xla_dump_to={d} --xla_dump_hlo_as_text --xla_dump_hlo_as_proto",
    )
    subprocess.run([sys.executable, "-c", DUMP_SCRIPT], env=env, check=True, timeout=120)
    return d


def test_dump_folder(dump_dir) -> None:
    modules = dump_modules(dump_dir)
    assert any(".jit_f" in k for k in modules) and any(".jit_other" in k for k in modules)
    prog = hlopipe.load(dump_dir, module="jit_f")
    assert prog.format == "xla-dump/hlo-proto"
    assert "before_optimizations" in prog.dump_file
    x = jnp.linspace(0, 1, 128, dtype=jnp.float32).reshape(2, 64)
    big = np.arange(4096, dtype=np.float32).reshape(64, 64) / 4096
    np.testing.assert_allclose(prog.as_function()(x), jnp.tanh(x @ big) + 1.0, rtol=1e-6)
    with pytest.raises(LoadError, match="pick one with module=NAME"):
        hlopipe.load(dump_dir)
    with pytest.raises(LoadError, match="no module matches 'nope'"):
        hlopipe.load(dump_dir, module="nope")


def test_elided_constant_is_refused(dump_dir) -> None:
    (files,) = [v for k, v in dump_modules(dump_dir).items() if k.endswith(".jit_f")]
    text_file = files["before_optimizations.txt"]
    assert "constant({...})" in text_file.read_text()
    with pytest.raises(LoadError) as info:
        hlopipe.load(text_file)
    msg = str(info.value)
    assert "constant" in msg and "{...}" in msg and ".pb" in msg
    assert str(text_file) in msg


def test_tf_style_elided_constant_in_text() -> None:
    text = textwrap.dedent(
        """
        HloModule m, entry_computation_layout={(f32[4]{0})->f32[4]{0}}

        ENTRY main {
          p = f32[4]{0} parameter(0)
          weights = f32[4]{0} constant({...})
          ROOT r = f32[4]{0} add(p, weights)
        }
        """
    )
    with pytest.raises(LoadError, match=r"<bytes>:6: constant weights is elided.*\.pb"):
        hlopipe.load(text)


def test_not_a_dump_folder(tmp_path) -> None:
    with pytest.raises(LoadError, match="not an XLA dump folder"):
        hlopipe.load(tmp_path)


def test_bit_packed_boolean_constants() -> None:
    """Newer MLIR (PyTorch/XLA's StableHLO text) packs i1 hex constants eight elements to a
    byte, lowest bit first; jaxlib's parser wants a byte each. Both load, to the same values;
    a hex constant of neither size is still refused."""
    want = np.array([1, 0, 1, 1, 0, 0, 0, 0, 1, 1], bool)
    src = """
    func.func @main(%x: tensor<10xf32>) -> (tensor<10xi1>, tensor<10xf32>) {
      %c = stablehlo.constant dense<"0x{hex}"> : tensor<10xi1>
      %z = stablehlo.constant dense<0.0> : tensor<10xf32>
      %y = stablehlo.select %c, %x, %z : tensor<10xi1>, tensor<10xf32>
      return %c, %y : tensor<10xi1>, tensor<10xf32>
    }"""
    x = np.arange(1, 11, dtype=np.float32)
    for hex_ in ("0D03", want.astype(np.uint8).tobytes().hex()):
        f = hlopipe.load(src.replace("{hex}", hex_).encode()).as_function()
        mask, y = f(x)
        np.testing.assert_array_equal(mask, want)
        np.testing.assert_array_equal(y, np.where(want, x, 0))
    with pytest.raises(LoadError, match="hex data size"):
        hlopipe.load(src.replace("{hex}", "0D0300").encode())


def test_dump_folder_module_names_with_dots(tmp_path) -> None:
    """PyTorch/XLA names its graphs 'SyncTensorsGraph.40': a dump file is
    module_0000.SyncTensorsGraph.40.before_optimizations.txt, and XLA names the optimized
    module after its backend (cpu_after_optimizations.txt)."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    text = jax.jit(lambda a: jnp.tanh(a) * 2).lower(x).as_text(dialect="hlo")
    stem = "module_0000.SyncTensorsGraph.40"
    (tmp_path / f"{stem}.before_optimizations.txt").write_text(text)
    (tmp_path / f"{stem}.cpu_after_optimizations.txt").write_text(text)
    (tmp_path / f"{stem}.ir-no-opt.ll").write_text("; llvm")
    (tmp_path / f"{stem}.debug_options").write_text("")
    assert list(dump_modules(tmp_path)) == [stem]
    prog = hlopipe.load(tmp_path)
    assert prog.dump_file.endswith(".40.before_optimizations.txt")
    np.testing.assert_allclose(prog.as_function()(x), np.tanh(x) * 2, rtol=1e-6)
    (tmp_path / f"{stem}.before_optimizations.txt").unlink()
    assert hlopipe.load(tmp_path).dump_file.endswith(".40.cpu_after_optimizations.txt")
