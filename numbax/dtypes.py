"""numbax.dtypes: dtype utilities, as jax.dtypes.

bfloat16 is ml_dtypes' numpy dtype, as in JAX.
"""
from numbax._src import dtypes as _dtypes
from numbax._src.dtypes import (  # noqa: F401
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

bfloat16 = _dtypes.bfloat16.type
