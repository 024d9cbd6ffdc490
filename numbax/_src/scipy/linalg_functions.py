"""scipy.linalg's matrix functions (expm, expm_frechet, sqrtm, funm) and the Schur-based
solvers they share (rsf2csf, solve_sylvester), composed from lax primitives so that jit,
vmap and (where JAX has them, or the math gives them cheaply) derivatives work."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from numbax._src import api
from numbax._src.core import get_aval
from numbax._src.custom_derivatives import custom_jvp
from numbax._src.dtypes import finfo_of, kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax import linalg as lax_base
from numbax._src.lax import linalg_eig, linalg_lu
from numbax._src.lax.control_flow.conditionals import cond, switch
from numbax._src.lax.control_flow.loops import scan
from numbax._src.lax.linalg import _H, _mm
from numbax._src.numpy import creation, ufuncs
from numbax._src.numpy import reductions as jred
from numbax._src.numpy import shapes as jshapes
from numbax._src.numpy.lax_numpy import asarray, where
from numbax._src.scipy.linalg import _matrix

__all__ = ["expm", "expm_frechet", "funm", "rsf2csf", "solve_sylvester", "sqrtm"]


def _batched(fn: Callable, nbatch: int) -> Callable:
    """fn on one matrix (or tuple of matrices), vmapped over nbatch leading dims."""
    for _ in range(nbatch):
        fn = api.vmap(fn)
    return fn


def _complex(x: Any) -> Any:
    return x.astype(np.result_type(get_aval(x).dtype, np.complex64))


def _set_superdiagonal(m: Any, values: Any, k: int) -> Any:
    """m plus the matrix with `values` on superdiagonal k (m has zeros there)."""
    return ufuncs.add(m, creation.diag(values, k))


# ----------------------------------------------------------------------------- expm

_PADE = {
    3: (120., 60., 12., 1.),
    5: (30240., 15120., 3360., 420., 30., 1.),
    7: (17297280., 8648640., 1995840., 277200., 25200., 1512., 56., 1.),
    9: (17643225600., 8821612800., 2075673600., 302702400., 30270240., 2162160., 110880.,
        3960., 90., 1.),
    13: (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
         129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
         40840800., 960960., 16380., 182., 1.),
}


def _pade(order: int) -> Callable:
    """(U, V) with the [m/m] Padé approximant of exp(A) equal to (V - U)⁻¹ (V + U)
    (Higham 2005, eqs. 2.3 and 10.33-10.34)."""
    b = _PADE[order]

    def uv(a):
        ident = creation.eye(get_aval(a).shape[-1], dtype=get_aval(a).dtype)
        a2 = _mm(a, a)
        powers = [ident, a2]
        if order == 13:
            a4 = _mm(a2, a2)
            a6 = _mm(a4, a2)
            odd = ufuncs.add(_mm(a6, b[13] * a6 + b[11] * a4 + b[9] * a2),
                             b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * ident)
            even = ufuncs.add(_mm(a6, b[12] * a6 + b[10] * a4 + b[8] * a2),
                              b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * ident)
            return _mm(a, odd), even
        while len(powers) <= order // 2:
            powers.append(_mm(powers[-1], a2))
        odd = sum(b[2 * i + 1] * p for i, p in enumerate(powers))
        even = sum(b[2 * i] * p for i, p in enumerate(powers))
        return _mm(a, odd), even

    return uv


def _expm_2d(a: Any, upper_triangular: bool, max_squarings: int) -> Any:
    """Scaling and squaring with Padé approximants, JAX's (Higham 2005) thresholds."""
    norm = jred.max(jred.sum(ufuncs.abs(a), axis=0))
    if get_aval(a).dtype in (np.float64, np.complex128):
        maxnorm, orders = 5.371920351148152, (3, 5, 7, 9, 13)
        conds = (1.495585217958292e-002, 2.539398330063230e-001, 9.504178996162932e-001,
                 2.097847961257068e+000)
    else:
        maxnorm, orders = 3.925724783138660, (3, 5, 7)
        conds = (4.258730016922831e-001, 1.880152677804762e+000)
    ratio = ufuncs.divide(where(ufuncs.greater(norm, 0), norm, maxnorm), maxnorm)
    n_squarings = ufuncs.maximum(0, ufuncs.floor(ufuncs.log2(ratio)))
    scaled = ufuncs.divide(a, ufuncs.power(2.0, n_squarings).astype(get_aval(a).dtype))
    index = sum(ufuncs.greater_equal(norm, c).astype(np.int32) for c in conds)
    u, v = switch(index, [_pade(m) for m in orders], scaled)
    p, q = ufuncs.add(u, v), ufuncs.subtract(v, u)
    if upper_triangular:
        r = lax_base.triangular_solve(q, p, left_side=True, lower=False)
    else:
        r = linalg_lu.solve(q, p)

    def square(carry, i):
        # a cond, as JAX's: only the n_squarings products run (a where would run all
        # max_squarings of them: 16 products of 500^2 for a matrix that needs none); under
        # vmap a batched predicate makes it a select again
        return cond(ufuncs.less(i, n_squarings), lambda c: _mm(c, c), lambda c: c, carry), None

    r, _ = scan(square, r, np.arange(max_squarings, dtype=get_aval(n_squarings).dtype))
    return where(ufuncs.greater(n_squarings, max_squarings), np.nan, r)


def expm(A: Any, *, upper_triangular: bool = False, max_squarings: int = 16) -> Any:
    """Matrix exponential of square matrices (..., n, n) by scaling and squaring with Padé
    approximants (the algorithm and thresholds JAX uses); differentiable through it.

    Args:
      A: float or complex matrices.
      upper_triangular: A is upper triangular (a triangular solve replaces the LU one).
      max_squarings: matrices that need more squarings give NaNs.

    >>> import numpy as np
    >>> expm(np.zeros((2, 2)))
    Array([[1., 0.],
           [0., 1.]], dtype=float64)
    """
    a = _matrix("expm", A, arg="A")
    if get_aval(a).shape[-1] == 0:
        return a
    nbatch = get_aval(a).ndim - 2
    return _batched(lambda m: _expm_2d(m, bool(upper_triangular), int(max_squarings)),
                    nbatch)(a)


def expm_frechet(A: Any, E: Any, *, method: str | None = None,
                 compute_expm: bool = True) -> Any:
    """The Fréchet derivative of expm at A in the direction E (the jvp of expm);
    (expm(A), L(A, E)) if compute_expm. method is accepted for scipy compatibility."""
    a, e = asarray(A), asarray(E)
    for name, x in (("A", a), ("E", e)):
        shape = get_aval(x).shape
        if len(shape) < 2 or shape[-1] != shape[-2]:
            raise NumbaxValueError(f"numbax.scipy.linalg.expm_frechet: {name} has shape {shape}, "
                                   "expected (batched) square matrices.")
    if get_aval(a).shape != get_aval(e).shape:
        raise NumbaxValueError(
            f"numbax.scipy.linalg.expm_frechet: A has shape {get_aval(a).shape} and E has shape "
            f"{get_aval(e).shape}, expected equal shapes.")
    a, e = ufuncs.promote_dtypes_inexact("scipy.linalg.expm_frechet", a, e)
    value, frechet = api.jvp(expm, (a,), (e,))
    return (value, frechet) if compute_expm else frechet


# ----------------------------------------------------------------------------- Sylvester


def _sylvester_triangular(r: Any, w: Any, f: Any, w_lower: bool) -> Any:
    """Y with R Y + Y W = F for upper-triangular R and triangular W, column by column:
    (R + W_jj I) y_j = f_j - Σ_k W_kj y_k over the columns k already solved."""
    n = get_aval(f).shape[-1]
    m = get_aval(r).shape[-1]
    eye = creation.eye(m, dtype=get_aval(r).dtype)
    cols: dict[int, Any] = {}
    for j in (range(n - 1, -1, -1) if w_lower else range(n)):
        rhs = f[:, j:j + 1]
        for k, y in cols.items():
            rhs = ufuncs.subtract(rhs, ufuncs.multiply(w[k, j], y))
        shifted = ufuncs.add(r, ufuncs.multiply(w[j, j], eye))
        cols[j] = lax_base.triangular_solve(shifted, rhs, left_side=True, lower=False)
    return jshapes.concatenate([cols[j] for j in range(n)], axis=1)


def _sylvester_factors(a: Any, b: Any, method: str) -> tuple:
    """What solving A X + X B = C needs from A and B alone (Schur forms, or eigenpairs)."""
    if method == "schur":
        r, u = linalg_eig.schur(_complex(a))
        s, v = linalg_eig.schur(_complex(_H(b)))
        return r, u, _H(s), v
    ra, ua = linalg_eig.eig(a, compute_left_eigenvectors=False)
    rb, ub = linalg_eig.eig(b, compute_left_eigenvectors=False)
    ub_inv = linalg_lu.solve(ub, creation.eye(get_aval(ub).shape[-1], dtype=get_aval(ub).dtype))
    return ufuncs.add(ra[:, None], rb[None, :]), ua, ub, ub_inv


def _sylvester_apply(method: str, factors: tuple, c: Any) -> Any:
    """X from C: linear in C (matrix products and triangular solves), so it transposes."""
    if method == "schur":
        r, u, s_h, v = factors
        f = _mm(_mm(_H(u), c.astype(get_aval(r).dtype)), v)
        return _mm(_mm(u, _sylvester_triangular(r, s_h, f, w_lower=True)), _H(v))
    sums, ua, ub, ub_inv = factors
    f = linalg_lu.solve(ua, _mm(c.astype(get_aval(ua).dtype), ub))
    return _mm(_mm(ua, ufuncs.divide(f, sums)), ub_inv)


def solve_sylvester(A: Any, B: Any, C: Any, *, method: str = "schur", tol: float = 1e-8) -> Any:
    """X with A X + X B = C (Bartels-Stewart through complex Schur forms, or eigenvectors with
    method='eigen'); NaNs when some eigenvalues of A and -B are closer than tol (as JAX).

    Unlike JAX: differentiable (dX solves A dX + dX B = dC - dA X - X dB).

    >>> import numpy as np
    >>> solve_sylvester(np.eye(2), np.eye(2), 2 * np.eye(2))
    Array([[1., 0.],
           [0., 1.]], dtype=float64)
    """
    if method not in ("schur", "eigen"):
        raise NumbaxValueError(f"numbax.scipy.linalg.solve_sylvester: method has {method!r}, "
                               "expected 'schur' or 'eigen'.")
    a, b, c = (asarray(x) for x in (A, B, C))
    a, b, c = ufuncs.promote_dtypes_inexact("scipy.linalg.solve_sylvester", a, b, c)
    m, n = get_aval(c).shape[-2:] if get_aval(c).ndim >= 2 else (-1, -1)
    if get_aval(a).shape[-2:] != (m, m) or get_aval(b).shape[-2:] != (n, n):
        raise NumbaxValueError(
            f"numbax.scipy.linalg.solve_sylvester: A has shape {get_aval(a).shape}, B "
            f"{get_aval(b).shape} and C {get_aval(c).shape}, expected A (..., m, m), B (..., n, "
            "n) and C (..., m, n).")
    real_out = kind_of(get_aval(c).dtype) != "c"

    def solve_with(factors, a, b, c):
        x = _sylvester_apply(method, factors, c)
        wa = linalg_eig.eig(a, compute_left_eigenvectors=False,
                            compute_right_eigenvectors=False)[0]
        wb = linalg_eig.eig(b, compute_left_eigenvectors=False,
                            compute_right_eigenvectors=False)[0]
        near = jred.any(ufuncs.less(ufuncs.abs(ufuncs.add(wa[:, None], wb[None, :])), tol))
        return where(near, np.nan, ufuncs.real(x) if real_out else x)

    @custom_jvp
    def sylvester(a, b, c):
        return solve_with(_sylvester_factors(a, b, method), a, b, c)

    @sylvester.defjvp
    def sylvester_jvp(primals, tangents):
        (a, b, c), (da, db, dc) = primals, tangents
        factors = _sylvester_factors(a, b, method)
        x = solve_with(factors, a, b, c)
        rhs = ufuncs.subtract(dc, ufuncs.add(_mm(da, x), _mm(x, db)))
        return x, solve_with(factors, a, b, rhs)

    batch = np.broadcast_shapes(*(get_aval(x).shape[:-2] for x in (a, b, c)))
    a, b, c = (jshapes.broadcast_to(x, (*batch, *get_aval(x).shape[-2:])) for x in (a, b, c))
    return _batched(sylvester, len(batch))(a, b, c)


# ----------------------------------------------------------------------------- sqrtm


def _sqrtm_triu(t: Any) -> Any:
    """The upper-triangular square root of upper-triangular t, one superdiagonal at a time
    (Björck and Hammarling 1983): u_ij = (t_ij - Σ_{i<k<j} u_ik u_kj) / (u_ii + u_jj)."""
    n = get_aval(t).shape[-1]
    d = ufuncs.sqrt(creation.diagonal(t))
    u = creation.diag(d)
    for p in range(1, n):
        s = creation.diagonal(_mm(u, u), p)
        tp = creation.diagonal(t, p)
        val = where(ufuncs.equal(tp, s), 0, ufuncs.divide(ufuncs.subtract(tp, s),
                                                          ufuncs.add(d[:n - p], d[p:])))
        u = _set_superdiagonal(u, val, p)
    return u


@custom_jvp
def _sqrtm_2d(a: Any) -> Any:
    t, z = linalg_eig.schur(_complex(a))
    return _mm(_mm(z, _sqrtm_triu(t)), _H(z))


@_sqrtm_2d.defjvp
def _sqrtm_2d_jvp(primals, tangents):
    """X dX + dX X = dA, solved in the Schur basis: U Y + Y U = Zᴴ dA Z, dX = Z Y Zᴴ."""
    (a,), (a_dot,) = primals, tangents
    t, z = linalg_eig.schur(_complex(a))
    u = _sqrtm_triu(t)
    x = _mm(_mm(z, u), _H(z))
    f = _mm(_mm(_H(z), _complex(a_dot)), z)
    return x, _mm(_mm(z, _sylvester_triangular(u, u, f, w_lower=False)), _H(z))


def sqrtm(A: Any, blocksize: int = 1) -> Any:
    """Principal square root of square matrices through the complex Schur form (complex
    result, as JAX); blocksize > 1 is not implemented (as JAX).

    Unlike JAX: differentiable (dX solves X dX + dX X = dA).

    >>> import numpy as np
    >>> sqrtm(np.array([[4., 0.], [0., 9.]]))
    Array([[2.+0.j, 0.+0.j],
           [0.+0.j, 3.+0.j]], dtype=complex128)
    """
    if blocksize > 1:
        raise NotImplementedError("numbax.scipy.linalg.sqrtm: blocksize > 1 is not implemented "
                                  "(as in JAX).")
    a = _matrix("sqrtm", A, arg="A")
    return _batched(_sqrtm_2d, get_aval(a).ndim - 2)(a)


# ----------------------------------------------------------------------------- rsf2csf, funm


def _rsf2csf_2d(t: Any, z: Any) -> tuple[Any, Any]:
    """Givens rotations that zero each subdiagonal entry of a real Schur form's 2x2 blocks
    (scipy's algorithm), bottom block first."""
    t, z = _complex(t), _complex(z)
    n = get_aval(t).shape[-1]
    eps = float(finfo_of(get_aval(ufuncs.real(t)).dtype).eps)
    for m in range(n - 1, 0, -1):
        sub = t[m, m - 1]
        act = ufuncs.greater(ufuncs.abs(sub), eps * ufuncs.add(ufuncs.abs(t[m - 1, m - 1]),
                                                                 ufuncs.abs(t[m, m])))
        half_tr = ufuncs.multiply(ufuncs.add(t[m - 1, m - 1], t[m, m]), 0.5)
        det2 = ufuncs.subtract(ufuncs.multiply(t[m - 1, m - 1], t[m, m]),
                               ufuncs.multiply(t[m - 1, m], sub))
        root = ufuncs.sqrt(ufuncs.subtract(ufuncs.multiply(half_tr, half_tr), det2))
        root = where(ufuncs.less(ufuncs.imag(root), 0), ufuncs.negative(root), root)
        mu0 = ufuncs.subtract(ufuncs.add(half_tr, root), t[m, m])  # geev's first eigenvalue
        r = ufuncs.hypot(ufuncs.abs(mu0), ufuncs.abs(sub)).astype(get_aval(t).dtype)
        r = where(act, r, 1)
        c, s = where(act, ufuncs.divide(mu0, r), 1), where(act, ufuncs.divide(sub, r), 0)
        g = jshapes.stack([jshapes.stack([ufuncs.conj(c), s]), jshapes.stack([-s, c])])
        rows = t[m - 1:m + 1]
        t = t.at[m - 1:m + 1, m - 1:].set(_mm(g, rows[:, m - 1:]))
        t = t.at[:m + 1, m - 1:m + 1].set(_mm(t[:m + 1, m - 1:m + 1], _H(g)))
        z = z.at[:, m - 1:m + 1].set(_mm(z[:, m - 1:m + 1], _H(g)))
        t = t.at[m, m - 1].set(0)
    return t, z


def rsf2csf(T: Any, Z: Any, check_finite: bool = True) -> tuple[Any, Any]:
    """The complex Schur form (T, Z) from a real one (scipy.linalg.schur(a, 'real')).

    >>> import numpy as np
    >>> t, z = rsf2csf(np.array([[0., -1.], [1., 0.]]), np.eye(2))
    >>> np.round(np.diag(np.asarray(t)), 6)
    array([0.+1.j, 0.-1.j])
    """
    t, z = _matrix("rsf2csf", T, arg="T"), _matrix("rsf2csf", Z, arg="Z")
    if get_aval(t).shape[-1] != get_aval(z).shape[-1]:
        raise NumbaxValueError(
            f"numbax.scipy.linalg.rsf2csf: T has shape {get_aval(t).shape} and Z has shape "
            f"{get_aval(z).shape}, expected matrices of one size.")
    batch = np.broadcast_shapes(get_aval(t).shape[:-2], get_aval(z).shape[:-2])
    n = get_aval(t).shape[-1]
    t, z = (jshapes.broadcast_to(x, (*batch, n, n)) for x in (t, z))
    return _batched(_rsf2csf_2d, len(batch))(t, z)


def funm(A: Any, func: Callable[[Any], Any], disp: bool = True) -> Any:
    """f(A) for a scalar function `func` (applied to the eigenvalues, so it must take arrays):
    Schur-Parlett (Golub and Van Loan, algorithm 11.1.1), complex result as JAX's; with
    disp=False also an estimate of the relative error.

    >>> import numpy as np
    >>> import numbax.numpy as jnp
    >>> np.round(np.asarray(funm(np.diag([1., 2.]), jnp.exp)).real, 6)
    array([[2.718282, 0.      ],
           [0.      , 7.389056]])
    """
    if not callable(func):
        raise NumbaxTypeError(f"numbax.scipy.linalg.funm: func has type {type(func).__name__}, "
                              "expected a callable.")
    a = asarray(A)
    if get_aval(a).ndim != 2 or get_aval(a).shape[0] != get_aval(a).shape[1]:
        raise NumbaxValueError(f"numbax.scipy.linalg.funm: A has shape {get_aval(a).shape}, "
                               "expected one square matrix.")
    (a,) = ufuncs.promote_dtypes_inexact("scipy.linalg.funm", a)
    t, z = linalg_eig.schur(a)
    t, z = _rsf2csf_2d(t, z)
    n = get_aval(t).shape[-1]
    diag_t = creation.diagonal(t)
    f = creation.diag(asarray(func(diag_t)).astype(get_aval(t).dtype))
    minden = ufuncs.abs(t[0, 0]) if n else np.float64(np.inf)
    for p in range(1, n):
        # with F's superdiagonals < p filled, (T F - F T) on superdiagonal p is Parlett's sum
        s = creation.diagonal(ufuncs.subtract(_mm(t, f), _mm(f, t)), p)
        den = ufuncs.subtract(diag_t[p:], diag_t[:n - p])
        f = _set_superdiagonal(f, where(ufuncs.not_equal(den, 0), ufuncs.divide(
            s, where(ufuncs.not_equal(den, 0), den, 1)), s), p)
        minden = ufuncs.minimum(minden, jred.min(ufuncs.abs(den)))
    f = _mm(_mm(z, f), _H(z))
    if disp:
        return f
    tol = float(finfo_of(get_aval(ufuncs.abs(f)).dtype).eps)
    minden = where(ufuncs.equal(minden, 0), tol, minden)
    strict = creation.triu(t, 1)
    one_norm = jred.max(jred.sum(ufuncs.abs(strict), axis=0)) if n else 0.0
    err = ufuncs.minimum(1, ufuncs.maximum(tol, ufuncs.multiply(ufuncs.divide(tol, minden),
                                                                 one_norm)))
    return f, where(jred.any(ufuncs.isinf(f)), np.inf, err)
