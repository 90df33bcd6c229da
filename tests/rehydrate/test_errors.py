"""Bad input: every user mistake is a subclass of HlopipeError with a message that helps."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

import hlopipe
from hlopipe._jax_compat import hlo_module_from_text
from hlopipe.errors import HlopipeError, LoadError, RehydrateError

X = jnp.ones((2, 3), jnp.float32)


def f(x, y):
    return jnp.sin(x) @ y


@pytest.fixture(scope="module")
def low():
    return jax.jit(f).lower(X, jnp.ones((3, 4), jnp.float32))


def test_no_known_format() -> None:
    with pytest.raises(LoadError, match="no known format"):
        hlopipe.load(b"\xff\xfe\x00\x01garbage")
    with pytest.raises(LoadError, match="neither HLO text"):
        hlopipe.load("hello world\nthis is not a program\n")
    with pytest.raises(LoadError, match="empty input"):
        hlopipe.load(b"   ")
    with pytest.raises(LoadError, match="no such file"):
        hlopipe.load("/nonexistent/model.hlo")
    with pytest.raises(LoadError, match="cannot load a int"):
        hlopipe.load(3)  # type: ignore[arg-type]


def test_truncated_proto(low) -> None:
    proto = hlo_module_from_text(low.as_text(dialect="hlo")).as_serialized_hlo_module_proto()
    for cut in (len(proto) // 3, len(proto) // 2, len(proto) - 5):
        with pytest.raises(LoadError, match=r"HloModuleProto|no known format"):
            hlopipe.load(proto[:cut])
    with pytest.raises(LoadError, match="HloModuleProto"):
        hlopipe.load(proto[: len(proto) // 2], format="hlo-proto")


def test_hlo_syntax_error_names_line_and_column(low) -> None:
    lines = low.as_text(dialect="hlo").splitlines()
    i = next(i for i, line in enumerate(lines) if "sine(" in line)
    lines[i] = lines[i].replace("sine(", "sine((")
    with pytest.raises(LoadError) as info:
        hlopipe.load("\n".join(lines))
    msg = str(info.value)
    assert "not valid HLO text" in msg
    assert f"{i + 1}:" in msg  # the parser's line:column


def test_stablehlo_syntax_error(low) -> None:
    text = low.as_text().replace("stablehlo.sine", "stablehlo.sine(", 1)
    with pytest.raises(LoadError, match=r"not valid StableHLO/MLIR text.*:\d+:\d+"):
        hlopipe.load(text)


def test_explicit_wrong_format(low) -> None:
    with pytest.raises(LoadError, match="unknown format"):
        hlopipe.load(low.as_text(), format="onnx")
    with pytest.raises(LoadError, match="not valid MLIR bytecode"):
        hlopipe.load(b"ML\xefR\x00\x01\x02", format="mlir-bytecode")
    with pytest.raises(LoadError, match=r"not a valid jax\.export artifact"):
        hlopipe.load(b"\x10\x00\x00\x00" + b"\x00" * 40, format="jax-export")


def test_a_bug_in_reading_bytecode_is_not_called_bad_bytecode(monkeypatch) -> None:
    """StableHLO's deserializer refusing the bytes is a LoadError (above); any other error
    while reading them is a bug and propagates as itself."""
    from hlopipe.io import _mlir

    def bug(data):
        raise ZeroDivisionError("a bug in the reader")

    monkeypatch.setattr(_mlir, "_artifact_module", bug)
    with pytest.raises(ZeroDivisionError, match="a bug in the reader"):
        hlopipe.load(b"ML\xefR\x00\x01\x02", format="mlir-bytecode")


def test_wrong_arguments_at_call_time(low) -> None:
    g = hlopipe.load(low.as_text()).as_function()
    y = jnp.ones((3, 4), jnp.float32)
    with pytest.raises(
        RehydrateError, match=r"takes 2 arguments \(f32\[2,3\], f32\[3,4\]\), 1 were"
    ):
        g(X)
    with pytest.raises(RehydrateError, match=r"argument 1 is f32\[4,3\], expected f32\[3,4\]"):
        g(X, y.T)
    with pytest.raises(RehydrateError, match=r"argument 0 is i32\[2,3\], expected f32\[2,3\]"):
        g(X.astype(jnp.int32), y)
    with pytest.raises(RehydrateError, match="argument 0 is a list"):
        g([1.0], y)
    with pytest.raises(RehydrateError, match=r"argument 0 is f32\[1,2,3\], expected f32\[2,3\]"):
        jax.jit(g)(X[None], y)


def test_unsupported_feature_is_hlopipe_error() -> None:
    text = """
func.func @main(%t: !stablehlo.token) -> tensor<2xf32> {
  %r:2 = "stablehlo.infeed"(%t) {infeed_config = ""}
    : (!stablehlo.token) -> (tensor<2xf32>, !stablehlo.token)
  return %r#0 : tensor<2xf32>
}
"""
    with pytest.raises(HlopipeError, match=r"stablehlo\.infeed is not supported"):
        hlopipe.load(text).as_function()
    tupled = """
func.func @main(%x: tuple<tensor<2xf32>, tensor<i32>>) -> tensor<2xf32> {
  %0 = stablehlo.get_tuple_element %x[0] : (tuple<tensor<2xf32>, tensor<i32>>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
"""
    with pytest.raises(hlopipe.UnsupportedOpError, match="argument 0 of @main has the tuple type"):
        hlopipe.load(tupled).as_function()
    # a dynamic shape runs now: traced for the size each call brings
    # (tests/rehydrate/test_dynamic_shapes.py)
    dynamic = (
        "func.func @main(%x: tensor<?xf32>) -> tensor<?xf32> {\n  return %x : tensor<?xf32>\n}"
    )
    f = hlopipe.load(dynamic).as_function()
    assert [f(jnp.arange(n, dtype=jnp.float32)).shape for n in (2, 5)] == [(2,), (5,)]


def test_errors_subclass_hlopipe_error() -> None:
    for cls in (LoadError, RehydrateError, hlopipe.UnsupportedOpError):
        assert issubclass(cls, HlopipeError)
