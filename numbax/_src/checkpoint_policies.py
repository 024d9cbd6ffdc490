"""What jax.checkpoint may save: the policies of jax.checkpoint_policies, the Saveable /
Recompute / Offloadable answers a policy may give, and checkpoint_name (the `name` primitive
that tags a value for the name-based policies)."""
from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable
from typing import Any, NamedTuple

from numbax._src import core
from numbax._src import tree_util as tu
from numbax._src.core import Primitive
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import ad, batching
from numbax._src.lax import convolution, dot

# ----------------------------------------------------------------------------- answers


class RecomputeType:
    """A policy's answer: recompute this value in the backward pass."""

    def __repr__(self) -> str:
        return "Recompute"


class SaveableType:
    """A policy's answer: save this value as a residual."""

    def __repr__(self) -> str:
        return "Saveable"


Recompute = RecomputeType()
Saveable = SaveableType()


class Offloadable(NamedTuple):
    """A policy's answer: save this value in memory space `dst` (moved from `src`). numbax has
    one memory space (host memory), so an offloaded residual is a saved one."""

    src: Any
    dst: Any


def offloads(policy: Callable | None, eqn: core.JaxprEqn) -> bool:
    """Whether `policy` answers Offloadable for `eqn` (its saved outputs go to `dst`)."""
    if policy is None:
        return False
    answer = policy(eqn.primitive, *[x.aval for x in eqn.invars], **eqn.params)
    return isinstance(answer, Offloadable)


def saves(policy: Callable | None, eqn: core.JaxprEqn) -> bool:
    """Whether `policy` lets checkpoint save the outputs of `eqn` (None: nothing is saved)."""
    if policy is None:
        return False
    answer = policy(eqn.primitive, *[x.aval for x in eqn.invars], **eqn.params)
    if isinstance(answer, bool):
        return answer
    if answer is Saveable or isinstance(answer, Offloadable):
        return True
    if answer is Recompute:
        return False
    raise NumbaxTypeError(
        f"checkpoint: the policy returned {answer!r} for {eqn.primitive.name}, expected a bool "
        "or one of jax.ad_checkpoint.Recompute, Saveable or Offloadable(src, dst).")


# ----------------------------------------------------------------------------- checkpoint_name

name_p = Primitive("name")
core.abstract_eval_rules[name_p] = lambda x, *, name: [x]
core.impl_rules[name_p] = lambda x, *, name: [x]
# the tangent passes through untagged: the name marks the primal value a policy may save
ad.jvp_rules[name_p] = lambda primals, tangents, *, name: (
    [name_p.bind(primals[0], name=name)], [tangents[0]])
ad.transpose_rules[name_p] = lambda cts, x, *, name: [cts[0]]
batching.defvectorized(name_p)


def checkpoint_name(x: Any, name: str) -> Any:
    """Tags the arrays of pytree `x` with `name`, for checkpoint_policies.save_only_these_names
    and the other name-based policies; the values are unchanged.

    >>> import numbax
    >>> float(checkpoint_name(2.0, "two"))
    2.0
    """
    if not isinstance(name, str):
        raise NumbaxTypeError(f"checkpoint_name: name is a {type(name).__name__}, expected a "
                              "string.")
    return tu.tree_map(lambda leaf: name_p.bind(leaf, name=name), x)


# ----------------------------------------------------------------------------- policies


def everything_saveable(*_: Any, **__: Any) -> bool:
    """Saves every value, as if checkpoint were not used at all."""
    return True


def nothing_saveable(*_: Any, **__: Any) -> bool:
    """Saves nothing but the inputs: the default of checkpoint."""
    return False


@dataclasses.dataclass(frozen=True)
class DotsSaveable:
    """Saves the outputs of matrix products and convolutions (only products without batch
    dimensions when `only_if_no_batch_dims`)."""

    only_if_no_batch_dims: bool

    def __call__(self, prim: Primitive, *avals: Any, **params: Any) -> bool:
        if self.only_if_no_batch_dims:
            if prim is dot.dot_general_p:
                (_, _), (lhs_batch, rhs_batch) = params["dimension_numbers"]
                return not lhs_batch and not rhs_batch
            return False
        return prim in (dot.dot_general_p, convolution.conv_general_dilated_p)


dots_saveable = checkpoint_dots = DotsSaveable(False)
dots_with_no_batch_dims_saveable = DotsSaveable(True)


@dataclasses.dataclass(frozen=True)
class SaveOnlyTheseNames:
    saveable_names: frozenset

    def __call__(self, prim: Primitive, *_: Any, **params: Any) -> bool:
        return prim is name_p and params["name"] in self.saveable_names


@dataclasses.dataclass(frozen=True)
class SaveAnyNamesButThese:
    names: frozenset

    def __call__(self, prim: Primitive, *_: Any, **params: Any) -> bool:
        return prim is name_p and params["name"] not in self.names


def _names(api: str, names: tuple) -> frozenset:
    for n in names:
        if not isinstance(n, str):
            raise NumbaxTypeError(f"{api}: a name is a {type(n).__name__}, expected strings "
                                  "(the names given to checkpoint_name).")
    return frozenset(names)


def save_only_these_names(*names_which_can_be_saved: str) -> SaveOnlyTheseNames:
    """Saves only the values tagged by checkpoint_name with one of these names."""
    return SaveOnlyTheseNames(_names("save_only_these_names", names_which_can_be_saved))


def save_any_names_but_these(*names_not_to_save: str) -> SaveAnyNamesButThese:
    """Saves only values tagged by checkpoint_name, except those with these names."""
    return SaveAnyNamesButThese(_names("save_any_names_but_these", names_not_to_save))


def save_anything_except_these_names(*names_not_to_save: str) -> Callable[..., bool]:
    """Saves every value (named or not), as JAX's policy of this name does: the names it is
    given do not change what it saves."""
    _names("save_anything_except_these_names", names_not_to_save)
    return everything_saveable


def save_from_both_policies(policy_1: Callable, policy_2: Callable) -> Callable[..., bool]:
    """Saves a value when either policy does (both must answer with a bool)."""
    def policy(prim: Primitive, *args: Any, **params: Any) -> bool:
        out1, out2 = policy_1(prim, *args, **params), policy_2(prim, *args, **params)
        if not (isinstance(out1, bool) and isinstance(out2, bool)):
            raise NumbaxValueError(
                "The return value of the policies should be a boolean. Got: "
                f"{out1} and {out2}. Please write a custom policy function directly, rather "
                "than using this helper function.")
        return out1 or out2
    return policy


def offload_dot_with_no_batch_dims(offload_src: Any, offload_dst: Any) -> Callable:
    """dots_with_no_batch_dims_saveable, answering Offloadable: numbax saves those values in
    host memory, its only memory space."""
    def policy(prim: Primitive, *_: Any, **params: Any) -> Any:
        if prim is dot.dot_general_p:
            (_, _), (lhs_batch, rhs_batch) = params["dimension_numbers"]
            if not lhs_batch and not rhs_batch:
                return Offloadable(src=offload_src, dst=offload_dst)
        return Recompute
    return policy


def save_and_offload_only_these_names(*, names_which_can_be_saved, names_which_can_be_offloaded,
                                      offload_src, offload_dst) -> Callable:
    """save_only_these_names, with a second set of names whose values are offloaded (saved in
    host memory here)."""
    saved = set(_names("save_and_offload_only_these_names", tuple(names_which_can_be_saved)))
    offloaded = set(_names("save_and_offload_only_these_names",
                           tuple(names_which_can_be_offloaded)))
    if saved & offloaded:
        raise NumbaxValueError(
            "The names should be exclusive and should not intersect in "
            "`names_which_can_be_saved` and `names_which_can_be_offloaded`. Got "
            f"names_which_can_be_saved={saved}, names_which_can_be_offloaded={offloaded} and "
            f"the intersection={saved & offloaded}")

    def policy(prim: Primitive, *_: Any, **params: Any) -> Any:
        if prim is name_p and params["name"] in saved:
            return Saveable
        if prim is name_p and params["name"] in offloaded:
            return Offloadable(src=offload_src, dst=offload_dst)
        return Recompute
    return policy


checkpoint_policies = types.SimpleNamespace(
    everything_saveable=everything_saveable,
    nothing_saveable=nothing_saveable,
    dots_saveable=dots_saveable,
    checkpoint_dots=dots_saveable,
    dots_with_no_batch_dims_saveable=dots_with_no_batch_dims_saveable,
    checkpoint_dots_with_no_batch_dims=dots_with_no_batch_dims_saveable,
    offload_dot_with_no_batch_dims=offload_dot_with_no_batch_dims,
    save_anything_except_these_names=save_anything_except_these_names,
    save_any_names_but_these=save_any_names_but_these,
    save_only_these_names=save_only_these_names,
    save_from_both_policies=save_from_both_policies,
    save_and_offload_only_these_names=save_and_offload_only_these_names)
