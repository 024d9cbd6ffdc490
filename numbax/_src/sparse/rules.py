"""How each lax primitive acts when an operand is a BCOO: the rule table sparsify reads, and
the arithmetic BCOO's operators share with it (so `m * 2` and `sparsify(f)` agree).

Zero-preserving operations keep the result sparse; an operation whose result would be dense
(exp of a sparse array, a sparse array plus a scalar, division by a sparse array) raises
NotImplementedError, as JAX's, rather than densify silently.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numbax._src import core, jnp
from numbax._src.errors import NumbaxValueError
from numbax._src.lax import convert, dot, reductions, shape_ops, special
from numbax._src.lax import elementwise as ew
from numbax._src.sparse import bcoo_ops
from numbax._src.sparse.bcoo import BCOO, unbatch
from numbax._src.sparse.bcoo_dot import bcoo_dot_general

sparse_rules: dict[core.Primitive, Callable[..., list]] = {}

_DENSE_HINT = ("If this is your intent, convert the sparse operands with .todense() "
               "(sparse.todense) first.")


def _with_data(mat: BCOO, data: Any, **flags: bool) -> BCOO:
    """mat's indices with new data."""
    sorted_ = flags.get("indices_sorted", mat.indices_sorted)
    unique = flags.get("unique_indices", mat.unique_indices)
    return BCOO((data, mat.indices), shape=mat.shape, indices_sorted=sorted_,
                unique_indices=unique)


def _deduplicated(mat: BCOO) -> BCOO:
    """mat with unique indices (same nse), before a nonlinear map of its data."""
    if mat.unique_indices:
        return mat
    return bcoo_ops.sum_duplicates(mat, mat.nse, remove_zeros=False, api_name="sparsify")


def _shape_of(x: Any) -> tuple:
    return tuple(x.shape) if isinstance(x, BCOO) else tuple(jnp.shape(x))


# ----------------------------------------------------------------------------- arithmetic


def add(x: Any, y: Any, sign: int = 1) -> Any:
    """x + y (sign=1) or x - y (sign=-1) with either or both sparse."""
    xs, ys = isinstance(x, BCOO), isinstance(y, BCOO)
    if xs and ys:
        if x.shape != y.shape:
            raise NumbaxValueError(f"sparse add: operands have shapes {x.shape} and {y.shape}, "
                                   "expected equal shapes (sparse operands do not broadcast).")
        if sign < 0 and x.indices is y.indices:  # as JAX: x - x keeps x's entries
            return _with_data(x, x.data - y.data)
        if (x.n_batch, x.n_dense) != (y.n_batch, y.n_dense):
            x, y = unbatch(x), unbatch(y)
            if x.n_dense != y.n_dense:
                raise NotImplementedError(
                    f"sparse add: operands have n_dense {x.n_dense} and {y.n_dense}, expected "
                    f"equal layouts. {_DENSE_HINT}")
        axis = x.n_batch
        data = jnp.concatenate([x.data, sign * y.data], axis=axis)
        indices = jnp.concatenate([x.indices, y.indices], axis=axis)
        return BCOO((data, indices), shape=x.shape)
    sp, dense = (x, y) if xs else (y, x)
    if _shape_of(dense) != sp.shape:
        raise NotImplementedError(
            f"sparse add: a sparse array of shape {sp.shape} and a dense one of shape "
            f"{_shape_of(dense)}: the result would be a dense array larger than the dense "
            f"operand. {_DENSE_HINT}")
    return x.todense() + sign * y if xs else x + sign * y.todense()


def mul(x: Any, y: Any) -> Any:
    """x * y with either or both sparse: the result is sparse."""
    xs, ys = isinstance(x, BCOO), isinstance(y, BCOO)
    if xs and ys:
        if x.indices is y.indices and x.unique_indices:
            return _with_data(x, x.data * y.data)
        return bcoo_ops.bcoo_multiply_sparse(x, y)
    sp, dense = (x, y) if xs else (y, x)
    dense = jnp.asarray(dense)
    if dense.ndim == 0:
        return _with_data(sp, sp.data * dense)
    return _with_data(sp, bcoo_ops.bcoo_multiply_dense(sp, dense))


def div(x: Any, y: Any) -> Any:
    """x / y for a sparse x and a dense (or scalar) y."""
    if isinstance(y, BCOO):
        raise NotImplementedError("Division by a sparse array is not implemented because it "
                                  f"would result in dense output. {_DENSE_HINT}")
    y = jnp.asarray(y)
    if y.ndim == 0:
        return _with_data(x, x.data / y)
    gathered = bcoo_ops.bcoo_multiply_dense(_with_data(x, jnp.ones_like(x.data)), y)
    return _with_data(x, x.data / gathered)


def unary(mat: BCOO, fn: Callable) -> BCOO:
    """A zero-preserving nonlinear fn applied to the stored values (duplicates summed first)."""
    mat = _deduplicated(mat)
    return _with_data(mat, fn(mat.data))


def power(mat: BCOO, exponent: Any) -> BCOO:
    """mat ** exponent for a static positive exponent (0 ** p == 0)."""
    if isinstance(exponent, BCOO) or not isinstance(exponent, (int, float)) or exponent <= 0:
        raise NotImplementedError(
            f"sparse power: exponent {exponent!r}; only a positive Python number keeps the "
            f"result sparse. {_DENSE_HINT}")
    return unary(mat, lambda d: d ** exponent)


def matmul(x: Any, y: Any) -> Any:
    """x @ y (jnp.matmul's dimension rules, leading dims as batch dims) with a sparse side."""
    xn, yn = len(_shape_of(x)), len(_shape_of(y))
    if xn == 0 or yn == 0:
        raise NumbaxValueError("sparse matmul: an operand is 0-d, expected at least 1 "
                               "dimension.")
    nb = max(xn, yn) - 2 if min(xn, yn) >= 2 else 0
    if min(xn, yn) >= 2 and xn != yn:
        raise NotImplementedError(f"sparse matmul: operands of {xn} and {yn} dimensions; "
                                  "numbax needs equal ranks to batch a sparse matmul.")
    y_contract = yn - 2 if yn >= 2 else 0
    dn = (((xn - 1,), (y_contract,)), (tuple(range(nb)), tuple(range(nb))))
    return bcoo_dot_general(x, y, dimension_numbers=dn)


# ----------------------------------------------------------------------------- rule table


def _rule(*prims: core.Primitive) -> Callable:
    def register(fn: Callable) -> Callable:
        for prim in prims:
            sparse_rules[prim] = fn
        return fn
    return register


@_rule(ew.add_p)
def _add_rule(x: Any, y: Any) -> list:
    return [add(x, y)]


@_rule(ew.sub_p)
def _sub_rule(x: Any, y: Any) -> list:
    return [add(x, y, sign=-1)]


@_rule(ew.mul_p)
def _mul_rule(x: Any, y: Any) -> list:
    return [mul(x, y)]


@_rule(ew.div_p)
def _div_rule(x: Any, y: Any) -> list:
    return [div(x, y)]  # a sparse y raises: the result would be dense


@_rule(dot.dot_general_p)
def _dot_general_rule(lhs: Any, rhs: Any, *, dimension_numbers: Any, precision: Any = None,
                      preferred_element_type: Any = None, **_: Any) -> list:
    return [bcoo_dot_general(lhs, rhs, dimension_numbers=dimension_numbers,
                             precision=precision, preferred_element_type=preferred_element_type)]


@_rule(reductions.reduce_sum_p)
def _reduce_sum_rule(x: BCOO, *, axes: Any, **_: Any) -> list:
    out = bcoo_ops.bcoo_reduce_sum(x, axes=axes)
    return [out.todense() if out.ndim == 0 else out]  # a 0-d result is dense, as in JAX


@_rule(shape_ops.transpose_p)
def _transpose_rule(x: BCOO, *, permutation: Any) -> list:
    return [bcoo_ops.bcoo_transpose(x, permutation=permutation)]


@_rule(shape_ops.reshape_p)
def _reshape_rule(x: BCOO, *, new_sizes: Any, dimensions: Any = None, **_: Any) -> list:
    return [bcoo_ops.bcoo_reshape(x, new_sizes=new_sizes, dimensions=dimensions)]


@_rule(shape_ops.squeeze_p)
def _squeeze_rule(x: BCOO, *, dimensions: Any) -> list:
    dims = {d % x.ndim for d in dimensions}
    new_sizes = tuple(s for i, s in enumerate(x.shape) if i not in dims)
    return [bcoo_ops.bcoo_reshape(x, new_sizes=new_sizes)]


def _linear_unary(prim: core.Primitive) -> None:
    """A map of the data that commutes with summing duplicates."""
    sparse_rules[prim] = lambda x, **params: [
        _with_data(x, core.bind(prim, x.data, **params)[0])]


def _zero_preserving_unary(prim: core.Primitive) -> None:
    """f(0) == 0 but f is nonlinear: duplicates are summed first."""
    def rule(x: BCOO, **params: Any) -> list:
        x = _deduplicated(x)
        return [_with_data(x, core.bind(prim, x.data, **params)[0])]
    sparse_rules[prim] = rule


for _p in (ew.neg_p, ew.real_p, ew.imag_p, ew.conj_p, shape_ops.copy_p):
    _linear_unary(_p)
for _p in (ew.abs_p, ew.sign_p, ew.sin_p, ew.tan_p, ew.asin_p, ew.atan_p, ew.sinh_p,
           ew.tanh_p, ew.asinh_p, ew.atanh_p, ew.sqrt_p, ew.cbrt_p, ew.expm1_p, ew.log1p_p,
           ew.floor_p, ew.ceil_p, ew.round_p, ew.square_p, ew.erf_p, special.bessel_i1e_p,
           convert.convert_element_type_p):
    _zero_preserving_unary(_p)


@_rule(ew.integer_pow_p)
def _integer_pow_rule(x: BCOO, *, y: int) -> list:
    if y <= 0:
        raise NotImplementedError(f"sparse rule for integer_pow with y={y} is not implemented "
                                  f"because it would result in dense output. {_DENSE_HINT}")
    x = _deduplicated(x)
    return [_with_data(x, core.bind(ew.integer_pow_p, x.data, y=y)[0])]
