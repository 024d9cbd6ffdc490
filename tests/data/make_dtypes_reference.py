"""Records JAX's verdicts under jax_numpy_dtype_promotion="strict" (with jax_enable_x64, as
numbax's defaults), and its standard promotion of every pair of dtypes and weak scalars with
x64 on and off (the result dtype and whether it is weak) and the float dtype its math and
statistics functions give for integer and bool inputs, into dtypes_jax_reference.json (run
once, with jax):

    /work/jaxenv/bin/python tests/data/make_dtypes_reference.py

Each case is a list of operands: a dtype name is an array of that dtype, a Python literal
("1", "1.0", "1j", "True") a weak scalar. The verdict is the result dtype or "error".
"""
import itertools
import json
import pathlib

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402

OUT = pathlib.Path(__file__).with_name("dtypes_jax_reference.json")
DTYPES = ["bool", "int8", "int32", "int64", "uint8", "uint32", "float16", "float32", "float64",
          "complex64", "complex128"]
SCALARS = ["True", "1", "1.0", "1j"]


def operand(spec: str):
    return eval(spec) if spec in SCALARS else jnp.zeros(2, spec)


def verdict(specs: list[str]) -> str:
    try:
        with jax.numpy_dtype_promotion("strict"):
            return str(jnp.result_type(*[operand(s) for s in specs]))
    except jax.dtypes.TypePromotionError:
        return "error"


# every dtype numbax promotes, for the standard tables
ALL_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
              "bfloat16", "float16", "float32", "float64", "complex64", "complex128"]


def standard(specs: list[str]) -> list:
    """[result dtype, weak] of JAX's standard promotion of the operands."""
    dtype, weak = jax.dtypes.result_type(*[operand(s) for s in specs],
                                         return_weak_type_flag=True)
    return [str(dtype), bool(weak)]


def _cases(dtypes: list[str]) -> list[list[str]]:
    cases = [list(p) for p in itertools.combinations_with_replacement(dtypes, 2)]
    cases += [[d, s] for d in dtypes for s in SCALARS]
    return cases + [list(p) for p in itertools.combinations_with_replacement(SCALARS, 2)]


# functions whose integer and bool inputs give a float: the float dtype JAX picks
INEXACT_FUNCTIONS = ["mean", "var", "std", "nanmean", "median", "percentile", "true_divide",
                     "fabs", "sin", "sqrt", "exp2", "arctan2", "log1p"]
INT_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


def inexact_call(name: str, x):
    fn = getattr(jnp, name)
    if name == "percentile":
        return fn(x, 50)
    if name in ("true_divide", "arctan2"):
        return fn(x, x)
    return fn(x)


# calls with operands of mixed dtypes: "function dtype dtype ..." (a Python literal as in
# SCALARS) -> the result dtype JAX gives
MIXED_CALLS = ["interp float64 int32 int32", "interp int32 float32 float32",
               "interp int32 int32 float64", "interp float32 float32 int32",
               "interp int64 int64 int64", "interp float32 float32 complex64",
               "interp int32 int32 int32", "float_power float32 float32",
               "float_power complex64 2", "float_power int32 2", "float_power int64 2",
               "float_power int32 2.0", "float_power float32 float64",
               "true_divide int8 2", "true_divide bool True", "arctan2 int16 float16",
               "hypot int8 int8", "logaddexp int32 int32"]


def mixed_call(case: str) -> str:
    name, *specs = case.split()
    operands = [eval(s) if s[0].isdigit() or s in SCALARS else jnp.full(3, 2, s)
                for s in specs]
    return str(getattr(jnp, name)(*operands).dtype)


def main() -> None:
    out = {"jax_version": jax.__version__,
           "strict": {" ".join(c): verdict(c) for c in _cases(DTYPES)},
           "float0": str(np.dtype(jax.dtypes.float0))}
    for x64 in (True, False):
        jax.config.update("jax_enable_x64", x64)
        out[f"standard_{'x64' if x64 else 'x32'}"] = {
            " ".join(c): standard(c) for c in _cases(ALL_DTYPES)}
        out[f"inexact_{'x64' if x64 else 'x32'}"] = {
            f"{name} {d}": str(inexact_call(name, jnp.ones(4, d)).dtype)
            for name in INEXACT_FUNCTIONS for d in INT_DTYPES}
        out[f"mixed_{'x64' if x64 else 'x32'}"] = {c: mixed_call(c) for c in MIXED_CALLS}
    jax.config.update("jax_enable_x64", True)
    OUT.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
