"""HLO text as XLA writes and reads it (hand-written here in the style of XLA's own tests):
modules without the `HloModule` line, post-optimisation fusions and layouts, tuples, and
computations the entry never calls. Each program is checked against XLA running the same
text directly."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from jax.extend import mlir as jex_mlir

import hlopipe
from hlopipe._jax_compat import hlo_module_from_text
from hlopipe.errors import LoadError
from hlopipe.io import detect_format
from hlopipe.io._hlo import with_module_header

# No `HloModule` line, no ENTRY keyword: the last computation is the entry. A post-optimisation
# loop fusion, a non-default layout ({0,1}), a tuple result; two computations nobody calls, one
# with a bounded dynamic shape and a side-effecting custom call hlopipe has no rule for.
BARE = """
add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

dead_dynamic {
  p = f32[<=8] parameter(0)
  c = f32[8] custom-call(p), custom_call_target="NobodyHasThis", custom_call_has_side_effect=true
  ROOT n = s32[] get-dimension-size(p), dimensions={0}
}

dead_wide {
  p = s64[4] parameter(0)
  ROOT n = s64[4] multiply(p, p)
}

fused_mul_sub {
  x = f32[4,3]{1,0} parameter(0)
  y = f32[4,3]{1,0} parameter(1)
  m = f32[4,3]{1,0} multiply(x, y)
  ROOT d = f32[4,3]{1,0} subtract(m, x)
}

main {
  p0 = f32[4,3]{1,0} parameter(0)
  p1 = f32[3,4]{0,1} parameter(1)
  t = f32[4,3]{1,0} transpose(p1), dimensions={1,0}
  f = f32[4,3]{1,0} fusion(p0, t), kind=kLoop, calls=fused_mul_sub
  z = f32[] constant(0)
  r = f32[4]{0} reduce(f, z), dimensions={1}, to_apply=add_f32
  ROOT out = (f32[4,3]{1,0}, f32[4]{0}) tuple(f, r)
}
"""

# Computations with signatures (as XLA prints them), the first one not the entry: XLA's parser
# needs the `HloModule` line for this form, which loading adds. A tuple parameter, a while loop
# over a tuple state, column-major layouts.
SIGNATURES = """
// written the way XLA's tests write HLO
%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %sum = f32[] add(%x, %y)
}

%cond (s: (s32[], f32[2,3])) -> pred[] {
  %s = (s32[], f32[2,3]{0,1}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

%body (s: (s32[], f32[2,3])) -> (s32[], f32[2,3]) {
  %s = (s32[], f32[2,3]{0,1}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %v = f32[2,3]{0,1} get-tuple-element(%s), index=1
  %one = s32[] constant(1)
  %i1 = s32[] add(%i, %one)
  %h = f32[2,3]{0,1} constant({{0.5, 0.25, 1}, {1, 0.5, 0.25}})
  %v1 = f32[2,3]{0,1} multiply(%v, %h)
  %v2 = f32[2,3]{0,1} add(%v1, %v)
  ROOT %t = (s32[], f32[2,3]{0,1}) tuple(%i1, %v2)
}

ENTRY %main (p: (f32[2,3], s32[]), q: f32[3,2]) -> (f32[2,3], f32[2], s32[]) {
  %p = (f32[2,3]{0,1}, s32[]) parameter(0)
  %q = f32[3,2]{1,0} parameter(1)
  %a = f32[2,3]{0,1} get-tuple-element(%p), index=0
  %k = s32[] get-tuple-element(%p), index=1
  %qt = f32[2,3]{0,1} transpose(%q), dimensions={1,0}
  %aq = f32[2,3]{0,1} add(%a, %qt)
  %zero = s32[] constant(0)
  %init = (s32[], f32[2,3]{0,1}) tuple(%zero, %aq)
  %w = (s32[], f32[2,3]{0,1}) while(%init), condition=%cond, body=%body
  %r = f32[2,3]{0,1} get-tuple-element(%w), index=1
  %n = s32[] get-tuple-element(%w), index=0
  %kn = s32[] multiply(%k, %n)
  %c = f32[] constant(0)
  %red = f32[2]{0} reduce(%r, %c), dimensions={1}, to_apply=%add
  ROOT %out = (f32[2,3]{0,1}, f32[2]{0}, s32[]) tuple(%r, %red, %kn)
}
"""

# ENTRY in the middle: the ENTRY keyword, not the position, names the entry (XLA's parser
# wants a computation defined before it is called).
ENTRY_FIRST = """
helper {
  x = f32[5] parameter(0)
  y = f32[5] parameter(1)
  m = f32[5] maximum(x, y)
  ROOT e = f32[5] exponential(m)
}

ENTRY e {
  a = f32[5] parameter(0)
  b = f32[5] parameter(1)
  ROOT c = f32[5] call(a, b), to_apply=helper
}

unused {
  ROOT k = f32[2] constant({1, 2})
}
"""


def _xla(text: str, args: list[np.ndarray]) -> list[np.ndarray]:
    """XLA itself on the same text: its parser, its converter, its CPU compiler."""
    module = hlo_module_from_text(with_module_header(text))
    mlir = jex_mlir.hlo_to_stablehlo(module.as_serialized_hlo_module_proto())
    exe = jax.devices()[0].client.compile_and_load(mlir, jax.devices()[:1])
    return [np.asarray(o) for o in exe.execute([jax.device_put(a) for a in args])]


def _inputs(prog: hlopipe.Program) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    out = []
    for a in prog.in_avals:
        if np.issubdtype(a.dtype, np.integer):
            out.append(np.asarray(rng.integers(-3, 4, a.shape), a.dtype))
        else:
            out.append(np.asarray(rng.uniform(-1, 1, a.shape), a.dtype))
    return out


@pytest.mark.parametrize("name", ["BARE", "SIGNATURES", "ENTRY_FIRST"])
def test_xla_test_style_hlo_matches_xla(name: str) -> None:
    text = globals()[name]
    assert detect_format(text.encode()) == "hlo-text"
    prog = hlopipe.load(text)
    assert prog.format == "hlo-text"
    args = _inputs(prog)
    want = _xla(text, args)
    got = jax.jit(prog.as_function())(*args)
    got = list(got) if isinstance(got, tuple) else [got]
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-6, atol=1e-6)


def test_last_computation_is_the_entry_and_dead_code_is_dropped() -> None:
    prog = hlopipe.load(BARE)
    # the entry is `main` (last); the tuple result is flattened; the dead computations (a
    # dynamic shape, a custom call without implementation, 64-bit types) are no part of it
    assert [a.shape for a in prog.out_avals] == [(4, 3), (4,)]
    assert "NobodyHasThis" in str(prog.module)  # loading keeps them (it stays fast)...
    assert prog.op_counts()["stablehlo.custom_call"] == 0  # ...every view drops them
    assert "dead_dynamic" not in prog.to_text() and "dead_wide" not in prog.to_text()
    # ...but the same computation, called, is refused by name before anything runs
    called = BARE.replace(
        "ROOT out = (f32[4,3]{1,0}, f32[4]{0}) tuple(f, r)",
        "d = f32[<=8] parameter(2)\n  n = s32[] call(d), to_apply=dead_dynamic\n"
        "  ROOT out = (f32[4,3]{1,0}, f32[4]{0}, s32[]) tuple(f, r, n)",
    )
    with pytest.raises(hlopipe.HlopipeError, match=r"dynamic shape|NobodyHasThis"):
        hlopipe.load(called).as_function()


def test_dead_function_in_stablehlo_text_is_dropped() -> None:
    text = """
    func.func private @never(%x: tensor<3xf32>) -> tensor<3xf32> {
      %0 = "foo.unknown"(%x) : (tensor<3xf32>) -> tensor<3xf32>
      return %0 : tensor<3xf32>
    }
    func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
      %0 = stablehlo.negate %x : tensor<3xf32>
      return %0 : tensor<3xf32>
    }
    """
    f = hlopipe.load(text).as_function()
    np.testing.assert_array_equal(f(np.arange(3.0, dtype=np.float32)), [0.0, -1.0, -2.0])


def test_an_explicit_private_entry_survives() -> None:
    text = """
    func.func private @inner(%x: tensor<2xf32>) -> tensor<2xf32> {
      %0 = stablehlo.add %x, %x : tensor<2xf32>
      return %0 : tensor<2xf32>
    }
    func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
      return %x : tensor<2xf32>
    }
    """
    prog = hlopipe.load(text, entry="inner")
    assert prog.entry == "inner"
    np.testing.assert_array_equal(prog.as_function()(np.ones(2, np.float32)), [2.0, 2.0])
    assert "func.func private @inner" in prog.to_text()


def test_header_is_added_on_the_same_line() -> None:
    text = "// a comment\n\n%c (x: f32[]) -> f32[] {\n  %x = f32[] parameter(0)\n"
    text += "  ROOT %y = f32[] bad(%x)\n}\n"
    assert with_module_header(text).splitlines()[2].startswith("HloModule module %c")
    with pytest.raises(LoadError, match=r"not valid HLO text.*parsing 5:19: .*Unknown opcode: bad"):
        hlopipe.load(text)  # the parser's line number is the user's


@pytest.mark.parametrize(
    "text, fmt",
    [
        ("module {\n  func.func @main() {\n    return\n  }\n}\n", "stablehlo-text"),
        ("module @m {\n  func.func @main() {\n    return\n  }\n}\n", "stablehlo-text"),
        ("ENTRY e {\n  ROOT c = f32[] constant(1)\n}\n", "hlo-text"),
        ("e.1 {\n  ROOT c = f32[] constant(1)\n}\n", "hlo-text"),
    ],
)
def test_detection(text: str, fmt: str) -> None:
    assert detect_format(text.encode()) == fmt


def test_text_that_is_neither_says_what_was_expected() -> None:
    with pytest.raises(LoadError, match="neither HLO text"):
        detect_format(b"hello world, not a program\n")


# ---- the crash guard, without its cost --------------------------------------------------------

BAD_STRING_CHILD = """
import sys
import jax, jax.numpy as jnp
from hlopipe._jax_compat import mlir as jax_mlir
import hlopipe

def f(x):
    return jnp.sin(x) * 2.0

low = jax.jit(f).lower(jnp.ones(3))
data = bytearray(jax_mlir.module_to_bytecode(low.compiler_ir("stablehlo")))
exp = bytearray(jax.export.export(jax.jit(f))(jnp.ones(3)).serialize())
# a string of the module (the function's name) made not UTF-8: jaxlib aborts on reading it
for blob in (data, exp):
    i = blob.find(b"sine")
    assert i > 0
    blob[i + 1] = 0xFF
for blob in (bytes(data), bytes(exp)):
    try:
        hlopipe.load(blob)
        print("LOADED")
    except hlopipe.HlopipeError as e:
        print("REFUSED", e)
"""


def test_bytecode_with_a_string_that_is_not_utf8_is_refused_in_process() -> None:
    import os
    import subprocess
    import sys

    env = dict(os.environ, JAX_PLATFORMS="cpu")
    proc = subprocess.run(
        [sys.executable, "-c", BAD_STRING_CHILD], capture_output=True, env=env, timeout=300
    )
    out = proc.stdout.decode()
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    lines = [ln for ln in out.splitlines() if ln.startswith(("REFUSED", "LOADED"))]
    assert len(lines) == 2, out
    assert "not UTF-8" in lines[0] and "mlir-bytecode" in lines[0]
    assert "not UTF-8" in lines[1] and "jax-export" in lines[1]


def test_hlo_text_guard_process_is_reused_and_replaced_when_it_dies() -> None:
    import os
    import signal

    from hlopipe.io import _guard

    hlopipe.load(ENTRY_FIRST)
    child = _guard._child[0].proc
    hlopipe.load(BARE)
    assert _guard._child[0].proc is child  # one warm process serves every load
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    with pytest.raises(LoadError, match=r"crashed .*signal SIGKILL"):
        hlopipe.load(SIGNATURES)  # the load it died under is refused, not the process
    prog = hlopipe.load(SIGNATURES)  # and a fresh one takes over
    assert _guard._child[0].proc is not child and prog.format == "hlo-text"


# MLIR text whose string escapes a non-ASCII byte (here UTF-8 'é'): probed before loading
ESCAPED = (
    'func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> attributes {note = "caf\\c3\\a9"} {\n'
    "  return %x : tensor<2xf32>\n}\n"
)


def test_mlir_text_is_probed_in_the_guard_process_which_is_then_retired() -> None:
    from hlopipe.io import _guard

    hlopipe.load(ENTRY_FIRST)
    child = _guard._child[0].proc
    prog = hlopipe.load(ESCAPED)  # one crash-isolation process: the warm one, not another
    assert prog.format == "stablehlo-text"
    assert child.poll() is not None and not _guard._child  # retired after the probe
    hlopipe.load(ENTRY_FIRST)
    assert _guard._child[0].proc is not child  # a fresh one parses the next HLO text


def test_a_probe_that_takes_the_guard_process_down_refuses_the_input(monkeypatch) -> None:
    from hlopipe.io import _guard

    _guard._stop()
    dies = "import signal; os.kill(os.getpid(), signal.SIGABRT)"
    monkeypatch.setattr(
        _guard,
        "_CHILD",
        _guard._CHILD.replace("from hlopipe.io._guard import probe_in_child", dies),
    )
    with pytest.raises(LoadError, match=r"crashed reading this stablehlo-text .*SIGABRT"):
        hlopipe.load(ESCAPED)
    assert not _guard._child
    monkeypatch.undo()
    assert hlopipe.load(ESCAPED).format == "stablehlo-text"
