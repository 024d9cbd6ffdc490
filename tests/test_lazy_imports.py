"""scipy's special and LAPACK modules and the FFT library (ducc0, or scipy.fft without it) are
imported at numbax's first use of them, not with numbax (every virtual-device worker imports
numbax), and then give scipy's results."""
import json
import subprocess
import sys

import numpy as np
import scipy.special

from numbax._src.lax import fft_library as fft_library_module
from numbax._src.lazy_module import lazy


def _modules_after(code: str) -> dict:
    script = f"import json, sys\n{code}\nprint(json.dumps({{m: m in sys.modules for m in " \
             "['scipy.special', 'scipy.fft', 'ducc0']}))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, timeout=300)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_numbax_leaves_scipy_special_and_fft_unimported_until_used():
    assert _modules_after("import numbax") == {"scipy.special": False, "scipy.fft": False,
                                               "ducc0": False}
    used = _modules_after("import numbax, numpy as np\n"
                          "numbax.lax.erf(np.float32(0.5)); numbax.numpy.fft.fft(np.ones(4))")
    fft_library = "ducc0" if fft_library_module._ducc0() else "scipy.fft"
    assert used["scipy.special"] and used[fft_library]


def test_a_lazy_module_reads_the_real_modules_attributes():
    special = lazy("scipy.special")
    x = np.linspace(-3, 3, 7)
    np.testing.assert_array_equal(special.erf(x), scipy.special.erf(x))
    assert special.gammaln is scipy.special.gammaln  # copied over after the first read
    assert "gammaln" in vars(special)
