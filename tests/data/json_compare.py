"""Comparing a value made JSON-like (dicts, lists, numbers, strings) with JAX's recorded one."""
from __future__ import annotations

import numpy as np


def close(got, want, rtol: float) -> bool:
    """Same structure and types as `want`; floats within `rtol` (NaN equal to NaN)."""
    if isinstance(want, dict):
        return (isinstance(got, dict) and got.keys() == want.keys()
                and all(close(got[k], want[k], rtol) for k in want))
    if isinstance(want, list):
        return (isinstance(got, (list, tuple)) and len(got) == len(want)
                and all(close(g, w, rtol) for g, w in zip(got, want)))
    if isinstance(want, float) and not isinstance(want, bool):
        return isinstance(got, (int, float)) and bool(
            np.isclose(got, want, rtol=rtol, atol=1e-6, equal_nan=True))
    return type(got) is type(want) and got == want
