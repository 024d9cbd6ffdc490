"""numbax.numpy.linalg's determinants (det, slogdet) from the LU factors, with JAX's custom
derivatives: tr(adj(a) da), right for singular matrices too, and Re/Im tr(a⁻¹ da)."""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from numbax._src.core import get_aval
from numbax._src.custom_derivatives import custom_jvp
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxValueError
from numbax._src.lax import linalg as lax_base
from numbax._src.lax import linalg_lu, linalg_qr
from numbax._src.numpy import creation, ufuncs
from numbax._src.numpy import reductions as jred
from numbax._src.numpy import shapes as jshapes
from numbax._src.numpy.lax_numpy import where
from numbax._src.numpy.linalg_norms import as_inexact

__all__ = ["det", "slogdet", "SlogdetResult"]


class SlogdetResult(NamedTuple):
    sign: Any
    logabsdet: Any


def _square(api: str, a: Any) -> Any:
    a = as_inexact(api, a)
    shape = get_aval(a).shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise NumbaxValueError(
            f"numbax.numpy.linalg.{api}: a has shape {shape}, expected square matrices "
            "(..., n, n). Use lstsq or pinv for non-square matrices.")
    return a


def _mm(a: Any, b: Any) -> Any:
    return lax_base._mm(a, b)


def _lu_parts(a: Any) -> tuple[Any, Any, Any, Any]:
    """(lu, diag(U), (-1)^(row swaps) in a's dtype, permutation)."""
    lu, pivots, perm = linalg_lu.lu(a)
    n = get_aval(a).shape[-1]
    swaps = jred.sum(ufuncs.not_equal(pivots, np.arange(n, dtype=np.int32)), axis=-1)
    parity = ufuncs.subtract(1, ufuncs.multiply(2, ufuncs.remainder(swaps, 2)))
    return (lu, creation.diagonal(lu, axis1=-2, axis2=-1), parity.astype(get_aval(a).dtype),
            perm)


def _cofactor_solve(a: Any, b: Any) -> tuple[Any, Any]:
    """(det a, adj(a) b): with P a = L U, det·U⁻¹ stays finite when only U's last pivot is 0,
    so adj(a) b is right for rank n-1 too; below that adj(a) = 0. The derivative of det."""
    n = get_aval(a).shape[-1]
    if n == 1:
        return a[..., 0, 0], b
    lu, diag, parity, perm = _lu_parts(a)
    partial = ufuncs.multiply(jred.cumprod(diag, axis=-1), jshapes.expand_dims(parity, -1))
    det_a = partial[..., -1]
    last = np.zeros((n, n), bool)
    last[-1, -1] = True
    lu_mod = where(last, jshapes.expand_dims(ufuncs.divide(1, partial[..., -2]), (-1, -2)), lu)
    probe = lax_base.triangular_solve(lu_mod, jshapes.broadcast_to(
        np.ones((n, 1), get_aval(a).dtype), (*get_aval(a).shape[:-1], 1)), left_side=True,
        lower=False)  # from a alone: rank < n - 1 makes it non-finite (then adj(a) = 0)
    ok = jred.all(ufuncs.isfinite(probe), axis=(-2, -1), keepdims=True)
    # there the solves run on the identity instead: the result is masked to 0 anyway, and a
    # zero pivot would turn the masked branch's zero cotangent into 0/0 = NaN under grad
    lu_mod = where(ok, lu_mod, np.eye(n, dtype=get_aval(a).dtype))
    x = linalg_lu.permute_rows(b, perm)
    x = lax_base.triangular_solve(lu, x, left_side=True, lower=True, unit_diagonal=True)
    scale = np.ones((n, 1), get_aval(a).dtype)
    scale[-1] = 0
    det_col = jshapes.expand_dims(det_a, (-1, -2))
    x = ufuncs.multiply(x, ufuncs.add(ufuncs.multiply(det_col, scale), 1 - scale))
    x = lax_base.triangular_solve(lu_mod, x, left_side=True, lower=False)
    return det_a, where(ok, x, 0)


@custom_jvp
def _det_lu(a: Any) -> Any:
    _, diag, parity, _ = _lu_parts(a)
    return ufuncs.multiply(parity, jred.prod(diag, axis=-1))


@_det_lu.defjvp
def _det_lu_jvp(primals, tangents):
    (a,), (a_dot,) = primals, tangents
    det_a, adj_dot = _cofactor_solve(a, a_dot)
    return det_a, jred.sum(creation.diagonal(adj_dot, axis1=-2, axis2=-1), axis=-1)


def det(a: Any) -> Any:
    """Determinant of square matrices (..., n, n): closed forms up to 3x3, else LU, with
    JAX's derivative tr(adj(a) da), right for singular matrices too.

    >>> import numbax.numpy as jnp
    >>> jnp.linalg.det(jnp.array([[1., 2.], [3., 4.]]))
    Array(-2., dtype=float64)
    """
    a = _square("det", a)
    n = get_aval(a).shape[-1]
    e = [[a[..., i, j] for j in range(n)] for i in range(n)] if n <= 3 else None
    mul, sub, add = ufuncs.multiply, ufuncs.subtract, ufuncs.add
    if n == 1:
        return e[0][0]
    if n == 2:
        return sub(mul(e[0][0], e[1][1]), mul(e[0][1], e[1][0]))
    if n == 3:
        terms = [mul(mul(e[0][i], e[1][(i + 1) % 3]), e[2][(i + 2) % 3]) for i in range(3)]
        minus = [mul(mul(e[0][i], e[1][(i + 2) % 3]), e[2][(i + 1) % 3]) for i in range(3)]
        return sub(add(add(terms[0], terms[1]), terms[2]), add(add(minus[0], minus[1]), minus[2]))
    return _det_lu(a)


def _slogdet_from(sign: Any, diag_log: Any, is_zero: Any, dtype: np.dtype) -> tuple[Any, Any]:
    sign = where(is_zero, np.array(0, dtype), sign)
    logdet = where(is_zero, -np.inf, jred.sum(diag_log, axis=-1))
    return sign, logdet


@custom_jvp
def _slogdet_lu(a: Any) -> tuple[Any, Any]:
    _, diag, parity, _ = _lu_parts(a)
    dtype = get_aval(a).dtype
    abs_diag = ufuncs.abs(diag)
    if kind_of(dtype) == "c":
        unit = ufuncs.divide(diag, where(abs_diag == 0, 1, abs_diag).astype(dtype))
        sign = ufuncs.multiply(parity, jred.prod(unit, axis=-1))
    else:
        sign = ufuncs.multiply(parity, jred.prod(ufuncs.sign(diag), axis=-1))
    is_zero = jred.any(ufuncs.equal(diag, 0), axis=-1)
    return _slogdet_from(sign, ufuncs.log(where(abs_diag == 0, 1, abs_diag)), is_zero, dtype)


@custom_jvp
def _slogdet_qr(a: Any) -> tuple[Any, Any]:
    h, taus = linalg_qr.geqrf(a)
    diag = creation.diagonal(h, axis1=-2, axis2=-1)
    reflections = jred.prod(where(ufuncs.not_equal(taus, 0), -1.0, 1.0), axis=-1)
    sign = ufuncs.multiply(jred.prod(ufuncs.sign(diag), axis=-1), reflections)
    abs_diag = ufuncs.abs(diag)
    is_zero = jred.any(ufuncs.equal(diag, 0), axis=-1)
    return _slogdet_from(sign.astype(get_aval(a).dtype),
                         ufuncs.log(where(abs_diag == 0, 1, abs_diag)), is_zero,
                         get_aval(a).dtype)


def _slogdet_jvp(primals, tangents):
    """d log|det a| = Re tr(a⁻¹ da); for complex a the sign turns by i Im tr(a⁻¹ da)."""
    (a,), (a_dot,) = primals, tangents
    sign, logdet = _slogdet_lu(a)
    tr = jred.sum(creation.diagonal(linalg_lu.solve(a, a_dot), axis1=-2, axis2=-1), axis=-1)
    if kind_of(get_aval(a).dtype) == "c":
        re = ufuncs.real(tr)
        return (sign, logdet), (ufuncs.multiply(ufuncs.subtract(tr, re.astype(get_aval(tr)
                                                                              .dtype)), sign),
                                re)
    return (sign, logdet), (ufuncs.multiply(sign, 0), tr)


_slogdet_lu.defjvp(_slogdet_jvp)
_slogdet_qr.defjvp(_slogdet_jvp)


def slogdet(a: Any, *, method: str | None = None) -> SlogdetResult:
    """(sign, log|det|) of square matrices: sign 0 and logabsdet -inf for singular ones; for
    complex a, sign has modulus 1. method 'lu' (default) or 'qr' (real a only, as JAX).

    >>> import numbax.numpy as jnp
    >>> jnp.linalg.slogdet(jnp.array([[1., 2.], [3., 4.]])).sign
    Array(-1., dtype=float64)
    """
    a = _square("slogdet", a)
    if method not in (None, "lu", "qr"):
        raise NumbaxValueError(
            f"numbax.numpy.linalg.slogdet: method has {method!r}, expected None, 'lu' or 'qr'.")
    if method == "qr":
        if kind_of(get_aval(a).dtype) == "c":
            raise NotImplementedError(
                "numbax.numpy.linalg.slogdet: method='qr' is not implemented for complex "
                "inputs (as in JAX); use method='lu'.")
        return SlogdetResult(*_slogdet_qr(a))
    return SlogdetResult(*_slogdet_lu(a))
