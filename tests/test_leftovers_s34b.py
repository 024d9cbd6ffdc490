"""numbax against JAX's recorded answers (tests/data/leftovers_s34b_jax_reference.json, made by
make_leftovers_s34b_reference.py from the cases in leftovers_s34b_cases.py): weak types of
reciprocal / hypot's and pow's gradients, JAX's TypeError for lists given to jax.numpy functions,
dicts with keys of mixed types, tracer reprs, vmap of cond / switch with a batched predicate
(both branches and a select), the VJP object's args_res, checkify with Python scalar arguments
and print_saved_residuals' lines."""
import builtins
import json
import pathlib
import sys

import pytest

import numbax
import numbax.ad_checkpoint  # noqa: F401  (the cases read these submodules as attributes)
import numbax.experimental
import numbax.experimental.checkify  # noqa: F401

sys.path.insert(0, str(pathlib.Path(__file__).parent / "data"))
import json_compare  # noqa: E402
import leftovers_s34b_cases as cases  # noqa: E402

REF = json.loads((pathlib.Path(__file__).parent / "data" /
                  "leftovers_s34b_jax_reference.json").read_text())


def _close(got, want) -> bool:
    return json_compare.close(got, want, rtol=1e-5)


def _params():
    return [pytest.param(key, name, id=f"{key}:{name}")
            for key in sorted(k for k in REF if "/" in k) for name in sorted(REF[key])]


@pytest.mark.parametrize("key,name", _params())
def test_matches_jax(key, name):
    group, _ = key.split("/")
    want = REF[key][name]
    prev = numbax.config.jax_enable_x64
    numbax.config.update("jax_enable_x64", False)
    try:
        fn = cases.GROUPS[group](numbax)[name]
        if isinstance(want, dict) and set(want) == {"error"}:
            with pytest.raises(getattr(builtins, want["error"])) as info:
                fn()
            assert str(info.value).strip(), "the error says what went wrong"
            return
        got = json.loads(json.dumps(fn()))
    finally:
        numbax.config.update("jax_enable_x64", prev)
    assert _close(got, want), f"numbax: {got}\njax:    {want}"


def test_reference_covers_every_case():
    for group in cases.GROUPS:
        assert set(REF[f"{group}/x32"]) == set(cases.GROUPS[group](numbax))


def test_list_error_names_function_and_fix():
    with pytest.raises(TypeError, match=r"numbax\.numpy\.sum requires ndarray or scalar "
                       r"arguments, got <class 'list'> at position 0.*asarray"):
        numbax.numpy.sum([1, 2, 3])
    with pytest.raises(TypeError, match=r"position 2 \(weights=\)"):
        numbax.numpy.histogram(numbax.numpy.ones(3), bins=2, weights=[1.0, 2.0, 3.0])


def test_internal_jnp_still_takes_lists():
    """numbax's own libraries call numbax._src.jnp, which JAX's list check does not wrap."""
    from numbax._src import jnp as internal

    assert float(internal.sum([1, 2, 3])) == 6.0
    assert numbax.numpy.add.reduce(numbax.numpy.arange(4.0)) == 6.0


def test_mixed_key_error_says_what_to_do():
    with pytest.raises(ValueError, match="Comparator raised exception.*OrderedDict"):
        numbax.tree_util.tree_leaves({1: 8, "y": 43})


# The sequence functions check each element of their sequence (JAX 0.10.2, recorded by calling
# jax.numpy.<name> with each sequence below: "refused N" is its TypeError naming position N).
_SEQUENCE_OUTCOMES = {
    "lists": ("refused 0", lambda np_: [[1, 2], [3, 4]]),
    "array_then_list": ("refused 1", lambda np_: [np_.ones(2), [3, 4]]),
    "tuple_of_arrays": ("ok", lambda np_: (np_.ones(2), np_.ones(2))),
}


@pytest.mark.parametrize("name", ["concatenate", "stack", "vstack", "hstack", "dstack",
                                  "column_stack"])
@pytest.mark.parametrize("case", sorted(_SEQUENCE_OUTCOMES))
def test_sequence_functions_refuse_list_elements_as_jax(name, case):
    import numpy as np

    want, make = _SEQUENCE_OUTCOMES[case]
    fn = getattr(numbax.numpy, name)
    if want == "ok":
        np.testing.assert_array_equal(np.asarray(fn(make(np))), getattr(np, name)(make(np)))
        return
    with pytest.raises(TypeError, match=rf"numbax\.numpy\.{name} requires ndarray or scalar "
                       rf"arguments, got <class 'list'> at position {want.split()[1]}\."):
        fn(make(np))
    keyword = "arrays" if name in ("concatenate", "stack") else "tup"
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
        fn(**{keyword: make(np)})
