"""Matrix rows for conv_general_dilated: layouts, strides, padding (negative too), both
dilations, feature and batch groups, depthwise with a channel multiplier, 3-D; float64 rows
are differentiated, to second order. Under jit each row runs one of the compiled CPU forms
(output tiles, window lines, the direct depthwise loop)."""
from __future__ import annotations

import numpy as np

from numbax import lax
from tests.lax.matrix_cases import Case

RNG = np.random.default_rng(18)


def _normal(*shape, dtype=np.float64):
    return RNG.normal(size=shape).astype(dtype)


def cases() -> dict[str, list[Case]]:
    def plain(x, w):
        return lax.conv_general_dilated(x, w, (1, 1), "SAME")

    def strided(x, w):
        return lax.conv_general_dilated(x, w, (2, 1), ((1, 2), (0, -1)), lhs_dilation=(1, 2),
                                        rhs_dilation=(2, 1),
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def grouped(x, w):
        return lax.conv_general_dilated(x, w, (2,), "VALID", rhs_dilation=(2,),
                                        feature_group_count=2)

    def batch_grouped(x, w):
        return lax.conv_general_dilated(x, w, (1,), ((2, 1),), lhs_dilation=(3,),
                                        batch_group_count=2)

    def depthwise(x, w):
        return lax.conv_general_dilated(x, w, (1,), "SAME", rhs_dilation=(2,),
                                        dimension_numbers=("NWC", "WIO", "NWC"),
                                        feature_group_count=4)

    def conv3d(x, w):
        return lax.conv_general_dilated(x, w, (1, 2, 1), ((1, 0), (0, 1), (1, 1)),
                                        dimension_numbers=("NDHWC", "DHWIO", "NCDHW"))

    return {"conv_general_dilated": [
        Case(plain, (_normal(2, 3, 5, 4), _normal(4, 3, 3, 2)), (0, 1)),
        Case(strided, (_normal(2, 7, 6, 3), _normal(3, 2, 3, 4)), (0, 1)),
        Case(grouped, (_normal(2, 4, 9), _normal(6, 2, 3)), (0, 1)),
        Case(batch_grouped, (_normal(4, 3, 7), _normal(6, 3, 2)), (0, 1)),
        Case(plain, (_normal(2, 3, 5, 4, dtype=np.float32), _normal(4, 3, 3, 2,
                                                                     dtype=np.float32))),
        Case(depthwise, (_normal(2, 7, 4), _normal(3, 1, 8)), (0, 1)),
        Case(conv3d, (_normal(1, 3, 4, 3, 2), _normal(2, 2, 2, 2, 3)), (0, 1)),
    ]}
