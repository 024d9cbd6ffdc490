"""Records JAX's convolution, windowed-reduction, image and stax outputs (and gradients) into
conv_jax_reference.npz (run once, with jax installed):

    /work/jaxenv/bin/python tests/data/make_conv_reference.py

Inputs come from a seeded numpy generator and are stored next to the outputs, so the numbax
tests (tests/lax/test_convolution.py, test_windowed.py, tests/test_image.py,
tests/test_stax_conv.py) read the npz only and run without jax. float64 throughout
(jax_enable_x64), except where a key says f32.
"""
import pathlib

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
from jax import image, lax  # noqa: E402
from jax.example_libraries import stax  # noqa: E402

OUT = pathlib.Path(__file__).with_name("conv_jax_reference.npz")
RNG = np.random.default_rng(2024)

# name: (lhs shape, rhs shape, kwargs of conv_general_dilated)
CONV_CASES = {
    "nchw_same": ((2, 3, 6, 5), (4, 3, 3, 2), dict(window_strides=(1, 1), padding="SAME")),
    "nhwc_strided": ((2, 7, 6, 3), (3, 2, 3, 4), dict(
        window_strides=(2, 1), padding=((1, 2), (0, -1)), lhs_dilation=(1, 2),
        rhs_dilation=(2, 1), dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    "feature_groups": ((2, 4, 9), (6, 2, 3), dict(
        window_strides=(2,), padding="VALID", rhs_dilation=(2,), feature_group_count=2)),
    "depthwise": ((2, 9, 4), (3, 1, 8), dict(
        window_strides=(1,), padding="SAME_LOWER", dimension_numbers=("NWC", "WIO", "NWC"),
        feature_group_count=4)),
    "batch_groups": ((4, 3, 9), (6, 3, 2), dict(
        window_strides=(1,), padding=((2, 1),), lhs_dilation=(3,), batch_group_count=2)),
    "batch_groups_odd_layout": ((2, 6, 5), (2, 6, 2), dict(
        window_strides=(2,), padding=((1, 0),), dimension_numbers=("CNW", "WOI", "WNC"),
        batch_group_count=3)),
    "conv3d": ((1, 5, 4, 3, 2), (2, 3, 2, 2, 3), dict(
        window_strides=(1, 2, 1), padding="SAME", dimension_numbers=("NDHWC", "DHWIO",
                                                                     "NCDHW"))),
}

TRANSPOSE_CASES = {
    "same_s2": ((1, 5, 4, 2), (3, 3, 2, 3), dict(strides=(2, 2), padding="SAME")),
    "valid_s3": ((2, 4, 3), (2, 3, 2), dict(strides=(3,), padding="VALID")),
    "explicit": ((1, 4, 4, 1), (3, 2, 1, 2), dict(strides=(2, 1), padding=((1, 2), (0, 1)))),
    "transpose_kernel": ((1, 4, 4, 2), (3, 3, 3, 2), dict(strides=(2, 2), padding="SAME",
                                                          transpose_kernel=True)),
    "consistent": ((1, 5, 3), (3, 3, 2), dict(strides=(2,), padding=((1, 1),),
                                              rhs_dilation=(2,),
                                              use_consistent_padding=True)),
}

WINDOW_CASES = {
    "max_pool": ((2, 6, 6, 3), dict(window_dimensions=(1, 2, 2, 1),
                                    window_strides=(1, 2, 2, 1), padding="VALID")),
    "max_pool_same": ((1, 5, 7, 2), dict(window_dimensions=(1, 3, 3, 1),
                                         window_strides=(1, 2, 2, 1), padding="SAME")),
    "dilated": ((3, 8), dict(window_dimensions=(2, 3), window_strides=(1, 2),
                             padding=((1, 0), (2, 1)), base_dilation=(2, 1),
                             window_dilation=(1, 2))),
}


def _conv_case(name, lhs_shape, rhs_shape, kwargs, out):
    lhs, rhs = RNG.normal(size=lhs_shape), RNG.normal(size=rhs_shape)
    fn = lambda x, w: lax.conv_general_dilated(x, w, **kwargs)  # noqa: E731
    y, pull = jax.vjp(fn, lhs, rhs)
    ct = RNG.normal(size=y.shape)
    g_lhs, g_rhs = pull(ct)
    out.update({f"conv/{name}/lhs": lhs, f"conv/{name}/rhs": rhs, f"conv/{name}/out": y,
                f"conv/{name}/ct": ct, f"conv/{name}/g_lhs": g_lhs, f"conv/{name}/g_rhs": g_rhs})


def record_convolutions(out: dict) -> None:
    for name, (ls, rs, kwargs) in CONV_CASES.items():
        _conv_case(name, ls, rs, kwargs, out)
    for name, (ls, rs, kwargs) in TRANSPOSE_CASES.items():
        lhs, rhs = RNG.normal(size=ls), RNG.normal(size=rs)
        out[f"conv_transpose/{name}/lhs"], out[f"conv_transpose/{name}/rhs"] = lhs, rhs
        out[f"conv_transpose/{name}/out"] = lax.conv_transpose(lhs, rhs, **kwargs)
    x = RNG.normal(size=(2, 3, 5, 4))
    out["patches/x"] = x
    out["patches/out"] = lax.conv_general_dilated_patches(
        x, (2, 3), (1, 2), "SAME", rhs_dilation=(2, 1))
    xl = RNG.normal(size=(2, 6, 5, 3))
    dn = ("NHWC", "HWIO", "NHWC")
    out_shape = lax.conv_general_dilated_patches(xl, (3, 2), (1, 1), "VALID",
                                                 dimension_numbers=dn).shape
    wl = RNG.normal(size=(out_shape[1], out_shape[2], 3 * 3 * 2, 4))
    out["local/x"], out["local/w"] = xl, wl
    out["local/out"] = lax.conv_general_dilated_local(xl, wl, (1, 1), "VALID", (3, 2),
                                                      dimension_numbers=dn)


SHAPE_CASES = [  # (lhs shape, rhs shape, strides, padding, dimension numbers)
    ((2, 9, 8, 3), (3, 2, 3, 5), (2, 3), "SAME", ("NHWC", "HWIO", "NHWC")),
    ((2, 3, 9, 8), (5, 3, 3, 2), (1, 2), "VALID", ("NCHW", "OIHW", "NCHW")),
    ((4, 7, 2), (3, 2, 6), (3,), ((1, 2),), ("NWC", "WIO", "NWC")),
]


def record_shapes(out: dict) -> None:
    for i, (ls, rs, strides, padding, dn) in enumerate(SHAPE_CASES):
        out[f"shape/{i}/general"] = lax.conv_general_shape_tuple(ls, rs, strides, padding, dn)
        out[f"shape/{i}/transpose"] = lax.conv_transpose_shape_tuple(ls, rs, strides, padding,
                                                                     dn)
        perms = lax.conv_general_permutations(dn)
        out[f"shape/{i}/perms"] = np.concatenate(perms)
        lhs_t, rhs_t = np.take(ls, perms[0]), np.take(rs, perms[1])
        out[f"shape/{i}/canonical"] = lax.conv_shape_tuple(lhs_t, rhs_t, strides, padding)
        if isinstance(padding, str):
            for kind in ("SAME", "SAME_LOWER", "VALID"):
                out[f"shape/{i}/pads_{kind}"] = np.array(
                    lax.padtype_to_pads(lhs_t[2:], rhs_t[2:], strides, kind))
        out[f"shape/{i}/window"] = lax.reduce_window_shape_tuple(
            ls, (1, *rs[:-2], 1), (1, *strides, 1), ((0, 0),) * len(ls), (1, 2, *(1,) * (
                len(ls) - 2)), None)


def record_windows(out: dict) -> None:
    for name, (shape, kwargs) in WINDOW_CASES.items():
        x = RNG.normal(size=shape)
        out[f"window/{name}/x"] = x
        for kind, init, op in (("sum", 0.0, lax.add), ("max", -np.inf, lax.max),
                               ("min", np.inf, lax.min), ("prod", 1.0, lax.mul)):
            fn = lambda v, init=init, op=op: lax.reduce_window(v, init, op, **kwargs)  # noqa
            y = fn(x)
            out[f"window/{name}/{kind}"] = y
            if kind in ("sum", "max", "min") and all(
                    d == 1 for d in kwargs.get("window_dilation", (1,) * x.ndim)):
                ct = RNG.normal(size=y.shape)
                out[f"window/{name}/{kind}_ct"] = ct
                out[f"window/{name}/{kind}_grad"] = jax.vjp(fn, x)[1](ct)[0]
            t = RNG.normal(size=x.shape)
            out[f"window/{name}/{kind}_t"] = t
            out[f"window/{name}/{kind}_jvp"] = jax.jvp(fn, (x,), (t,))[1]
    # max-pool gradient with ties: JAX's choice among equal elements
    ties = np.round(RNG.normal(size=(1, 6, 6, 2)))
    pool = lambda v: lax.reduce_window(v, -np.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1),  # noqa
                                       "SAME")
    out["window/ties/x"] = ties
    out["window/ties/grad"] = jax.grad(lambda v: jnp.sum(pool(v) ** 2))(ties)


# name: (layer, input shape); params are drawn with numpy in the shapes JAX's init_fun gives
STAX_LAYERS = {
    "general_conv": (lambda: stax.GeneralConv(("NCHW", "OIHW", "NCHW"), 3, (3, 2), (2, 1),
                                              "SAME"), (2, 2, 7, 6)),
    "conv_transpose": (lambda: stax.ConvTranspose(3, (3, 3), (2, 2), "SAME"), (2, 4, 5, 2)),
    "conv1d_transpose": (lambda: stax.Conv1DTranspose(2, (4,), (3,), "VALID"), (2, 5, 3)),
    "general_conv_transpose": (lambda: stax.GeneralConvTranspose(
        ("NCH", "IOH", "NCH"), 2, (3,), (2,), "SAME"), (2, 3, 6)),
    "max_pool": (lambda: stax.MaxPool((2, 3), (2, 1), "SAME"), (2, 5, 7, 3)),
    "sum_pool": (lambda: stax.SumPool((2, 2), None, "VALID", spec="NCHW"), (2, 3, 5, 4)),
    "avg_pool": (lambda: stax.AvgPool((3, 3), (2, 2), "SAME"), (2, 6, 5, 2)),
}


def convnet():
    """JAX's MNIST convnet, narrowed (8/16/32 units) to keep the recorded weights small."""
    return stax.serial(stax.Conv(8, (3, 3)), stax.Relu, stax.Conv(16, (3, 3)), stax.Relu,
                       stax.MaxPool((2, 2), (2, 2)), stax.Flatten, stax.Dense(32), stax.Relu,
                       stax.Dense(10), stax.LogSoftmax)


def record_stax(out: dict) -> None:
    key = jax.random.PRNGKey(0)
    for name, (make, shape) in STAX_LAYERS.items():
        init, apply = make()
        out_shape, params = init(key, shape)
        params = tuple(RNG.normal(size=np.shape(p)) for p in params)
        x = RNG.normal(size=shape)
        out[f"stax/{name}/out_shape"] = np.array(out_shape)
        out[f"stax/{name}/x"] = x
        for i, p in enumerate(params):
            out[f"stax/{name}/param{i}"] = p
        out[f"stax/{name}/out"] = apply(params, x)
    init, apply = convnet()
    out_shape, params = init(key, (-1, 8, 8, 1))
    params = [tuple(0.3 * RNG.normal(size=np.shape(p)) for p in layer) for layer in params]
    x = RNG.normal(size=(4, 8, 8, 1))
    labels = np.eye(10)[RNG.integers(0, 10, size=4)]

    def loss(ps):
        return -jnp.mean(jnp.sum(apply(ps, x) * labels, axis=1))

    out["convnet/out_shape"] = np.array(out_shape)
    out["convnet/x"], out["convnet/labels"] = x, labels
    out["convnet/logits"] = apply(params, x)
    grads = jax.grad(loss)(params)
    for i, (layer, glayer) in enumerate(zip(params, grads)):
        for j, (p, g) in enumerate(zip(layer, glayer)):
            out[f"convnet/param{i}_{j}"], out[f"convnet/grad{i}_{j}"] = p, g


RESIZE_METHODS = ["nearest", "linear", "lanczos3", "lanczos5", "cubic", "cubic-pytorch", "area"]
RESIZE_SHAPES = [(2, 11, 4, 3), (2, 3, 9, 3)]
TRANSLATE_METHODS = ["linear", "cubic", "lanczos3", "area", "cubic-pytorch"]


def record_image(out: dict) -> None:
    x = RNG.normal(size=(2, 7, 6, 3))
    out["image/x"] = x
    for method in RESIZE_METHODS:
        for i, shape in enumerate(RESIZE_SHAPES):
            for antialias in (True, False):
                out[f"image/resize/{method}/{i}/{int(antialias)}"] = image.resize(
                    x, shape, method, antialias)
    scale, translation = np.array([1.3, 0.7]), np.array([0.5, -1.2])
    for method in TRANSLATE_METHODS:
        for antialias in (True, False):
            out[f"image/translate/{method}/{int(antialias)}"] = image.scale_and_translate(
                x, (2, 8, 5, 3), (1, 2), scale, translation, method, antialias)
    ct = RNG.normal(size=(2, 8, 5, 3))
    out["image/translate_ct"] = ct
    for method in ("linear", "cubic"):
        g = jax.grad(lambda s, t, m=method: jnp.sum(ct * image.scale_and_translate(
            x, (2, 8, 5, 3), (1, 2), s, t, m)), argnums=(0, 1))(scale, translation)
        out[f"image/translate_grad/{method}/scale"] = g[0]
        out[f"image/translate_grad/{method}/translation"] = g[1]
    ints = RNG.integers(0, 255, size=(5, 4)).astype(np.uint8)
    out["image/ints"] = ints
    out["image/ints_resized"] = image.resize(ints, (8, 3), "bilinear")
    ramp = np.arange(7.0)
    for n in (3, 5, 10, 13):
        out[f"image/nearest/{n}"] = image.resize(ramp, (n,), "nearest")


def main() -> None:
    out: dict = {}
    record_convolutions(out)
    record_windows(out)
    record_shapes(out)
    record_stax(out)
    record_image(out)
    np.savez_compressed(OUT, jax_version=jax.__version__,
                        **{k: np.asarray(v) for k, v in out.items()})
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes, {len(out)} arrays)")


if __name__ == "__main__":
    main()
