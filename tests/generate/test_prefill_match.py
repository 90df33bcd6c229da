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
B, P = 2, 3


def _export(fn, *args, donate=()):
    return hlopipe.load(jax.export.export(jax.jit(fn, donate_argnums=donate))(*args).serialize())


@functools.cache
def _gpt():
    """The decode step, the prefill taking the weights permuted, and the permutation (its
    argument k is the weight ``perm[k]`` of the decode step's)."""
    params = gd.init(jax.random.key(0), CFG)
    leaves, tree = jax.tree_util.tree_flatten(params)
    # reversed: every two weights sharing a shape (layer 0's and 1's, a gain and its bias)
    # come in the other order, so that no order among equals can pass for a match
    perm = list(range(len(leaves)))[::-1]

    def permuted(ws, prompt):
        flat = [None] * len(leaves)
        for k, i in enumerate(perm):
            flat[i] = ws[k]
        return gd.prefill_fn(CFG)(jax.tree_util.tree_unflatten(tree, flat), prompt)

    ws = tuple(leaves[i] for i in perm)
    ex = (params, gd.empty_cache(B, CFG), jnp.zeros(B, jnp.int32), jnp.int32(0))
    dec = _export(gd.decode_fn(CFG), *ex, donate=1)
    return dec, params, _export(permuted, ws, jnp.zeros((B, P), jnp.int32)), perm


def test_permuted_prefill_is_matched_and_gives_the_unpermuted_token_and_caches():
    dec, params, permuted, perm = _gpt()
    avals = [(a.shape, a.dtype) for a in permuted.in_avals[:-1]]
    in_order = [(a.shape, a.dtype) for r in dec.arg_roles().parameters for a in [r]]
    assert avals != in_order  # not the decode step's order: the order path does not apply
    assert len(set(avals)) < len(avals)  # shapes shared: layer 0's and 1's weights, ...
    matched = prefill_args(permuted, dec.arg_roles(), "the prefill", None, dec)
    # the decode step takes (params, cache, tokens, position): its weight i is argument i
    assert matched.param_of == dict(enumerate(perm))
    assert matched.prompt == len(perm) and not matched.constants
    assert matched.describe().startswith("prefill arguments matched by data flow 21;")
    # the prefill alone (one token: no decode step compiled) against the JAX function itself
    prompts = np.asarray(gd.prompts(jax.random.key(1), 1, B, P, CFG))
    want_tok, want_cache = jax.jit(gd.prefill_fn(CFG))(params, prompts[0])
    got, got_state = generate_unsplit(dec, params, 1, prefill=permuted, prompts=prompts)
    np.testing.assert_array_equal(got[0, :, 0], want_tok)
    want_state = jax.tree_util.tree_leaves(want_cache)
    for x, y in zip(got_state[0], want_state, strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)


def _tiny(alike: bool):
    """A one-layer decode step whose ``w1`` and ``w2`` share a shape, used alike (``x @ w1 +
    (2 x) @ w2``) or not (``x @ w1 @ w2``), and its prefill taking its weights in another
    order (``z_head, w2, w1, a_embed``) and, where they are not alike, an integer scalar
    added to its tokens (a constant of its own that feeds no counter)."""
    V, D, L = 8, 4, 4
    key = iter(jax.random.split(jax.random.key(2), 4))
    params = {"a_embed": jax.random.normal(next(key), (V, D)),
              "w1": jax.random.normal(next(key), (D, D)),
              "w2": jax.random.normal(next(key), (D, D)),
              "z_head": jax.random.normal(next(key), (D, V))}  # fmt: skip

    def body(p, x):
        return x @ p["w1"] + (2.0 * x) @ p["w2"] if alike else x @ p["w1"] @ p["w2"]

    def decode(p, cache, tok, pos):
        x = body(p, p["a_embed"][tok])[:, None]
        cache = jax.lax.dynamic_update_slice(cache, x, (0, pos, 0))
        return jnp.argmax(cache.sum(1) @ p["z_head"], -1).astype(jnp.int32), cache

    def prefill(ws, prompt, *extra):
        p = {"z_head": ws[0], "w2": ws[1], "w1": ws[2], "a_embed": ws[3]}
        cache = jnp.zeros((B, L, D)).at[:, :P].set(body(p, p["a_embed"][prompt]))
        tok = jnp.argmax(cache.sum(1) @ p["z_head"], -1).astype(jnp.int32)
        return tok + sum(extra), cache

    ex = (params, jnp.zeros((B, L, D)), jnp.zeros(B, jnp.int32), jnp.int32(0))
    ws = (params["z_head"], params["w2"], params["w1"], params["a_embed"])
    extra = () if alike else (jnp.int32(0),)
    pre = _export(prefill, ws, jnp.zeros((B, P), jnp.int32), *extra)
    return _export(decode, *ex, donate=1), params, pre


def test_parameters_used_alike_are_refused_naming_them():
    """Which of ``w1`` and ``w2`` the prefill's are cannot be told from the data flow, and
    is not guessed (a swap changes the tokens)."""
    dec, params, pre = _tiny(alike=True)
    says = r"parameters \[1, 2\] \(float32\[4, 4\].*arguments \[1, 2\].*prefill_params"
    with pytest.raises(RuntimeConfigError, match=says):
        generate_unsplit(dec, params, 2, prefill=pre, prompts=np.zeros((1, B, P), np.int32))


def test_a_constant_that_feeds_no_counter_is_refused_naming_it():
    dec, params, pre = _tiny(alike=False)
    says = r"argument 5 \(int32\[\]\) matches no parameter.*prefill_params"
    with pytest.raises(RuntimeConfigError, match=says):
        generate_unsplit(dec, params, 2, prefill=pre, prompts=np.zeros((1, B, P), np.int32))


class _Fn:
    """The two members of a program the matcher's cache reads, over one function."""

    def __init__(self, fn):
        self.fn = fn
        self.in_avals = [jax.ShapeDtypeStruct((3,), jnp.float32)]

    def as_function(self, flat):
        return self.fn


def test_a_program_made_where_a_dead_one_was_is_traced_anew():
    """The trace cache holds a program's trace while it lives: a program made later at the
    address of a dead one (the same ``id``) gets its own trace, not the dead one's. The oracle
    is the later program's function traced directly."""
    from hlopipe.generate._match import _TRACED, _traced

    def prims(closed):
        return [e.primitive.name for e in closed.jaxpr.eqns]

    first = _Fn(jnp.sin)
    assert prims(_traced(first)) == ["sin"]
    old, before = id(first), len(_TRACED)
    del first
    assert len(_TRACED) == before - 1  # the entry went with its program
    kept = [_Fn(jnp.cos) for _ in range(10_000)]  # until one takes the dead one's address
    later = next((p for p in kept if id(p) == old), None)
    assert later is not None, "no object reused the address: the case cannot be made here"
    assert prims(_traced(later)) == prims(jax.make_jaxpr(jnp.cos)(jnp.zeros(3))) == ["cos"]
