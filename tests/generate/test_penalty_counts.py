"""The penalties' counts updated on the device (``_sampling.count_tokens``,
``set_count_row``): against the same counts kept in NumPy, including a step of fewer rows than
the counts hold (its first ``k``) and rows left out by the mask."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hlopipe.generate._sampling import count_tokens, set_count_row

_count, _set = jax.jit(count_tokens), jax.jit(set_count_row)


def test_counts_add_each_counted_rows_token_and_a_set_row_replaces_one_row():
    rng = np.random.default_rng(3)
    b, vocab = 4, 11
    counts = rng.integers(0, 3, (b, vocab)).astype(np.float32)
    seen = rng.random((b, vocab)) < 0.3
    want_c, want_s = counts.copy(), seen.copy()
    c, s = jnp.asarray(counts), jnp.asarray(seen)
    steps = [([5, 5, 0, 10], [1, 0, 1, 1]), ([5, 2, 7, 7], [1, 1, 0, 1]), ([9, 3], [1, 1, 1, 0])]
    for tokens, rows in steps:  # the last: a step of the first 2 rows
        c, s = _count(c, s, jnp.asarray(tokens, jnp.int32), jnp.asarray(rows, bool))
        for r, t in enumerate(tokens):
            if rows[r]:
                want_c[r, t] += 1
                want_s[r, t] = True
    np.testing.assert_array_equal(np.asarray(c), want_c)
    np.testing.assert_array_equal(np.asarray(s), want_s)
    row_c, row_s = np.zeros((1, vocab), np.float32), np.zeros((1, vocab), bool)
    row_s[0, [1, 4]] = True
    c, s = _set(c, s, jnp.int32(2), jnp.asarray(row_c), jnp.asarray(row_s))
    want_c[2], want_s[2] = row_c[0], row_s[0]
    np.testing.assert_array_equal(np.asarray(c), want_c)
    np.testing.assert_array_equal(np.asarray(s), want_s)
