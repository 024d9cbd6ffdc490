"""psend and precv: a ppermute split into its send and its receive, as JAX's Send/Recv pair.

JAX 0.10.2 lowers them on GPUs only (its CPU backend raises NotImplementedError). numbax
gives them ppermute's meaning on every backend: precv returns, on each member d, the value
that member s sent with the psend of the same axis_name and perm, for (s, d) in perm, and
zeros on members no pair sends to. The SPMD workers match a precv with the earliest
unmatched psend of the same axis_name and perm in program order (a mailbox per call,
parallel/collectives_p2p.py); under the vmap that names the axis (a body run in the caller)
the value travels in the token psend returns, so there precv's token must be that psend's.
As in JAX, psend has no derivative (grad of a shard_map or pmap using it raises); on the vmap
path the pair is ppermute's rule applied at psend, so derivatives pass as through ppermute."""
from __future__ import annotations

from typing import Any

import numpy as np

from numbax._src import core
from numbax._src import tree_util as tu
from numbax._src.core import Primitive, ShapedArray
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.extend_core import Token, abstract_token
from numbax._src.interpreters import ad, batching
from numbax._src.lax import parallel

psend_p = Primitive("psend")
precv_p = Primitive("precv")


class SentToken(Token):
    """psend's token under the vmap that names its axis: it carries what each member
    receives (the permuted value, batched at `dim`) to the matching precv."""

    __slots__ = ("received", "dim")

    @classmethod
    def carrying(cls, received: Any, dim: int) -> SentToken:
        token = cls._from_numpy(np.zeros((), np.bool_))
        token.received, token.dim = received, dim
        return token


def _psend_collective(axis_data, vals, dims, *, axis_name, perm):
    moved, moved_dims = parallel._ppermute_collective(axis_data, vals, dims,
                                                      axis_name=axis_name, perm=perm)
    return [SentToken.carrying(moved[0], moved_dims[0])], [None]


def _precv_collective(axis_data, vals, dims, *, out_shape, axis_name, perm):
    token = vals[0]
    if not isinstance(token, SentToken):
        raise NumbaxValueError(
            "lax.precv: token is not the token of a psend here. Under vmap (or a shard_map "
            "body run in the calling process) pass the token the matching psend returned.")
    received = token.received
    if core.get_aval(received).shape[:token.dim] + core.get_aval(received).shape[
            token.dim + 1:] != out_shape.shape or \
            core.get_aval(received).dtype != out_shape.dtype:
        raise NumbaxValueError(
            f"lax.precv: out_shape is {out_shape.str_short()}, but the matching psend sent "
            f"{core.get_aval(received).str_short()} (batched at {token.dim}). Give out_shape "
            "the shape and dtype of what was sent.")
    return [received], [token.dim]


def _unmapped_batch(name: str):
    def rule(axis_size, vals, dims, **params):
        raise NotImplementedError(
            f"lax.{name}: vmap over an axis other than its axis_name is not supported; vmap "
            "inside the shard_map body instead.")
    return rule


def _psend_jvp(primals, tangents, **params):
    raise NotImplementedError("Differentiation rule for 'psend' not implemented")


def _psend_impl(x, *, axis_name, perm):
    raise NameError(f"lax.psend: unbound axis name {axis_name!r}")


def _precv_impl(token, *, out_shape, axis_name, perm):
    raise NameError(f"lax.precv: unbound axis name {axis_name!r}")


core.abstract_eval_rules[psend_p] = lambda x, **params: [abstract_token]
core.abstract_eval_rules[precv_p] = lambda token, *, out_shape, **params: [out_shape]
core.impl_rules[psend_p] = _psend_impl
core.impl_rules[precv_p] = _precv_impl
core.effectful_primitives.update({psend_p, precv_p})  # a send's token may go unread
ad.jvp_rules[psend_p] = _psend_jvp
ad.non_differentiable.add(precv_p)  # its operand is a token: nothing to differentiate
batching.def_collective(psend_p, _psend_collective)
batching.def_collective(precv_p, _precv_collective)
batching.batch_rules[psend_p] = _unmapped_batch("psend")
batching.batch_rules[precv_p] = _unmapped_batch("precv")


def _axis_tuple(axis_name: Any) -> tuple:
    return tuple(axis_name) if isinstance(axis_name, (list, tuple)) else (axis_name,)


def psend(x: Any, axis_name: Any, perm: Any) -> Any:
    """Sends x from member s to member d for each (s, d) in perm; the matching precv (same
    axis_name and perm) receives it. A pytree x sends each leaf.

    Args:
      x: array(s) with a mapped axis named axis_name.
      axis_name: the named axis (or a tuple of them).
      perm: (source, destination) pairs of indices along the axis, each at most once.

    Returns:
      A token (one per leaf of x), for precv and lax.optimization_barrier.

    Unlike JAX, which runs it on GPUs only: numbax runs it on every backend (module doc).
    """
    names = _axis_tuple(axis_name)
    parallel._check_bound("psend", names)
    pairs = parallel.perm_pairs("lax.psend", names, perm)
    return tu.tree_map(lambda leaf: psend_p.bind(parallel._lift_to_axes(leaf, names),
                                                 axis_name=names, perm=pairs), x)


def precv(token: Any, out_shape: Any, axis_name: Any, perm: Any) -> Any:
    """Receives what member s sent with the matching psend, on each member d with (s, d) in
    perm; zeros of out_shape on the others.

    Args:
      token: the matching psend's token (or lax.create_token() on the SPMD workers).
      out_shape: a ShapeDtypeStruct (shape and dtype) of the value received.
      axis_name: the named axis (or a tuple of them), as given to psend.
      perm: (source, destination) pairs, as given to psend.

    Returns:
      An array of out_shape.

    Unlike JAX, which runs it on GPUs only: numbax runs it on every backend (module doc).
    """
    names = _axis_tuple(axis_name)
    parallel._check_bound("precv", names)
    pairs = parallel.perm_pairs("lax.precv", names, perm)
    if not hasattr(out_shape, "shape") or not hasattr(out_shape, "dtype"):
        raise NumbaxTypeError(
            f"lax.precv: out_shape is a {type(out_shape).__name__}, expected a "
            "ShapeDtypeStruct (or an object with shape and dtype) of the value received.")
    if core.get_aval(token) != abstract_token:
        raise NumbaxTypeError(
            f"lax.precv: token has type {core.get_aval(token).str_short()}, expected a token "
            "(from psend or lax.create_token()).")
    aval = ShapedArray(tuple(out_shape.shape), np.dtype(out_shape.dtype))
    return precv_p.bind(parallel._lift_to_axes(token, names), out_shape=aval,
                        axis_name=names, perm=pairs)
