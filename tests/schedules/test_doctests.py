"""The examples in the docstrings run and print what they say."""

import doctest
import importlib

import pytest

MODULES = [
    "__init__",
    "_ir",
    "_grid",
    "_generators",
    "_gen_flush",
    "_gen_interleaved",
    "_gen_zero_bubble",
    "_gen_v",
    "_lower",
    "_validate",
    "_simulate",
    "_plot",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(
        "hlopipe.schedules" + ("" if name == "__init__" else f".{name}")
    )
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
