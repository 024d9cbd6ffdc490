"""JAX's check_arraylike for the public numbax.numpy namespace: the functions that JAX refuses
a list or tuple for (`jnp.sum([1, 2, 3])` raises TypeError; convert with jnp.asarray first),
recorded by running each jax.numpy function with a list in each positional slot. numbax's own
libraries call the unchecked functions in numbax._src.jnp, so only user calls are checked."""
from __future__ import annotations

import copy
import functools
import inspect
from collections.abc import Callable
from typing import Any

from numbax._src.errors import NumbaxTypeError

# (slots, names): slots are (parameter index, the position JAX's message names) pairs, or "*"
# for every positional argument (variadic functions and JAX's ufunc objects, such as jnp.add).
_TABLE: tuple[tuple[Any, str], ...] = (
    (((0, 0),), """
    abs absolute acos acosh all amax amin angle any arccos arccosh arcsin arcsinh arctan
    arctanh argmax argmin argsort argwhere around array_split asin asinh astype atan atanh
    bincount bitwise_count bitwise_invert bitwise_not broadcast_to cbrt ceil choose conj
    conjugate copy cos cosh count_nonzero cumprod cumsum cumulative_prod cumulative_sum
    deg2rad degrees diag diag_indices_from diagflat diagonal diff dsplit empty_like exp
    exp2 expand_dims expm1 fabs flatnonzero flip fliplr flipud floor frexp hsplit i0 imag
    invert iscomplex isfinite isinf isnan isneginf isposinf isreal log log10 log1p log2
    logical_not matrix_transpose max mean median min modf moveaxis nan_to_num nanargmax
    nanargmin nancumprod nancumsum nanmax nanmean nanmedian nanmin nanprod nanstd nansum
    nanvar nonzero ones_like packbits pad permute_dims piecewise poly polyder polyint
    positive prod ptp rad2deg radians ravel real reciprocal reshape rint roll roots rot90
    round sign signbit sin sinc sinh sort sort_complex spacing split sqrt square squeeze
    std sum tan tanh tile trace transpose tril tril_indices_from trim_zeros triu
    triu_indices_from trunc unique unique_all unique_counts unique_inverse unique_values
    unpackbits unravel_index unstack unwrap vander var vsplit zeros_like"""),
    ('*', """
    add atleast_1d atleast_2d atleast_3d bitwise_and bitwise_or bitwise_xor
    broadcast_arrays ix_ logaddexp logaddexp2 logical_and logical_or logical_xor maximum
    meshgrid minimum multiply negative subtract"""),
    (((0, 0), (1, 1)), """
    allclose arctan2 atan2 bitwise_left_shift bitwise_right_shift compress convolve
    copysign corrcoef correlate cov cross delete digitize divide divmod dot equal extract
    float_power floor_divide fmax fmin fmod full_like gcd greater greater_equal heaviside
    histogram2d histogram_bin_edges hypot inner intersect1d isclose isin kron lcm ldexp
    left_shift less less_equal linspace matmul matvec mod nanpercentile nanquantile
    nextafter not_equal outer percentile polyadd polydiv polymul polysub polyval pow power
    quantile remainder repeat right_shift searchsorted setdiff1d setxor1d take
    take_along_axis tensordot trapezoid true_divide union1d vdot vecdot vecmat"""),
    (((0, 0), (1, 0)), """
    append"""),
    (((2, 0),), """
    apply_along_axis eye"""),
    (((1, 0),), """
    apply_over_axes full"""),
    (((0, 0), (1, 0), (2, 0)), """
    clip ediff1d"""),
    (((0, 0), (1, 1), (3, 2)), """
    histogram"""),
    (((0, 0), (3, 1)), """
    histogramdd"""),
    (((0, 0), (1, 1), (2, 2)), """
    insert place where"""),
    (((0, 0), (1, 1), (2, 2), (3, 1)), """
    interp"""),
    (((2, 6),), """
    select"""),
    # the elements of a sequence of arrays (JAX's message names the element's index)
    ("items", """
    column_stack concatenate dstack hstack stack vstack"""),
)

CHECKED: dict[str, Any] = {name: slots for slots, names in _TABLE for name in names.split()}


def check_arraylike(fun_name: str, slots: Any, names: tuple, args: tuple, kwargs: dict) -> None:
    """Raises JAX's TypeError when an argument in one of `slots` is a list or tuple."""
    if slots == "items":
        sequence = args[0] if args else kwargs.get(names[0]) if names else None
        items = sequence if isinstance(sequence, (list, tuple)) else ()
        pairs = [(i, i) for i in range(len(items))]
        args, names, kwargs = tuple(items), (), {}
    else:
        pairs = [(i, i) for i in range(len(args))] if slots == "*" else slots
    for index, position in pairs:
        if index < len(args):
            value, label = args[index], f"at position {position}"
        elif index < len(names) and names[index] in kwargs:
            value, label = kwargs[names[index]], f"at position {position} ({names[index]}=)"
        else:
            continue
        if isinstance(value, (list, tuple)):
            raise NumbaxTypeError(
                f"numbax.numpy.{fun_name} requires ndarray or scalar arguments, got "
                f"{type(value)} {label}. Convert it with numbax.numpy.asarray (or "
                "numbax.numpy.array) first, as jax.numpy requires.")


def _param_names(fn: Callable) -> tuple:
    try:
        return tuple(inspect.signature(fn).parameters)
    except (TypeError, ValueError):  # builtins and objects without a signature
        return ()


def checked(name: str, fn: Any) -> Any:
    """fn with JAX's list check in front (a ufunc object keeps its methods: only its call is
    checked); fn itself when JAX accepts lists for `name`."""
    slots = CHECKED.get(name)
    if slots is None or not callable(fn):
        return fn
    from numbax._src.numpy.ufunc_api import ufunc

    if isinstance(fn, ufunc):
        out = copy.copy(fn)
        out.__class__ = _checked_ufunc_class(ufunc)
        return out
    return checked_call(name, slots, fn)


@functools.cache
def _checked_ufunc_class(ufunc: type) -> type:
    class CheckedUfunc(ufunc):
        """A jnp.ufunc whose call refuses lists, as JAX's (its methods are unchanged)."""

        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            check_arraylike(self.__name__, "*", (), args, {})
            return super().__call__(*args, **kwargs)

    CheckedUfunc.__name__ = CheckedUfunc.__qualname__ = "ufunc"
    return CheckedUfunc


def checked_call(name: str, slots: Any, fn: Callable) -> Callable:
    names = _param_names(fn)

    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        check_arraylike(name, slots, names, args, kwargs)
        return fn(*args, **kwargs)

    return wrapped


def checked_namespace(namespace: dict) -> dict:
    """The entries of a jax.numpy-like namespace that JAX checks, wrapped."""
    return {name: checked(name, namespace[name]) for name in CHECKED if name in namespace}
