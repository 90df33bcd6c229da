"""A prefill whose parameters come in another order than its decode step's is matched to them
without ``prefill_params``: by shape where one argument of each has it, else by data flow
(layer 0's weights against layer 1's, a gain against a bias). The oracle is the permutation the
test applies and the unsplit, unpermuted prefill's tokens; arguments used alike are refused,
naming them and ``prefill_params``, and so is a constant of the prefill that feeds no counter.
Every match is run against the decode loop before it is used: a swapped one is refused."""

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


def _tiny(alike: bool, order=("z_head", "w2", "w1", "a_embed"), extra=None):
    """A one-layer decode step whose ``w1`` and ``w2`` share a shape, used alike (``x @ w1 +
    (2 x) @ w2``) or not (``x @ w1 @ w2``), its parameters, and its prefill taking its weights
    in ``order`` (a tuple: no names) and, with ``extra``, an integer scalar added to its tokens
    (a constant of its own that feeds no counter)."""
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
        p = dict(zip(order, ws, strict=True))
        cache = jnp.zeros((B, L, D)).at[:, :P].set(body(p, p["a_embed"][prompt]))
        tok = jnp.argmax(cache.sum(1) @ p["z_head"], -1).astype(jnp.int32)
        return tok + sum(extra), cache

    ex = (params, jnp.zeros((B, L, D)), jnp.zeros(B, jnp.int32), jnp.int32(0))
    ws = tuple(params[k] for k in order)
    extra = () if extra is None else (jnp.int32(extra),)
    pre = _export(prefill, ws, jnp.zeros((B, P), jnp.int32), *extra)
    return _export(decode, *ex, donate=1), params, pre


def test_a_swapped_match_of_two_equal_shaped_weights_is_refused_by_running_it():
    """The prefill takes ``w1`` and ``w2`` (one shape) swapped, every shape in the decode
    step's order and no names: the order rule takes them as they come, a match that runs and
    computes other tokens. Run on a random prompt against the decode loop, it is refused
    (by the matching, the oracle and the generator), naming both arguments and
    ``prefill_params``; given its own arguments, the prefill gives
    the token the JAX decode function gives over the same prompt (the oracle)."""
    dec, params, pre = _tiny(alike=False, order=("a_embed", "w2", "w1", "z_head"))
    roles = dec.arg_roles()
    says = (
        r"matched by order 4.*the state .* differs from the decode loop's.*"
        r"argument 1 as parameter 1 .*w1.*argument 2 as parameter 2 .*w2.*prefill_params"
    )
    by_arg = dict(enumerate(jax.tree_util.tree_leaves(params)))  # the step's arguments 0..3
    assert (
        prefill_args(pre, roles, "the prefill", None, dec)
        .describe()
        .startswith("prefill arguments matched by order 4")
    )  # unchecked without the parameters' values: the order rule took them as they come
    same = {**by_arg, 2: by_arg[1]}  # w2 = w1 (as an initialisation may make them): the swap
    prefill_args(pre, roles, "the prefill", None, dec, same)  # computes alike, and passes;
    with pytest.raises(RuntimeConfigError, match=says):  # that verdict is not reused for others
        prefill_args(pre, roles, "the prefill", None, dec, by_arg)
    prompts = np.asarray(jax.random.randint(jax.random.key(3), (1, B, P), 0, 8), np.int32)
    with pytest.raises(RuntimeConfigError, match=says):  # the oracle checks what it runs
        generate_unsplit(dec, params, 1, prefill=pre, prompts=prompts)
    with pytest.raises(RuntimeConfigError, match=says):  # and so does the generator
        hlopipe.Generator(dec, params, prefill=pre, num_stages=1)
    own = [params["a_embed"], params["w2"], params["w1"], params["z_head"]]
    got, _ = generate_unsplit(dec, params, 1, prefill=pre, prompts=prompts, prefill_params=own)
    cache, tok = jnp.zeros((B, 4, 4)), None
    for t in range(P):  # the decode function itself, fed the prompt token by token
        tok, cache = dec.as_function()(params, cache, prompts[0, :, t], jnp.int32(t))
    np.testing.assert_array_equal(got[0, :, 0], tok)


def test_parameters_used_alike_are_refused_naming_them():
    """Which of ``w1`` and ``w2`` the prefill's are cannot be told from the data flow, and
    is not guessed (a swap changes the tokens)."""
    dec, params, pre = _tiny(alike=True)
    says = r"parameters \[1, 2\] \(float32\[4, 4\].*arguments \[1, 2\].*prefill_params"
    with pytest.raises(RuntimeConfigError, match=says):
        generate_unsplit(dec, params, 2, prefill=pre, prompts=np.zeros((1, B, P), np.int32))


def test_a_constant_that_feeds_no_counter_is_refused_naming_it():
    dec, params, pre = _tiny(alike=False, extra=0)
    says = r"argument 5 \(int32\[\]\) matches no parameter.*prefill_params"
    with pytest.raises(RuntimeConfigError, match=says):
        generate_unsplit(dec, params, 2, prefill=pre, prompts=np.zeros((1, B, P), np.int32))


def test_programs_alike_in_shapes_are_each_matched_by_their_own_data_flow():
    """Two prefills with the same argument shapes and dtypes, one taking ``w1`` and ``w2`` in
    the other's order, each matched while the other lives and after it is gone: each gets its
    own match (the oracle: the order the test gave each), never the other's, whatever the
    matcher keeps between calls."""
    first_order, second_order = ("z_head", "w2", "w1", "a_embed"), ("z_head", "w1", "w2", "a_embed")
    dec, params, first = _tiny(alike=False, order=first_order)
    _, _, second = _tiny(alike=False, order=second_order)
    assert first.in_avals == second.in_avals
    decode_arg = {"a_embed": 0, "w1": 1, "w2": 2, "z_head": 3}  # the step's flat parameters

    by_arg = dict(enumerate(jax.tree_util.tree_leaves(params)))

    def match(pre):  # checked by running it, too
        return prefill_args(pre, dec.arg_roles(), "the prefill", None, dec, by_arg).param_of

    assert match(first) == {k: decode_arg[n] for k, n in enumerate(first_order)}
    assert match(second) == {k: decode_arg[n] for k, n in enumerate(second_order)}
    del first
    _, _, third = _tiny(alike=False, order=first_order)
    assert match(third) == {k: decode_arg[n] for k, n in enumerate(first_order)}
    assert match(second) == {k: decode_arg[n] for k, n in enumerate(second_order)}


def test_state_outputs_taken_in_order_among_equal_shapes_are_run_and_a_swap_refused():
    """The prefill returns its logits for every position (not the decode step's form), then
    the V cache before the K cache, one shape: its weights are named alike by both programs
    (nothing to match), but its state outputs are taken in the decode step's order, a guess
    among equal shapes. Run against the decode loop, the swap is refused, naming it; the
    prefill returning K before V is accepted."""
    V, D, L = 8, 4, 4
    key = iter(jax.random.split(jax.random.key(4), 4))
    params = {name: jax.random.normal(next(key), shape) for name, shape in
              (("emb", (V, D)), ("head", (D, V)), ("wk", (D, D)), ("wv", (D, D)))}  # fmt: skip

    def logits(p, k, v):
        return (k.sum(1) + 2.0 * v.sum(1)) @ p["head"]

    def decode(p, k, v, tok, pos):
        x = p["emb"][tok][:, None]
        k = jax.lax.dynamic_update_slice(k, x @ p["wk"], (0, pos, 0))
        v = jax.lax.dynamic_update_slice(v, x @ p["wv"], (0, pos, 0))
        return logits(p, k, v), k, v

    def prefill(p, prompt, swap):
        x = p["emb"][prompt]
        k = jnp.zeros((B, L, D)).at[:, :P].set(x @ p["wk"])
        v = jnp.zeros((B, L, D)).at[:, :P].set(x @ p["wv"])
        every = jnp.stack([logits(p, k.at[:, t + 1 :].set(0), v.at[:, t + 1 :].set(0))
                           for t in range(P)], axis=1)  # fmt: skip
        return (every, v, k) if swap else (every, k, v)

    cache = jnp.zeros((B, L, D))
    ex = (params, cache, cache, jnp.zeros(B, jnp.int32), jnp.int32(0))
    dec = _export(decode, *ex, donate=(1, 2))
    by_arg = dict(enumerate(jax.tree_util.tree_leaves(params)))
    for swap in (False, True):
        pre = _export(functools.partial(prefill, swap=swap), params, jnp.zeros((B, P), jnp.int32))
        if not swap:
            prefill_args(pre, dec.arg_roles(), "the prefill", None, dec, by_arg)
            continue
        with pytest.raises(RuntimeConfigError, match=r"state outputs taken in the decode step"):
            prefill_args(pre, dec.arg_roles(), "the prefill", None, dec, by_arg)
