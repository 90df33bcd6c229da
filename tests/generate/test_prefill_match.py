"""A prefill whose parameters come in another order than its decode step's is matched to them
without ``prefill_params``: by shape where one argument of each has it, else by data flow
(layer 0's weights against layer 1's, a gain against a bias). The oracle is the permutation the
test applies and the unsplit, unpermuted prefill's tokens; arguments used alike are refused,
naming them and ``prefill_params``, and so is a constant of the prefill that feeds no counter."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hlopipe
from hlopipe.errors import RuntimeConfigError
from hlopipe.generate import generate_unsplit
from hlopipe.generate._plan import prefill_args
from hlopipe.models import gpt_decode as gd

CFG = gd.DecodeConfig(vocab=16, d_model=8, n_heads=2, n_layers=2, d_ff=16, max_len=8)
B, P, TOKENS = 2, 3, 3


def _export(fn, *args, donate=()):
    return hlopipe.load(jax.export.export(jax.jit(fn, donate_argnums=donate))(*args).serialize())


@functools.cache
def _gpt():
    """The decode step, its prefill, the prefill taking the weights permuted, and the
    permutation (its argument k is the weight ``perm[k]`` of the decode step's)."""
    params = gd.init(jax.random.key(0), CFG)
    leaves, tree = jax.tree_util.tree_flatten(params)
    perm = [int(i) for i in np.random.default_rng(0).permutation(len(leaves))]
    prefill = gd.prefill_fn(CFG)
    prompt = jnp.zeros((B, P), jnp.int32)

    def permuted(ws, prompt, *extra):
        flat = [None] * len(leaves)
        for k, i in enumerate(perm):
            flat[i] = ws[k]
        tok, cache = prefill(jax.tree_util.tree_unflatten(tree, flat), prompt)
        return (tok + sum(extra).astype(tok.dtype) if extra else tok), cache

    ws = tuple(leaves[i] for i in perm)
    ex = (params, gd.empty_cache(B, CFG), jnp.zeros(B, jnp.int32), jnp.int32(0))
    dec = _export(gd.decode_fn(CFG), *ex, donate=1)
    return (
        dec, params, _export(prefill, params, prompt), _export(permuted, ws, prompt), perm,
        _export(permuted, ws, prompt, jnp.int32(0)),
    )  # fmt: skip


def test_permuted_prefill_is_matched_and_gives_the_unpermuted_tokens():
    dec, params, pre, permuted, perm, _ = _gpt()
    avals = [(a.shape, a.dtype) for a in permuted.in_avals[:-1]]
    same = [(a.shape, a.dtype) for a in pre.in_avals[:-1]]
    assert avals != same  # not the decode step's order: the order path does not apply
    assert len(set(avals)) < len(avals)  # shapes shared: layer 0's and 1's weights, ...
    matched = prefill_args(permuted, dec.arg_roles(), "the prefill", None, dec)
    # the decode step takes (params, cache, tokens, position): its weight i is argument i
    assert matched.param_of == dict(enumerate(perm))
    assert matched.prompt == len(perm) and not matched.constants
    assert matched.describe().startswith("prefill arguments matched by data flow 21;")
    prompts = np.asarray(gd.prompts(jax.random.key(1), 1, B, P, CFG))
    want, _ = generate_unsplit(dec, params, TOKENS, prefill=pre, prompts=prompts)
    got, _ = generate_unsplit(dec, params, TOKENS, prefill=permuted, prompts=prompts)
    np.testing.assert_array_equal(got, want)
    assert len(np.unique(want)) >= 2


def test_a_constant_that_feeds_no_counter_is_refused_naming_it():
    dec, _, _, _, perm, with_extra = _gpt()
    says = rf"argument {len(perm) + 1} \(int32\[\]\) matches no parameter.*prefill_params"
    with pytest.raises(RuntimeConfigError, match=says):
        prefill_args(with_extra, dec.arg_roles(), "the prefill", None, dec)


def test_parameters_used_alike_are_refused_naming_them():
    """``w1`` and ``w2`` share a shape and are used alike (each in one product whose sum goes
    on): which the prefill's are cannot be told from the data flow, and is not guessed."""
    V, D, L = 8, 4, 4
    key = iter(jax.random.split(jax.random.key(2), 4))
    params = {"a_embed": jax.random.normal(next(key), (V, D)),
              "w1": jax.random.normal(next(key), (D, D)),
              "w2": jax.random.normal(next(key), (D, D)),
              "z_head": jax.random.normal(next(key), (D, V))}  # fmt: skip

    def body(p, x):
        return x @ p["w1"] + (2.0 * x) @ p["w2"]

    def decode(p, cache, tok, pos):
        cache = jax.lax.dynamic_update_slice(
            cache, body(p, p["a_embed"][tok])[:, None], (0, pos, 0)
        )
        return jnp.argmax(cache.sum(1) @ p["z_head"], -1).astype(jnp.int32), cache

    def prefill(ws, prompt):  # (z_head, w2, w1, a_embed): another order
        p = {"z_head": ws[0], "w2": ws[1], "w1": ws[2], "a_embed": ws[3]}
        x = body(p, p["a_embed"][prompt])
        cache = jnp.zeros((B, L, D)).at[:, :P].set(x)
        return jnp.argmax(cache.sum(1) @ p["z_head"], -1).astype(jnp.int32), cache

    ex = (params, jnp.zeros((B, L, D)), jnp.zeros(B, jnp.int32), jnp.int32(0))
    dec = _export(decode, *ex, donate=1)
    ws = (params["z_head"], params["w2"], params["w1"], params["a_embed"])
    pre = _export(prefill, ws, jnp.zeros((B, P), jnp.int32))
    says = r"parameters \[1, 2\] \(float32\[4, 4\].*arguments \[1, 2\].*prefill_params"
    with pytest.raises(RuntimeConfigError, match=says):
        generate_unsplit(dec, params, 2, prefill=pre, prompts=np.zeros((1, B, P), np.int32))
