"""The conformance runner, the interpreter-suite format, the CLI, and the run over StableHLO's
generated testdata (``../shared/conformance/stablehlo-testdata``). The tolerances and the ULP
distance: test_compare.py."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import numpy as np
import pytest

from hlopipe import cli
from hlopipe import conformance as conf

HERE = Path(__file__).parent
DATA = HERE / "data" / "interpret"
SUITE = Path(__file__).parents[2] / ".." / "shared" / "conformance" / "stablehlo-testdata"
FAILURES = HERE / "conformance_failures.txt"

# The number of files of the shared suite that pass, jitted and eager, with the default
# tolerances; it must never go down. (All 1790 passed under the old 4-ULP-or-1e-4 default;
# the per-type ULP bounds of issue 15 fail two f32 sums eagerly, listed in FAILURES.)
MIN_PASSED = 1788


SINE_F64 = """
module @jit_main {
  func.func public @main() -> tensor<4xf64> {
    %0 = call @inputs() : () -> tensor<4xf64>
    %1 = call @expected() : () -> tensor<4xf64>
    %2 = stablehlo.sine %0 : tensor<4xf64>
    stablehlo.custom_call @check.expect_close(%2, %1) {has_side_effect = true}
      : (tensor<4xf64>, tensor<4xf64>) -> ()
    return %2 : tensor<4xf64>
  }
  func.func private @inputs() -> tensor<4xf64> {
    %c = stablehlo.constant dense<[INPUTS]> : tensor<4xf64>
    return %c : tensor<4xf64>
  }
  func.func private @expected() -> tensor<4xf64> {
    %c = stablehlo.constant dense<[EXPECTED]> : tensor<4xf64>
    return %c : tensor<4xf64>
  }
}
"""


def test_a_sine_rule_computing_f64_in_f32_fails_the_file(tmp_path, monkeypatch):
    from jax import lax

    from hlopipe.rehydrate.registry import RULES

    x = np.array([0.5, -1.25, 2.0, 1e-6])
    text = SINE_F64.replace("INPUTS", ", ".join(f"{v:.17e}" for v in x))
    p = _write(tmp_path, text.replace("EXPECTED", ", ".join(f"{v:.17e}" for v in np.sin(x))))
    assert conf.run_file(p).status == "pass"
    in_f32 = lambda ctx, v: lax.sin(v.astype(np.float32)).astype(np.float64)  # noqa: E731
    monkeypatch.setitem(RULES, "stablehlo.sine", in_f32)
    r = conf.run_file(p)
    assert r.status == "fail" and "expect_close" in r.message, r.message


TWO_CHECKS = """
func.func @two() {
  %c = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  check.expect_eq_const %c, dense<[1, 2]> : tensor<2xi32>
  check.expect_eq_const %c, dense<[1, 2]> : tensor<2xi32>
  func.return
}
"""


def test_every_check_a_test_declares_must_run(tmp_path, monkeypatch):
    from hlopipe.conformance import rules

    p = _write(tmp_path, TWO_CHECKS)
    assert conf.run_file(p).status == "pass"
    real = rules.RULES["check.expect_eq_const"]
    calls: list[str] = []

    def only_the_first(ctx, *operands, **attrs):
        calls.append(ctx.loc)
        return real(ctx, *operands, **attrs) if len(calls) == 1 else ()

    monkeypatch.setitem(rules.RULES, "check.expect_eq_const", only_the_first)
    r = conf.run_file(p, jit=False)
    assert r.status == "fail" and "1 of its 2 checks did not run" in r.message, r.message


# a module with both forms of check: an op of the check dialect, a @check.* custom call
CHECKS_GENERIC = """
func.func @t() {
  %c = stablehlo.constant dense<1> : tensor<i32>
  "check.expect_eq_const"(%c) {value = dense<1> : tensor<i32>} : (tensor<i32>) -> ()
  stablehlo.custom_call @check.expect_eq(%c, %c) {has_side_effect = true}
    : (tensor<i32>, tensor<i32>) -> ()
  func.return
}
"""

_TABLES = f"""
import json
from hlopipe.io import load
from hlopipe.rehydrate import module_ir, scan_unsupported
from hlopipe.rehydrate.custom_calls import CUSTOM_CALLS
from hlopipe.rehydrate.registry import RULES

prog = load({CHECKS_GENERIC!r}, format="stablehlo-text", entry="t")
def state():
    return sorted(RULES), sorted(CUSTOM_CALLS), scan_unsupported(module_ir(prog), "t")
before = state()
import hlopipe.conformance
from hlopipe.conformance.rules import dialect_scope
after = state()
with dialect_scope():
    inside = scan_unsupported(module_ir(prog), "t")
print(json.dumps([before == after, before[2], after[2], inside]))
"""


def test_importing_conformance_leaves_the_global_tables_alone(tmp_path):
    """The check rules live in conformance's own tables: importing it changes neither
    rehydration's rule table nor what scan_unsupported says of a file that uses them (a
    fresh process: this one may have imported it already); a run still resolves them."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", _TABLES], capture_output=True, text=True, check=True
    ).stdout
    same, before, after, inside = json.loads(out.strip().splitlines()[-1])
    assert same
    assert [row[0] for row in before] == [row[0] for row in after]
    assert {row[0] for row in before} == {
        "check.expect_eq_const",
        "stablehlo.custom_call @check.expect_eq",
    }
    assert inside == []
    r = conf.run_file(_write(tmp_path, CHECKS_GENERIC))
    assert r.status == "pass" and r.tests == {"t.mlir:2 @t": "pass"}, r.message


# ---- the interpreter-suite format ---------------------------------------------------------


@pytest.mark.parametrize(
    ("pretty", "generic"),
    [
        (
            "check.expect_eq_const %x, dense<[1, 2]> : tensor<2xi32>",
            '"check.expect_eq_const"(%x) {value = dense<[1, 2]> : tensor<2xi32>} : '
            "(tensor<2xi32>) -> ()",
        ),
        (
            "check.expect_almost_eq %a, %b, tolerance = 0.1 : tensor<f64>",
            '"check.expect_almost_eq"(%a, %b) {tolerance = 0.1 : f64} : '
            "(tensor<f64>, tensor<f64>) -> ()",
        ),
        (
            "check.expect_close %r#1, %e, max_ulp_difference = 3, min_ulp_difference = 1 : "
            "tensor<2xf16>, tensor<2xf16>",
            '"check.expect_close"(%r#1, %e) {max_ulp_difference = 3 : i64, '
            "min_ulp_difference = 1 : i64} : (tensor<2xf16>, tensor<2xf16>) -> ()",
        ),
        (
            "check.expect_almost_eq_const %x, dense<5.1> : tensor<f64> {tolerance = 0.1 : f64}",
            '"check.expect_almost_eq_const"(%x) {value = dense<5.1> : tensor<f64>, '
            "tolerance = 0.1 : f64} : (tensor<f64>) -> ()",
        ),
        (
            '%p = interpreter.probe %y, probe_id = "a" : tensor<2xi32>',
            '%p = "interpreter.probe"(%y) {probe_id = "a"} : (tensor<2xi32>) -> (tensor<2xi32>)',
        ),
        (
            'check.expect_serialized_eq %e, probe_id = "a", iter = 2 : tensor<i1> // a comment',
            '"check.expect_serialized_eq"(%e) {probe_id = "a", iteration = 2 : i64} : '
            "(tensor<i1>) -> ()",
        ),
    ],
)
def test_to_generic(pretty, generic):
    text = f"func.func @t() {{\n  {pretty}\n  func.return\n}}"
    assert conf.to_generic(text).split("\n")[1] == "  " + generic


def test_to_generic_keeps_line_numbers_of_multi_line_ops():
    text = "a\ncheck.expect_eq_const %x, dense<[1,\n  2]> : tensor<2xi32>\nb"
    out = conf.to_generic(text).split("\n")
    assert len(out) == 4 and out[0] == "a" and out[3] == "b" and "value = dense<[1, 2]>" in out[1]


@pytest.mark.parametrize(
    "pretty",
    [
        # a trailing comma, the constant on the next line
        "check.expect_almost_eq_const %x,\n    dense<[1.0e-03, 2.0]> : tensor<2xf64>",
        # the type on the next line
        "check.expect_almost_eq_const %x, dense<[1.0e-03, 2.0]>\n    : tensor<2xf64>",
        # the attribute dictionary on the next line
        "check.expect_almost_eq_const %x, dense<[1.0e-03, 2.0]> : tensor<2xf64>\n"
        "    {tolerance = 1.0e-06 : f64}",
        # a tolerance Python would print without a decimal point, on the next line
        "check.expect_almost_eq_const %x, dense<[1.0e-03, 2.0]> : tensor<2xf64>,\n"
        "    tolerance = 1.0e-6",
        # MLIR's generic form, left as it is
        '"check.expect_almost_eq_const"(%x) {value = dense<[1.0e-03, 2.0]> : tensor<2xf64>} '
        ": (tensor<2xf64>) -> ()",
        '"check.expect_almost_eq_const"(%x) <{value = dense<[1.0e-03, 2.0]> : tensor<2xf64>}> '
        ": (tensor<2xf64>) -> ()",
    ],
)
def test_check_ops_across_lines_and_in_generic_form(tmp_path, pretty):
    """Held-out programs write a check op across lines, or in MLIR's generic form; each is
    read whole (line numbers kept) and runs as the check it is."""
    text = (
        "func.func @t() {\n"
        "  %x = stablehlo.constant dense<[1.0e-03, 2.0]> : tensor<2xf64>\n"
        f"  {pretty}\n"
        "  func.return\n}\n"
    )
    generic = conf.to_generic(text)
    assert generic.count("\n") == text.count("\n")
    r = conf.run_file(_write(tmp_path, text))
    assert (r.format, r.status) == ("interpret", "pass"), r.message
    k = text.rindex("2.0]>")  # the expectation, not the constant
    r = conf.run_file(_write(tmp_path, text[:k] + "2.5]>" + text[k + 5 :], "wrong.mlir"))
    assert r.status == "fail" and "first at [1]" in r.message, r.message


def test_split_modules_line_numbers():
    text = "func.func @a() {\n}\n// -----\nfunc.func @b() {\n}\n"
    (l1, _), (l2, c2) = conf.split_modules(text)
    assert (l1, l2) == (1, 4)
    assert c2.split("\n")[3] == "func.func @b() {"


@pytest.mark.parametrize("path", sorted(DATA.glob("*.mlir")), ids=lambda p: p.name)
def test_interpret_format_files_pass(path):
    r = conf.run_file(path)
    assert r.format == "interpret"
    assert r.status == "pass", r.message
    assert r.tests and set(r.tests.values()) == {"pass"}
    assert r.modes == {"jit": "pass", "eager": "pass"}


def test_interpret_file_with_several_tests_runs_each():
    r = conf.run_file(DATA / "checks.mlir")
    names = {t.split("@")[1] for t in r.tests}
    assert {"integer_sum", "first", "second", "probe_then_compare"} <= names
    assert "double" not in names  # takes arguments, and it is called


def _write(tmp_path: Path, text: str, name: str = "t.mlir") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


WRONG = """
func.func @good() {
  %c = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  check.expect_eq_const %c, dense<[1, 2]> : tensor<2xi32>
  func.return
}
// -----
func.func @wrong() {
  %c = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %d = stablehlo.exponential %c : tensor<2xf32>
  check.expect_almost_eq_const %d, dense<[2.718, 7.5]> : tensor<2xf32>, tolerance = 0.01
  func.return
}
"""


def test_a_wrong_value_fails_with_test_mode_and_element(tmp_path):
    r = conf.run_file(_write(tmp_path, WRONG))
    assert r.status == "fail"
    assert "@wrong [jit]" in r.message and "first at [1]" in r.message
    assert r.tests["t.mlir:8 @wrong"] == "fail" and r.tests["t.mlir:2 @good"] == "pass"
    assert conf.run_file(tmp_path / "t.mlir", jit=False).modes == {"eager": "fail"}


def test_unsupported_skipped_and_error_files(tmp_path):
    unsupported = _write(
        tmp_path,
        'func.func @t() {\n  %c = "mydialect.frobnicate"() : () -> tensor<i32>\n'
        "  check.expect_eq_const %c, dense<1> : tensor<i32>\n  func.return\n}\n",
        "u.mlir",
    )
    r = conf.run_file(unsupported)
    assert r.status == "unsupported" and "mydialect.frobnicate" in r.message
    skipped = _write(
        tmp_path,
        "func.func @f(%a: tensor<i32>) -> tensor<i32> {\n  return %a : tensor<i32>\n}\n",
        "s.mlir",
    )
    assert conf.run_file(skipped).status == "skipped"
    broken = _write(tmp_path, "func.func @t() {\n  %c = stablehlo.constant\n}\n", "b.mlir")
    r = conf.run_file(broken)
    assert r.status == "error" and r.failed
    assert conf.summary_line([r, conf.run_file(skipped)]) == "0 passed, 1 failed, 1 skipped"


MIXED = """
func.func @ok() {
  %c = stablehlo.constant dense<1> : tensor<i32>
  check.expect_eq_const %c, dense<1> : tensor<i32>
  func.return
}
// -----
func.func @diagnostic() {
  // expected-error@+1 {{a message of the reference interpreter}}
  %c = stablehlo.constant dense<1> : tensor<i32>
  func.return
}
"""


def test_modules_of_a_file_end_on_their_own(tmp_path):
    r = conf.run_file(_write(tmp_path, MIXED))
    assert r.status == "pass", r.message
    assert r.tests == {"t.mlir:2 @ok": "pass", "t.mlir:8 (module)": "skipped"}
    assert "expected-error" in r.skipped[0]
    broken = MIXED + "// -----\nfunc.func @b() {\n  %c = stablehlo.constant\n}\n"
    r = conf.run_file(_write(tmp_path, broken, "b.mlir"))
    assert r.status == "error" and r.tests["b.mlir:2 @ok"] == "pass"
    assert r.message.startswith("b.mlir:14 (module)")
    r = conf.run_file(_write(tmp_path, "// RUN: not stablehlo-translate --interpret %s\n" + MIXED))
    assert r.status == "skipped" and "RUN: not" in r.message


def test_testdata_format_through_custom_calls(tmp_path):
    text = """
module @jit_main {
  func.func public @main() -> tensor<3xf32> {
    %0 = call @inputs() : () -> tensor<3xf32>
    %1 = call @expected() : () -> tensor<3xf32>
    %2 = stablehlo.sine %0 : tensor<3xf32>
    stablehlo.custom_call @check.expect_close(%2, %1) {has_side_effect = true}
      : (tensor<3xf32>, tensor<3xf32>) -> ()
    return %2 : tensor<3xf32>
  }
  func.func private @inputs() -> tensor<3xf32> {
    %c = stablehlo.constant dense<[0.0, 1.0, -2.0]> : tensor<3xf32>
    return %c : tensor<3xf32>
  }
  func.func private @expected() -> tensor<3xf32> {
    %c = stablehlo.constant dense<[0.0, 0.841470957, -0.909297406]> : tensor<3xf32>
    return %c : tensor<3xf32>
  }
}
"""
    p = _write(tmp_path, text)
    r = conf.run_file(p, reference="xla")
    assert r.format == "testdata"
    assert r.status == "pass", r.message
    assert list(r.tests) == ["t.mlir:3 @main"]
    assert r.reference == "pass", r.reference_message
    assert not r.worse_than_reference
    bad = _write(tmp_path, text.replace("0.841470957", "0.85"), "bad.mlir")
    r = conf.run_file(bad, reference="xla")
    assert r.status == "fail" and r.reference == "fail" and not r.worse_than_reference


SINE = """
module @jit_main {
  func.func public @main() -> tensor<2xf32> {
    %0 = stablehlo.constant dense<[0.0, 1.0]> : tensor<2xf32>
    %1 = stablehlo.constant dense<[0.0, 0.841470957]> : tensor<2xf32>
    %2 = stablehlo.sine %0 : tensor<2xf32>
    stablehlo.custom_call @check.expect_close(%2, %1) {has_side_effect = true}
      : (tensor<2xf32>, tensor<2xf32>) -> ()
    return %2 : tensor<2xf32>
  }
}
"""


@pytest.mark.parametrize("version", ["0.9.0", "1.0.0"])
def test_portable_artifact_test_files(tmp_path, version):
    from jaxlib.mlir.dialects import stablehlo

    for name, text in (("good", SINE), ("bad", SINE.replace("0.841470957", "0.85"))):
        art = stablehlo.serialize_portable_artifact_str(text, version)
        (tmp_path / f"{name}.mlirbc").write_bytes(art)
    assert [p.name for p in conf.collect_files([tmp_path])] == ["bad.mlirbc", "good.mlirbc"]
    r = conf.run_file(tmp_path / "good.mlirbc")
    assert r.format == "testdata" and r.status == "pass", r.message
    r = conf.run_file(tmp_path / "bad.mlirbc")
    assert r.status == "fail" and "expected np.float32(0.85)" in r.message, r.message


IN_LOOP = """
func.func @in_loop() {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %n = stablehlo.constant dense<3> : tensor<i32>
  %r = stablehlo.while(%i = %zero) : tensor<i32>
  cond {
    %c = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  } do {
    %m = stablehlo.minimum %i, %one : tensor<i32>
    check.expect_eq_const %m, dense<0> : tensor<i32>
    %j = stablehlo.add %i, %one : tensor<i32>
    stablehlo.return %j : tensor<i32>
  }
  func.return
}
"""


def test_a_check_in_a_loop_body_fails_on_the_run_where_it_does_not_hold(tmp_path):
    # checks record on the host as they run: the second iteration's value fails the test
    # (a traced value recorded at trace time escaped the loop: an error, not a verdict)
    r = conf.run_file(_write(tmp_path, IN_LOOP))
    assert r.status == "fail" and r.modes == {"jit": "fail", "eager": "fail"}, r.message
    assert "got np.int32(1), expected np.int32(0)" in r.message


def test_different_programs_per_process_refused_when_not_connected_by_send_recv(tmp_path):
    text = (DATA / "send_recv.mlir").read_text()
    lonely = (
        text.replace("programs = [[@recv, @send]]", "programs = [[@recv, @recv]]")
        .replace("(%1, %0, %1)", "(%1, %1)")
        .replace("%results:3", "%results:4")
    )
    lonely = lonely.replace(
        "(!stablehlo.token, tensor<2x2xi64>, !stablehlo.token) -> (tensor<2x2xi64>, "
        "!stablehlo.token, !stablehlo.token)",
        "(!stablehlo.token, !stablehlo.token) -> (tensor<2x2xi64>, !stablehlo.token, "
        "tensor<2x2xi64>, !stablehlo.token)",
    )
    r = conf.run_file(_write(tmp_path, lonely))
    assert r.status == "unsupported" and "waits for a send" in r.message, r.message
    with_ids = text.replace(
        "  func.return %result : !stablehlo.token",
        "  %id = stablehlo.replica_id : tensor<ui32>\n  func.return %result : !stablehlo.token",
    )
    r = conf.run_file(_write(tmp_path, with_ids, "ids.mlir"))
    assert r.status == "unsupported" and "stablehlo.replica_id" in r.message, r.message


GENERIC_MODULE = """"builtin.module"() ({
  "func.func"() <{function_type = (tensor<2xi32>) -> tensor<2xi32>, sym_name = "double",
                  sym_visibility = "private"}> ({
  ^bb0(%a: tensor<2xi32>):
    %0 = "stablehlo.add"(%a, %a) : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
    "func.return"(%0) : (tensor<2xi32>) -> ()
  }) : () -> ()
  "func.func"() <{function_type = () -> tensor<i32>, sym_name = "seven"}> ({
    %0 = "stablehlo.constant"() <{value = dense<7> : tensor<i32>}> : () -> tensor<i32>
    "func.return"(%0) : (tensor<i32>) -> ()
  }) : () -> ()
  "func.func"() <{function_type = () -> (), sym_name = "generic_test"}> ({
    %0 = "stablehlo.constant"() <{value = dense<[1, 2]> : tensor<2xi32>}> : () -> tensor<2xi32>
    %1 = "func.call"(%0) <{callee = @double}> : (tensor<2xi32>) -> tensor<2xi32>
    %2 = "func.call"() <{callee = @seven}> : () -> tensor<i32>
    "check.expect_eq_const"(%1) {value = dense<[2, 4]> : tensor<2xi32>} : (tensor<2xi32>) -> ()
    "check.expect_eq_const"(%2) {value = dense<7> : tensor<i32>} : (tensor<i32>) -> ()
    "func.return"() : () -> ()
  }) : () -> ()
}) : () -> ()
"""


def test_a_module_in_generic_form(tmp_path):
    # its functions are defined by sym_name, not @name: the argument-less one that nothing
    # calls is the test, the called one (@seven) is not
    r = conf.run_file(_write(tmp_path, GENERIC_MODULE))
    assert r.status == "pass", r.message
    assert list(r.tests) == ["t.mlir:12 @generic_test"]
    r = conf.run_file(_write(tmp_path, GENERIC_MODULE.replace("[2, 4]", "[2, 5]"), "b.mlir"))
    assert r.status == "fail", r.message


OLD_CHECK = """
module {
  func.func @main() -> tensor<i1> {
    %0 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
    %1 = stablehlo.add %0, %0 : tensor<2xf32>
    %2 = stablehlo.constant dense<[2.0, 4.0]> : tensor<2xf32>
    %3 = stablehlo.custom_call @check.eq(%1, %2) : (tensor<2xf32>, tensor<2xf32>) -> tensor<i1>
    return %3 : tensor<i1>
  }
}
"""


def test_older_check_custom_call_with_a_verdict_result(tmp_path):
    # the older testdata's form returns the check's verdict (tensor<i1>): its value is what
    # the check decided, and a wrong expectation still fails the file
    r = conf.run_file(_write(tmp_path, OLD_CHECK))
    assert r.format == "testdata" and r.status == "pass", r.message
    bad = OLD_CHECK.replace("[2.0, 4.0]", "[2.0, 4.5]")
    r = conf.run_file(_write(tmp_path, bad, "bad.mlir"))
    assert r.status == "fail" and "first at [1]" in r.message, r.message
    # the verdict itself, as a later check sees it: true, then false
    import jax

    from hlopipe.conformance import runner
    from hlopipe.conformance.rules import dialect_scope
    from hlopipe.rehydrate import rehydrate

    text = (
        OLD_CHECK.replace("-> tensor<i1> {", "{")
        .replace("@main", "@t")
        .replace("return %3 : tensor<i1>", VERDICTS)
    )
    (test,) = runner.find_tests("t.mlir", conf.to_generic(text))
    with jax.enable_x64(True), dialect_scope():
        rec = runner.run_mode(rehydrate(test.program), "jit")
    assert [bool(c.actual) for c in rec.checks[2:]] == [True, False]


VERDICTS = """%4 = stablehlo.constant dense<[2.0, 4.5]> : tensor<2xf32>
    %5 = stablehlo.custom_call @check.eq(%1, %4) : (tensor<2xf32>, tensor<2xf32>) -> tensor<i1>
    check.expect_eq_const %3, dense<true> : tensor<i1>
    check.expect_eq_const %5, dense<true> : tensor<i1>
    func.return"""


QUANTIZED = """
func.func @q() {
  %a = stablehlo.constant dense<[4.0, 15.0]> : tensor<2xf32>
  %q = stablehlo.uniform_quantize %a : (tensor<2xf32>) -> tensor<2x!quant.uniform<i8:f32, 0.5:-20>>
  %r = stablehlo.uniform_dequantize %q
    : (tensor<2x!quant.uniform<i8:f32, 0.5:-20>>) -> tensor<2xf32>
  check.expect_eq_const %r, dense<[4.0, 15.0]> : tensor<2xf32>
  func.return
}
"""


def test_quantized_types_parse_and_a_wrong_value_fails(tmp_path):
    # jaxlib's contexts register the quant dialect without loading it: the text parses only
    # once the loader has loaded it
    r = conf.run_file(_write(tmp_path, QUANTIZED))
    assert r.status == "pass", r.message
    r = conf.run_file(
        _write(
            tmp_path,
            QUANTIZED.replace("%r, dense<[4.0, 15.0]>", "%r, dense<[4.0, 15.5]>"),
            "b.mlir",
        )
    )
    assert r.status == "fail" and "expected np.float32(15.5)" in r.message, r.message


def test_reference_xla_on_interpret_format():
    r = conf.run_file(DATA / "checks.mlir", reference="xla")
    # the probe test has nothing XLA can compare with
    assert r.reference == "unsupported" and "probe" in r.reference_message
    r = conf.run_file(DATA / "loops.mlir", reference="xla")
    assert r.reference == "unsupported"


DIVIDES_BY_ZERO = """
func.func @div0() {
  %a = stablehlo.constant dense<[7, -7, -2147483648]> : tensor<3xi32>
  %b = stablehlo.constant dense<[0, 0, -1]> : tensor<3xi32>
  %q = stablehlo.divide %a, %b : tensor<3xi32>
  check.expect_eq_const %q, dense<[-1, -1, -2147483648]> : tensor<3xi32>
  func.return
}
"""


def test_reference_xla_dying_of_sigfpe_is_reported_not_fatal(tmp_path):
    # XLA's compiler dies of SIGFPE on this integer division by zero (a constant it folds);
    # the reference runs in a worker, so this process lives to say so
    r = conf.run_file(_write(tmp_path, DIVIDES_BY_ZERO), reference="xla")
    assert r.status == "pass", r.message
    assert r.reference == "error" and "SIGFPE" in r.reference_message
    # (the interpreter-suite file of spec cases divides by zero too); a fresh worker goes on
    ok = _write(tmp_path, TWO_CHECKS, "ok.mlir")
    assert conf.run_file(ok, reference="xla").reference == "pass"


def test_family_from_file_names():
    assert conf.family("scatter_add_int16_1_1_int16_1.mlir") == "scatter_add"
    assert conf.family("/x/abs_bfloat16_20_20.mlir") == "abs"
    assert conf.family("random_randint_.mlir") == "random_randint"
    assert conf.family("iota_2x32_shape_.mlir") == "iota"
    assert conf.family("all_reduce.mlir") == "all_reduce"


# XLA's literal converter cannot hold f6E2M3FN values: a jitted test returning one aborts the
# process (`Check failed: ... array.h`).
ABORTS_XLA = """
func.func @constant_f6() -> tensor<2xf6E2M3FN> {
  %0 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf6E2M3FN>
  %1 = stablehlo.constant dense<1> : tensor<i32>
  check.expect_eq_const %1, dense<1> : tensor<i32>
  func.return %0 : tensor<2xf6E2M3FN>
}
"""

FOREVER = """
func.func @forever() {
  %0 = stablehlo.constant dense<0> : tensor<i32>
  %1 = stablehlo.while(%i = %0) : tensor<i32>
  cond {
    %t = stablehlo.constant dense<true> : tensor<i1>
    stablehlo.return %t : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i32>
    %j = stablehlo.add %i, %one : tensor<i32>
    stablehlo.return %j : tensor<i32>
  }
  check.expect_eq_const %1, dense<0> : tensor<i32>
  func.return
}
"""


def test_a_file_that_aborts_xla_is_an_error_and_the_run_goes_on(tmp_path):
    files = [
        _write(tmp_path, ABORTS_XLA, "a_aborts.mlir"),
        _write(tmp_path, WRONG, "b_wrong.mlir"),
        DATA / "checks.mlir",
        _write(tmp_path, ABORTS_XLA, "d_aborts.mlir"),
        _write(tmp_path, MIXED, "f_mixed.mlir"),
    ]
    seen: list[conf.FileResult] = []
    results = conf.run_files(files, jobs=1, on_result=seen.append)
    assert [Path(r.path).name for r in results] == [f.name for f in files]
    assert len(seen) == len(files)
    status = {Path(r.path).name: r for r in results}
    for name in ("a_aborts.mlir", "d_aborts.mlir"):
        r = status[name]
        assert r.status == "error" and r.failed
        assert "crashed (signal SIGABRT)" in r.message and "array.h" in r.message
    # the files after each crash ran, and give what they give in this process
    wrong = status["b_wrong.mlir"]
    assert wrong.status == "fail" and "@wrong [jit]" in wrong.message
    assert status["checks.mlir"].status == "pass"
    assert status["f_mixed.mlir"].status == "pass"
    assert status["f_mixed.mlir"].tests == conf.run_file(files[-1]).tests


def test_a_file_that_hangs_is_stopped_after_the_timeout(tmp_path):
    files = [_write(tmp_path, FOREVER, "forever.mlir"), _write(tmp_path, WRONG, "wrong.mlir")]
    forever, wrong = conf.run_files(files, jobs=2, timeout=5)
    assert forever.status == "error" and "did not finish in 5 s" in forever.message
    assert wrong.status == "fail"


# ---- the command ----------------------------------------------------------------------------


# Two of the interpreter-suite files through the command (every file of DATA passes through
# run_file in test_interpret_format_files_pass, and the worker processes the command uses run
# the whole shared suite in test_stablehlo_testdata_suite).
CLI_FILES = ("checks.mlir", "loops.mlir")


def test_cli_exit_codes_and_closing_line(tmp_path, capsys):
    folder = tmp_path / "interpret"
    folder.mkdir()
    for name in CLI_FILES:
        (folder / name).write_text((DATA / name).read_text())
    assert cli.main(["conformance", str(folder), "--json", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    assert out.strip().splitlines()[-1] == f"{len(CLI_FILES)} passed, 0 failed"
    doc = json.loads((tmp_path / "r.json").read_text())
    assert [Path(f["path"]).name for f in doc["files"]] == list(CLI_FILES)
    assert {f["status"] for f in doc["files"]} == {"pass"} and doc["families"]
    _write(tmp_path, WRONG)
    assert cli.main(["conformance", str(tmp_path), "-k", "t.mlir", "--no-jit"]) == 1
    out = capsys.readouterr().out
    assert "fail" in out and out.strip().splitlines()[-1] == "0 passed, 1 failed"
    assert cli.main(["conformance", str(tmp_path / "missing")]) == 2
    assert "error: " in capsys.readouterr().err


# ---- the shared suite -----------------------------------------------------------------------


# A file's op: its name before the first element type ("reduce_window_add" of
# "reduce_window_add_float32_12_12.mlir"); a name without one is its own op.
_OP = re.compile(r"^(.*?)_(?:b?float|u?int|complex|bool)\d*(?:_|\.|$)")


def _eager_sample(files: list[Path]) -> set[Path]:
    """The files run eagerly as well as jitted in ``make test``: every op's first file and each
    third after it (636 of 1,790; each op in both modes, its element types spread). Eagerly
    every primitive compiles on its own, 2.4x a jitted file's CPU, and the rules that run are
    the same; ``hlopipe conformance`` runs every file in both modes."""
    by_op: dict[str, list[Path]] = {}
    for f in files:
        m = _OP.match(f.name)
        by_op.setdefault(m[1] if m else f.stem, []).append(f)
    return {f for group in by_op.values() for f in group[::3]}


def _listed_failures() -> dict[str, str]:
    out = {}
    for line in FAILURES.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, why = line.partition(" ")
            out[name] = why.strip()
    return out


@pytest.mark.slow
@pytest.mark.skipif(
    not SUITE.is_dir(),
    reason=f"StableHLO testdata not found at {SUITE} (it lives beside the repository, in "
    "../shared/conformance; a clone elsewhere has no copy)",
)
def test_stablehlo_testdata_suite():
    files = conf.collect_files([SUITE])
    jobs = max(1, min(2, os.cpu_count() or 1))
    listed = _listed_failures()
    sample = _eager_sample(files)
    both = [f for f in files if f.name in listed or f in sample]
    start = time.perf_counter()
    ran = {r.path: r for r in conf.run_files(both, jobs=jobs, jit=True, eager=True)}
    rest = [f for f in files if str(f) not in ran]
    ran.update((r.path, r) for r in conf.run_files(rest, jobs=jobs, jit=True, eager=False))
    results = [ran[str(f)] for f in files]
    seconds = time.perf_counter() - start
    passed = [r for r in results if r.status == "pass"]
    failed = [r for r in results if r.failed]
    unlisted = [
        f"{Path(r.path).name}: {r.status}: {r.message.splitlines()[0] if r.message else ''}"
        for r in failed
        if Path(r.path).name not in listed
    ]
    print(f"\n{conf.summary_line(results)} in {seconds:.0f}s")
    fixed = sorted(set(listed) - {Path(r.path).name for r in failed})
    if fixed:
        print(f"{len(fixed)} file(s) listed in {FAILURES.name} now pass: {fixed[:20]}")
    assert not unlisted, (
        f"{len(unlisted)} file(s) fail that {FAILURES.name} does not list (regressions):\n"
        + "\n".join(unlisted[:50])
    )
    assert len(passed) >= MIN_PASSED, f"{len(passed)} passed, fewer than {MIN_PASSED}"
