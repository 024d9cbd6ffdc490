"""JAX's type promotion as the tests' reference: its recorded tables
(data/dtypes_jax_reference.json, made by data/make_dtypes_reference.py with jax) and the one
place where it differs from numpy's rules for arrays, restated for numpy references."""
from __future__ import annotations

import json
import pathlib

import numpy as np

TABLES = json.loads((pathlib.Path(__file__).parent / "data" /
                     "dtypes_jax_reference.json").read_text())


def jax_result(specs: list[str], x64: bool = True) -> tuple[str, bool]:
    """JAX's (result dtype, weak) for operands named as the tables name them: a dtype name is
    an array of that dtype, "True", "1", "1.0" or "1j" a weak Python scalar."""
    table = TABLES["standard_x64" if x64 else "standard_x32"]
    key = " ".join(specs)
    if key not in table:
        key = " ".join(reversed(specs))
    dtype, weak = table[key]
    return dtype, weak


def jax_promoted(operands: tuple) -> tuple:
    """numpy operands cast as JAX promotes arrays where numpy would not: an integer or bool
    array joins a float or complex one at that one's width (int32 with float32 is float32,
    numpy's float64). numpy scalars count as arrays (strong); Python scalars are returned as
    they are."""
    arrays = [x for x in operands if isinstance(x, np.ndarray | np.generic)]
    inexact = [x.dtype for x in arrays if x.dtype.kind in "fc"]
    if not inexact or len(inexact) == len(arrays):
        return operands
    target = np.result_type(*inexact)
    return tuple(x.astype(target) if isinstance(x, np.ndarray | np.generic) else x
                 for x in operands)


def jax_float(dtype) -> np.dtype:
    """The float dtype JAX gives math and statistics of `dtype`: float32 for bools and integers
    up to 32 bits, float64 for 64-bit ones (recorded in data/dtypes_jax_reference.json's
    "inexact" tables; numpy gives float16 for 8-bit integers and float64 from 32 bits)."""
    dt = np.dtype(dtype)
    if dt.kind in "fc":
        return dt
    return np.dtype(np.float64 if dt.itemsize == 8 else np.float32)
