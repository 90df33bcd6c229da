"""What ``hlopipe generate`` does, as a library function the command line calls."""

from __future__ import annotations

from typing import Any

import numpy as np

from hlopipe.errors import RuntimeConfigError


def run_command(
    decode_path: str,
    *,
    prefill_path: str | None = None,
    params_path: str | None = None,
    stages: int | None = None,
    groups: int = 1,
    tokens: int = 16,
    prompt_len: int = 8,
    seed: int = 0,
    max_len: int | None = None,
    check: bool = False,
    out: Any = print,
) -> int:
    """Load, split, generate, print; with ``check``, compare with the unsplit programs.

    Returns the exit status: 0, or 1 when ``check`` finds a token that differs.
    """

    from hlopipe.generate._generator import Generator
    from hlopipe.generate._oracle import generate_unsplit
    from hlopipe.io import load

    for flag, value in (("--groups", groups), ("--tokens", tokens), ("--prompt-len", prompt_len)):
        if value < 1:
            raise RuntimeConfigError(f"{flag} must be at least 1, not {value}")
    decode = load(decode_path)
    prefill = load(prefill_path) if prefill_path else None
    roles = decode.arg_roles()
    params = _params(params_path, roles, seed)
    gen = Generator(
        decode, params, prefill=prefill, num_stages=stages, groups=groups, max_len=max_len
    )
    out(repr(gen))
    inputs = _inputs(gen, prefill is not None, prompt_len, seed)
    session = gen.start(**inputs)
    toks = session.generate(tokens)
    for g in range(min(groups, 2)):
        out(f"group {g}, sequence 0: {' '.join(map(str, toks[g, 0]))}")
    m = session.metrics
    out(
        f"{m['tokens']} tokens in {m['wall_s']:.3f} s ({m['tokens_per_s']:.1f} tokens/s, compile "
        f"included); host {m['host_per_action_s'] * 1e6:.0f} us per action; bytes sent "
        + ", ".join(f"{k} {v}" for k, v in m["bytes_sent"].items())
    )
    if not check:
        return 0
    ref, _ = generate_unsplit(decode, params, tokens, prefill=prefill, **inputs)
    return _compare(toks, ref, out)


def _inputs(gen: Any, prompted: bool, prompt_len: int, seed: int) -> dict[str, Any]:
    """Random prompts (with a prefill) or first tokens, and first values of other feedback
    (an RNG key), per group."""
    rng = np.random.default_rng(seed + 1)
    vocab_hi, groups = 64, gen.groups
    if prompted:
        inputs: dict[str, Any] = {
            "prompts": rng.integers(0, vocab_hi, (groups, gen.batch, prompt_len))
        }
    else:
        inputs = {"tokens": rng.integers(0, vocab_hi, (groups, *gen.token.shape)), "position": 0}
    extra = gen.roles.feedback[1:]  # an RNG key fed back: random first values per group
    inputs["feedback"] = {
        r.path: rng.integers(0, 2**31, (groups, *r.shape)).astype(r.dtype) for r in extra
    }
    return inputs


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


def _params(path: str | None, roles: Any, seed: int) -> list[Any]:
    """The parameters: the arrays of an .npz in order, or random normal ones."""
    want = roles.parameters
    if path is None:
        rng = np.random.default_rng(seed)
        return [rng.standard_normal(r.shape).astype(r.dtype) for r in want]
    with np.load(path, allow_pickle=False) as f:
        arrays = [f[k] for k in f.files]
    if len(arrays) != len(want):
        raise RuntimeConfigError(
            f"--params {path}: {len(arrays)} arrays, the program takes {len(want)} parameters"
        )
    return arrays
