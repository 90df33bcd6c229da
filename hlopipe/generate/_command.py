"""What ``hlopipe generate`` does, as a library function the command line calls."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hlopipe.errors import Keyword, RuntimeConfigError
from hlopipe.io import Use

VOCAB_HI = 64  # random prompts and first tokens are ids below this


def run_command(
    decode: Any,
    *,
    prefill: Any = None,
    params: Any = None,
    params_path: str | None = None,
    prefill_params_path: str | None = None,
    stages: int | None = None,
    groups: int | None = None,
    tokens: int | None = None,
    prompts_path: str | None = None,
    tokenizer_path: str | None = None,
    prompt_len: int | None = None,
    output_path: str | None = None,
    seed: int = 0,
    max_len: int | None = None,
    check: bool = False,
    stage_mesh_shape: tuple[int, ...] | None = None,
    stage_mesh_axes: tuple[str, ...] | None = None,
    param_rules: Sequence[Any] = (),
    out: Any = print,
) -> int:
    """Load, split, generate, print; with ``check``, compare with the unsplit programs.

    Args:
      decode / prefill: the programs, loaded (``hlopipe.load``) or their paths.
      params: the parameters themselves (a pytree, or the arrays in argument order), in place
        of ``params_path``.
      params_path: an .npz of the parameters alone, in argument order (default: random).
      prefill_params_path: an .npz of the prefill's own arguments, every one but the prompt
        in its order (``Generator``'s ``prefill_params``; default: the decode step's,
        matched; the matching is printed).
      groups: groups in flight (default 1, or as many as the prompts fill).
      tokens: tokens to generate per sequence (default 16, or as many as the cache holds).
      prompts_path: a .npy of token ids ``[n, P]`` or ``[groups, batch, P]``, or a text file
        of one prompt a line (with ``tokenizer_path``); default random ids of ``prompt_len``
        (default: the prefill's prompt length).
      tokenizer_path: a Hugging Face ``tokenizers`` JSON file, to encode text prompts and
        decode what is generated.
      output_path: where to ``np.save`` the tokens, ``[groups, batch, tokens]``.
      max_len: the cache length (default: told by the program's data flow).
      stage_mesh_shape / stage_mesh_axes: each stage's mesh, as ``Generator`` takes them.
      param_rules: ``ParamRule``s (``parse_param_rule``) laying out the parameters on the
        stage mesh (``param_specs_from_rules``); none: the default layout.

    Returns:
      The exit status: 0, or 1 when ``check`` finds a token that differs.

    Raises:
      RuntimeConfigError: a count below 1, a ``params_path`` file or prompts that do not fit.
    """

    import jax

    from hlopipe.generate._generator import Generator
    from hlopipe.generate._oracle import generate_unsplit
    from hlopipe.generate._plan import prefill_args
    from hlopipe.io import load

    for name, value in (("groups", groups), ("tokens", tokens), ("prompt_len", prompt_len)):
        if value is not None and value < 1:
            raise RuntimeConfigError(Keyword(name, value), " must be at least 1")
    if prompt_len is not None and prompts_path is not None:
        raise RuntimeConfigError(
            "give ", Keyword("prompts_path"), " or ", Keyword("prompt_len"), ", not both"
        )
    tokenizer = _tokenizer(tokenizer_path) if tokenizer_path else None
    ids = _read_prompts(prompts_path, tokenizer) if prompts_path else None
    decode = load(decode) if isinstance(decode, str) else decode
    prefill = load(prefill) if isinstance(prefill, str) else prefill
    if prefill is None and (ids is not None or prompt_len is not None):
        given = Keyword("prompts_path") if ids is not None else Keyword("prompt_len")
        raise RuntimeConfigError(
            given, " needs a prefill program (", Keyword("prefill"), ") to read the prompts; "
            "without one, generation starts from random first tokens"
        )  # fmt: skip
    from hlopipe.generate._plan import counters_as_position, logits_as_feedback

    # the roles as the generator takes them: a logits step's token and counters told apart
    roles = logits_as_feedback(counters_as_position(decode.arg_roles()))[0]
    if params is not None and params_path is not None:
        raise RuntimeConfigError(
            "give ", Keyword("params"), " or ", Keyword("params_path"), ", not both"
        )
    if params is None:
        params = _params(params_path, roles, seed)
    specs = None
    if param_rules:
        from hlopipe.generate._rules import param_specs_from_rules

        specs = param_specs_from_rules(param_rules, decode, stage_mesh_shape, stage_mesh_axes)
    own = None
    if prefill_params_path is not None:
        if prefill is None:
            raise RuntimeConfigError(
                Keyword("prefill_params_path"), " needs a prefill (", Keyword("prefill"), ")"
            )
        from hlopipe.io import load_npz

        own = list(load_npz(prefill_params_path, "prefill_params_path")[1])
    rng = np.random.default_rng(seed + 1)
    prompts = None
    if prefill is not None:  # checked before the compile: the prompts' shape is the prefill's
        what = f"the prefill {getattr(prefill, 'source', '')}".rstrip()
        matched = prefill_args(prefill, roles, what, own, decode)
        aval = prefill.in_avals[matched.prompt]
        prompts = _prompts(aval, prompt_len, ids, groups, prompts_path, rng)
        groups = len(prompts)
    t0 = time.perf_counter()
    gen = Generator(decode, params, prefill=prefill, num_stages=stages, groups=groups or 1,
                    max_len=max_len, prefill_params=own, stage_mesh_shape=stage_mesh_shape,
                    stage_mesh_axes=stage_mesh_axes, param_specs=specs)  # fmt: skip
    inputs = _inputs(gen, prompts, rng)
    if tokens is None:  # positions P .. max_len - 1 after a prefill's token; else 0 .. max_len - 1
        P = 0 if prompts is None else prompts.shape[-1]
        tokens = max(1, min(16, gen.max_len - P + (prompts is not None)))
    out(repr(gen))
    if gen.prefill is not None:
        out(gen.prefill.args.describe())
    # a first run of two tokens warms every path (the prefill, a decode step, the sends), so
    # that the timed run below measures generation alone
    gen.start(**inputs).generate(min(tokens, 2))
    compile_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    session = gen.start(**inputs)
    toks = session.generate(tokens)
    wall = time.perf_counter() - t1
    for g, s in np.ndindex(*toks.shape[:2]):
        text = f" | {tokenizer.decode(toks[g, s].tolist())!r}" if tokenizer else ""
        out(f"group {g}, sequence {s}: {' '.join(map(str, toks[g, s]))}{text}")
    if output_path is not None and jax.process_index() == 0:  # one writer under launch
        np.save(output_path, toks)
        out(f"wrote {output_path}: tokens [groups, batch, tokens] = {list(toks.shape)}")
    m = session.metrics
    assert m is not None  # set by the generate above
    out(
        f"split and compiled in {compile_s:.2f} s (a warm-up run included); then {toks.size} "
        f"tokens in {wall:.3g} s ({toks.size / wall:.1f} tokens/s, prefill included); host "
        f"{m.host_per_action_s * 1e6:.0f} us per action; bytes sent "
        + ", ".join(f"{k} {v}" for k, v in m.bytes_sent._asdict().items())
    )
    if not check:
        return 0
    ref, _ = generate_unsplit(decode, params, tokens, prefill=prefill, prefill_params=own,
                              **inputs)  # fmt: skip
    return _compare(toks, ref, out)


def _prompts(
    aval: Any, prompt_len: int | None, ids: Any, groups: int | None, path: Any, rng: Any
) -> np.ndarray:
    """The prompts ``[groups, b, P]`` for a prefill whose prompt is ``aval`` (``[b, P]``):
    read (``ids``), or random ids of length ``prompt_len`` (default ``P``), which must be
    ``P``."""
    b, want = (int(n) for n in aval.shape)
    where = f"the prefill takes prompts of length {want} ({aval.dtype}{list(aval.shape)})"
    if ids is not None:
        return _grouped(ids, b, groups, want, where, path)
    if prompt_len is not None and prompt_len != want:
        raise RuntimeConfigError(
            Keyword("prompt_len", prompt_len), f": {where}; leave ", Keyword("prompt_len"),
            f" out or give {want}",
        )  # fmt: skip
    return rng.integers(0, VOCAB_HI, (groups or 1, b, want))


def _inputs(gen: Any, prompts: np.ndarray | None, rng: Any) -> dict[str, Any]:
    """The prompts (with a prefill) or random first tokens, and random first values of other
    feedback (an RNG key), per group."""
    inputs: dict[str, Any]
    if prompts is None:
        inputs = {"tokens": rng.integers(0, VOCAB_HI, (gen.groups, *gen.token.shape)),
                  "position": 0}  # fmt: skip
    else:
        inputs = {"prompts": prompts}
    extra = gen.roles.feedback[1:]  # an RNG key fed back: random first values per group
    inputs["feedback"] = {
        r.path: rng.integers(0, 2**31, (gen.groups, *r.shape)).astype(r.dtype) for r in extra
    }
    return inputs


def _grouped(
    ids: np.ndarray | list[np.ndarray], b: int, groups: int | None, P: int, where: str, path: str
) -> np.ndarray:
    """Prompts ``[n, P]`` (or ``[groups, b, P]``) as ``[groups, b, P]``, checked against the
    decode step's batch ``b``, ``groups`` when given and the prefill's length ``P``."""
    at = Keyword("prompts_path", path)
    if isinstance(ids, list):  # one per line of text
        lengths = sorted({len(x) for x in ids})
        if len(lengths) > 1:
            each = ", ".join(f"line {i + 1}: {len(x)}" for i, x in enumerate(ids))
            raise RuntimeConfigError(
                at, f": prompts of different lengths ({each} tokens) cannot be served yet; "
                f"{where}"
            )  # fmt: skip
        ids = np.asarray(ids, np.int64).reshape(len(ids), lengths[0] if ids else 0)
    if ids.shape[-1] != P:
        raise RuntimeConfigError(at, f": prompts of length {ids.shape[-1]}; {where}")
    if ids.ndim == 2:
        if len(ids) % b:
            raise RuntimeConfigError(
                at, f": {len(ids)} prompts do not fill groups of {b} sequences (the decode "
                f"step's batch); give a multiple of {b}"
            )  # fmt: skip
        ids = ids.reshape(len(ids) // b, b, P)
    if ids.shape[1] != b:
        raise RuntimeConfigError(
            at, f": [groups, batch, length] = {list(ids.shape)}, but the decode step's batch "
            f"is {b}"
        )  # fmt: skip
    if groups is not None and groups != len(ids):
        raise RuntimeConfigError(
            Keyword("groups", groups), " was asked for; ", at, f" fills {len(ids)} groups of "
            f"{b}; leave ", Keyword("groups"), " out or give as many prompts"
        )  # fmt: skip
    return ids


def _read_prompts(path: str, tokenizer: Any) -> np.ndarray | list[np.ndarray]:
    """Token ids from a .npy (2 or 3 dimensions, integers >= 0), or one list of ids per
    non-empty line of a text file, encoded by ``tokenizer``."""
    at = Keyword("prompts_path", path)
    if not Path(path).is_file():
        raise RuntimeConfigError(at, ": no such file")
    if path.endswith(".npy"):
        try:
            ids = np.load(path, allow_pickle=False)
        except ValueError as e:
            raise RuntimeConfigError(at, f": not a .npy of token ids ({e})") from e
        if ids.ndim not in (2, 3) or not np.issubdtype(ids.dtype, np.integer):
            raise RuntimeConfigError(
                at, f": {ids.dtype}{list(ids.shape)}; give integer token ids [n, P] or "
                "[groups, batch, P]"
            )  # fmt: skip
        if ids.size and ids.min() < 0:
            raise RuntimeConfigError(at, f": a negative token id ({ids.min()})")
        return ids
    if tokenizer is None:
        raise RuntimeConfigError(
            at, ": text prompts need ", Keyword("tokenizer_path"), " (a Hugging Face "
            "tokenizer.json); or give a .npy of token ids"
        )  # fmt: skip
    lines = [ln for ln in Path(path).read_text().splitlines() if ln.strip()]
    if not lines:
        raise RuntimeConfigError(at, ": no prompts (every line is empty)")
    return [np.asarray(e.ids, np.int64) for e in tokenizer.encode_batch(lines)]


def _tokenizer(path: str) -> Any:
    at = Keyword("tokenizer_path", path)
    try:
        from tokenizers import Tokenizer
    except ImportError as e:
        raise RuntimeConfigError(
            at, ": reading a tokenizer needs the `tokenizers` package: pip install "
            "'hlopipe[serve]'"
        ) from e  # fmt: skip
    if not Path(path).is_file():
        raise RuntimeConfigError(at, ": no such file")
    try:
        return Tokenizer.from_file(path)
    except Exception as e:  # the tokenizers library raises plain Exceptions on a bad file
        raise RuntimeConfigError(at, f": not a Hugging Face tokenizer file ({e})") from e


def _compare(toks: np.ndarray, ref: np.ndarray, out: Any) -> int:
    import jax

    bad = np.argwhere(ref != toks)
    if len(bad):
        g, s, t = (int(x) for x in bad[0])
        out(
            f"check: {len(bad)} of {toks.size} tokens differ from the unsplit program; first at "
            f"group {g}, sequence {s}, token {t}: {toks[g, s, t]} != {ref[g, s, t]}"
        )
        return 1
    out(f"check: all {toks.size} tokens equal the unsplit program's on {jax.devices()[0]}")
    return 0


def _shape(dtype: Any, shape: Any) -> str:
    return f"{dtype}[{','.join(map(str, shape))}]"


def _spans(indices: list[int]) -> str:
    """``0-13, 15, 16``: argument indices with runs joined."""
    runs: list[list[int]] = []
    for i in indices:
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 2 else ", ".join(map(str, r)) for r in runs)


def _roles_taken(roles: Any) -> str:
    """Which arguments were taken for what, in one line: parameters by index, the rest with
    their shapes."""
    parts = []
    for role, label in ((Use.PARAMETER, "parameters"), (Use.STATE, "state"),
                        (Use.FEEDBACK, "feedback"), (Use.INPUT, "inputs")):  # fmt: skip
        rs = roles.of(role)
        if not rs:
            continue
        if role is Use.PARAMETER:
            parts.append(f"{label}: args {_spans([r.index for r in rs])}")
        else:
            parts.append(f"{label}: " + ", ".join(
                f"arg {r.index} {_shape(r.dtype, r.shape)}" for r in rs
            ))  # fmt: skip
    return "; ".join(parts)


def _params(path: str | None, roles: Any, seed: int) -> list[Any]:
    """The parameters (as the generator takes them: ``roles`` with a logits step's token and
    counters told apart): the arrays of an .npz by name where it names them and every
    parameter carries a name (``hlopipe.torch.export_generation``'s ``state_dict`` names),
    else in order; each of its parameter's shape and type; or random normal ones."""
    from hlopipe.generate._plan import counters_as_position, logits_as_feedback

    roles = logits_as_feedback(counters_as_position(roles))[0]
    want = roles.parameters
    if path is None:
        rng = np.random.default_rng(seed)
        return [rng.standard_normal(r.shape).astype(r.dtype) for r in want]
    import os

    from hlopipe.io import load_npz

    if os.path.isdir(path):  # a training checkpoint (hlopipe train --save): its newest step
        from hlopipe.runtime import read_checkpoint_params

        named = read_checkpoint_params(path)
    else:
        named = list(zip(*load_npz(path, "params_path"), strict=True))
    if _by_name(named, want):
        named = _matched_by_name(path, named, want)
    what = None
    if len(named) != len(want):
        what = f"{len(named)} arrays, the program takes {len(want)} parameters"
    for i, ((name, a), r) in enumerate(zip(named, want, strict=False)):
        if a.shape != tuple(r.shape) or str(a.dtype) != str(r.dtype):
            what = (what + "; first" if what else "first") + (
                f" difference: array {i} ({name!r}) is {_shape(a.dtype, a.shape)}, parameter "
                f"arg {r.index} takes {_shape(r.dtype, r.shape)}"
            )
            break
    if what:
        raise RuntimeConfigError(
            Keyword("params_path", path), f": {what}. The arguments were taken as "
            f"{_roles_taken(roles)}; the file must hold the parameters alone, in argument order"
        )  # fmt: skip
    return [a for _, a in named]


def _by_name(named: list[tuple[str, Any]], want: Any) -> bool:
    """Whether an .npz's arrays are matched to the parameters by name: every parameter
    carries a name and the file names some of them (not ``np.savez``'s ``arr_0``, ``arr_1``...
    nor names of its own, read in order)."""
    from hlopipe.generate._match import real_name

    names = {r.path for r in want}
    return all(real_name(r.path) for r in want) and any(n in names for n, _ in named)


def _matched_by_name(path: str, named: list[tuple[str, Any]], want: Any) -> list[tuple[str, Any]]:
    """The arrays in the parameters' order, by name; a name missing or left over is one
    error naming them."""
    by_name = dict(named)
    missing = list(dict.fromkeys(r.path for r in want if r.path not in by_name))
    extra = [n for n in by_name if n not in {r.path for r in want}]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"no array named {_some(missing)}")
        if extra:
            parts.append(f"arrays no argument takes: {_some(extra)}")
        raise RuntimeConfigError(
            Keyword("params_path", path), f": matched by name to the program's {len(want)} "
            f"named parameters: {'; '.join(parts)}; give one array per parameter, under its "
            "name"
        )  # fmt: skip
    return [(r.path, by_name[r.path]) for r in want]


def _some(names: list[str]) -> str:
    """The first five names, and how many more."""
    more = f" (and {len(names) - 5} more)" if len(names) > 5 else ""
    return ", ".join(map(repr, names[:5])) + more
