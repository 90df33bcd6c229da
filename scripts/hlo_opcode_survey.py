# ruff: noqa: E501  (HLO instructions read best one per line)
"""Which MLIR ops XLA's HLO -> StableHLO converter makes, opcode by opcode (issue 11, item 3).

For each HLO opcode XLA's text parser takes, one small module (run on XLA's CPU backend where
that means anything) goes through jaxlib's parser and ``jax.extend.mlir.hlo_to_stablehlo``;
the script prints, per opcode, the ops that come out that are not plain ``stablehlo.*``
arithmetic, and whether hlopipe runs the module (and agrees with XLA running it directly).

    PYTHONPATH=. python scripts/hlo_opcode_survey.py [--isolate] [opcode ...]

(``--isolate``: one process per opcode, for a converter that aborts.)

Not part of ``make test``: it is a survey, its findings are the rules and tests in
hlopipe/rehydrate/ops/ and tests/rehydrate/ops/test_mhlo.py.
"""

from __future__ import annotations

import re
import subprocess
import sys

F = "f32[4]{0}"
P = "p = f32[4]{0} parameter(0)"


def _un(op: str, ty: str = "f32") -> str:
    return f"p = {ty}[4]{{0}} parameter(0)\n  ROOT r = {ty}[4]{{0}} {op}(p)"


def _bin(op: str, ty: str = "f32", out: str | None = None) -> str:
    out = out or ty
    return (
        f"p = {ty}[4]{{0}} parameter(0)\n  q = {ty}[4]{{0}} parameter(1)\n"
        f"  ROOT r = {out}[4]{{0}} {op}(p, q)"
    )


ADD = "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)\n}\n"
ADDU = "add {\n  a = u32[] parameter(0)\n  b = u32[] parameter(1)\n  ROOT c = u32[] add(a, b)\n}\n"
GT = (
    "gt {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
    "  ROOT c = pred[] compare(a, b), direction=GT\n}\n"
)

# opcode -> (computations before the entry, the entry's body)
CASES: dict[str, tuple[str, str]] = {
    **{
        op: ("", _un(op))
        for op in [
            "abs",
            "cbrt",
            "ceil",
            "cosine",
            "erf",
            "exponential",
            "exponential-minus-one",
            "floor",
            "log",
            "log-plus-one",
            "logistic",
            "negate",
            "round-nearest-afz",
            "round-nearest-even",
            "rsqrt",
            "sign",
            "sine",
            "sqrt",
            "tan",
            "tanh",
            "copy",
        ]
    },
    **{op: ("", _un(op, "s32")) for op in ["not", "popcnt", "count-leading-zeros"]},
    **{
        op: ("", _bin(op))
        for op in ["add", "subtract", "multiply", "divide", "maximum", "minimum", "power"]
    },
    **{op: ("", _bin(op)) for op in ["remainder", "atan2"]},
    **{
        op: ("", _bin(op, "s32"))
        for op in [
            "and",
            "or",
            "xor",
            "shift-left",
            "shift-right-arithmetic",
            "shift-right-logical",
        ]
    },
    "is-finite": ("", f"{P}\n  ROOT r = pred[4]{{0}} is-finite(p)"),
    "compare": ("", _bin("compare", out="pred") + ", direction=LT"),
    "complex": ("", _bin("complex", out="c64")),
    "real": ("", "p = c64[4]{0} parameter(0)\n  ROOT r = f32[4]{0} real(p)"),
    "imag": ("", "p = c64[4]{0} parameter(0)\n  ROOT r = f32[4]{0} imag(p)"),
    "convert": ("", f"{P}\n  ROOT r = s32[4]{{0}} convert(p)"),
    "bitcast-convert": ("", f"{P}\n  ROOT r = s32[4]{{0}} bitcast-convert(p)"),
    "bitcast": ("", f"{P}\n  ROOT r = f32[2,2]{{1,0}} bitcast(p)"),
    "reduce-precision": (
        "",
        f"{P}\n  ROOT r = {F} reduce-precision(p), exponent_bits=5, mantissa_bits=10",
    ),
    "stochastic-convert": (
        "",
        f"{P}\n  q = u32[4]{{0}} parameter(1)\n  ROOT r = bf16[4]{{0}} stochastic-convert(p, q)",
    ),
    "clamp": (
        "",
        f"{P}\n  lo = f32[] constant(0)\n  hi = f32[] constant(1)\n  ROOT r = {F} clamp(lo, p, hi)",
    ),
    "select": (
        "",
        f"{P}\n  q = {F} parameter(1)\n  c = pred[4]{{0}} compare(p, q), direction=GT\n"
        f"  ROOT r = {F} select(c, p, q)",
    ),
    "broadcast": ("", f"{P}\n  ROOT r = f32[3,4]{{1,0}} broadcast(p), dimensions={{1}}"),
    "reshape": ("", f"{P}\n  ROOT r = f32[2,2]{{1,0}} reshape(p)"),
    "transpose": (
        "",
        "p = f32[2,3]{1,0} parameter(0)\n  ROOT r = f32[3,2]{1,0} transpose(p), dimensions={1,0}",
    ),
    "reverse": ("", f"{P}\n  ROOT r = {F} reverse(p), dimensions={{0}}"),
    "slice": ("", f"{P}\n  ROOT r = f32[2]{{0}} slice(p), slice={{[1:3]}}"),
    "concatenate": ("", f"{P}\n  ROOT r = f32[8]{{0}} concatenate(p, p), dimensions={{0}}"),
    "pad": ("", f"{P}\n  z = f32[] constant(0)\n  ROOT r = f32[7]{{0}} pad(p, z), padding=1_2"),
    "iota": ("", "ROOT r = s32[4]{0} iota(), iota_dimension=0"),
    "constant": ("", "ROOT r = f32[4]{0} constant({1, 2, 3, 4})"),
    "tuple": ("", f"{P}\n  ROOT r = ({F}, {F}) tuple(p, p)"),
    "get-tuple-element": (
        "",
        f"{P}\n  t = ({F}, {F}) tuple(p, p)\n  ROOT r = {F} get-tuple-element(t), index=1",
    ),
    "dynamic-slice": (
        "",
        f"{P}\n  i = s32[] parameter(1)\n  ROOT r = f32[2]{{0}} dynamic-slice(p, i), dynamic_slice_sizes={{2}}",
    ),
    "dynamic-update-slice": (
        "",
        f"{P}\n  u = f32[2]{{0}} parameter(1)\n  i = s32[] parameter(2)\n"
        f"  ROOT r = {F} dynamic-update-slice(p, u, i)",
    ),
    "gather": (
        "",
        f"{P}\n  i = s32[3,1]{{1,0}} parameter(1)\n  ROOT r = f32[3]{{0}} gather(p, i), "
        "offset_dims={}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
        "slice_sizes={1}",
    ),
    "scatter": (
        ADD,
        f"{P}\n  i = s32[3,1]{{1,0}} parameter(1)\n  u = f32[3]{{0}} parameter(2)\n"
        f"  ROOT r = {F} scatter(p, i, u), update_window_dims={{}}, inserted_window_dims={{0}}, "
        "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add",
    ),
    "dot": (
        "",
        "p = f32[2,3]{1,0} parameter(0)\n  q = f32[3,4]{1,0} parameter(1)\n"
        "  ROOT r = f32[2,4]{1,0} dot(p, q), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
    ),
    "convolution": (
        "",
        "p = f32[1,5,2]{2,1,0} parameter(0)\n  k = f32[3,2,4]{2,1,0} parameter(1)\n"
        "  ROOT r = f32[1,3,4]{2,1,0} convolution(p, k), window={size=3}, dim_labels=b0f_0io->b0f",
    ),
    "reduce": (
        ADD,
        f"{P}\n  z = f32[] constant(0)\n  ROOT r = f32[] reduce(p, z), dimensions={{0}}, to_apply=add",
    ),
    "reduce-window": (
        ADD,
        f"{P}\n  z = f32[] constant(0)\n  ROOT r = f32[3]{{0}} reduce-window(p, z), "
        "window={size=2}, to_apply=add",
    ),
    "select-and-scatter": (
        ADD + "ge {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT c = pred[] compare(a, b), direction=GE\n}\n",
        f"{P}\n  s = f32[2]{{0}} parameter(1)\n  z = f32[] constant(0)\n"
        f"  ROOT r = {F} select-and-scatter(p, s, z), window={{size=2 stride=2}}, select=ge, scatter=add",
    ),
    "map": (ADD, f"{P}\n  ROOT r = {F} map(p, p), dimensions={{0}}, to_apply=add"),
    "sort": (GT, f"{P}\n  ROOT r = {F} sort(p), dimensions={{0}}, to_apply=gt"),
    "topk": ("", f"{P}\n  ROOT r = (f32[2]{{0}}, s32[2]{{0}}) topk(p), k=2, largest=true"),
    "call": (ADD, "a = f32[] parameter(0)\n  ROOT r = f32[] call(a, a), to_apply=add"),
    "fusion": (
        "fused {\n  a = f32[4]{0} parameter(0)\n  ROOT m = f32[4]{0} multiply(a, a)\n}\n",
        f"{P}\n  ROOT r = {F} fusion(p), kind=kLoop, calls=fused",
    ),
    "conditional": (
        "t {\n  a = f32[] parameter(0)\n  ROOT n = f32[] negate(a)\n}\n"
        "f {\n  a = f32[] parameter(0)\n  ROOT n = f32[] abs(a)\n}\n",
        "c = pred[] parameter(0)\n  a = f32[] parameter(1)\n"
        "  ROOT r = f32[] conditional(c, a, a), true_computation=t, false_computation=f",
    ),
    "while": (
        "cond {\n  a = s32[] parameter(0)\n  l = s32[] constant(5)\n"
        "  ROOT c = pred[] compare(a, l), direction=LT\n}\n"
        "body {\n  a = s32[] parameter(0)\n  o = s32[] constant(1)\n  ROOT s = s32[] add(a, o)\n}\n",
        "a = s32[] parameter(0)\n  ROOT r = s32[] while(a), condition=cond, body=body",
    ),
    "rng": (
        "",
        "a = f32[] constant(0)\n  b = f32[] constant(1)\n"
        "  ROOT r = f32[4]{0} rng(a, b), distribution=rng_uniform",
    ),
    "rng-bit-generator": (
        "",
        "s = u64[2]{0} parameter(0)\n  ROOT r = (u64[2]{0}, u32[4]{0}) rng-bit-generator(s), "
        "algorithm=rng_three_fry",
    ),
    "rng-get-and-update-state": ("", "ROOT r = u64[2]{0} rng-get-and-update-state(), delta=4"),
    "after-all": ("", "a = token[] after-all()\n  ROOT b = token[] after-all(a, a)"),
    "add-dependency": (
        "",
        f"{P}\n  t = token[] after-all()\n  ROOT r = {F} add-dependency(p, t)",
    ),
    "optimization-barrier": (
        "",
        f"{P}\n  t = ({F}) tuple(p)\n  ROOT r = ({F}) opt-barrier(t)",
    ),
    "domain": (
        "",
        f'{P}\n  ROOT r = {F} domain(p), domain={{kind="sharding", entry={{maximal device=0}}, '
        "exit={replicated}}",
    ),
    "get-dimension-size": ("", f"{P}\n  ROOT r = s32[] get-dimension-size(p), dimensions={{0}}"),
    "set-dimension-size": (
        "",
        f"{P}\n  n = s32[] constant(3)\n  ROOT r = f32[<=4]{{0}} set-dimension-size(p, n), dimensions={{0}}",
    ),
    "dynamic-reshape": (
        "",
        "p = f32[4]{0} parameter(0)\n  a = s32[] constant(2)\n"
        "  ROOT r = f32[<=2,<=2]{1,0} dynamic-reshape(p, a, a)",
    ),
    "partition-id": ("", "ROOT r = u32[] partition-id()"),
    "replica-id": ("", "ROOT r = u32[] replica-id()"),
    "all-reduce": (ADD, f"{P}\n  ROOT r = {F} all-reduce(p), to_apply=add, replica_groups={{}}"),
    "all-gather": (
        "",
        f"{P}\n  ROOT r = {F} all-gather(p), dimensions={{0}}, replica_groups={{}}",
    ),
    "all-to-all": ("", f"{P}\n  ROOT r = {F} all-to-all(p), dimensions={{0}}, replica_groups={{}}"),
    "reduce-scatter": (
        ADD,
        f"{P}\n  ROOT r = {F} reduce-scatter(p), dimensions={{0}}, replica_groups={{}}, to_apply=add",
    ),
    "collective-permute": (
        "",
        f"{P}\n  ROOT r = {F} collective-permute(p), source_target_pairs={{{{0,0}}}}",
    ),
    "collective-broadcast": (
        "",
        f"{P}\n  ROOT r = {F} collective-broadcast(p), replica_groups={{{{0}}}}",
    ),
    "all-reduce-start": (
        ADD,
        f"{P}\n  s = {F} all-reduce-start(p), to_apply=add, replica_groups={{}}\n"
        f"  ROOT r = {F} all-reduce-done(s)",
    ),
    "all-gather-start": (
        "",
        f"{P}\n  s = ({F}, {F}) all-gather-start(p), dimensions={{0}}, replica_groups={{}}\n"
        f"  ROOT r = {F} all-gather-done(s)",
    ),
    "collective-permute-start": (
        "",
        f"{P}\n  s = ({F}, {F}, u32[], u32[]) collective-permute-start(p), "
        "source_target_pairs={{0,0}}\n"
        f"  ROOT r = {F} collective-permute-done(s)",
    ),
    "copy-start": (
        "",
        f"{P}\n  s = ({F}, {F}, u32[]) copy-start(p)\n  ROOT r = {F} copy-done(s)",
    ),
    "async-start": (
        "comp {\n  a = f32[4]{0} parameter(0)\n  ROOT n = f32[4]{0} negate(a)\n}\n",
        f"{P}\n  s = (({F}), {F}, s32[]) async-start(p), calls=comp\n  ROOT r = {F} async-done(s)",
    ),
    "custom-call": ("", f'{P}\n  ROOT r = {F} custom-call(p), custom_call_target="foo"'),
    "cholesky": (
        "",
        "p = f32[2,2]{1,0} parameter(0)\n  ROOT r = f32[2,2]{1,0} cholesky(p), lower=true",
    ),
    "triangular-solve": (
        "",
        "a = f32[2,2]{1,0} parameter(0)\n  b = f32[2,3]{1,0} parameter(1)\n"
        "  ROOT r = f32[2,3]{1,0} triangular-solve(a, b), left_side=true, lower=true, "
        "transpose_a=NO_TRANSPOSE, unit_diagonal=false",
    ),
    "fft": (
        "",
        "p = c64[4]{0} parameter(0)\n  ROOT r = c64[4]{0} fft(p), fft_type=FFT, fft_length={4}",
    ),
    "batch-norm-inference": (
        "",
        "x = f32[2,3]{1,0} parameter(0)\n  s = f32[3]{0} parameter(1)\n"
        "  ROOT r = f32[2,3]{1,0} batch-norm-inference(x, s, s, s, s), epsilon=0.001, feature_index=1",
    ),
    "batch-norm-training": (
        "",
        "x = f32[2,3]{1,0} parameter(0)\n  s = f32[3]{0} parameter(1)\n"
        "  ROOT r = (f32[2,3]{1,0}, f32[3]{0}, f32[3]{0}) batch-norm-training(x, s, s), "
        "epsilon=0.001, feature_index=1",
    ),
    "batch-norm-grad": (
        "",
        "x = f32[2,3]{1,0} parameter(0)\n  s = f32[3]{0} parameter(1)\n"
        "  ROOT r = (f32[2,3]{1,0}, f32[3]{0}, f32[3]{0}) batch-norm-grad(x, s, s, s, x), "
        "epsilon=0.001, feature_index=1",
    ),
    "infeed": (
        "",
        "t = token[] after-all()\n  ROOT r = ((f32[4]{0}), token[]) infeed(t)",
    ),
    "outfeed": (
        "",
        f"{P}\n  t = token[] after-all()\n  ROOT r = token[] outfeed(p, t), outfeed_shape=f32[4]{{0}}",
    ),
    "send": (
        "",
        f"{P}\n  t = token[] after-all()\n  s = ({F}, u32[], token[]) send(p, t), channel_id=1\n"
        "  ROOT r = token[] send-done(s), channel_id=1",
    ),
    "recv": (
        "",
        "t = token[] after-all()\n  s = (f32[4]{0}, u32[], token[]) recv(t), channel_id=1\n"
        "  ROOT r = (f32[4]{0}, token[]) recv-done(s), channel_id=1",
    ),
    "ragged-dot": (
        "",
        "p = f32[6,3]{1,0} parameter(0)\n  q = f32[2,3,4]{2,1,0} parameter(1)\n"
        "  g = s32[2]{0} parameter(2)\n  ROOT r = f32[6,4]{1,0} ragged-dot(p, q, g), "
        "lhs_contracting_dims={1}, rhs_contracting_dims={1}, lhs_ragged_dims={0}, "
        "rhs_group_dims={0}",
    ),
    "ragged-all-to-all": (
        "",
        "p = f32[4]{0} parameter(0)\n  o = f32[4]{0} parameter(1)\n  i = s64[1]{0} parameter(2)\n"
        "  ROOT r = f32[4]{0} ragged-all-to-all(p, o, i, i, i, i), replica_groups={{0}}",
    ),
    "composite": (
        "comp {\n  a = f32[4]{0} parameter(0)\n  ROOT n = f32[4]{0} negate(a)\n}\n",
        f"{P}\n  ROOT r = {F} call(p), to_apply=comp, is_composite=true, "
        'frontend_attributes={composite.attributes={},composite.name="foo.neg",composite.version="1"}',
    ),
    "scaled-dot": (
        "",
        "p = f32[2,3]{1,0} parameter(0)\n  q = f32[3,4]{1,0} parameter(1)\n"
        "  s = f32[2,1]{1,0} parameter(2)\n  t = f32[1,4]{1,0} parameter(3)\n"
        "  ROOT r = f32[2,4]{1,0} scaled-dot(p, q, s, t), lhs_contracting_dims={1}, "
        "rhs_contracting_dims={0}",
    ),
}

_PLAIN = re.compile(r"^(func\.|stablehlo\.(constant|return|tuple|get_tuple_element)$)")


def survey_one(opcode: str) -> str:
    """One line: the opcode, what the converter made of it, and whether hlopipe runs it."""
    from hlopipe.io import _xla
    from hlopipe.rehydrate import module_ir, scan_unsupported

    pre, body = CASES[opcode]
    text = f"HloModule m\n\n{pre}\nENTRY main {{\n  {body}\n}}\n"
    try:
        module = _xla.hlo_module_from_text(text)
    except Exception as e:
        return f"{opcode}\tparse-fails\t{str(e).splitlines()[0][:100]}"
    try:
        data = _xla.hlo_module_to_stablehlo_bytes(module)
    except Exception as e:
        return f"{opcode}\tconvert-fails\t{str(e).splitlines()[0][:100]}"
    import hlopipe

    try:
        program = hlopipe.load(data)
    except Exception as e:
        return f"{opcode}\tload-fails\t{type(e).__name__}: {str(e)[:120]}"
    mtext = program.to_text()
    ops = sorted(set(re.findall(r"^\s*(?:%\S+ = )?\"?([a-z_]+\.[a-z_.]+)", mtext, re.M)))
    ops = [o for o in ops if not _PLAIN.match(o)]
    ops += sorted({f"@{t}" for t in re.findall(r"custom_call @([\w.$-]+)", mtext)})
    try:
        missing = [m[0] for m in scan_unsupported(module_ir(program), program.entry)]
        status = "rules" if not missing else "missing " + ",".join(missing)
        hlopipe.rehydrate(program)
    except Exception as e:
        status = f"refused {type(e).__name__}: {str(e).splitlines()[-1][:150]}"
    return f"{opcode}\t{' '.join(ops) or '-'}\t{status}"


def main(argv: list[str]) -> None:
    isolate = "--isolate" in argv
    names = [a for a in argv if a != "--isolate"] or list(CASES)
    print("| HLO opcode | MLIR ops after hlo_to_stablehlo (beyond plain stablehlo) | hlopipe |")
    print("| --- | --- | --- |")
    for name in names:
        if isolate:
            # one child process per opcode: a converter that aborts takes only its line down
            proc = subprocess.run(
                [sys.executable, __file__, "--one", name],
                capture_output=True,
                text=True,
                timeout=120,
            )
            line = proc.stdout.strip() or f"{name}\tcrashed (exit {proc.returncode})\t"
        else:
            line = survey_one(name)
        cells = [*line.split("\t"), "", ""][:3]
        print("| " + " | ".join(c.replace("|", "/") for c in cells) + " |", flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        print(survey_one(sys.argv[2]))
    else:
        main(sys.argv[1:])
