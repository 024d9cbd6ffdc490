"""One comparison of a program's plain-Python outputs (nested dicts and lists of numbers,
strings, booleans and None) with JAX's recorded ones, shared by the API tests."""
import numpy as np


def assert_matches(got, want, where="", rtol=1e-12, atol=1e-14):
    """Strings, booleans and None must be equal; numbers close; containers alike."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want), (where, got, want)
        for k in want:
            assert_matches(got[k], want[k], f"{where}.{k}", rtol, atol)
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), (where, got, want)
        for i, (g, w) in enumerate(zip(got, want)):
            assert_matches(g, w, f"{where}[{i}]", rtol, atol)
    elif isinstance(want, (str, bool)) or want is None:
        assert got == want, (where, got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=where)
