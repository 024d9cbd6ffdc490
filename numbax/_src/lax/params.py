"""The parameter classes of lax's functions: Precision and dot algorithms, accuracy requests,
rounding and RNG algorithms, and the dimension numbers of dot, gather and scatter."""
from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from numbax._src.config import config
from numbax._src.errors import NumbaxTypeError, NumbaxValueError

# ----------------------------------------------------------------------------- precision

_precision_strings: dict[Any, Precision] = {}


class Precision(enum.Enum):
    """Precision of matrix products on accelerators: DEFAULT ('default', 'fastest',
    'bfloat16'), HIGH ('high', 'bfloat16_3x', 'tensorfloat32') or HIGHEST ('highest',
    'float32'). Like JAX on CPU, numbax computes every float32 product in float32 whatever
    the precision."""

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value: object) -> Precision | None:
        return _precision_strings.get(value)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}.{self.name}"

    def __str__(self) -> str:
        return self.name


_precision_strings.update({
    "highest": Precision.HIGHEST, "float32": Precision.HIGHEST, "high": Precision.HIGH,
    "bfloat16_3x": Precision.HIGH, "tensorfloat32": Precision.HIGH,
    "default": Precision.DEFAULT, "bfloat16": Precision.DEFAULT,
    "fastest": Precision.DEFAULT, None: Precision.DEFAULT})


class DotAlgorithm(NamedTuple):
    """A dot product algorithm: the types lhs and rhs are rounded to, the accumulation type,
    and how many components/operations emulate higher precision."""

    lhs_precision_type: Any
    rhs_precision_type: Any
    accumulation_type: Any
    lhs_component_count: int = 1
    rhs_component_count: int = 1
    num_primitive_operations: int = 1
    allow_imprecise_accumulation: bool = False


class DotAlgorithmPreset(enum.Enum):
    """Named dot algorithms (LHS_RHS_ACCUMULATION); on CPU numbax, like JAX, runs DEFAULT,
    F16_F16_F16, BF16_BF16_F32(_X3, _X6), F32_F32_F32 and F64_F64_F64 and refuses the rest."""

    DEFAULT = enum.auto()
    ANY_F8_ANY_F8_F32 = enum.auto()
    ANY_F8_ANY_F8_F32_FAST_ACCUM = enum.auto()
    ANY_F8_ANY_F8_ANY = enum.auto()
    ANY_F8_ANY_F8_ANY_FAST_ACCUM = enum.auto()
    F16_F16_F16 = enum.auto()
    F16_F16_F32 = enum.auto()
    BF16_BF16_BF16 = enum.auto()
    BF16_BF16_F32 = enum.auto()
    BF16_BF16_F32_X3 = enum.auto()
    BF16_BF16_F32_X6 = enum.auto()
    BF16_BF16_F32_X9 = enum.auto()
    TF32_TF32_F32 = enum.auto()
    TF32_TF32_F32_X3 = enum.auto()
    F32_F32_F32 = enum.auto()
    F64_F64_F64 = enum.auto()

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}.{self.name}"

    def __str__(self) -> str:
        return self.name

    @property
    def supported_lhs_types(self) -> tuple | None:
        if self.name == "DEFAULT" or self.name.startswith("ANY_F8"):
            return None
        if self.name.startswith("F16"):
            return (np.float16,)
        if self in (DotAlgorithmPreset.BF16_BF16_BF16, DotAlgorithmPreset.BF16_BF16_F32):
            return ("bfloat16", np.float32)
        if self is DotAlgorithmPreset.F64_F64_F64:
            return (np.float64,)
        return (np.float32,)

    @property
    def supported_rhs_types(self) -> tuple | None:
        return self.supported_lhs_types

    @property
    def accumulation_type(self) -> Any:
        if self.name in ("DEFAULT", "ANY_F8_ANY_F8_ANY", "ANY_F8_ANY_F8_ANY_FAST_ACCUM"):
            return None
        return {"F16_F16_F16": np.float16, "BF16_BF16_BF16": "bfloat16",
                "F64_F64_F64": np.float64}.get(self.name, np.float32)


# The presets XLA's CPU backend runs (JAX raises ValueError for the others on CPU).
CPU_PRESETS = frozenset({"DEFAULT", "F16_F16_F16", "BF16_BF16_F32", "BF16_BF16_F32_X3",
                         "BF16_BF16_F32_X6", "F32_F32_F32", "F64_F64_F64"})

PrecisionLike = (None | str | Precision | tuple[str, str] | tuple[Precision, Precision]
                 | DotAlgorithm | DotAlgorithmPreset)
CanonicalPrecision = None | tuple[Precision, Precision] | DotAlgorithm | DotAlgorithmPreset


def canonicalize_precision(precision: Any) -> CanonicalPrecision:
    """None, a (Precision, Precision) pair, or a dot algorithm, from any PrecisionLike
    (None reads the jax_default_matmul_precision option)."""
    if precision is None:
        default = getattr(config, "jax_default_matmul_precision", None)
        return None if default is None else canonicalize_precision(default)
    if isinstance(precision, str):
        if precision in _precision_strings:
            return Precision(precision), Precision(precision)
        if precision in DotAlgorithmPreset.__members__:
            return DotAlgorithmPreset[precision]
    elif isinstance(precision, Precision):
        return precision, precision
    elif isinstance(precision, (DotAlgorithm, DotAlgorithmPreset)):
        return precision
    elif isinstance(precision, (list, tuple)) and len(precision) == 2:
        if all(isinstance(p, Precision) for p in precision):
            return tuple(precision)  # type: ignore[return-value]
        if all(isinstance(p, str) and p in _precision_strings for p in precision):
            return Precision(precision[0]), Precision(precision[1])
    raise NumbaxValueError(
        "Precision argument must be one of:\n- None,\n"
        f"- a string in {[s for s in _precision_strings if s is not None]},\n"
        "- a lax.Precision value,\n- a tuple of two lax.Precision values or strings,\n"
        "- a lax.DotAlgorithmPreset or the name of one of these presets, or\n"
        f"- a lax.DotAlgorithm value;\nbut got {precision}.")


# ----------------------------------------------------------------------------- accuracy


class Tolerance:
    """Tolerances for a unary function's implementation: at most two of atol, rtol, ulps.
    numbax's CPU functions have one implementation each, so they accept and ignore it."""

    def __init__(self, atol: float = 0.0, rtol: float = 0.0, ulps: int = 0) -> None:
        if atol < 0.0 or rtol < 0.0 or ulps < 0:
            raise NumbaxValueError("Tolerances must be non-negative.")
        if atol == 0.0 and rtol == 0.0 and ulps == 0:
            raise NumbaxValueError("At least one of atol, rtol, or ulps must be set.")
        self.atol = atol
        self.rtol = rtol
        self.ulps = ulps


class AccuracyMode(enum.Enum):
    """Which implementation of a unary function to use (HIGHEST or DEFAULT accuracy)."""

    HIGHEST = 1
    DEFAULT = 2


def check_accuracy(accuracy: Any) -> None:
    if accuracy is not None and not isinstance(accuracy, (Tolerance, AccuracyMode)):
        raise NotImplementedError(f"Accuracy {accuracy} not supported")


class RoundingMethod(enum.IntEnum):
    """How lax.round treats halfway values: away from zero (0) or to the nearest even (1)."""

    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


class RandomAlgorithm(enum.IntEnum):
    """The bit generator of lax.rng_bit_generator."""

    RNG_DEFAULT = 0
    RNG_THREE_FRY = 1
    RNG_PHILOX = 2

    def __str__(self) -> str:
        return self.name


# ----------------------------------------------------------------------------- dimension numbers

DotDimensionNumbers = tuple[tuple[Sequence[int], Sequence[int]],
                            tuple[Sequence[int], Sequence[int]]]


class RaggedDotDimensionNumbers:
    """Dimension numbers of ragged_dot_general: the dot's dimension numbers, the ragged
    dimensions of lhs and the group dimensions of rhs."""

    def __init__(self, dot_dimension_numbers: Any, lhs_ragged_dimensions: Sequence[int],
                 rhs_group_dimensions: Sequence[int]) -> None:
        (lc, rc), (lb, rb) = dot_dimension_numbers
        self.dot_dimension_numbers = ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb)))
        self.lhs_ragged_dimensions = tuple(int(d) for d in lhs_ragged_dimensions)
        self.rhs_group_dimensions = tuple(int(d) for d in rhs_group_dimensions)

    def _key(self) -> tuple:
        return (self.dot_dimension_numbers, self.lhs_ragged_dimensions,
                self.rhs_group_dimensions)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RaggedDotDimensionNumbers) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"RaggedDotDimensionNumbers(dot_dimension_numbers={self.dot_dimension_numbers}"
                f", lhs_ragged_dimensions={self.lhs_ragged_dimensions}, "
                f"rhs_group_dimensions={self.rhs_group_dimensions})")


class GatherDimensionNumbers(NamedTuple):
    """How lax.gather reads slices: which slice dims stay in the output (offset_dims), which
    size-1 slice dims are dropped (collapsed_slice_dims), which operand dim each index
    column starts (start_index_map), and operand/indices dims that batch together."""

    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()


class ScatterDimensionNumbers(NamedTuple):
    """How lax.scatter writes windows: which update dims are window dims, which size-1
    operand dims have no window dim (inserted_window_dims), which operand dim each index
    column addresses, and operand/indices dims that batch together."""

    update_window_dims: Sequence[int]
    inserted_window_dims: Sequence[int]
    scatter_dims_to_operand_dims: Sequence[int]
    operand_batching_dims: Sequence[int] = ()
    scatter_indices_batching_dims: Sequence[int] = ()


class GatherScatterMode(enum.Enum):
    """Out-of-bounds indices: CLIP clamps them, FILL_OR_DROP fills gathers (with fill_value)
    and drops scatters, PROMISE_IN_BOUNDS promises there are none (numbax clamps gathers and
    drops scatters, as XLA's CPU code does), ONE_HOT is TPU-only and refused."""

    CLIP = 1
    FILL_OR_DROP = 2
    PROMISE_IN_BOUNDS = 3
    ONE_HOT = 4

    @staticmethod
    def from_any(s: str | GatherScatterMode | None) -> GatherScatterMode:
        if isinstance(s, GatherScatterMode):
            return s
        if s == "clip":
            return GatherScatterMode.CLIP
        if s is None or s == "fill" or s == "drop":
            return GatherScatterMode.FILL_OR_DROP
        if s == "promise_in_bounds":
            return GatherScatterMode.PROMISE_IN_BOUNDS
        if s == "one_hot":
            return GatherScatterMode.ONE_HOT
        raise NumbaxValueError(f'Unknown gather mode "{s}"')


def canonical_dims(api: str, what: str, dims: Any) -> tuple[int, ...]:
    try:
        return tuple(int(d) for d in dims)
    except TypeError as err:
        raise NumbaxTypeError(f"{api}: {what} has {dims!r}, expected a sequence of "
                              "integers.") from err
