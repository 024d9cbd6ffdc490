"""numbax.image vs JAX's recorded outputs (tests/data/conv_jax_reference.npz): resize with every
method up and down, with and without antialiasing; scale_and_translate and its gradients with
respect to scale and translation; nearest-neighbour indexing; jit; bad input."""
import doctest
import pathlib

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import image
from numbax._src import image as image_module
from numbax.errors import NumbaxTypeError, NumbaxValueError
from numbax.test_util import check_grads

REF = np.load(pathlib.Path(__file__).parent / "data" / "conv_jax_reference.npz")
X = REF["image/x"]
METHODS = ["nearest", "linear", "lanczos3", "lanczos5", "cubic", "cubic-pytorch", "area"]
SHAPES = [(2, 11, 4, 3), (2, 3, 9, 3)]
SCALE, TRANSLATION = np.array([1.3, 0.7]), np.array([0.5, -1.2])


def close(got, want, tol=1e-12):
    got = np.asarray(got)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("method", METHODS)
def test_resize_matches_jax(method):
    for i, shape in enumerate(SHAPES):
        for antialias in (True, False):
            close(image.resize(X, shape, method, antialias),
                  REF[f"image/resize/{method}/{i}/{int(antialias)}"])


@pytest.mark.parametrize("method", ["linear", "cubic", "lanczos3", "area", "cubic-pytorch"])
def test_scale_and_translate_matches_jax(method):
    for antialias in (True, False):
        close(image.scale_and_translate(X, (2, 8, 5, 3), (1, 2), SCALE, TRANSLATION, method,
                                        antialias),
              REF[f"image/translate/{method}/{int(antialias)}"])


@pytest.mark.parametrize("method", ["linear", "cubic"])
def test_gradients_wrt_scale_and_translation_match_jax(method):
    ct = REF["image/translate_ct"]
    grads = numbax.grad(lambda s, t: jnp.sum(ct * image.scale_and_translate(
        X, (2, 8, 5, 3), (1, 2), s, t, method)), argnums=(0, 1))(SCALE, TRANSLATION)
    close(grads[0], REF[f"image/translate_grad/{method}/scale"], 1e-10)
    close(grads[1], REF[f"image/translate_grad/{method}/translation"], 1e-10)


def test_integer_images_and_nearest_indices():
    got = image.resize(REF["image/ints"], (8, 3), "bilinear")
    assert got.dtype == np.float32  # as JAX: float32 for integers up to 32 bits, x64 or not
    np.testing.assert_allclose(np.asarray(got), REF["image/ints_resized"], rtol=1e-6)
    ramp = np.arange(7.0)
    for n in (3, 5, 10, 13):
        close(image.resize(ramp, (n,), image.ResizeMethod.NEAREST), REF[f"image/nearest/{n}"])


def test_identity_and_linear_interpolation_by_hand():
    close(image.resize(X, X.shape, "lanczos5"), X)
    # linear upsampling by two: pixel centres at (j + 0.5) / 2 - 0.5, edges clamped
    row = np.array([1.0, 3.0, 7.0])
    want = np.interp((np.arange(6) + 0.5) / 2 - 0.5, np.arange(3), row)
    close(image.resize(row, (6,), "linear"), want)


def test_gradients_wrt_the_image_and_jit():
    check_grads(lambda x: image.resize(x, (2, 5, 4, 3), "cubic"), (X,), order=2)
    f = numbax.jit(lambda x: image.resize(x, (2, 3, 9, 3), "lanczos3", False))
    close(f(X), REF["image/resize/lanczos3/1/0"])
    batched = numbax.vmap(lambda x: image.resize(x, (11, 4, 3), "linear"))(X)
    close(batched, REF["image/resize/linear/0/1"])


def test_method_names():
    assert image.ResizeMethod.from_string("bicubic") is image.ResizeMethod.CUBIC
    assert image.ResizeMethod.from_string("trilinear") is image.ResizeMethod.LINEAR
    assert [m.name for m in image.ResizeMethod] == [
        "NEAREST", "LINEAR", "LANCZOS3", "LANCZOS5", "CUBIC", "CUBIC_PYTORCH", "AREA"]


def test_bad_inputs():
    with pytest.raises(NumbaxValueError, match="method"):
        image.resize(X, (2, 3, 3, 3), "sinc")
    with pytest.raises(NumbaxTypeError, match="method"):
        image.resize(X, (2, 3, 3, 3), 3)
    with pytest.raises(NumbaxValueError, match="shape"):
        image.resize(X, (3, 3), "linear")
    with pytest.raises(NumbaxTypeError, match="shape"):
        image.resize(X, "big", "linear")
    with pytest.raises(NumbaxValueError, match="NEAREST"):
        image.scale_and_translate(X, X.shape, (1,), [1.0], [0.0], "nearest")
    with pytest.raises(NumbaxValueError, match="scale has shape"):
        image.scale_and_translate(X, X.shape, (1, 2), [1.0], [0.0, 0.0], "linear")
    with pytest.raises(NumbaxValueError, match="not in spatial_dims"):
        image.scale_and_translate(X, (2, 7, 6, 4), (1,), [1.0], [0.0], "linear")
    with pytest.raises(NumbaxValueError, match="spatial_dims"):
        image.scale_and_translate(X, X.shape, (4,), [1.0], [0.0], "linear")


def test_doctests():
    result = doctest.testmod(image_module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
