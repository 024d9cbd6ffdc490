"""The doctests in numbax.numpy's modules run and print what they show."""
import doctest

import pytest

from numbax._src.numpy import creation, linalg_ops, reductions, shapes, sorting


@pytest.mark.parametrize("module", [creation, linalg_ops, reductions, shapes, sorting],
                         ids=lambda m: m.__name__)
def test_doctests(module):
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0
