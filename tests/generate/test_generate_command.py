"""`hlopipe generate` as a PyTorch user meets it: torch_xla's 64-bit decode step and prefill
(fixture `tests/data/frameworks/torch_xla/static_cache_*`) run from the shell with the
parameters and prompts torch used, read from a .npy or from text through a tokenizer; every
group printed and written; and the mistakes a user makes, each one `error:` line. The oracle is
torch's own first two tokens (stored by the fixture's generator) and the manifest's true roles.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jax
import numpy as np
import pytest

from hlopipe.cli import main
from hlopipe.cli._common import one_line
from hlopipe.errors import RuntimeConfigError
from hlopipe.runtime import place

DIR = Path(__file__).parents[1] / "data" / "frameworks" / "torch_xla"
DEC, PRE = DIR / "static_cache_decode", DIR / "static_cache_prefill"
MANIFEST = json.loads(DEC.with_suffix(".json").read_text())
TORCH_DEC, TORCH_PRE = np.load(DEC.with_suffix(".npz")), np.load(PRE.with_suffix(".npz"))
PROMPT = TORCH_PRE["arg_16"]  # int64[4, 5]: torch's prompt
KIND = {i: a["name"] if a["kind"] == "input" else a["kind"] for i, a in enumerate(MANIFEST["args"])}


@pytest.fixture
def files(tmp_path):
    """The parameters alone, in argument order, as the manifest says (not as roles tell)."""
    params = [TORCH_DEC[f"arg_{i}"] for i, k in KIND.items() if k in ("param", "const")]
    np.savez(tmp_path / "params.npz", *params)
    base = ["generate", f"{DEC}.hlo", "--prefill", f"{PRE}.hlo", "--stages", "2"]
    return tmp_path, [*base, "--params", str(tmp_path / "params.npz")]


def _printed(out: str) -> dict[tuple[int, int], list[int]]:
    lines = re.findall(r"^group (\d+), sequence (\d+): ([\d ]+)", out, re.M)
    return {(int(g), int(s)): [int(t) for t in ids.split()] for g, s, ids in lines}


def test_a_torch_xla_program_from_the_shell(files, capsys):
    """64-bit mode turned on (and off after), torch's prompts in two groups from a .npy, the
    tokens torch made, every sequence printed and written, tokens/s timed after compiling."""
    tmp, args = files
    np.save(tmp / "prompts.npy", np.concatenate([PROMPT, PROMPT[::-1]]))  # [8, 5]: 2 groups
    out_file = tmp / "tokens.npy"
    assert not jax.config.read("jax_enable_x64")
    assert main([*args, "--prompts", str(tmp / "prompts.npy"), "--output", str(out_file),
                 "--check"]) == 0  # fmt: skip
    assert not jax.config.read("jax_enable_x64")
    out = capsys.readouterr().out
    assert "\nprefill arguments matched by order " in out  # the prefill takes the same order
    toks = np.load(out_file)
    assert toks.shape == (2, 4, 4)  # the cache holds 8: a prompt of 5, then 4 tokens by default
    np.testing.assert_array_equal(toks[0, :, 0], TORCH_PRE["out_1"])  # torch's prefill token
    np.testing.assert_array_equal(toks[0, :, 1], TORCH_DEC["out_1"])  # torch's decode step's
    np.testing.assert_array_equal(toks[1, ::-1, 0], TORCH_PRE["out_1"])  # the reversed group
    assert _printed(out) == {(g, s): toks[g, s].tolist() for g in range(2) for s in range(4)}
    assert "check: all 32 tokens equal the unsplit program's" in out
    m = re.search(r"compiled in ([\d.]+) s .*; then 32 tokens in ([\d.e+-]+) s \(([\d.]+) tok", out)
    assert m and float(m[2]) < float(m[1]) and float(m[3]) == pytest.approx(32 / float(m[2]), 0.1)


def test_text_prompts_through_a_tokenizer(files, capsys):
    import tokenizers  # the `serve` extra, which `make test` installs
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    tmp, args = files
    tok = tokenizers.Tokenizer(WordLevel({f"w{i}": i for i in range(16)}, unk_token="w0"))
    tok.pre_tokenizer = Whitespace()
    tok.decoder = tokenizers.decoders.WordPiece()  # joins the words with spaces
    tok.save(str(tmp / "tokenizer.json"))
    lines = [" ".join(f"w{i}" for i in p) for p in PROMPT]
    (tmp / "prompts.txt").write_text("\n".join(lines) + "\n\n")  # a blank line is no prompt
    assert main([*args, "--prompts", str(tmp / "prompts.txt"),
                 "--tokenizer", str(tmp / "tokenizer.json"), "--tokens", "2"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    seqs = re.findall(r"^group 0, sequence (\d): (\d+) (\d+) \| '(.*)'$", out, re.M)
    assert [int(s) for s, *_ in seqs] == [0, 1, 2, 3]
    assert [int(a) for _, a, _, _ in seqs] == TORCH_PRE["out_1"].tolist()
    assert [int(b) for _, _, b, _ in seqs] == TORCH_DEC["out_1"].tolist()
    assert all(text == f"w{a} w{b}" for _, a, b, text in seqs)


def _error(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def test_mistakes_are_one_error_line_before_any_compile(files, capsys):
    tmp, args = files
    # the random prompts' length is the prefill's; another is named, with the prefill's
    err = _error(capsys, [*args, "--prompt-len", "8"])
    assert "--prompt-len 8: the prefill takes prompts of length 5 (int64[4, 5])" in err
    # torch's whole .npz (arguments, outputs, gradients): which argument was taken for what
    err = _error(capsys, [*args[:-1], str(DEC.with_suffix(".npz"))])
    assert f"{len(TORCH_DEC.files)} arrays, the program takes 20 parameters" in err
    tokens, position = (next(i for i, k in KIND.items() if k == n) for n in ("tokens", "position"))
    assert f"feedback: arg {tokens} int64[4]; inputs: arg {position} int64[1]" in err
    states = [i for i, k in KIND.items() if k == "state"]
    assert "state: " + ", ".join(f"arg {i} float32[4,2,8,4]" for i in states) in err
    assert "first difference: array 14 ('arg_14') is int64[1]" in err
    for shape, says in [
        ((4, 6), "prompts of length 6; the prefill takes prompts of length 5"),
        ((6, 5), "6 prompts do not fill groups of 4 sequences"),
        ((2, 3, 5), "[groups, batch, length] = [2, 3, 5], but the decode step's batch is 4"),
    ]:
        np.save(tmp / "p.npy", np.zeros(shape, np.int64))
        assert says in _error(capsys, [*args, "--prompts", str(tmp / "p.npy")])
    np.save(tmp / "p.npy", np.zeros((8, 5), np.int64))
    err = _error(capsys, [*args, "--prompts", str(tmp / "p.npy"), "--groups", "3"])
    assert "--groups 3 was asked for; --prompts" in err and "fills 2 groups of 4" in err
    (tmp / "p.txt").write_text("w1 w2\nw1 w2 w3\n")
    err = _error(capsys, [*args, "--prompts", str(tmp / "p.txt")])
    assert "text prompts need --tokenizer" in err
    err = _error(capsys, [*args, "--prompts", str(tmp / "p.npy"), "--prompt-len", "5"])
    assert "give --prompts or --prompt-len, not both" in err
    no_prefill = [args[0], args[1], *args[4:]]
    err = _error(capsys, [*no_prefill, "--prompts", str(tmp / "p.npy")])
    assert "--prompts needs a prefill program (--prefill)" in err


def test_text_prompts_of_different_lengths_are_named(files, capsys):
    import tokenizers
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    tmp, args = files
    tok = tokenizers.Tokenizer(WordLevel({"a": 1, "b": 2}, unk_token="a"))
    tok.pre_tokenizer = Whitespace()
    tok.save(str(tmp / "tokenizer.json"))
    (tmp / "p.txt").write_text("a b\na b a\n")
    err = _error(capsys, [*args, "--prompts", str(tmp / "p.txt"), "--tokenizer",
                          str(tmp / "tokenizer.json")])  # fmt: skip
    assert "prompts of different lengths (line 1: 2, line 2: 3 tokens) cannot be served" in err


def test_too_few_devices_names_how_to_get_more():
    """In Python the JAX option, in the command its flag."""
    with pytest.raises(RuntimeConfigError) as e:
        place(jax.devices()[:1], (1,), 2, (0, 1), batch_size=4, schedule_name="2 stages")
    assert "only 1 given" in str(e.value) and "jax_num_cpu_devices=2" in str(e.value)
    line = one_line(e.value, "generate")
    assert "(on CPU, ask for more: --cpu-devices 2)" in line and "jax_num" not in line
    with pytest.raises(RuntimeConfigError) as e:
        place(jax.devices()[:3], (2,), 2, (0, 1), batch_size=4)
    assert "= 4 devices, only 3 given" in str(e.value)
    assert "jax_num_cpu_devices=4" in str(e.value)
    with pytest.raises(RuntimeConfigError) as e:  # meshes of two shapes
        place(jax.devices()[:2], [(1,), (2,)], 2, (0, 1), batch_size=4)
    assert "needs 3 devices, only 2 given" in str(e.value)
    assert "jax_num_cpu_devices=3" in str(e.value)
    with pytest.raises(RuntimeConfigError) as e:  # one mesh larger than every device
        place(jax.devices()[:1], (2,), 1, (0,), batch_size=4)
    assert "needs 2 devices, only 1 given" in str(e.value)
    assert "jax_num_cpu_devices=2" in str(e.value)


def test_random_prompts_take_the_prefills_length():
    from hlopipe.generate._command import _prompts

    aval = jax.ShapeDtypeStruct((4, 5), np.int64)
    rng = np.random.default_rng(0)
    assert _prompts(aval, None, None, None, None, rng).shape == (1, 4, 5)
    assert _prompts(aval, 5, None, 3, None, rng).shape == (3, 4, 5)
