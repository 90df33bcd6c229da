"""Hand-built StableHLO programs for every op of the specification, three oracles each.

Each :class:`Case` is one small module (``func.func @main`` taking its inputs as arguments)
with the inputs that go with it: edge values (NaN, ±inf, ±0, denormals, integer min/max),
every element type the op allows, empty and rank-0 shapes, non-default attributes. A case
runs through

* StableHLO's reference interpreter (``jaxlib``'s ``stablehlo.eval_module``, the inputs
  inlined as constants): the specification's answer;
* XLA compiling the module directly: what the program computed where it came from;
* the rehydrated function, jitted and eagerly.

:func:`verdict` compares them: ``pass`` when rehydration equals XLA (or, where XLA cannot run
the case, the specification); ``spec`` when it equals the specification where XLA differs;
``fail`` when it equals neither; ``unsupported``/``error`` when it raises.

Used by ``tests/rehydrate/test_spec_sweep.py`` (one non-empty case per op and element type)
and ``benchmarks/spec_sweep.py`` (every case, with a pass table per op).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple, TypeVar

import jax
import ml_dtypes
import numpy as np

from hlopipe.errors import UnsupportedOpError
from hlopipe.io._types import dtype_of, mlir_name

T = TypeVar("T")

SINT = ("i8", "i16", "i32", "i64", "i4")
UINT = ("ui8", "ui16", "ui32", "ui64", "ui4")
INT = SINT + UINT
FLOAT = ("f16", "bf16", "f32", "f64", "f8E4M3FN", "f8E5M2")
COMPLEX = ("complex<f32>", "complex<f64>")
ALL = ("i1", *INT, *FLOAT, *COMPLEX)


class Case(NamedTuple):
    name: str  # op/dtype/variant
    op: str  # the op under test (the pass table's row)
    text: str  # a module whose @main takes ``args``
    args: tuple[np.ndarray, ...]
    ulps: int = 0  # float tolerance in ULPs of the result type
    rtol: float = 0.0  # relative tolerance on top (accumulations in another order)


# --------------------------------------------------------------------------- values


def sample(t: str, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """Values of element type ``t``: edge values first, then random ones."""
    dt = dtype_of(t)
    n = int(np.prod(shape, dtype=np.int64))
    rng = np.random.default_rng(seed)
    if dt == np.dtype(bool):
        flat = np.resize(np.array([True, False, False, True]), n)
        flat = flat ^ rng.integers(0, 2, n).astype(bool) if seed else flat
        return flat.reshape(shape)
    if dt.kind == "c":
        part = t[8:-1]
        re_ = sample(part, shape, seed)
        im = np.roll(sample(part, shape, seed + 7).ravel(), 3).reshape(shape)
        out = np.empty(shape, dt)
        out.real, out.imag = re_.real, im
        return out
    if np.issubdtype(dt, np.integer) or t in ("i4", "ui4", "i2", "ui2"):
        info = ml_dtypes.iinfo(dt)
        wide = np.int64 if info.min < 0 else np.uint64
        edge = [info.min, info.max, 0, 1, info.max - 1, 2, 3]
        if info.min < 0:
            edge += [-1, info.min + 1, -2]
        edge = edge[seed % 3 :] + edge[: seed % 3]
        body = rng.integers(max(info.min, -100), min(info.max, 100), max(n, 1), dtype=wide)
        return np.array([*edge, *body], wide)[:n].astype(dt).reshape(shape)
    fi = ml_dtypes.finfo(dt)
    tiny = float(fi.smallest_subnormal) if hasattr(fi, "smallest_subnormal") else 0.0
    edge = [
        np.nan,
        np.inf,
        -np.inf,
        0.0,
        -0.0,
        float(fi.max),
        -float(fi.max),
        tiny,
        -1.5,
        2.5,
        float(fi.tiny),
        1.0,
        -1.0,
        0.5,
    ]
    edge = edge[seed % 5 :] + edge[: seed % 5]
    with np.errstate(all="ignore"):
        body = rng.standard_normal(max(n, 1)) * 3
        return np.array([*edge, *body])[:n].astype(dt).reshape(shape)


def finite(t: str, shape: tuple[int, ...], seed: int = 0, scale: float = 2.0) -> np.ndarray:
    """Small finite values (for ops whose interest is not the edge values)."""
    dt = dtype_of(t)
    rng = np.random.default_rng(seed)
    if dt == np.dtype(bool):
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
    if dt.kind in "iu" or t in ("i4", "ui4"):
        lo = 0 if t.startswith("u") else -4
        return rng.integers(lo, 5, shape).astype(dt)
    return (np.round(rng.standard_normal(shape) * scale * 4) / 4).astype(dt)


# --------------------------------------------------------------------------- text


def ttype(shape: Sequence[int], t: str) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + t + ">"


def tof(a: np.ndarray) -> str:
    return ttype(a.shape, mlir_name(a.dtype))


def literal(a: np.ndarray) -> str:
    """``a`` as an MLIR dense literal (hex blob, booleans spelled out)."""
    if a.size == 0:
        return "dense<>" if a.ndim else "dense<0>"
    if a.dtype == np.dtype(bool):
        flat = ", ".join("true" if v else "false" for v in a.ravel())
        return f"dense<{flat}>" if a.ndim == 0 else _nested(a, lambda v: str(v).lower())
    return f'dense<"0x{np.ascontiguousarray(a).tobytes().hex().upper()}">'


def _nested(a: np.ndarray, fmt: Callable[[Any], str]) -> str:
    def rec(x: np.ndarray) -> str:
        if x.ndim == 0:
            return fmt(bool(x))
        return "[" + ", ".join(rec(y) for y in x) + "]"

    return f"dense<{rec(a)}>"


def module(args: Sequence[np.ndarray], body: str, results: Sequence[str]) -> str:
    """A module whose @main takes ``args`` as %a0, %a1, ... and returns ``results`` (the
    types; ``body`` ends with ``"func.return"``)."""
    params = ", ".join(f"%a{i}: {tof(a)}" for i, a in enumerate(args))
    return f"func.func @main({params}) -> ({', '.join(results)}) {{\n{body}\n}}\n"


def inline_args(text: str, args: Sequence[np.ndarray]) -> str:
    """``text`` with its @main arguments replaced by constants (for the reference
    interpreter, which takes no arguments of the types ``eval_module`` cannot build)."""
    head, rest = text.split("{\n", 1)
    name_end = head.index("(")
    sig_end = head.index(") ->")
    head = head[:name_end] + "()" + head[sig_end + 1 :]
    consts = "".join(
        f'  %a{i} = "stablehlo.constant"() {{value = {literal(a)} : {tof(a)}}} : () -> {tof(a)}\n'
        for i, a in enumerate(args)
    )
    return head + "{\n" + consts + rest


def op1(op: str, args: Sequence[np.ndarray], out: str, attrs: str = "") -> str:
    """A module with one generic op applied to every argument."""
    names = ", ".join(f"%a{i}" for i in range(len(args)))
    ins = ", ".join(tof(a) for a in args)
    body = f'  %r = "{op}"({names}) {attrs} : ({ins}) -> {out}\n  "func.return"(%r) : ({out}) -> ()'
    return module(args, body, [out])


def region(t: str, op: str | None, *, n: int = 2, extra: str = "") -> str:
    """A region of ``n`` scalar ``t`` arguments returning ``op`` of the first two (or the raw
    ``extra`` body, which must end with a return)."""
    s = f"tensor<{t}>"
    params = ", ".join(f"%x{i}: {s}" for i in range(n))
    if extra:
        return f"({{\n  ^bb0({params}):\n{extra}\n  }})"
    return (
        f"({{\n  ^bb0({params}):\n"
        f'    %y = "{op}"(%x0, %x1) : ({s}, {s}) -> {s}\n'
        f'    "stablehlo.return"(%y) : ({s}) -> ()\n  }})'
    )


def cmp(a: str, b: str, d: str, s: str, kind: str = "") -> str:
    """A generic ``stablehlo.compare`` of scalars ``a`` and ``b`` of type ``s``."""
    ct = f", compare_type = #stablehlo<comparison_type {kind}>" if kind else ""
    return (
        f'"stablehlo.compare"({a}, {b}) {{comparison_direction = '
        f"#stablehlo<comparison_direction {d}>{ct}}} : ({s}, {s}) -> tensor<i1>"
    )


def i64s(*xs: int) -> str:
    return "array<i64" + (": " + ", ".join(map(str, xs)) if xs else "") + ">"


def bools(*xs: bool) -> str:
    return "array<i1" + (": " + ", ".join("true" if x else "false" for x in xs) if xs else "") + ">"


# --------------------------------------------------------------------------- oracles


# Ops StableHLO's interpreter aborts the process on ("unsupported at the moment").
NOT_IN_REFERENCE = (
    "batch_norm_",
    "cholesky",
    "triangular_solve",
    "fft",
    "rng",
    "uniform_quantize",
    "uniform_dequantize",
)


def run_reference(case: Case) -> list[np.ndarray]:
    """The specification's answer: ``eval_module`` in a child process (the interpreter aborts
    the process on what it does not implement, and on complex results)."""
    if any(f'"stablehlo.{n}' in case.text for n in NOT_IN_REFERENCE):
        raise UnsupportedOpError("not implemented by the reference interpreter")
    text, complex_results = _split_complex_results(inline_args(case.text, case.args))
    outs = _Server.get().eval(text)
    return _join_complex(outs, complex_results)


def _split_complex_results(text: str) -> tuple[str, list[int]]:
    """Return complex results as real and imaginary parts (jaxlib cannot read complex
    attributes back)."""
    head, ret = text.rsplit('  "func.return"(', 1)
    names_s, rest = ret.split(") : (", 1)
    types_s = rest.split(") -> ()", 1)[0]
    names = [n.strip() for n in names_s.split(",") if n.strip()]
    types = _split_types(types_s)
    out_names, out_types, lines, cplx = [], [], [], []
    for k, (n, t) in enumerate(zip(names, types, strict=True)):
        if "complex<" not in t:
            out_names.append(n)
            out_types.append(t)
            continue
        cplx.append(k)
        rt = t.replace(f"complex<{_inner(t)}>", _inner(t))
        for part in ("real", "imag"):
            v = f"%__{part}{k}"
            lines.append(f'  {v} = "stablehlo.{part}"({n}) : ({t}) -> {rt}\n')
            out_names.append(v)
            out_types.append(rt)
    if not cplx:
        return text, []
    sig_old = "-> (" + ", ".join(types) + ")"
    head = head.replace(sig_old, "-> (" + ", ".join(out_types) + ")", 1)
    ret_line = f'  "func.return"({", ".join(out_names)}) : ({", ".join(out_types)}) -> ()\n}}\n'
    return head + "".join(lines) + ret_line, cplx


def _inner(t: str) -> str:
    return t[t.index("complex<") + 8 : t.index(">", t.index("complex<"))]


def _split_types(s: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _join_complex(outs: list[np.ndarray], cplx: list[int]) -> list[np.ndarray]:
    res: list[np.ndarray] = []
    it = iter(outs)
    for k in range(len(outs) - len(cplx)):
        a = next(it)
        if k in cplx:
            b = next(it)
            c = np.empty(a.shape, np.complex64 if a.dtype == np.float32 else np.complex128)
            c.real, c.imag = a, b
            res.append(c)
        else:
            res.append(a)
    return res


class _Server:
    """One child process running ``eval_module`` on module texts, restarted when it dies."""

    _instance: _Server | None = None

    def __init__(self) -> None:
        import subprocess
        import sys

        code = (
            "import sys, json\n"
            f"sys.path.insert(0, {str(__import__('pathlib').Path(__file__).parent)!r})\n"
            "import spec_cases\n"
            "spec_cases._serve()\n"
        )
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )

    @classmethod
    def get(cls) -> _Server:
        if cls._instance is None or cls._instance.proc.poll() is not None:
            cls._instance = _Server()
        return cls._instance

    def eval(self, text: str) -> list[np.ndarray]:
        import json

        from hlopipe.io._types import parse_tensor_type
        from hlopipe.rehydrate._ir import _dense_body, parse_dense

        assert self.proc.stdin is not None and self.proc.stdout is not None
        data = text.encode()
        try:
            self.proc.stdin.write(len(data).to_bytes(8, "little") + data)
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        except BrokenPipeError:
            line = b""
        if not line:
            self.proc.wait()
            raise RuntimeError("the reference interpreter aborted")
        reply = json.loads(line)
        if "aborted" in reply:
            raise RuntimeError("the reference interpreter aborted")
        if "error" in reply:
            raise RuntimeError(reply["error"])
        out = []
        for s in reply["results"]:
            shape, dtype = parse_tensor_type(s[s.rindex(":") + 1 :].strip())
            out.append(parse_dense(_dense_body(s), shape, dtype))
        return out


def _serve() -> None:
    """Answer each module text on stdin with one JSON line: its results, its error, or that
    the interpreter aborted. Each text runs in a forked child, so an abort (the interpreter
    stops the process on what it does not implement) costs a fork, not a new Python."""
    import json
    import os
    import sys

    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import stablehlo

    from hlopipe.io._xla import make_context

    inp, out = sys.stdin.buffer, sys.stdout
    while True:
        head = inp.read(8)
        if len(head) < 8:
            return
        text = inp.read(int.from_bytes(head, "little")).decode()
        out.flush()
        pid = os.fork()
        if pid == 0:
            try:
                with make_context():
                    results = [str(r) for r in stablehlo.eval_module(ir.Module.parse(text), [])]
                out.write(json.dumps({"results": results}) + "\n")
            except Exception as e:  # the interpreter's refusal, sent back as the answer
                out.write(json.dumps({"error": f"{type(e).__name__}: {e}"[:300]}) + "\n")
            out.flush()
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        if status != 0:
            out.write(json.dumps({"aborted": status}) + "\n")
            out.flush()


def run_xla(case: Case) -> list[np.ndarray]:
    from jax.extend.backend import get_compile_options

    client = jax.devices("cpu")[0].client
    # JAX's compile options (the program's original run), not XLA's defaults: JAX turns
    # xla_cpu_enable_fast_min_max off, so min/max/clamp/reductions propagate NaN
    options = get_compile_options(num_replicas=1, num_partitions=1)
    exe = client.compile_and_load(case.text, jax.devices("cpu")[:1], options)
    outs = exe.execute([jax.device_put(a, jax.devices("cpu")[0]) for a in case.args])
    return [np.asarray(o) for o in outs]


def _call(f: Callable[..., Any], case: Case, jit: bool) -> list[np.ndarray]:
    """The rehydrated function ``f`` of ``case`` on its arguments, jitted or eagerly."""
    out = jax.jit(f)(*case.args) if jit else f(*case.args)
    out = out if isinstance(out, (tuple, list)) else (out,)
    return [np.asarray(o) for o in out]


def same(a: np.ndarray, b: np.ndarray, ulps: int = 0, rtol: float = 0.0) -> bool:
    """Equal in shape, dtype and value; NaNs equal NaNs, -0 equals +0 only with a
    tolerance; floats within ``ulps`` ULPs or ``rtol``."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind == "c":
        return same(a.real, b.real, ulps, rtol) and same(a.imag, b.imag, ulps, rtol)
    if a.dtype.kind in "biuV" and not _is_float(a.dtype):
        return bool(np.array_equal(a, b))
    af, bf = a.astype(np.float64), b.astype(np.float64)
    both_nan = np.isnan(af) & np.isnan(bf)
    if ulps == 0 and rtol == 0:
        return bool(np.all(both_nan | ((af == bf) & (np.signbit(af) == np.signbit(bf)))))
    eps = float(ml_dtypes.finfo(a.dtype).eps)
    tiny = float(ml_dtypes.finfo(a.dtype).tiny)
    with np.errstate(invalid="ignore", over="ignore"):
        tol = np.maximum(ulps * eps * np.abs(bf), rtol * (np.abs(bf) + 1.0)) + ulps * tiny
        return bool(np.all(both_nan | (af == bf) | (np.abs(af - bf) <= tol)))


def _is_float(dt: np.dtype) -> bool:
    try:
        ml_dtypes.finfo(dt)
        return True
    except ValueError:
        return False


def all_same(xs: list[np.ndarray] | None, ys: list[np.ndarray] | None, case: Case) -> bool:
    if xs is None or ys is None or len(xs) != len(ys):
        return False
    return all(same(x, y, case.ulps, case.rtol) for x, y in zip(xs, ys, strict=True))


class Outcome(NamedTuple):
    status: str  # pass / spec / fail / unsupported / error
    note: str  # why, and whether XLA and the specification agree


class Answers(NamedTuple):
    """A case's answers from its three runs (``None`` where a run raised, with why)."""

    ref: list[np.ndarray] | None  # the specification (the reference interpreter)
    ref_err: str
    xla: list[np.ndarray] | None  # XLA compiling the module directly
    xla_err: str
    ours: dict[bool, list[np.ndarray] | Exception]  # rehydrated, by mode (jit: True)


def verdict(case: Case, modes: Sequence[bool] = (True, False)) -> Outcome:
    """``case``'s outcome, each oracle and each mode run on the case alone."""
    return judge(case, answer(case, modes))


def answer(case: Case, modes: Sequence[bool]) -> Answers:
    """``case`` run through the reference interpreter, XLA and rehydration in ``modes``
    (rehydrated once, called in each mode)."""
    f = _rehydrated(case)
    return Answers(
        *_told(_caught(lambda: run_reference(case))),
        *_told(_caught(lambda: run_xla(case))),
        {jit: _ours(f, case, jit) for jit in modes},
    )


def _caught(fn: Callable[[], T]) -> T | Exception:
    """``fn()``, or the exception it raised: a case's failure is its answer (an oracle may
    reject a case in any way, and its reason is reported; rehydration's is judged by its type
    in :func:`judge`)."""
    try:
        return fn()
    except Exception as e:  # the isolation point of a case's run (see above)
        return e


def _told(value: list[np.ndarray] | Exception) -> tuple[list[np.ndarray] | None, str]:
    """An oracle's answer, or why it gave none."""
    if isinstance(value, Exception):
        return None, f"{type(value).__name__}: {str(value).splitlines()[0][:160]}"
    return value, ""


def _rehydrated(case: Case) -> Callable[..., Any] | Exception:
    from hlopipe.rehydrate._rehydrate import rehydrate

    return _caught(lambda: rehydrate(case.text))


def _ours(f: Callable[..., Any] | Exception, case: Case, jit: bool) -> list[np.ndarray] | Exception:
    """The rehydrated function ``f`` (or why rehydration failed) on ``case``'s arguments."""
    return f if isinstance(f, Exception) else _caught(lambda: _call(f, case, jit))


def judge(case: Case, answers: Answers) -> Outcome:
    """The outcome of ``case`` from its answers (the modes in the order run)."""
    ref, ref_err, xla, xla_err = answers.ref, answers.ref_err, answers.xla, answers.xla_err
    spec_vs_xla = ""
    if ref is not None and xla is not None and not all_same(ref, xla, case):
        flushed = [_flush(r) for r in ref]
        spec_vs_xla = (
            "xla!=spec (denormals flushed)" if all_same(flushed, xla, case) else ("xla!=spec")
        )
    for jit, ours in answers.ours.items():
        if isinstance(ours, UnsupportedOpError):
            return Outcome("unsupported", str(ours).splitlines()[0][:200])
        if isinstance(ours, Exception):
            return Outcome(
                "error",
                f"{'jit' if jit else 'eager'}: {type(ours).__name__}: "
                f"{str(ours).splitlines()[0][:200]}",
            )
        mode = "jit" if jit else "eager"
        if xla is not None and all_same(ours, xla, case):
            continue
        if ref is not None and all_same(ours, ref, case):
            if xla is None:
                continue
            return Outcome("spec", f"{mode}: equals the specification, XLA differs")
        if xla is not None and ref is not None and _each_either(ours, xla, ref, case):
            return Outcome("spec", f"{mode}: each element equals XLA or the specification")
        if xla is None and ref is None:
            return Outcome("error", f"no oracle ran: ref {ref_err}; xla {xla_err}")
        want = xla if xla is not None else ref
        return Outcome(
            "fail",
            f"{mode}: got {_short(ours)} want {_short(want)} "
            f"(ref {_short(ref) if ref is not None else ref_err}) {spec_vs_xla}",
        )
    return Outcome("pass", spec_vs_xla)


# --------------------------------------------------------------------------- batches


def answer_all(cases: Sequence[Case], eager: Sequence[bool], batch: int = 24) -> list[Answers]:
    """What :func:`answer` gives for each case (jitted, and eagerly where ``eager`` says),
    with each oracle and the jitted runs compiled once for ``batch`` cases together: one
    module calling every case's ``@main`` (XLA, the reference interpreter) and one
    ``jax.jit`` of every case's rehydrated function. The cases share no values, so each
    computes what it computes alone; a batch that raises is halved down to single cases,
    which run (and fail) as :func:`answer` runs them."""
    out: list[Answers] = []
    for start in range(0, len(cases), batch):
        group = list(cases[start : start + batch])
        refs = _halving(group, _reference_many, run_reference)
        xlas = _halving(group, _xla_many, run_xla)
        fns = [_rehydrated(c) for c in group]
        ok = [k for k, f in enumerate(fns) if not isinstance(f, Exception)]
        jitted = _halving(
            [(group[k], fns[k]) for k in ok], _jit_many, lambda pair: _jit_many([pair])[0]
        )
        ours_jit: list[list[np.ndarray] | Exception] = list(fns)  # type: ignore[arg-type]
        for k, value in zip(ok, jitted, strict=True):
            ours_jit[k] = value
        for k, case in enumerate(group):
            ours = {True: ours_jit[k]}
            if eager[start + k]:  # the function rehydrated above, called op by op
                ours[False] = _ours(fns[k], case, False)
            out.append(Answers(*_told(refs[k]), *_told(xlas[k]), ours))
    return out


def _halving(
    items: list[Any], run_many: Callable[[list[Any]], list[Any]], run_one: Callable[[Any], Any]
) -> list[Any]:
    """``run_many(items)``; when it raises, each half on its own, down to ``run_one`` of a
    single item, whose exception is its answer."""
    if not items:
        return []
    if len(items) == 1:
        return [_caught(lambda: run_one(items[0]))]
    try:
        return run_many(items)
    except Exception:  # some case of the batch failed: found by halving
        half = len(items) // 2
        return _halving(items[:half], run_many, run_one) + _halving(items[half:], run_many, run_one)


def _result_types(text: str) -> list[str]:
    head = text.split("{\n", 1)[0]
    return _split_types(head[head.index(") -> (") + 6 : head.rindex(")")])


def combine(texts: Sequence[str], args: Sequence[Sequence[np.ndarray]]) -> str:
    """One module whose ``@main`` takes every case's arguments in turn and returns every
    case's results in turn: each case's ``@main`` renamed ``@case<k>`` and called once."""
    funcs, params, calls, results, types = [], [], [], [], []
    for k, (text, case_args) in enumerate(zip(texts, args, strict=True)):
        funcs.append(text.replace("func.func @main(", f"func.func private @case{k}(", 1))
        names = [f"%c{k}_{i}" for i in range(len(case_args))]
        params += [f"{n}: {tof(a)}" for n, a in zip(names, case_args, strict=True)]
        rtypes = _result_types(text)
        ins = ", ".join(tof(a) for a in case_args)
        many = len(rtypes) > 1
        calls.append(
            f'  %r{k}{f":{len(rtypes)}" if many else ""} = "func.call"({", ".join(names)}) '
            f"{{callee = @case{k}}} : ({ins}) -> ({', '.join(rtypes)})\n"
        )
        results += [f"%r{k}#{i}" if many else f"%r{k}" for i in range(len(rtypes))]
        types += rtypes
    main = (
        f"func.func @main({', '.join(params)}) -> ({', '.join(types)}) {{\n"
        + "".join(calls)
        + f'  "func.return"({", ".join(results)}) : ({", ".join(types)}) -> ()\n}}\n'
    )
    return "".join(funcs) + main


def _apportion(outs: Sequence[Any], counts: Sequence[int]) -> list[list[Any]]:
    it = iter(outs)
    parts = [[next(it) for _ in range(n)] for n in counts]
    assert next(it, None) is None, "more results than the cases return"
    return parts


def _xla_many(cases: list[Case]) -> list[list[np.ndarray]]:
    text = combine([c.text for c in cases], [c.args for c in cases])
    outs = run_xla(Case("batch", "batch", text, tuple(a for c in cases for a in c.args)))
    return _apportion(outs, [len(_result_types(c.text)) for c in cases])


def _reference_many(cases: list[Case]) -> list[list[np.ndarray]]:
    if any(f'"stablehlo.{n}' in c.text for c in cases for n in NOT_IN_REFERENCE):
        raise UnsupportedOpError("not implemented by the reference interpreter")
    split = [_split_complex_results(inline_args(c.text, c.args)) for c in cases]
    outs = _Server.get().eval(combine([t for t, _ in split], [() for _ in split]))
    parts = _apportion(outs, [len(_result_types(t)) for t, _ in split])
    return [_join_complex(p, cplx) for p, (_, cplx) in zip(parts, split, strict=True)]


def _jit_many(pairs: list[tuple[Case, Callable[..., Any]]]) -> list[list[np.ndarray]]:
    fns = [f for _, f in pairs]
    outs = jax.jit(lambda args: [f(*a) for f, a in zip(fns, args, strict=True)])(
        [c.args for c, _ in pairs]
    )
    return [[np.asarray(o) for o in (x if isinstance(x, (tuple, list)) else (x,))] for x in outs]


def _each_either(
    ours: list[np.ndarray], xla: list[np.ndarray], ref: list[np.ndarray], case: Case
) -> bool:
    """Every element equals XLA's or the specification's (e.g. min(+0, -0) as the
    specification says next to a denormal flushed to zero as XLA does)."""
    if not (len(ours) == len(xla) == len(ref)):
        return False
    for o, x, r in zip(ours, xla, ref, strict=True):
        if o.shape != x.shape or o.shape != r.shape or o.dtype != x.dtype:
            return False
        for i in range(o.size):
            oi, xi, ri = (a.reshape(-1)[i : i + 1] for a in (o, x, r))
            fi = _flush(ri)
            if not any(same(oi, w, case.ulps, case.rtol) for w in (xi, ri, fi)):
                return False
    return True


def _flush(x: np.ndarray) -> np.ndarray:
    """``x`` with subnormal floats flushed to (signed) zero, as XLA on CPU computes."""
    if x.dtype.kind == "c":
        out = np.empty_like(x)
        out.real, out.imag = _flush(x.real), _flush(x.imag)
        return out
    # bf16 denormals are f32 denormals, which XLA flushes under JAX's compile options
    if not _is_float(x.dtype) or (x.dtype.itemsize < 4 and x.dtype != ml_dtypes.bfloat16):
        return x
    tiny = ml_dtypes.finfo(x.dtype).tiny
    with np.errstate(invalid="ignore"):
        sub = (x != 0) & (np.abs(x) < tiny)
    return np.where(sub, np.copysign(np.zeros_like(x), x), x)


def _short(xs: list[np.ndarray] | None) -> str:
    if xs is None:
        return "None"
    with np.printoptions(threshold=12, edgeitems=4, linewidth=200):
        return "; ".join(f"{x.dtype}{list(x.shape)} {np.array2string(x.ravel()[:12])}" for x in xs)


# --------------------------------------------------------------------------- cases

SHAPES: tuple[tuple[int, ...], ...] = ((), (0,), (12,), (2, 0, 3))

UNARY: dict[str, tuple[str, ...]] = {
    "abs": (*SINT, *FLOAT, *COMPLEX),
    "cbrt": (*FLOAT, *COMPLEX),
    "ceil": FLOAT,
    "floor": FLOAT,
    "round_nearest_afz": FLOAT,
    "round_nearest_even": FLOAT,
    "cosine": (*FLOAT, *COMPLEX),
    "sine": (*FLOAT, *COMPLEX),
    "tan": (*FLOAT, *COMPLEX),
    "tanh": (*FLOAT, *COMPLEX),
    "exponential": (*FLOAT, *COMPLEX),
    "exponential_minus_one": (*FLOAT, *COMPLEX),
    "log": (*FLOAT, *COMPLEX),
    "log_plus_one": (*FLOAT, *COMPLEX),
    "logistic": (*FLOAT, *COMPLEX),
    "sqrt": (*FLOAT, *COMPLEX),
    "rsqrt": (*FLOAT, *COMPLEX),
    "count_leading_zeros": INT,
    "popcnt": INT,
    "negate": (*INT, *FLOAT, *COMPLEX),
    "not": ("i1", *INT),
    "sign": (*SINT, *FLOAT, *COMPLEX),
    "is_finite": FLOAT,
    "real": COMPLEX,
    "imag": COMPLEX,
}
EXACT_UNARY = {
    "abs",
    "ceil",
    "floor",
    "round_nearest_afz",
    "round_nearest_even",
    "negate",
    "not",
    "sign",
    "is_finite",
    "real",
    "imag",
    "count_leading_zeros",
    "popcnt",
}

BINARY: dict[str, tuple[str, ...]] = {
    "add": ALL,
    "subtract": (*INT, *FLOAT, *COMPLEX),
    "multiply": ALL,
    "divide": (*INT, *FLOAT, *COMPLEX),
    "remainder": (*INT, *FLOAT),
    "maximum": ALL,
    "minimum": ALL,
    "power": (*INT, *FLOAT, *COMPLEX),
    "atan2": (*FLOAT, *COMPLEX),
    "and": ("i1", *INT),
    "or": ("i1", *INT),
    "xor": ("i1", *INT),
    "shift_left": INT,
    "shift_right_arithmetic": INT,
    "shift_right_logical": INT,
    "complex": ("f32", "f64"),
}
EXACT_BINARY = {
    "add",
    "subtract",
    "multiply",
    "maximum",
    "minimum",
    "and",
    "or",
    "xor",
    "shift_left",
    "shift_right_arithmetic",
    "shift_right_logical",
    "complex",
    "remainder",
}


def _result_of(op: str, t: str) -> str:
    if op in ("abs", "real", "imag") and t.startswith("complex"):
        return t[8:-1]
    if op == "is_finite":
        return "i1"
    if op == "complex":
        return f"complex<{t}>"
    return t


def _ulps(t: str, exact: bool) -> tuple[int, float]:
    if exact:
        return 0, 0.0
    return (4, 0.0) if t in ("f32", "f64", *COMPLEX) else (1, 0.0)


def elementwise_cases() -> Iterator[Case]:
    for op, types in UNARY.items():
        for t in types:
            for k, shape in enumerate(SHAPES if t in ("f32", "i8") else ((12,),)):
                x = sample(t, shape, k)
                u, r = _ulps(t, op in EXACT_UNARY)
                yield Case(
                    f"{op}/{t}/{_sh(shape)}",
                    op,
                    op1(f"stablehlo.{op}", [x], ttype(shape, _result_of(op, t))),
                    (x,),
                    u,
                    r,
                )
    for op, types in BINARY.items():
        for t in types:
            shape = (12,)
            # a pairing of every edge value with every other needs 12x12: take a cross product
            x, y = sample(t, (12,), 0), sample(t, (12,), 1)
            xx, yy = np.repeat(x, 12), np.tile(y, 12)
            u, r = _ulps(t, op in EXACT_BINARY)
            yield Case(
                f"{op}/{t}/cross",
                op,
                op1(f"stablehlo.{op}", [xx, yy], ttype(xx.shape, _result_of(op, t))),
                (xx, yy),
                u,
                r,
            )
    # compare: every direction, the default comparison type of each element kind, TOTALORDER
    for t in ALL:
        x, y = sample(t, (12,), 0), sample(t, (12,), 1)
        xx, yy = np.repeat(x, 12), np.tile(y, 12)
        kinds = (
            ["FLOAT", "TOTALORDER"]
            if t in FLOAT or t in COMPLEX
            else (["UNSIGNED"] if t.startswith("u") or t == "i1" else ["SIGNED"])
        )
        dirs = ("EQ", "NE") if t in COMPLEX else ("EQ", "NE", "LT", "LE", "GT", "GE")
        for kind in kinds[:1] if t in COMPLEX else kinds:
            for d in dirs:
                attrs = (
                    f"{{comparison_direction = #stablehlo<comparison_direction {d}>, "
                    f"compare_type = #stablehlo<comparison_type {kind}>}}"
                )
                yield Case(
                    f"compare/{t}/{d}.{kind}",
                    "compare",
                    op1("stablehlo.compare", [xx, yy], ttype(xx.shape, "i1"), attrs),
                    (xx, yy),
                )
    for t in ALL:
        x, lo, hi = sample(t, (12,), 0), sample(t, (12,), 1), sample(t, (12,), 2)
        if t not in COMPLEX:
            yield Case(
                f"clamp/{t}",
                "clamp",
                op1("stablehlo.clamp", [lo, x, hi], ttype((12,), t)),
                (lo, x, hi),
            )
            s = np.asarray(sample(t, (), 3))
            yield Case(
                f"clamp/{t}/scalar-bounds",
                "clamp",
                op1("stablehlo.clamp", [s, x, hi], ttype((12,), t)),
                (s, x, hi),
            )
        p = sample("i1", (12,), 5)
        yield Case(
            f"select/{t}",
            "select",
            op1("stablehlo.select", [p, x, lo], ttype((12,), t)),
            (p, x, lo),
        )
    # convert between every pair of types
    for a, b in itertools.product(ALL, ALL):
        x = sample(a, (14,), 0)
        yield Case(
            f"convert/{a}->{b}", "convert", op1("stablehlo.convert", [x], ttype((14,), b)), (x,)
        )
    # bitcast_convert: same width, widening and narrowing
    widths = {
        "i1": 1,  # one bit an element, each element's low bit first
        "i8": 8,
        "ui8": 8,
        "i16": 16,
        "f16": 16,
        "bf16": 16,
        "ui16": 16,
        "i32": 32,
        "ui32": 32,
        "f32": 32,
        "i64": 64,
        "ui64": 64,
        "f64": 64,
        "f8E4M3FN": 8,
        "f8E5M2": 8,
        "complex<f32>": 64,
        "complex<f64>": 128,
    }
    for a, b in itertools.product(widths, widths):
        wa, wb = widths[a], widths[b]
        if wa == wb:
            shape_a, shape_b = (6,), (6,)
        elif wa > wb:
            shape_a, shape_b = (3,), (3, wa // wb)
        else:
            shape_a, shape_b = (3, wb // wa), (3,)
        if a.startswith("complex") != b.startswith("complex"):
            continue  # the specification allows no bitcast between complex and real
        x = sample(a, shape_a, 0)
        yield Case(
            f"bitcast_convert/{a}->{b}",
            "bitcast_convert",
            op1("stablehlo.bitcast_convert", [x], ttype(shape_b, b)),
            (x,),
        )
    for t in FLOAT:
        for e, m in ((5, 10), (8, 7), (4, 3), (5, 2), (2, 1), (8, 23), (11, 52)):
            x = np.concatenate([sample(t, (14,), 0), finite(t, (10,), 1, 30.0)])
            yield Case(
                f"reduce_precision/{t}/e{e}m{m}",
                "reduce_precision",
                op1(
                    "stablehlo.reduce_precision",
                    [x],
                    ttype(x.shape, t),
                    f"{{exponent_bits = {e} : i32, mantissa_bits = {m} : i32}}",
                ),
                (x,),
            )


def _sh(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape)) or "scalar"


# Structural ops: a few shapes, every element type (the values only move).
MOVE = (
    "i1",
    "i8",
    "ui16",
    "i32",
    "ui64",
    "i4",
    "ui4",
    "f16",
    "bf16",
    "f64",
    "f8E5M2",
    "complex<f64>",
)


def shape_cases() -> Iterator[Case]:
    for t in MOVE:
        x = sample(t, (2, 3, 4), 0)
        yield Case(
            f"transpose/{t}",
            "transpose",
            op1(
                "stablehlo.transpose",
                [x],
                ttype((4, 2, 3), t),
                f"{{permutation = {i64s(2, 0, 1)}}}",
            ),
            (x,),
        )
        yield Case(
            f"reverse/{t}",
            "reverse",
            op1("stablehlo.reverse", [x], ttype((2, 3, 4), t), f"{{dimensions = {i64s(0, 2)}}}"),
            (x,),
        )
        yield Case(f"reshape/{t}", "reshape", op1("stablehlo.reshape", [x], ttype((4, 6), t)), (x,))
        yield Case(
            f"broadcast_in_dim/{t}",
            "broadcast_in_dim",
            op1(
                "stablehlo.broadcast_in_dim",
                [x[:, :1, :]],
                ttype((3, 2, 5, 4), t),
                f"{{broadcast_dimensions = {i64s(1, 2, 3)}}}",
            ),
            (x[:, :1, :].copy(),),
        )
        y = sample(t, (2, 1, 4), 1)
        e = sample(t, (2, 0, 4), 1)
        yield Case(
            f"concatenate/{t}",
            "concatenate",
            op1("stablehlo.concatenate", [x, e, y], ttype((2, 4, 4), t), "{dimension = 1 : i64}"),
            (x, e, y),
        )
        yield Case(
            f"slice/{t}",
            "slice",
            op1(
                "stablehlo.slice",
                [x],
                ttype((1, 2, 1), t),
                f"{{start_indices = {i64s(1, 0, 3)}, limit_indices = {i64s(2, 3, 4)}, "
                f"strides = {i64s(1, 2, 3)}}}",
            ),
            (x,),
        )
        pv = sample(t, (), 2)
        yield Case(
            f"pad/{t}",
            "pad",
            op1(
                "stablehlo.pad",
                [x, pv],
                ttype((3, 6, 5), t),
                f"{{edge_padding_low = {i64s(1, -1, 0)}, "
                f"edge_padding_high = {i64s(0, 2, -2)}, "
                f"interior_padding = {i64s(0, 1, 1)}}}",
            ),
            (x, pv),
        )
        for idx in ((1, -2, 7), (0, 1, 2)):
            ids = [np.asarray(i, np.int32 if idx[0] else np.uint64) for i in idx]
            n = len(ids)
            body = (
                f'  %r = "stablehlo.dynamic_slice"(%a0, %a1, %a2, %a3) '
                f"{{slice_sizes = {i64s(1, 2, 3)}}} : ({tof(x)}, "
                + ", ".join(tof(i) for i in ids)
                + f") -> {ttype((1, 2, 3), t)}\n"
                f'  "func.return"(%r) : ({ttype((1, 2, 3), t)}) -> ()'
            )
            del n
            yield Case(
                f"dynamic_slice/{t}/{idx}",
                "dynamic_slice",
                module([x, *ids], body, [ttype((1, 2, 3), t)]),
                (x, *ids),
            )
            u = sample(t, (1, 2, 3), 5)
            body = (
                f'  %r = "stablehlo.dynamic_update_slice"(%a0, %a1, %a2, %a3, %a4) : '
                f"({tof(x)}, {tof(u)}, " + ", ".join(tof(i) for i in ids) + f") -> {tof(x)}\n"
                f'  "func.return"(%r) : ({tof(x)}) -> ()'
            )
            yield Case(
                f"dynamic_update_slice/{t}/{idx}",
                "dynamic_update_slice",
                module([x, u, *ids], body, [tof(x)]),
                (x, u, *ids),
            )
        body = (
            f'  %r = "stablehlo.get_dimension_size"(%a0) {{dimension = 2 : i64}} : '
            f"({tof(x)}) -> tensor<i32>\n"
            f'  "func.return"(%r) : (tensor<i32>) -> ()'
        )
        yield Case(
            f"get_dimension_size/{t}",
            "get_dimension_size",
            module([x], body, ["tensor<i32>"]),
            (x,),
        )
    for t in ("i1", "i4", "ui8", "i64", "f16", "bf16", "f64", "f8E4M3FN", "complex<f32>"):
        out = ttype((3, 4), t)
        body = (
            f'  %r = "stablehlo.iota"() {{iota_dimension = 1 : i64}} : () -> {out}\n'
            f'  "func.return"(%r) : ({out}) -> ()'
        )
        if t != "i1":
            yield Case(f"iota/{t}", "iota", module([], body, [out]), ())
    # optimization_barrier and tokens
    x = sample("f32", (3,), 0)
    y = sample("i8", (), 1)
    body = (
        f'  %t = "stablehlo.after_all"() : () -> !stablehlo.token\n'
        f'  %r:2 = "stablehlo.optimization_barrier"(%a0, %a1) : ({tof(x)}, {tof(y)}) '
        f"-> ({tof(x)}, {tof(y)})\n"
        f'  "func.return"(%r#0, %r#1) : ({tof(x)}, {tof(y)}) -> ()'
    )
    yield Case(
        "optimization_barrier/f32+i8",
        "optimization_barrier",
        module([x, y], body, [tof(x), tof(y)]),
        (x, y),
    )


def gather_scatter_cases() -> Iterator[Case]:
    for t in ("i1", "i8", "ui32", "f16", "bf16", "f64", "complex<f32>", "i4"):
        x = sample(t, (3, 4, 2), 0)
        # out-of-range starts are clamped; index vector dim in the middle
        idx = np.array([[[0, 1]], [[2, 3]], [[-1, 9]], [[1, 0]]], np.int32).transpose(0, 2, 1)
        out = ttype((4, 1, 2, 2), t)
        attrs = (
            "{dimension_numbers = #stablehlo.gather<offset_dims = [2, 3], "
            "collapsed_slice_dims = [0], start_index_map = [0, 1], index_vector_dim = 1>, "
            f"slice_sizes = {i64s(1, 2, 2)}, indices_are_sorted = false}}"
        )
        yield Case(
            f"gather/{t}/clamped", "gather", op1("stablehlo.gather", [x, idx], out, attrs), (x, idx)
        )
        # batching dims (operand 0 with indices 0)
        xb = sample(t, (2, 5, 3), 1)
        ib = np.array([[4, 1], [7, 0]], np.int64)
        out = ttype((2, 2, 3), t)
        attrs = (
            "{dimension_numbers = #stablehlo.gather<offset_dims = [2], "
            "collapsed_slice_dims = [1], operand_batching_dims = [0], "
            "start_indices_batching_dims = [0], start_index_map = [1], "
            f"index_vector_dim = 2>, slice_sizes = {i64s(1, 1, 3)}}}"
        )
        yield Case(
            f"gather/{t}/batching",
            "gather",
            op1("stablehlo.gather", [xb, ib], out, attrs),
            (xb, ib),
        )
        # scatter with out-of-range updates skipped, duplicates combined
        upd = sample(t, (4, 2), 2)
        si = np.array([[0], [2], [5], [2]], np.int32)
        comb = "stablehlo.add" if t not in ("i1",) else "stablehlo.or"
        tgt = sample(t, (3, 2), 3)
        attrs = (
            "{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], "
            "inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], "
            "index_vector_dim = 1>, indices_are_sorted = false, unique_indices = false}"
        )
        s = f"tensor<{t}>"
        body = (
            f'  %r = "stablehlo.scatter"(%a0, %a1, %a2) {region(t, comb)} {attrs} : '
            f"({tof(tgt)}, {tof(si)}, {tof(upd)}) -> {tof(tgt)}\n"
            f'  "func.return"(%r) : ({tof(tgt)}) -> ()'
        )
        del s
        yield Case(
            f"scatter/{t}/{comb[10:]}",
            "scatter",
            module([tgt, si, upd], body, [tof(tgt)]),
            (tgt, si, upd),
            rtol=1e-2 if t in ("f16", "bf16") else 0.0,
        )
        # replacing scatter (no combiner), in-range, unique indices
        si2 = np.array([[2], [0]], np.int64)
        upd2 = upd[:2].copy()
        repl = region(t, None, extra=f'    "stablehlo.return"(%x1) : (tensor<{t}>) -> ()')
        attrs2 = attrs.replace("unique_indices = false", "unique_indices = true")
        body = (
            f'  %r = "stablehlo.scatter"(%a0, %a1, %a2) {repl} {attrs2} : '
            f"({tof(tgt)}, {tof(si2)}, {tof(upd2)}) -> {tof(tgt)}\n"
            f'  "func.return"(%r) : ({tof(tgt)}) -> ()'
        )
        yield Case(
            f"scatter/{t}/replace",
            "scatter",
            module([tgt, si2, upd2], body, [tof(tgt)]),
            (tgt, si2, upd2),
        )
        # scatter partially out of bounds (window spills over): the whole update is skipped
        si3 = np.array([[1], [2]], np.int32)
        upd3 = sample(t, (2, 2), 4)
        attrs3 = (
            "{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], "
            "inserted_window_dims = [], scatter_dims_to_operand_dims = [0], "
            "index_vector_dim = 1>}"
        )
        tgt3 = sample(t, (3,), 6)
        body = (
            f'  %r = "stablehlo.scatter"(%a0, %a1, %a2) {repl} {attrs3} : '
            f"({tof(tgt3)}, {tof(si3)}, {tof(upd3)}) -> {tof(tgt3)}\n"
            f'  "func.return"(%r) : ({tof(tgt3)}) -> ()'
        )
        yield Case(
            f"scatter/{t}/spill",
            "scatter",
            module([tgt3, si3, upd3], body, [tof(tgt3)]),
            (tgt3, si3, upd3),
        )


def reduce_cases() -> Iterator[Case]:
    for t in ALL:
        x = sample(t, (3, 4), 0)
        for comb in ("add", "maximum", "minimum", "multiply", "and", "or"):
            if comb in ("and", "or") and t not in ("i1", *INT):
                continue
            if comb in ("maximum", "minimum") and t in COMPLEX:
                continue
            init = np.asarray(sample(t, (3,), 2)[1 if comb in ("add",) else 2])
            out = ttype((4,), t)
            body = (
                f'  %r = "stablehlo.reduce"(%a0, %a1) {region(t, "stablehlo." + comb)} '
                f"{{dimensions = {i64s(0)}}} : ({tof(x)}, {tof(init)}) -> {out}\n"
                f'  "func.return"(%r) : ({out}) -> ()'
            )
            yield Case(
                f"reduce/{t}/{comb}", "reduce", module([x, init], body, [out]), (x, init), ulps=2
            )
        # empty reduction: the init value
        e = sample(t, (0, 3), 0)
        init = np.asarray(sample(t, (), 3))
        body = (
            f'  %r = "stablehlo.reduce"(%a0, %a1) {region(t, "stablehlo.maximum")} '
            f"{{dimensions = {i64s(0)}}} : ({tof(e)}, {tof(init)}) -> {ttype((3,), t)}\n"
            f'  "func.return"(%r) : ({ttype((3,), t)}) -> ()'
        )
        yield Case(
            f"reduce/{t}/empty", "reduce", module([e, init], body, [ttype((3,), t)]), (e, init)
        )
    # variadic: argmax with (value, index), first index on ties, NaN wins
    for t in ("f32", "bf16", "i8", "ui16"):
        x = np.array([[1, 3, 3, 0], [2, 2, 5, 1], [0, 0, 0, 0]]).astype(dtype_of(t))
        if t in FLOAT:
            x[2, 1] = np.nan
        i = np.tile(np.arange(4, dtype=np.int32), (3, 1))
        i0 = np.asarray(0, np.int32)
        if t in FLOAT:
            v0 = np.asarray(-np.inf).astype(dtype_of(t))
        else:
            v0 = np.asarray(ml_dtypes.iinfo(dtype_of(t)).min).astype(dtype_of(t))
        s, si = f"tensor<{t}>", "tensor<i32>"
        body = f"""  %r:2 = "stablehlo.reduce"(%a0, %a1, %a2, %a3) ({{
  ^bb0(%v: {s}, %j: {si}, %w: {s}, %k: {si}):
    %gt = {cmp("%v", "%w", "GT", s)}
    %nan = {cmp("%v", "%v", "NE", s)}
    %eq = {cmp("%v", "%w", "EQ", s)}
    %lt = {cmp("%j", "%k", "LT", si)}
    %tie = "stablehlo.and"(%eq, %lt) : (tensor<i1>, tensor<i1>) -> tensor<i1>
    %a = "stablehlo.or"(%gt, %nan) : (tensor<i1>, tensor<i1>) -> tensor<i1>
    %b = "stablehlo.or"(%a, %tie) : (tensor<i1>, tensor<i1>) -> tensor<i1>
    %rv = "stablehlo.select"(%b, %v, %w) : (tensor<i1>, {s}, {s}) -> {s}
    %rk = "stablehlo.select"(%b, %j, %k) : (tensor<i1>, {si}, {si}) -> {si}
    "stablehlo.return"(%rv, %rk) : ({s}, {si}) -> ()
  }}) {{dimensions = {i64s(1)}}}
      : ({tof(x)}, {tof(i)}, {s}, {si}) -> ({ttype((3,), t)}, {ttype((3,), "i32")})
  "func.return"(%r#0, %r#1) : ({ttype((3,), t)}, {ttype((3,), "i32")}) -> ()"""
        yield Case(
            f"reduce/{t}/argmax",
            "reduce",
            module([x, i, v0, i0], body, [ttype((3,), t), ttype((3,), "i32")]),
            (x, i, v0, i0),
        )


def windowed_cases() -> Iterator[Case]:
    for t in ("f32", "f16", "bf16", "f64", "i8", "ui32", "i1", "complex<f32>"):
        x = sample(t, (2, 7), 0) if t not in ("f32",) else finite(t, (2, 7), 0)
        comb = "stablehlo.add" if t != "i1" else "stablehlo.or"
        init = np.asarray(np.zeros((), dtype_of(t)))
        for wd, bd, pad, strides, out in (
            ((1, 3), (1, 1), ((0, 0), (0, 0)), (1, 2), (2, 3)),
            ((1, 2), (1, 2), ((0, 0), (1, 2)), (1, 1), (2, 15)),
            ((2, 2), (1, 1), ((1, 0), (2, 1)), (1, 3), (2, 4)),
        ):
            wdil = (1, 2) if bd == (1, 1) and wd == (2, 2) else (1, 1)
            if wdil == (1, 2):
                out = (2, 3)
            attrs = (
                f"{{window_dimensions = {i64s(*wd)}, window_strides = {i64s(*strides)}, "
                f"base_dilations = {i64s(*bd)}, window_dilations = {i64s(*wdil)}, "
                f"padding = dense<{[list(p) for p in pad]}> : tensor<2x2xi64>}}"
            )
            ot = ttype(out, t)
            body = (
                f'  %r = "stablehlo.reduce_window"(%a0, %a1) {region(t, comb)} {attrs} : '
                f"({tof(x)}, {tof(init)}) -> {ot}\n"
                f'  "func.return"(%r) : ({ot}) -> ()'
            )
            yield Case(
                f"reduce_window/{t}/w{wd}b{bd}d{wdil}p{pad}",
                "reduce_window",
                module([x, init], body, [ot]),
                (x, init),
                ulps=2,
            )
    for t in ("f32", "bf16", "i32", "f64"):
        x = finite(t, (4, 5), 0)
        src = finite(t, (2, 3), 1)
        init = np.asarray(np.zeros((), dtype_of(t)))
        s = f"tensor<{t}>"
        for d in ("GE", "LE"):
            sel = region(
                t,
                None,
                extra=(
                    f'    %c = "stablehlo.compare"(%x0, %x1) {{comparison_direction = '
                    f"#stablehlo<comparison_direction {d}>}} : ({s}, {s}) -> tensor<i1>\n"
                    f'    "stablehlo.return"(%c) : (tensor<i1>) -> ()'
                ),
            )
            attrs = (
                f"{{window_dimensions = {i64s(2, 3)}, window_strides = {i64s(2, 2)}, "
                "padding = dense<[[0, 0], [1, 1]]> : tensor<2x2xi64>}"
            )
            body = (
                f'  %r = "stablehlo.select_and_scatter"(%a0, %a1, %a2) {sel[:-1]}, '
                f"{region(t, 'stablehlo.add')[1:]} {attrs} : "
                f"({tof(x)}, {tof(src)}, {tof(init)}) -> {tof(x)}\n"
                f'  "func.return"(%r) : ({tof(x)}) -> ()'
            )
            yield Case(
                f"select_and_scatter/{t}/{d}/padded",
                "select_and_scatter",
                module([x, src, init], body, [tof(x)]),
                (x, src, init),
            )


def sort_cases() -> Iterator[Case]:
    for t in ("f32", "bf16", "f16", "f64", "i8", "ui64", "i1", "i4", "f8E5M2"):
        x = sample(t, (2, 10), 0)
        s = f"tensor<{t}>"
        for kind, d in (("TOTALORDER", "LT"), ("FLOAT", "GT"), ("TOTALORDER", "GT")):
            if t not in FLOAT:
                kind = "UNSIGNED" if t.startswith("u") or t == "i1" else "SIGNED"
            cmp_ = region(
                t,
                None,
                extra=(
                    f'    %c = "stablehlo.compare"(%x0, %x1) {{comparison_direction = '
                    f"#stablehlo<comparison_direction {d}>, compare_type = "
                    f"#stablehlo<comparison_type {kind}>}} : ({s}, {s}) -> tensor<i1>\n"
                    f'    "stablehlo.return"(%c) : (tensor<i1>) -> ()'
                ),
            )
            body = (
                f'  %r = "stablehlo.sort"(%a0) {cmp_} {{dimension = 1 : i64, is_stable = true}}'
                f" : ({tof(x)}) -> {tof(x)}\n"
                f'  "func.return"(%r) : ({tof(x)}) -> ()'
            )
            if kind == "FLOAT" and d == "GT" and t in FLOAT:
                continue  # NaN makes a FLOAT comparator not a strict weak order: unspecified
            yield Case(f"sort/{t}/{d}.{kind}", "sort", module([x], body, [tof(x)]), (x,))
    # two keys, lexicographic, with a payload; stable
    for t0, t1 in (("i32", "f32"), ("f32", "i8"), ("ui8", "bf16")):
        k0 = finite(t0, (16,), 0).astype(dtype_of(t0))
        k0 = (np.asarray(k0, np.float64) % 3).astype(dtype_of(t0))
        k1 = finite(t1, (16,), 1)
        p = np.arange(16, dtype=np.int32)
        s0, s1, sp = f"tensor<{t0}>", f"tensor<{t1}>", "tensor<i32>"
        k0t = "FLOAT" if t0 in FLOAT else ("UNSIGNED" if t0.startswith("u") else "SIGNED")
        k1t = "FLOAT" if t1 in FLOAT else ("UNSIGNED" if t1.startswith("u") else "SIGNED")

        def c(a: str, b: str, d: str, s: str, k: str) -> str:
            return (
                f'"stablehlo.compare"({a}, {b}) {{comparison_direction = '
                f"#stablehlo<comparison_direction {d}>, compare_type = "
                f"#stablehlo<comparison_type {k}>}} : ({s}, {s}) -> tensor<i1>"
            )

        body = f"""  %r:3 = "stablehlo.sort"(%a0, %a1, %a2) ({{
  ^bb0(%x0: {s0}, %y0: {s0}, %x1: {s1}, %y1: {s1}, %p0: {sp}, %q0: {sp}):
    %eq = {c("%x0", "%y0", "EQ", s0, k0t)}
    %lt1 = {c("%x1", "%y1", "LT", s1, k1t)}
    %lt0 = {c("%x0", "%y0", "LT", s0, k0t)}
    %r = "stablehlo.select"(%eq, %lt1, %lt0) : (tensor<i1>, tensor<i1>, tensor<i1>) -> tensor<i1>
    "stablehlo.return"(%r) : (tensor<i1>) -> ()
  }}) {{dimension = 0 : i64, is_stable = true}}
      : ({tof(k0)}, {tof(k1)}, {tof(p)}) -> ({tof(k0)}, {tof(k1)}, {tof(p)})
  "func.return"(%r#0, %r#1, %r#2) : ({tof(k0)}, {tof(k1)}, {tof(p)}) -> ()"""
        yield Case(
            f"sort/{t0}+{t1}/two-keys",
            "sort",
            module([k0, k1, p], body, [tof(k0), tof(k1), tof(p)]),
            (k0, k1, p),
        )


def linalg_cases() -> Iterator[Case]:
    for t, acc in (
        ("f32", "f32"),
        ("bf16", "f32"),
        ("f16", "f16"),
        ("f64", "f64"),
        ("i8", "i32"),
        ("ui8", "ui32"),
        ("i32", "i32"),
        ("i1", "i1"),
        ("complex<f32>", "complex<f32>"),
        ("i4", "i32"),
        ("f8E4M3FN", "f32"),
    ):
        a, b = finite(t, (2, 3, 4), 0), finite(t, (2, 4, 5), 1)
        out = ttype((2, 3, 5), acc)
        attrs = (
            "{dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [0], "
            "rhs_batching_dimensions = [0], lhs_contracting_dimensions = [2], "
            "rhs_contracting_dimensions = [1]>, precision_config = "
            "[#stablehlo<precision HIGHEST>, #stablehlo<precision DEFAULT>]}"
        )
        yield Case(
            f"dot_general/{t}->{acc}",
            "dot_general",
            op1("stablehlo.dot_general", [a, b], out, attrs),
            (a, b),
            rtol=1e-3,
        )
        e0, e1 = finite(t, (3, 0), 0), finite(t, (0, 2), 1)
        attrs0 = (
            "{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], "
            "rhs_contracting_dimensions = [0]>}"
        )
        yield Case(
            f"dot_general/{t}->{acc}/empty-contraction",
            "dot_general",
            op1("stablehlo.dot_general", [e0, e1], ttype((3, 2), acc), attrs0),
            (e0, e1),
        )
    # convolution: feature groups, batch groups, dilations, padding, odd layouts
    for t, acc in (
        ("f32", "f32"),
        ("f64", "f64"),
        ("bf16", "bf16"),
        ("i8", "i32"),
        ("i32", "i32"),
        ("f16", "f32"),
        ("complex<f32>", "complex<f32>"),
    ):
        x = finite(t, (2, 4, 6), 0)  # [b, f, 0]
        w = finite(t, (3, 4, 2), 1)  # [0, i, o]
        attrs = (
            "{dimension_numbers = #stablehlo.conv<[b, f, 0]x[0, i, o]->[b, f, 0]>, "
            f"window_strides = {i64s(2)}, padding = dense<[[2, 1]]> : tensor<1x2xi64>, "
            f"lhs_dilation = {i64s(2)}, rhs_dilation = {i64s(2)}, "
            f"window_reversal = {bools(False)}, "
            "feature_group_count = 1 : i64, batch_group_count = 1 : i64}"
        )
        yield Case(
            f"convolution/{t}->{acc}/dilated",
            "convolution",
            op1("stablehlo.convolution", [x, w], ttype((2, 2, 5), acc), attrs),
            (x, w),
            rtol=1e-3,
        )
        wg = finite(t, (2, 2, 4), 2)  # [0, i=4/2, o]
        attrs_g = (
            attrs.replace("feature_group_count = 1", "feature_group_count = 2")
            .replace("lhs_dilation = array<i64: 2>", "lhs_dilation = array<i64: 1>")
            .replace("rhs_dilation = array<i64: 2>", "rhs_dilation = array<i64: 1>")
        )
        yield Case(
            f"convolution/{t}->{acc}/feature-groups",
            "convolution",
            op1("stablehlo.convolution", [x, wg], ttype((2, 4, 4), acc), attrs_g),
            (x, wg),
            rtol=1e-3,
        )
        xb = finite(t, (4, 2, 5), 3)  # batch 4 in 2 groups
        wb = finite(t, (2, 2, 4), 4)  # output features 4 = 2 groups x 2
        attrs_b = (
            "{dimension_numbers = #stablehlo.conv<[b, f, 0]x[0, i, o]->[b, f, 0]>, "
            f"window_strides = {i64s(1)}, padding = dense<[[0, 1]]> : tensor<1x2xi64>, "
            "feature_group_count = 1 : i64, batch_group_count = 2 : i64}"
        )
        yield Case(
            f"convolution/{t}->{acc}/batch-groups",
            "convolution",
            op1("stablehlo.convolution", [xb, wb], ttype((2, 4, 5), acc), attrs_b),
            (xb, wb),
            rtol=1e-3,
        )
    for t in ("f32", "f64", "complex<f64>"):
        a = finite(t, (3, 3), 0)
        spd = (a @ np.conj(a.T) + 3 * np.eye(3)).astype(dtype_of(t))
        for lower in (True, False):
            yield Case(
                f"cholesky/{t}/{'lower' if lower else 'upper'}",
                "cholesky",
                op1("stablehlo.cholesky", [spd], tof(spd), f"{{lower = {str(lower).lower()}}}"),
                (spd,),
                rtol=1e-5,
            )
        b = finite(t, (3, 2), 1)
        for left, low, unit, tr in itertools.product(
            (True,), (True, False), (True, False), ("NO_TRANSPOSE", "TRANSPOSE", "ADJOINT")
        ):
            attrs = (
                f"{{left_side = {str(left).lower()}, lower = {str(low).lower()}, "
                f"unit_diagonal = {str(unit).lower()}, transpose_a = "
                f"#stablehlo<transpose {tr}>}}"
            )
            yield Case(
                f"triangular_solve/{t}/{low}-{unit}-{tr}",
                "triangular_solve",
                op1("stablehlo.triangular_solve", [spd, b], tof(b), attrs),
                (spd, b),
                rtol=1e-5,
            )
    for t in ("complex<f32>", "complex<f64>"):
        x = finite(t, (2, 8), 0)
        for ft in ("FFT", "IFFT"):
            yield Case(
                f"fft/{t}/{ft}",
                "fft",
                op1(
                    "stablehlo.fft",
                    [x],
                    tof(x),
                    f"{{fft_type = #stablehlo<fft_type {ft}>, fft_length = {i64s(8)}}}",
                ),
                (x,),
                rtol=1e-5,
            )
        r = finite(t[8:-1], (2, 8), 1)
        yield Case(
            f"fft/{t}/RFFT",
            "fft",
            op1(
                "stablehlo.fft",
                [r],
                ttype((2, 5), t),
                f"{{fft_type = #stablehlo<fft_type RFFT>, fft_length = {i64s(8)}}}",
            ),
            (r,),
            rtol=1e-5,
        )
        h = finite(t, (2, 5), 2)
        yield Case(
            f"fft/{t}/IRFFT",
            "fft",
            op1(
                "stablehlo.fft",
                [h],
                ttype((2, 8), t[8:-1]),
                f"{{fft_type = #stablehlo<fft_type IRFFT>, fft_length = {i64s(8)}}}",
            ),
            (h,),
            rtol=1e-5,
        )


def control_cases() -> Iterator[Case]:
    for t in ("f32", "i8", "bf16", "complex<f64>", "i1"):
        x = sample(t, (4,), 0)
        for pv in (True, False):
            p = np.asarray(pv)
            s = tof(x)
            body = f"""  %r = "stablehlo.if"(%a0) ({{
    %n = "stablehlo.{"not" if t == "i1" else "negate"}"(%a1) : ({s}) -> {s}
    "stablehlo.return"(%n) : ({s}) -> ()
  }}, {{
    "stablehlo.return"(%a1) : ({s}) -> ()
  }}) : (tensor<i1>) -> {s}
  "func.return"(%r) : ({s}) -> ()"""
            yield Case(f"if/{t}/{pv}", "if", module([p, x], body, [s]), (p, x))
        for k in (-1, 0, 1, 2, 7):
            i = np.asarray(k, np.int32)
            s = tof(x)
            body = f"""  %r = "stablehlo.case"(%a0) ({{
    "stablehlo.return"(%a1) : ({s}) -> ()
  }}, {{
    %n = "stablehlo.{"not" if t == "i1" else "negate"}"(%a1) : ({s}) -> {s}
    "stablehlo.return"(%n) : ({s}) -> ()
  }}, {{
    %n = "stablehlo.{"xor" if t == "i1" else "add"}"(%a1, %a1) : ({s}, {s}) -> {s}
    "stablehlo.return"(%n) : ({s}) -> ()
  }}) : (tensor<i32>) -> {s}
  "func.return"(%r) : ({s}) -> ()"""
            yield Case(f"case/{t}/{k}", "case", module([i, x], body, [s]), (i, x))
    # while: counting loop with a captured value, and a data-dependent loop
    for t in ("f32", "i32", "f64"):
        x = finite(t, (3,), 0)
        n = np.asarray(5, np.int64)
        s, si = tof(x), "tensor<i64>"
        body = f"""  %z = "stablehlo.constant"() {{value = dense<0> : tensor<i64>}} : () -> {si}
  %one = "stablehlo.constant"() {{value = dense<1> : tensor<i64>}} : () -> {si}
  %r:2 = "stablehlo.while"(%z, %a1) ({{
  ^bb0(%i: {si}, %v: {s}):
    %c = {cmp("%i", "%a0", "LT", si)}
    "stablehlo.return"(%c) : (tensor<i1>) -> ()
  }}, {{
  ^bb0(%i: {si}, %v: {s}):
    %j = "stablehlo.add"(%i, %one) : ({si}, {si}) -> {si}
    %w = "stablehlo.add"(%v, %a1) : ({s}, {s}) -> {s}
    "stablehlo.return"(%j, %w) : ({si}, {s}) -> ()
  }}) : ({si}, {s}) -> ({si}, {s})
  "func.return"(%r#0, %r#1) : ({si}, {s}) -> ()"""
        yield Case(f"while/{t}/captured", "while", module([n, x], body, [si, s]), (n, x))
    # map
    for t in ("f32", "i16", "complex<f32>"):
        x, y = finite(t, (2, 3), 0), finite(t, (2, 3), 1)
        mr = region(t, "stablehlo.multiply")
        yield Case(
            f"map/{t}",
            "map",
            op1("stablehlo.map", [x, y], tof(x), "{dimensions = " + i64s(0, 1) + "}").replace(
                '"stablehlo.map"(%a0, %a1) ', f'"stablehlo.map"(%a0, %a1) {mr} '
            ),
            (x, y),
        )


def misc_cases() -> Iterator[Case]:
    for t in ("f32", "f64", "bf16", "f16"):
        x = finite(t, (2, 3, 4), 0)
        sc, of = finite(t, (3,), 1) + 2, finite(t, (3,), 2)
        mean, var = finite(t, (3,), 3), np.abs(finite(t, (3,), 4)) + 1
        yield Case(
            f"batch_norm_inference/{t}",
            "batch_norm_inference",
            op1(
                "stablehlo.batch_norm_inference",
                [x, sc, of, mean, var],
                tof(x),
                "{epsilon = 1.0e-3 : f32, feature_index = 1 : i64}",
            ),
            (x, sc, of, mean, var),
            rtol=1e-2 if t in ("bf16", "f16") else 1e-5,
        )
        out = f"{tof(x)}, {tof(sc)}, {tof(sc)}"
        body = (
            f'  %r:3 = "stablehlo.batch_norm_training"(%a0, %a1, %a2) '
            f"{{epsilon = 1.0e-3 : f32, feature_index = 1 : i64}} : "
            f"({tof(x)}, {tof(sc)}, {tof(of)}) -> ({out})\n"
            f'  "func.return"(%r#0, %r#1, %r#2) : ({out}) -> ()'
        )
        yield Case(
            f"batch_norm_training/{t}",
            "batch_norm_training",
            module([x, sc, of], body, [tof(x), tof(sc), tof(sc)]),
            (x, sc, of),
            rtol=2e-2 if t in ("bf16", "f16") else 1e-5,
        )
        g = finite(t, (2, 3, 4), 5)
        body = (
            f'  %r:3 = "stablehlo.batch_norm_grad"(%a0, %a1, %a2, %a3, %a4) '
            f"{{epsilon = 1.0e-3 : f32, feature_index = 1 : i64}} : "
            f"({tof(x)}, {tof(sc)}, {tof(mean)}, {tof(var)}, {tof(g)}) -> ({out})\n"
            f'  "func.return"(%r#0, %r#1, %r#2) : ({out}) -> ()'
        )
        yield Case(
            f"batch_norm_grad/{t}",
            "batch_norm_grad",
            module([x, sc, mean, var, g], body, [tof(x), tof(sc), tof(sc)]),
            (x, sc, mean, var, g),
            rtol=5e-2 if t in ("bf16", "f16") else 1e-5,
        )
    for alg in ("THREE_FRY", "DEFAULT"):
        st = np.array([1, 2], np.uint64)
        body = (
            f'  %r:2 = "stablehlo.rng_bit_generator"(%a0) {{rng_algorithm = '
            f"#stablehlo<rng_algorithm {alg}>}} : (tensor<2xui64>) -> "
            f"(tensor<2xui64>, tensor<3x4xui32>)\n"
            f'  "func.return"(%r#0, %r#1) : (tensor<2xui64>, tensor<3x4xui32>) -> ()'
        )
        yield Case(
            f"rng_bit_generator/{alg}",
            "rng_bit_generator",
            module([st], body, ["tensor<2xui64>", "tensor<3x4xui32>"]),
            (st,),
        )
    # uniform quantize/dequantize round trip (per-tensor and per-axis)
    x = np.array([-3.0, -1.25, -0.1, 0.0, 0.26, 1.0, 2.5, 100.0, -100.0, 0.75], np.float32)
    for qt in (
        "!quant.uniform<i8:f32, 0.5:3>",
        "!quant.uniform<ui8:f32, 0.25:128>",
        "!quant.uniform<i8<-8:7>:f32, 0.5>",
        "!quant.uniform<i4:f32, 0.5:-1>",
    ):
        q, f = f"tensor<10x{qt}>", "tensor<10xf32>"
        body = (
            f'  %q = "stablehlo.uniform_quantize"(%a0) : ({f}) -> {q}\n'
            f'  %r = "stablehlo.uniform_dequantize"(%q) : ({q}) -> {f}\n'
            f'  "func.return"(%r) : ({f}) -> ()'
        )
        yield Case(f"uniform_quantize/{qt}", "uniform_quantize", module([x], body, [f]), (x,))
    xa = np.array([[-1.0, 0.3, 2.0], [0.5, -0.6, 7.0]], np.float32)
    qt = "!quant.uniform<i8:f32:1, {0.5:1, 0.25:-2, 2.0}>"
    q, f = f"tensor<2x3x{qt}>", "tensor<2x3xf32>"
    body = (
        f'  %q = "stablehlo.uniform_quantize"(%a0) : ({f}) -> {q}\n'
        f'  %r = "stablehlo.uniform_dequantize"(%q) : ({q}) -> {f}\n'
        f'  "func.return"(%r) : ({f}) -> ()'
    )
    yield Case("uniform_quantize/per-axis", "uniform_quantize", module([xa], body, [f]), (xa,))
    # requantize (quantized -> quantized)
    q1, q2 = (
        "tensor<10x!quant.uniform<i8:f32, 0.5:3>>",
        "tensor<10x!quant.uniform<i8:f32, 0.25:-4>>",
    )
    body = (
        f'  %q = "stablehlo.uniform_quantize"(%a0) : (tensor<10xf32>) -> {q1}\n'
        f'  %p = "stablehlo.uniform_quantize"(%q) : ({q1}) -> {q2}\n'
        f'  %r = "stablehlo.uniform_dequantize"(%p) : ({q2}) -> tensor<10xf32>\n'
        f'  "func.return"(%r) : (tensor<10xf32>) -> ()'
    )
    yield Case(
        "uniform_quantize/requantize",
        "uniform_quantize",
        module([x], body, ["tensor<10xf32>"]),
        (x,),
    )


FAMILIES: dict[str, Callable[[], Iterator[Case]]] = {
    "elementwise": elementwise_cases,
    "shape": shape_cases,
    "gather_scatter": gather_scatter_cases,
    "reduce": reduce_cases,
    "windowed": windowed_cases,
    "sort": sort_cases,
    "linalg": linalg_cases,
    "control": control_cases,
    "misc": misc_cases,
}


def all_cases() -> list[Case]:
    return [c for gen in FAMILIES.values() for c in gen()]
