"""numbax.dtypes: dtype utilities, as jax.dtypes.

bfloat16 exists when the optional package ml_dtypes is installed (numbax arrays cannot hold it:
numbax computes in float16/32/64; convert with astype(numpy.float32)).
"""
from numbax._src.dtypes import (  # noqa: F401
    _ml_dtypes,
    extended,
    float0,
    issubdtype,
    itemsize_bits,
    prng_key,
    scalar_type_of,
)
from numbax._src.dtypes import public_canonicalize_dtype as canonicalize_dtype  # noqa: F401
from numbax._src.dtypes import public_finfo as finfo  # noqa: F401
from numbax._src.dtypes import public_iinfo as iinfo  # noqa: F401
from numbax._src.dtypes import public_result_type as result_type  # noqa: F401
from numbax._src.errors import TypePromotionError  # noqa: F401

if _ml_dtypes is not None:
    bfloat16 = _ml_dtypes.bfloat16
del _ml_dtypes
