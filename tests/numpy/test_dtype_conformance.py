"""Every function of numbax.numpy, numbax.nn, numbax.scipy.special and numbax.lax, on each of
11 dtypes and with x64 on and off, against JAX's recorded outcome (tests/dtype_conformance.py;
data/make_dtype_conformance_reference.py): the same error class, or the same dtype, shape
and values. Found this way and fixed: 64-bit inputs kept with x64 off and numpy arrays
returned as they came (floor, round, clip, real, positive of integers), cumsum widening int8,
bools refused by floor_divide/power/shifts, complex values accepted by clip/hypot/signbit,
int64 indices from searchsorted, nn.elu/selu/leaky_relu of integers in float32 under x64;
in lax, bools taken by add/mul/reduce_sum, complex values by lt/is_finite, unsigned ones by
abs, conj of floats keeping their dtype (JAX: complex), polygamma's poles."""
import functools
import importlib
import json
import math
import pathlib

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from tests.dtype_conformance import BASE, DTYPES, MODULES, outcome, probe, unary_functions

DATA = pathlib.Path(__file__).parents[1] / "data" / "dtype_conformance_jax_reference.json"
REFERENCE = json.loads(DATA.read_text())
_UNSIGNED = ("u8", "u32")
_INTEGERS = ("bool", "i8", "u8", "i32", "u32", "i64")

# Where numbax answers differently on purpose (docs/sharp_bits.md, "Every jnp function's
# dtypes"): (module, function) -> (the dtype keys of the cases, or "*" for all, and why).
KNOWN = {
    ("numpy", "histogramdd"): ("*", "a 1-d sample is N points of one dimension, as numpy"),
    ("numpy", "lexsort"): ("*", "a 1-d array is one key, as numpy (JAX reads its entries as keys)"),
    ("numpy", "ix_"): (("bool", "f16", "bf16", "f32", "f64", "c64"),
                       "masks select their True positions and floats are refused, as numpy"),
    ("numpy", "roots"): (("f16", "bf16"), "computed in float32 (JAX's eig has no 16-bit floats)"),
    **{(m, f): (("c64,c64",), "complex operands refused, as numpy")
       for m, f in (("numpy", "arctan2"), ("numpy", "atan2"), ("lax", "atan2"))},
    **{("numpy", f): ((*(f"{k},{k}" for k in _INTEGERS[1:]),),
                      "an array as `axis` is refused (JAX reads its entries as axes)")
       for f in ("max", "min")},
    ("numpy", "kron"): (("bool,bool",), "bools multiply as logical and, as numpy"),
    ("numpy", "interp"): (("bf16,bf16",), "bfloat16 interpolates (JAX's finfo lookup refuses it)"),
    ("numpy", "polyint"): (("bool",), "float32 with x64 on (JAX: float64)"),
    # JAX subtracts in unsigned arithmetic here and wraps around (softmax(uint8) is nan);
    # numbax gives the values of the real numbers, and takes the bools JAX refuses
    **{("nn", f): (("bool", *_UNSIGNED), "the true values for unsigned integers; bools taken")
       for f in ("softmax", "log_softmax", "log_sigmoid")},
    **{("scipy.special", f): (("bool", *_UNSIGNED, "c64"), "the same, and complex refused")
       for f in ("softmax", "log_softmax")},
    ("nn", "hard_tanh"): (_UNSIGNED, "min(x, 1) for unsigned integers (JAX wraps -1 around)"),
    ("nn", "log1mexp"): (("bool", *_UNSIGNED, "c64"), "the same, and complex values' branch"),
    **{("scipy.special", f): ((*_INTEGERS, "f16", "bf16"),
                              "integers and 16-bit floats computed (JAX refuses them)")
       for f in ("ndtr", "ndtri", "log_ndtr", "spence")},
    ("scipy.special", "erfcx"): (("c64",), "complex refused (JAX computes it)"),
    ("scipy.special", "fresnel"): (("c64",), "complex refused (JAX: NotImplementedError)"),
    ("scipy.special", "expi"): (("f16",), "float16 computed in float32 (JAX's gives nan)"),
    ("scipy.special", "logit"): (("c64",), "complex logit at 1 is inf (JAX: nan)"),
    ("lax", "cumlogsumexp"): (("i8", "u8", "i32", "u32", "i64", "c64"),
                              "integers and complex values refused (JAX: OverflowError; computes "
                              "complex values)"),
    ("lax", "create_token"): ("*", "a token is an empty bool Array (JAX: a Token object)"),
    ("lax", "conv_general_permutations"): ("*", "an array for dimension_numbers is a TypeError "
                                           "(JAX: ValueError)"),
}


def _known(module: str, case: str) -> bool:
    entry = KNOWN.get((module, case[:case.index("(")]))
    return entry is not None and (entry[0] == "*" or case[case.index("(") + 1:-1] in entry[0])


def _close(want, got) -> bool:
    if want is None or got is None:
        return want == got
    if len(want) != len(got):
        return False
    for w, g in zip(want, got):
        if isinstance(w, list):
            if not isinstance(g, list) or not _close(w, g):
                return False
        elif isinstance(g, list) or not (
                w == g or (math.isnan(w) and math.isnan(g)) or
                (math.isfinite(w) and math.isfinite(g) and abs(w - g) <= 1e-2 * max(1, abs(w)))):
            return False
    return True


def _mismatch(want: list, got: list) -> str | None:
    if want[0] != got[0]:
        return f"JAX {want[:2]}, numbax {got[:2]}"
    if want[0] == "err":
        return None if want[1] in got[1].split("+") else f"JAX {want[1]}, numbax {got[1]}"
    if want[0] == "other":
        return None
    if want[1:3] != got[1:3]:
        return f"JAX {want[1]}{want[2]}, numbax {got[1]}{got[2]}"
    return None if _close(want[3], got[3]) else f"JAX {want[3]}, numbax {got[3]}"


@functools.cache
def _ours(module: str, mode: str) -> dict:
    return probe(numbax, importlib.import_module(f"numbax.{module}"), mode == "x64")


@pytest.mark.parametrize("mode", ["x64", "x32"])
@pytest.mark.parametrize("module", MODULES)
def test_every_function_and_dtype_matches_jax(module, mode):
    ours = _ours(module, mode)
    wrong = {}
    for case, want in REFERENCE[module][mode].items():
        if _known(module, case) or case not in ours:  # (missing: api_coverage's list)
            continue
        why = _mismatch(want, ours[case])
        if why:
            wrong[case] = why
    assert not wrong, f"{len(wrong)} cases differ from JAX {REFERENCE['jax_version']}:\n" + \
        "\n".join(f"  {k}: {v}" for k, v in sorted(wrong.items()))


def test_known_differences_are_still_differences():
    """Each KNOWN entry still differs from JAX somewhere (a fixed one leaves KNOWN)."""
    stale = []
    for module, function in KNOWN:
        cases = [(mode, case) for mode in ("x64", "x32") for case in REFERENCE[module][mode]
                 if case.startswith(f"{function}(") and _known(module, case)]
        if all(_mismatch(REFERENCE[module][mode][case], _ours(module, mode)[case]) is None
               for mode, case in cases):
            stale.append((module, function))
    assert not stale, stale


@pytest.mark.parametrize("name", ["floor", "ceil", "trunc", "fix", "round", "around", "rint",
                                  "positive", "real", "abs", "clip", "nan_to_num", "conj"])
def test_results_are_arrays_never_the_callers_numpy_array(name):
    """An integer input left unchanged still comes back as a new Array: writing to the numpy
    array afterwards does not change the result."""
    x = BASE.astype(np.int32)
    out = getattr(jnp, name)(x)
    assert isinstance(out, numbax.Array), type(out)
    before = np.asarray(out).copy()
    x[:] = 99
    np.testing.assert_array_equal(np.asarray(out), before)


# Functions whose result's shape depends on the operand's values, or that read the operand
# as a shape or a buffer: jit refuses them with a TypeError, as JAX's does.
NOT_TRACEABLE = {"argwhere", "bincount", "empty", "flatnonzero", "frombuffer", "indices",
                 "ones", "zeros", "roots", "trim_zeros", "unique", "unique_values", "nonzero",
                 "unique_all", "unique_counts", "unique_inverse", "extract", "full",
                 "shape_as_value"}


# float16 compiles a rounding step per operation: 100 s of the suite on two cores, so slow
@pytest.mark.parametrize("key", ["f32", "i32", "c64", "bool", "u8",
                                 pytest.param("f16", marks=pytest.mark.slow)])
@pytest.mark.parametrize("module", MODULES)
def test_jit_gives_what_eager_gives(module, key):
    """Every one-operand function of the module, traced with its operand as an argument:
    the compiled result equals the eager one (dtype, shape, values), or jit refuses with a
    TypeError where the result's shape would depend on the values (unique, argwhere, ...).
    Found this way: reciprocal of 0j raised ZeroDivisionError in the compiled kernel."""
    a = BASE.astype(DTYPES[key])
    wrong = {}
    with numbax.enable_x64(False):
        for name, fn in unary_functions(importlib.import_module(f"numbax.{module}")).items():
            eager = outcome(lambda fn=fn: fn(a))
            if eager[0] != "ok":
                continue
            compiled = outcome(lambda fn=fn: numbax.jit(fn)(a))
            if compiled[0] == "err" and name in NOT_TRACEABLE:
                continue
            why = _mismatch(eager, compiled)
            if why:
                wrong[name] = why
    assert not wrong, wrong
