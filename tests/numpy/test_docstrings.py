"""The doctests in numbax.numpy's modules run and print what they show."""
import doctest
import importlib

import pytest

MODULES = [
    "creation", "linalg_ops", "reductions", "shapes", "sorting", "padding", "bits",
    "index_tricks", "updates", "setops", "quantiles", "window_functions", "polynomial",
    "statistics", "calculus", "selection", "vectorize", "ufunc_api", "array_io", "contractions",
    "dtypes_api", "flips",
]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    module = importlib.import_module(f"numbax._src.numpy.{name}")
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0
