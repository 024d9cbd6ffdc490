"""The doctests in numbax.scipy's modules run and print what they show."""
import doctest
import importlib

import pytest

MODULES = [f"numbax._src.scipy.special.{m}" for m in (
    "bessel", "error_fns", "expint", "gamma_fns", "hypergeometric", "log_fns", "normal")] + [
    f"numbax._src.scipy.stats.{m}" for m in (
        "discrete", "kde", "location_scale", "multivariate", "shape", "summary")] + [
    "numbax._src.lax.special"] + [
    f"numbax._src.scipy.{m}" for m in (
        "cluster", "integrate", "interpolate", "ndimage", "optimize", "spatial")]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
