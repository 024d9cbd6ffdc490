"""One clear, argument-naming error for each compat-numpy function whose own test file does
not already check one."""
import numpy as np
import pytest

import numbax.numpy as jnp
from numbax.errors import NumbaxTypeError, NumbaxValueError

V = np.arange(4.0)
S = np.array(["a", "b"])

CASES = [
    ("c_", lambda: jnp.c_["1,x", V], NumbaxValueError, "directive"),
    ("mgrid", lambda: jnp.mgrid[0:], NumbaxValueError, "no stop"),
    ("ogrid", lambda: jnp.ogrid[1:], NumbaxValueError, "no stop"),
    ("diag_indices", lambda: jnp.diag_indices(-1), NumbaxValueError, ">= 0"),
    ("diag_indices-ndim", lambda: jnp.diag_indices(2, 1.5), NumbaxTypeError, "ndim"),
    ("tril_indices_from", lambda: jnp.tril_indices_from(V), NumbaxValueError, "2-d"),
    ("triu_indices", lambda: jnp.triu_indices(3, "1"), NumbaxTypeError, "k"),
    ("unique_counts", lambda: jnp.unique_counts(V, size=-2), NumbaxValueError, "size is -2"),
    ("unique_inverse", lambda: jnp.unique_inverse(np.zeros(0), size=1), NumbaxValueError,
     "fill_value"),
    ("unique_all", lambda: jnp.unique_all(V, size=1.5), TypeError, None),
    ("nanmedian", lambda: jnp.nanmedian(V + 1j), NumbaxTypeError, "complex"),
    ("nanpercentile", lambda: jnp.nanpercentile(V, 150), NumbaxValueError, "must be in"),
    ("nanargmin", lambda: jnp.nanargmin(V, axis=2), NumbaxValueError, "out of bounds"),
    ("kaiser", lambda: jnp.kaiser(3.5, 1.0), NumbaxTypeError, "M is 3.5 of type float"),
    ("blackman", lambda: jnp.blackman("4"), NumbaxTypeError, "M is .4. of type str"),
    ("hamming", lambda: jnp.hamming(None), NumbaxTypeError, "M is None of type NoneType"),
    ("polyadd", lambda: jnp.polyadd(np.ones((2, 2)), V), NumbaxValueError, "a1 has shape"),
    ("polysub", lambda: jnp.polysub(V, np.ones((2, 2))), NumbaxValueError, "a2 has shape"),
    ("polymul", lambda: jnp.polymul(V, np.ones((2, 2))), NumbaxValueError, "a2 has shape"),
    ("histogram2d", lambda: jnp.histogram2d(V, V[:3]), NumbaxValueError, "one length"),
    ("histogram_bin_edges", lambda: jnp.histogram_bin_edges(V, "fd"), NumbaxValueError,
     "string bin rules"),
    ("histogram-range", lambda: jnp.histogram(V, 3, range=(0, 1, 2)), NumbaxValueError,
     "range has 3"),
    ("corrcoef", lambda: jnp.corrcoef(np.ones((2, 2, 2))), NumbaxValueError, "at most 2"),
    ("unwrap", lambda: jnp.unwrap(V, axis=1), NumbaxValueError, "out of bounds"),
    ("extract", lambda: jnp.extract(np.ones(6, bool), V), NumbaxValueError, "True ones past"),
    ("sort_complex", lambda: jnp.sort_complex(S), NumbaxTypeError, "not numeric"),
    ("frompyfunc", lambda: jnp.frompyfunc(3, 2, 1), NumbaxTypeError, "callable"),
    ("matvec-rank", lambda: jnp.matvec(V, V), NumbaxValueError, "matrix"),
    ("frombuffer", lambda: jnp.frombuffer(b"\x00" * 3, dtype=np.float64), ValueError, None),
    ("load", lambda: jnp.load("/nonexistent/numbax.npy"), FileNotFoundError, None),
    ("isin", lambda: jnp.isin(S, V), NumbaxTypeError, "not numeric"),
    ("rollaxis-type", lambda: jnp.rollaxis(V, 0.5), NumbaxTypeError, "expected an int"),
    ("bincount-minlength", lambda: jnp.bincount(np.array([1]), minlength=-1),
     NumbaxValueError, "minlength is -1"),
    ("digitize-method", lambda: jnp.digitize(V, V, method="bogus"), NumbaxValueError,
     "method is 'bogus'"),
    ("fill_diagonal", lambda: jnp.fill_diagonal(V, 1, inplace=False), NumbaxValueError,
     "at least 2"),
    ("polyval", lambda: jnp.polyval(np.ones((3, 2)), V), NumbaxValueError,
     r"broadcast together with shapes \(2,\) \(4,\)"),
]


@pytest.mark.parametrize("call,cls,match", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_clear_errors(call, cls, match):
    with pytest.raises(cls, match=match):
        call()
