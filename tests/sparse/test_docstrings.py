"""The examples in numbax/_src/sparse's docstrings run and print what they say."""
import doctest
import importlib

import pytest

MODULES = ["bcoo", "bcoo_dot", "bcoo_ops", "bcsr", "creation", "sparsify", "transforms"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"numbax._src.sparse.{name}")
    result = doctest.testmod(module)
    assert result.attempted and not result.failed
