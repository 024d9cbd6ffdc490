"""numbax.scipy.spatial.transform: 3-D rotations as unit quaternions (x, y, z, w) with
leading batch axes (Rotation), and spherical linear interpolation between them (Slerp). Both
are NamedTuples, hence pytrees."""
from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from numbax._src import core
from numbax._src import random as nb_random
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.numpy import (
    creation,
    flips,
    lax_numpy,
    linalg,
    reductions,
    shapes,
    sorting,
    ufuncs,
)
from numbax._src.numpy.lax_numpy import where
from numbax._src.numpy.linalg_ops import matmul

__all__ = ["Rotation", "Slerp"]

_AXIS = {"x": 0, "y": 1, "z": 2}


def _asarray(api: str, name: str, value: Any) -> Any:
    if not (isinstance(value, (list, tuple)) or core.is_array_like(value)):
        raise NumbaxTypeError(
            f"numbax.scipy.spatial.transform.{api}: {name} has type {type(value).__name__}, "
            "expected an array.")
    (value,) = ufuncs.promote_dtypes_inexact(f"scipy.spatial.transform.{api}",
                                             lax_numpy.asarray(value))
    return value


def _check_last(api: str, name: str, value: Any, size: int) -> None:
    if value.ndim == 0 or value.shape[-1] != size:
        raise NumbaxValueError(
            f"numbax.scipy.spatial.transform.{api}: {name} has shape {value.shape}, expected "
            f"(..., {size}).")


def _norm(v: Any) -> Any:
    return ufuncs.sqrt(reductions.sum(v * v, axis=-1))


def _normalize(q: Any) -> Any:
    return q / _norm(q)[..., None]


def _compose(p: Any, q: Any) -> Any:
    """The Hamilton product p * q in (x, y, z, w) order."""
    px, py, pz, pw = (p[..., k] for k in range(4))
    qx, qy, qz, qw = (q[..., k] for k in range(4))
    return shapes.stack([pw * qx + qw * px + (py * qz - pz * qy),
                         pw * qy + qw * py + (pz * qx - px * qz),
                         pw * qz + qw * pz + (px * qy - py * qx),
                         pw * qw - px * qx - py * qy - pz * qz], axis=-1)


def _as_matrix(q: Any) -> Any:
    x, y, z, w = (q[..., k] for k in range(4))
    rows = [[x * x - y * y - z * z + w * w, 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), -x * x + y * y - z * z + w * w, 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), -x * x - y * y + z * z + w * w]]
    return shapes.stack([shapes.stack(r, axis=-1) for r in rows], axis=-2)


def _from_matrix(m: Any) -> Any:
    """Shepperd's method: build the quaternion from the largest of the diagonal and trace."""
    trace = m[..., 0, 0] + m[..., 1, 1] + m[..., 2, 2]
    decision = shapes.stack([m[..., 0, 0], m[..., 1, 1], m[..., 2, 2], trace], axis=-1)
    choice = reductions.argmax(decision, axis=-1)
    candidates = []
    for i in range(3):
        j, k = (i + 1) % 3, (i + 2) % 3
        parts = [None] * 4
        parts[i] = 1 - trace + 2 * m[..., i, i]
        parts[j] = m[..., j, i] + m[..., i, j]
        parts[k] = m[..., k, i] + m[..., i, k]
        parts[3] = m[..., k, j] - m[..., j, k]
        candidates.append(shapes.stack(parts, axis=-1))
    candidates.append(shapes.stack([m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0],
                                    m[..., 1, 0] - m[..., 0, 1], 1 + trace], axis=-1))
    quat = candidates[3]
    for i in range(3):
        quat = where((choice == i)[..., None], candidates[i], quat)
    return _normalize(quat)


def _as_rotvec(q: Any, degrees: bool) -> Any:
    q = where((q[..., 3] < 0)[..., None], -q, q)  # w >= 0: the angle in [0, pi]
    angle = 2 * ufuncs.arctan2(_norm(q[..., :3]), q[..., 3])
    angle2 = angle * angle
    small = 2 + angle2 / 12 + 7 * angle2 * angle2 / 2880
    large = angle / ufuncs.sin(where(angle <= 1e-3, creation.ones_like(angle), angle) / 2)
    scale = where(angle <= 1e-3, small, large)
    if degrees:
        scale = scale * (180 / math.pi)
    return scale[..., None] * q[..., :3]


def _from_rotvec(rotvec: Any, degrees: bool) -> Any:
    if degrees:
        rotvec = rotvec * (math.pi / 180)
    angle = _norm(rotvec)
    angle2 = angle * angle
    small = 0.5 - angle2 / 48 + angle2 * angle2 / 3840
    safe = where(angle <= 1e-3, creation.ones_like(angle), angle)
    scale = where(angle <= 1e-3, small, ufuncs.sin(safe / 2) / safe)
    return shapes.concatenate([scale[..., None] * rotvec, ufuncs.cos(angle / 2)[..., None]],
                              axis=-1)


def _elementary(axis: int, angle: Any) -> Any:
    zeros = creation.zeros_like(angle)
    parts = [zeros, zeros, zeros, ufuncs.cos(angle / 2)]
    parts[axis] = ufuncs.sin(angle / 2)
    return shapes.stack(parts, axis=-1)


def _parse_seq(api: str, seq: Any, exact_three: bool) -> tuple[list[int], bool]:
    if not isinstance(seq, str) or not 1 <= len(seq) <= 3 or (exact_three and len(seq) != 3):
        need = "3" if exact_three else "1 to 3"
        raise NumbaxValueError(
            f"numbax.scipy.spatial.transform.Rotation.{api}: seq is {seq!r}, expected a string "
            f"of {need} axes from 'xyz' (extrinsic) or 'XYZ' (intrinsic).")
    intrinsic = re.match(r"^[XYZ]{1,3}$", seq) is not None
    extrinsic = re.match(r"^[xyz]{1,3}$", seq) is not None
    if not (intrinsic or extrinsic):
        raise NumbaxValueError(
            f"numbax.scipy.spatial.transform.Rotation.{api}: seq is {seq!r}; its axes must "
            "all come from 'xyz' or all from 'XYZ'.")
    if any(seq[i] == seq[i + 1] for i in range(len(seq) - 1)):
        raise NumbaxValueError(
            f"numbax.scipy.spatial.transform.Rotation.{api}: seq is {seq!r}; consecutive axes "
            "must differ.")
    return [_AXIS[c] for c in seq.lower()], intrinsic


def _euler_from_quat(q: Any, axes: list[int], extrinsic: bool, degrees: bool) -> Any:
    """Bernardes & Viollet (2022), "Quaternion to Euler angles conversion: a direct, general
    and computationally efficient method", with JAX's handling of the degenerate cases."""
    first, third = (0, 2) if extrinsic else (2, 0)
    i, j, k = axes if extrinsic else axes[::-1]
    symmetric = i == k
    if symmetric:
        k = 3 - i - j
    sign = (i - j) * (j - k) * (k - i) // 2
    qi, qj, qk, qw = q[..., i], q[..., j], q[..., k], q[..., 3]
    if symmetric:
        a, b, c, d = qw, qi, qj, qk * sign
    else:
        a, b, c, d = qw - qj, qi + qk * sign, qj + qw, qk * sign - qi
    middle = 2 * ufuncs.arctan2(ufuncs.hypot(c, d), ufuncs.hypot(a, b))
    eps = 1e-7
    case = where(ufuncs.abs(middle - math.pi) <= eps, 2, 0)
    case = where(ufuncs.abs(middle) <= eps, 1, case)
    half_sum, half_diff = ufuncs.arctan2(b, a), ufuncs.arctan2(d, c)
    angles = [creation.zeros_like(middle), middle, creation.zeros_like(middle)]
    angles[0] = where(case == 1, 2 * half_sum, 2 * half_diff * (-1 if extrinsic else 1))
    angles[first] = where(case == 0, half_sum - half_diff, angles[first])
    angles[third] = where(case == 0, half_sum + half_diff, angles[third])
    if not symmetric:
        angles[third] = angles[third] * sign
        angles[1] = angles[1] - math.pi / 2
    out = shapes.stack(angles, axis=-1)
    out = (out + math.pi) % (2 * math.pi) - math.pi
    return out * (180 / math.pi) if degrees else out


class Rotation(NamedTuple):
    """Rotations in 3 dimensions, stored as unit quaternions quat (..., 4) in (x, y, z, w)
    order. Build them with the from_* class methods, as in scipy.

    >>> import numpy as np
    >>> r = Rotation.from_rotvec(np.array([0.0, 0.0, np.pi / 2]))
    >>> [round(float(v), 6) for v in r.apply(np.array([1.0, 0.0, 0.0]))]
    [0.0, 1.0, 0.0]
    """

    quat: Any

    @classmethod
    def concatenate(cls, rotations: Sequence[Rotation]) -> Rotation:
        """One Rotation holding all the given ones (single rotations count as one each)."""
        return cls(shapes.concatenate([shapes.atleast_2d(r.quat) for r in rotations]))

    @classmethod
    def from_euler(cls, seq: str, angles: Any, degrees: bool = False) -> Rotation:
        """From Euler angles about the axes of seq: 'xyz' extrinsic, 'XYZ' intrinsic.

        Args:
          seq: 1 to 3 axes.
          angles: (..., len(seq)) angles (a scalar for a single axis).
          degrees: the angles are in degrees.
        """
        axes, intrinsic = _parse_seq("from_euler", seq, exact_three=False)
        angles = shapes.atleast_1d(_asarray("Rotation.from_euler", "angles", angles))
        _check_last("Rotation.from_euler", "angles", angles, len(axes))
        if degrees:
            angles = angles * (math.pi / 180)
        result = _elementary(axes[0], angles[..., 0])
        for idx in range(1, len(axes)):
            quat = _elementary(axes[idx], angles[..., idx])
            result = _compose(result, quat) if intrinsic else _compose(quat, result)
        return cls(result)

    @classmethod
    def from_matrix(cls, matrix: Any) -> Rotation:
        """From rotation matrices (..., 3, 3)."""
        matrix = _asarray("Rotation.from_matrix", "matrix", matrix)
        if matrix.ndim < 2 or matrix.shape[-2:] != (3, 3):
            raise NumbaxValueError(
                f"numbax.scipy.spatial.transform.Rotation.from_matrix: matrix has shape "
                f"{matrix.shape}, expected (..., 3, 3).")
        return cls(_from_matrix(matrix))

    @classmethod
    def from_mrp(cls, mrp: Any) -> Rotation:
        """From modified Rodrigues parameters (..., 3)."""
        mrp = _asarray("Rotation.from_mrp", "mrp", mrp)
        _check_last("Rotation.from_mrp", "mrp", mrp, 3)
        plus_one = reductions.sum(mrp * mrp, axis=-1, keepdims=True) + 1
        return cls(shapes.concatenate([2 * mrp, 2 - plus_one], axis=-1) / plus_one)

    @classmethod
    def from_quat(cls, quat: Any) -> Rotation:
        """From quaternions (..., 4) in (x, y, z, w) order, normalised."""
        quat = _asarray("Rotation.from_quat", "quat", quat)
        _check_last("Rotation.from_quat", "quat", quat, 4)
        return cls(_normalize(quat))

    @classmethod
    def from_rotvec(cls, rotvec: Any, degrees: bool = False) -> Rotation:
        """From rotation vectors (..., 3): the axis scaled by the angle."""
        rotvec = _asarray("Rotation.from_rotvec", "rotvec", rotvec)
        _check_last("Rotation.from_rotvec", "rotvec", rotvec, 3)
        return cls(_from_rotvec(rotvec, degrees))

    @classmethod
    def identity(cls, num: int | None = None, dtype: Any = float) -> Rotation:
        """The identity rotation (num of them when num is given).

        Unlike JAX (which asserts num is None): num gives a stack of identities, as scipy.
        """
        quat = np.array([0.0, 0.0, 0.0, 1.0], dtype=dtype)
        if num is not None:
            quat = np.tile(quat, (int(num), 1))
        return cls(lax_numpy.asarray(quat))

    @classmethod
    def random(cls, random_key: Any, num: int | None = None) -> Rotation:
        """Rotations uniform over SO(3): normalised standard normal quaternions.

        Unlike JAX (which raises NotImplementedError): implemented.
        """
        shape = (4,) if num is None else (int(num), 4)
        return cls(_normalize(nb_random.normal(random_key, shape)))

    def __getitem__(self, indexer: Any) -> Rotation:
        if self.single:
            raise NumbaxTypeError(
                "numbax.scipy.spatial.transform.Rotation: a single rotation is not "
                "subscriptable.")
        return Rotation(self.quat[indexer])

    def __len__(self) -> int:
        if self.single:
            raise NumbaxTypeError(
                "numbax.scipy.spatial.transform.Rotation: a single rotation has no len().")
        return self.quat.shape[0]

    def __mul__(self, other: Rotation) -> Rotation:
        """The composition: (self * other) applies other first."""
        return Rotation.from_quat(_compose(self.quat, other.quat))

    def apply(self, vectors: Any, inverse: bool = False) -> Any:
        """Rotates vectors (..., 3) (by the inverse rotation when inverse)."""
        vectors = _asarray("Rotation.apply", "vectors", vectors)
        _check_last("Rotation.apply", "vectors", vectors, 3)
        matrix = self.as_matrix()
        if inverse:
            matrix = shapes.swapaxes(matrix, -1, -2)
        return matmul(matrix, vectors[..., None])[..., 0]

    def as_euler(self, seq: str, degrees: bool = False) -> Any:
        """Euler angles (..., 3) about the axes of seq ('xyz' extrinsic, 'XYZ' intrinsic)."""
        axes, intrinsic = _parse_seq("as_euler", seq, exact_three=True)
        return _euler_from_quat(self.quat, axes, not intrinsic, degrees)

    def as_matrix(self) -> Any:
        """Rotation matrices (..., 3, 3)."""
        return _as_matrix(self.quat)

    def as_mrp(self) -> Any:
        """Modified Rodrigues parameters (..., 3), of the rotation with angle <= pi."""
        sign = where(self.quat[..., 3] < 0, -1.0, 1.0)
        return (sign / (1 + sign * self.quat[..., 3]))[..., None] * self.quat[..., :3]

    def as_rotvec(self, degrees: bool = False) -> Any:
        """Rotation vectors (..., 3) with angles in [0, pi]."""
        return _as_rotvec(self.quat, degrees)

    def as_quat(self, canonical: bool = False, scalar_first: bool = False) -> Any:
        """The quaternions (..., 4); canonical picks w >= 0 (ties broken by x, y, z);
        scalar_first gives (w, x, y, z)."""
        quat = self.quat
        if canonical:
            neg, zero = quat < 0, quat == 0
            flip = (neg[..., 3] | (zero[..., 3] & neg[..., 0])
                    | (zero[..., 3] & zero[..., 0] & neg[..., 1])
                    | (zero[..., 3] & zero[..., 0] & zero[..., 1] & neg[..., 2]))
            quat = where(flip[..., None], -quat, quat)
        if scalar_first:
            quat = flips.roll(quat, shift=1, axis=-1)
        return quat

    def inv(self) -> Rotation:
        """The inverse rotations."""
        return Rotation(self.quat * np.array([-1.0, -1.0, -1.0, 1.0], dtype=self.quat.dtype))

    def magnitude(self) -> Any:
        """The rotation angles in [0, pi]."""
        return 2 * ufuncs.arctan2(_norm(self.quat[..., :3]), ufuncs.abs(self.quat[..., 3]))

    def mean(self, weights: Any = None) -> Rotation:
        """The (weighted) chordal L2 mean: the top eigenvector of sum_i w_i q_i q_i^T."""
        n = len(self)
        if weights is None:
            w = creation.ones((n,), dtype=self.quat.dtype)
        else:
            w = lax_numpy.asarray(weights, dtype=self.quat.dtype)
        if w.ndim != 1 or w.shape[0] != n:
            raise NumbaxValueError(
                f"numbax.scipy.spatial.transform.Rotation.mean: weights has shape {w.shape}, "
                f"expected ({n},), one weight per rotation.")
        k = matmul(w[None, :] * self.quat.T, self.quat)
        _, vectors = linalg.eigh(k)
        return Rotation(vectors[:, -1])

    @property
    def single(self) -> bool:
        """Whether this holds one rotation (quat of shape (4,))."""
        return self.quat.ndim == 1


class Slerp(NamedTuple):
    """Spherical linear interpolation between rotations at increasing times; build it with
    Slerp.init(times, rotations), then call it at new times.

    >>> import numpy as np
    >>> s = Slerp.init(np.array([0.0, 1.0]), Rotation.from_rotvec(np.array(
    ...     [[0.0, 0.0, 0.0], [0.0, 0.0, 1.0]])))
    >>> [round(float(v), 6) for v in s(0.25).as_rotvec()]
    [0.0, 0.0, 0.25]
    """

    times: Any
    timedelta: Any
    rotations: Rotation
    rotvecs: Any

    @classmethod
    def init(cls, times: Any, rotations: Rotation) -> Slerp:
        """The interpolator of `rotations` (at least 2) at 1-D increasing `times`."""
        if not isinstance(rotations, Rotation):
            raise NumbaxTypeError(
                "numbax.scipy.spatial.transform.Slerp.init: rotations has type "
                f"{type(rotations).__name__}, expected a Rotation.")
        if rotations.single or len(rotations) == 1:
            raise NumbaxValueError(
                "numbax.scipy.spatial.transform.Slerp.init: rotations must hold at least 2 "
                "rotations.")
        times = lax_numpy.asarray(times, dtype=rotations.quat.dtype)
        if times.ndim != 1 or times.shape[0] != len(rotations):
            raise NumbaxValueError(
                f"numbax.scipy.spatial.transform.Slerp.init: times has shape {times.shape}, "
                f"expected ({len(rotations)},), one time per rotation.")
        start = Rotation(rotations.quat[:-1])
        rotvecs = (start.inv() * Rotation(rotations.quat[1:])).as_rotvec()
        return cls(times=times, timedelta=times[1:] - times[:-1], rotations=start,
                   rotvecs=rotvecs)

    def __call__(self, times: Any) -> Rotation:
        """The interpolated rotations at `times` (a scalar gives a single rotation)."""
        times = lax_numpy.asarray(times, dtype=self.times.dtype)
        if times.ndim > 1:
            raise NumbaxValueError(
                f"numbax.scipy.spatial.transform.Slerp: times has shape {times.shape}, "
                "expected a scalar or a 1-D array.")
        single = times.ndim == 0
        times = shapes.atleast_1d(times)
        index = ufuncs.maximum(sorting.searchsorted(self.times, times) - 1, 0)
        alpha = (times - self.times[index]) / self.timedelta[index]
        step = Rotation.from_rotvec(self.rotvecs[index] * alpha[:, None])
        result = self.rotations[index] * step
        return result[0] if single else result
