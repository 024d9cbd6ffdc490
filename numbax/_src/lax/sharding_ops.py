"""sharding_constraint: the identity that pins a value's sharding (reshard and
with_sharding_constraint under tracing, and eagerly through the sharding layer, which installs
its implementation); and device_put_p, what device_put binds under a transform. Their math
rules live here, below the compiler, which runs both as no-ops."""
from __future__ import annotations

import enum

import numpy as np

from numbax._src import core
from numbax._src.core import Primitive, ShapedArray
from numbax._src.errors import NumbaxValueError
from numbax._src.interpreters import ad, batching
from numbax._src.sharding.shardings import NamedSharding, explicit_part

sharding_constraint_p = Primitive("sharding_constraint")


def _sharding_constraint_abstract_eval(x: ShapedArray, *, sharding) -> list:
    explicit = explicit_part(sharding, x.ndim) if isinstance(sharding, NamedSharding) else None
    return [ShapedArray(x.shape, x.dtype, x.weak_type, explicit)]


def _sharding_constraint_batch(axis_size, vals, dims, *, sharding):
    # A per-example constraint says nothing of the batch axis: vmap drops it.
    return list(vals), list(dims)


core.abstract_eval_rules[sharding_constraint_p] = _sharding_constraint_abstract_eval
core.impl_rules[sharding_constraint_p] = lambda x, *, sharding: [x]
ad.deflinear(sharding_constraint_p, lambda cts, x, *, sharding: [
    sharding_constraint_p.bind(ad.instantiate_zeros(cts[0]), sharding=sharding)])
batching.batch_rules[sharding_constraint_p] = _sharding_constraint_batch


# ----------------------------------------------------------------------------- device_put


class ArrayCopySemantics(enum.Enum):
    """device_put's copy_semantics entries (JAX's xla_client.ArrayCopySemantics): whether the
    result may share, must copy, or takes over (donates) its input's buffer."""

    ALWAYS_COPY = 0
    REUSE_INPUT = 1
    DONATE_INPUT = 2

    def __repr__(self) -> str:  # as JAX's prints, inside the params' tuples
        return f"ArrayCopySemantics.{self.name}"


device_put_p = Primitive("device_put", multiple_results=True)


def _device_put_impl(*xs, devices, srcs, copy_semantics) -> list:
    """The values as they are (one host memory), copied where ALWAYS_COPY asks."""
    return [np.array(x, copy=True) if c is ArrayCopySemantics.ALWAYS_COPY else x
            for x, c in zip(xs, copy_semantics, strict=True)]


def _pick(params: dict, keep: list[int]) -> dict:
    return {k: tuple(v[i] for i in keep) for k, v in params.items()}


def _device_put_jvp(primals, tangents, **params):
    outs = device_put_p.bind(*primals, **params)
    keep = [i for i, t in enumerate(tangents) if type(t) is not ad.Zero]
    tangents_out = list(tangents)
    if keep:
        moved = device_put_p.bind(*(tangents[i] for i in keep), **_pick(params, keep))
        for i, t in zip(keep, moved, strict=True):
            tangents_out[i] = t
    return outs, tangents_out


def _device_put_transpose(cts, *xs, devices, srcs, copy_semantics):
    if ArrayCopySemantics.DONATE_INPUT in copy_semantics:
        raise NumbaxValueError(
            "device_put: donate=True is not allowed during transposition of device_put. Drop "
            "donate inside differentiated functions.")
    keep = [i for i, (ct, x) in enumerate(zip(cts, xs, strict=True))
            if ad.is_undefined_primal(x) and type(ct) is not ad.Zero]
    out: list = [None if not ad.is_undefined_primal(x) else ad.Zero(x.aval) for x in xs]
    if keep:  # back to where the values came from (srcs), as JAX's rule does
        params = {"devices": srcs, "srcs": devices, "copy_semantics": copy_semantics}
        moved = device_put_p.bind(*(cts[i] for i in keep), **_pick(params, keep))
        for i, ct in zip(keep, moved, strict=True):
            out[i] = ct
    return out


core.abstract_eval_rules[device_put_p] = lambda *avals, **params: list(avals)
core.impl_rules[device_put_p] = _device_put_impl
ad.jvp_rules[device_put_p] = _device_put_jvp
ad.transpose_rules[device_put_p] = _device_put_transpose
batching.batch_rules[device_put_p] = lambda axis_size, vals, dims, **params: (
    device_put_p.bind(*vals, **params), list(dims))
