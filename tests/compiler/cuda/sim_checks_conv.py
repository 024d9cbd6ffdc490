"""Checks of conv_general_dilated on CUDA (cuda/kernels/conv.py: im2col patches, then one product
through CudaDriver.product) under the simulator, and on a real card through sim_checks.py.

The truth is `_direct`, the convolution's definition summed tap by tap in numpy (canonical
NC.../OI... layouts; other layouts are transposes of it), and for gradients the bilinearity of
the convolution. Shapes are tiny: every simulated thread is a Python thread."""
from __future__ import annotations

import contextlib
import itertools
import re

import numpy as np

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src.compiler.cuda.runtime import cublas, cudnn
from numbax._src.compiler.cuda.runtime import memory as cuda_runtime
from tests.compiler.cuda.sim_checks import check, close, gjit
from tests.compiler.cuda.sim_checks_cublas import cublas_model
from tests.compiler.cuda.sim_support import library_model

RNG = np.random.default_rng(18)
HI = lax.Precision.HIGHEST  # float32 checks in full float32 (a card's default is TF32)


def _direct(x, w, strides, padding, lhs_dilation=None, rhs_dilation=None, fgc=1, bgc=1):
    """x (N, C, S...) * w (O, I, K...) by the definition: each output position sums, over the
    window taps that land on an input element (not padding, not a dilation hole), the channel
    product of that element with the tap; group g reads batch block g // fgc and channel
    block g % fgc and writes output channels g*o:(g+1)*o."""
    d = x.ndim - 2
    ld, rd = lhs_dilation or (1,) * d, rhs_dilation or (1,) * d
    groups, i_f = fgc * bgc, w.shape[1]
    n, o = x.shape[0] // bgc, w.shape[0] // groups
    sizes = [(s - 1) * dil + 1 + lo + hi for s, dil, (lo, hi) in zip(x.shape[2:], ld, padding)]
    out_sp = [max(0, (p - (k - 1) * r - 1) // st + 1)
              for p, k, r, st in zip(sizes, w.shape[2:], rd, strides)]
    out = np.zeros((n, w.shape[0], *out_sp), np.result_type(x, w))
    for pos in np.ndindex(*out_sp):
        for tap in np.ndindex(*w.shape[2:]):
            q = [p * st + t * r - lo for p, st, t, r, (lo, _) in zip(pos, strides, tap, rd,
                                                                   padding)]
            if any(a % dil or not 0 <= a // dil < s for a, dil, s in zip(q, ld, x.shape[2:])):
                continue
            at = tuple(a // dil for a, dil in zip(q, ld))
            for g in range(groups):
                gb, gf = divmod(g, fgc)
                xs = x[gb * n:(gb + 1) * n, gf * i_f:(gf + 1) * i_f][(..., *at)]
                ws = w[(slice(g * o, (g + 1) * o), slice(None), *tap)]
                out[(slice(None), slice(g * o, (g + 1) * o), *pos)] += xs @ ws.T
    return out


def _perm(spec: str, canonical: str) -> tuple[int, ...]:
    """The transpose taking an array in `canonical` letter order to `spec`'s order."""
    return tuple(canonical.index(c) for c in spec)


def _on_gpu(f, *args, gather=True) -> None:
    """f compiles to the CUDA convolution (no host round trip) and, when `gather`, with the
    im2col patch kernel."""
    text = f.lower(*args).as_text()
    assert "rt.on_host" not in text, text[-2000:]
    if cudnn.available() and "dn.conv(" in text:
        return  # cuDNN took it (a card with cudnn-frontend): checked in conv_through_cudnn
    assert ("_im2col" in text) == gather, text[-2000:]


@contextlib.contextmanager
def _without_cudnn():
    """cuDNN left out (on a card that has it too): checks of the im2col path itself."""
    saved = cudnn.available
    cudnn.available = lambda: False
    try:
        yield
    finally:
        cudnn.available = saved


@check
def conv_2d_layouts_padding_strides():
    x = RNG.normal(size=(2, 2, 4, 3))  # NCHW
    w = RNG.normal(size=(3, 2, 3, 2))  # OIHW
    cases = [  # (lhs, rhs, out specs), strides, padding (as explicit pairs)
        (("NHWC", "HWIO", "NHWC"), (1, 1), ((1, 1), (0, 1))),  # SAME, channels-last
        (("NCHW", "OIHW", "NCHW"), (2, 2), ((0, 0), (0, 0))),  # VALID, stride 2
        (("NCHW", "OIHW", "NCHW"), (2, 1), ((1, 2), (-1, 1))),  # explicit, negative
        (("NHWC", "OIHW", "NCHW"), (1, 2), ((1, 1), (1, 0))),  # mixed layouts
        (("NCHW", "HWOI", "NHWC"), (1, 1), ((0, 1), (1, 1))),  # a kernel transposed first
        (("CHWN", "IOHW", "HWCN"), (2, 1), ((1, 0), (0, 0))),  # feature before batch
    ]
    for (ls, rs, os_), strides, pads in cases:
        want = _direct(x, w, strides, pads).transpose(_perm(os_, "NCHW"))
        xs, ws = x.transpose(_perm(ls, "NCHW")), w.transpose(_perm(rs, "OIHW"))
        for dt in (np.float64, np.float32)[:2 if ls == "NHWC" else 1]:
            f = gjit(lambda a, b, s=strides, p=pads, dn=(ls, rs, os_): lax.conv_general_dilated(
                a, b, s, p, dimension_numbers=dn, precision=HI))
            args = (xs.astype(dt), ws.astype(dt))
            try:
                close(f(*args), want.astype(dt), rtol=1e-5 if dt == np.float32 else 1e-12,
                      atol=1e-5 if dt == np.float32 else 1e-12)
            except AssertionError as e:
                raise AssertionError(f"{(ls, rs, os_)} {np.dtype(dt).name}: {e}") from None
        _on_gpu(f, *args)
    # the padding strings resolve to the same explicit pairs
    same = gjit(lambda a, b: lax.conv_general_dilated(a, b, (2, 2), "SAME", precision=HI))
    close(same(x, w), _direct(x, w, (2, 2), ((0, 1), (0, 1))), rtol=1e-12, atol=1e-12)


@check
def conv_1d_3d_and_dilations():
    x1, w1 = RNG.normal(size=(2, 3, 7)), RNG.normal(size=(2, 3, 3))
    atrous = gjit(lambda a, b: lax.conv_general_dilated(a, b, (1,), ((2, 2),),
                                                        rhs_dilation=(2,)))
    close(atrous(x1, w1), _direct(x1, w1, (1,), ((2, 2),), rhs_dilation=(2,)),
          rtol=1e-12, atol=1e-12)
    # lhs dilation: zeros between input elements, as conv_transpose builds it
    holes = gjit(lambda a, b: lax.conv_general_dilated(a, b, (2,), ((2, -1),),
                                                       lhs_dilation=(3,), rhs_dilation=(2,)))
    close(holes(x1, w1), _direct(x1, w1, (2,), ((2, -1),), (3,), (2,)), rtol=1e-12, atol=1e-12)
    _on_gpu(holes, x1, w1)
    xt, wt = RNG.normal(size=(1, 3, 4, 3)), RNG.normal(size=(2, 2, 3, 2))  # NHWC, HWIO
    tconv = gjit(lambda a, b: lax.conv_transpose(a, b, (2, 2), "SAME",
                                                 dimension_numbers=("NHWC", "HWIO", "NHWC")))
    want = np.asarray(lax.conv_transpose(xt, wt, (2, 2), "SAME",
                                         dimension_numbers=("NHWC", "HWIO", "NHWC")))
    pads = ((1, 1), (1, 1))  # conv_transpose's SAME: k + s - 2 in all, k - 1 first (s > k - 1)
    direct = _direct(xt.transpose(0, 3, 1, 2), wt.transpose(3, 2, 0, 1), (1, 1), pads, (2, 2))
    close(tconv(xt, wt), direct.transpose(0, 2, 3, 1), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(want, direct.transpose(0, 2, 3, 1), rtol=1e-12)
    x3, w3 = RNG.normal(size=(1, 3, 4, 3, 2)), RNG.normal(size=(2, 3, 2, 2, 2))  # NCDHW, OIDHW
    pads3 = ((1, 0), (0, 1), (1, 1))
    f3 = gjit(lambda a, b: lax.conv_general_dilated(
        a, b, (1, 2, 1), pads3, rhs_dilation=(1, 1, 2),
        dimension_numbers=("NDHWC", "DHWIO", "NCDHW")))
    close(f3(x3.transpose(0, 2, 3, 4, 1), w3.transpose(2, 3, 4, 1, 0)),
          _direct(x3, w3, (1, 2, 1), pads3, rhs_dilation=(1, 1, 2)), rtol=1e-12, atol=1e-12)


@check
def conv_feature_and_batch_groups():
    # depthwise, channel multiplier 2, channels-last: the grouped product is transposed
    x, w = RNG.normal(size=(2, 3, 4, 3)), RNG.normal(size=(2, 2, 1, 6))  # NHWC, HWIO
    dw = gjit(lambda a, b: lax.conv_general_dilated(
        a, b, (1, 1), ((1, 0), (0, 1)), dimension_numbers=("NHWC", "HWIO", "NHWC"),
        feature_group_count=3))
    want = _direct(x.transpose(0, 3, 1, 2), w.transpose(3, 2, 0, 1), (1, 1), ((1, 0), (0, 1)),
                   fgc=3)
    close(dw(x, w), want.transpose(0, 2, 3, 1), rtol=1e-12, atol=1e-12)
    xg, wg = RNG.normal(size=(2, 4, 6)), RNG.normal(size=(6, 2, 3))
    for n in (2, 1):  # NCW: batch 2 is transposed afterwards, batch 1 is a product per group
        grouped = gjit(lambda a, b: lax.conv_general_dilated(a, b, (2,), ((1, 1),),
                                                             feature_group_count=2))
        close(grouped(xg[:n], wg), _direct(xg[:n], wg, (2,), ((1, 1),), fgc=2), rtol=1e-12,
              atol=1e-12)
    xb, wb = RNG.normal(size=(4, 3, 5)), RNG.normal(size=(4, 3, 2))
    batched = gjit(lambda a, b: lax.conv_general_dilated(a, b, (1,), ((1, 0),),
                                                         batch_group_count=2))
    close(batched(xb, wb), _direct(xb, wb, (1,), ((1, 0),), bgc=2), rtol=1e-12, atol=1e-12)
    _on_gpu(batched, xb, wb)


@check
def conv_1x1_reads_the_input_in_place():
    x, w = RNG.normal(size=(2, 3, 2, 3)), RNG.normal(size=(4, 3, 1, 1))  # NCHW, OIHW
    want = _direct(x, w, (1, 1), ((0, 0), (0, 0)))
    for ls, os_ in (("NHWC", "NHWC"), ("NCHW", "NCHW")):
        f = gjit(lambda a, b, dn=(ls, "OIHW", os_): lax.conv_general_dilated(
            a, b, (1, 1), "VALID", dimension_numbers=dn))
        xs = x.transpose(_perm(ls, "NCHW"))
        close(f(xs, w), want.transpose(_perm(os_, "NCHW")), rtol=1e-12, atol=1e-12)
        _on_gpu(f, xs, w, gather=False)


@check
def conv_grad_under_jit():
    """Both cotangents (convolutions themselves) of a strided, padded, grouped conv: checked
    through bilinearity, <d loss / dx, dx> = sum(conv(dx, w) * ct), and likewise for w."""
    x, w = RNG.normal(size=(2, 5, 4, 4)), RNG.normal(size=(3, 2, 2, 6))  # NHWC, HWIO
    ct = RNG.normal(size=(2, 3, 4, 6))
    dn, pads = ("NHWC", "HWIO", "NHWC"), ((1, 1), (0, 1))

    def conv(a, b):
        return lax.conv_general_dilated(a, b, (2, 1), pads, dimension_numbers=dn,
                                        feature_group_count=2)

    gx, gw = gjit(numbax.grad(lambda a, b: jnp.sum(conv(a, b) * ct), argnums=(0, 1)))(x, w)
    assert gx.shape == x.shape and gw.shape == w.shape, (gx.shape, gw.shape)

    def ref(a, b):
        out = _direct(a.transpose(0, 3, 1, 2), b.transpose(3, 2, 0, 1), (2, 1), pads, fgc=2)
        return out.transpose(0, 2, 3, 1)

    for _ in range(2):
        dx, dw = RNG.normal(size=x.shape), RNG.normal(size=w.shape)
        np.testing.assert_allclose(np.sum(np.asarray(gx) * dx), np.sum(ref(dx, w) * ct),
                                   rtol=1e-10)
        np.testing.assert_allclose(np.sum(np.asarray(gw) * dw), np.sum(ref(x, dw) * ct),
                                   rtol=1e-10)


@check
def conv_dtypes_and_host_fallback():
    x, w = RNG.integers(-3, 4, (1, 2, 4, 3)), RNG.integers(-3, 4, (2, 2, 2, 2))
    want = _direct(x, w, (1, 1), ((1, 0), (0, 1)))
    f = gjit(lambda a, b: lax.conv_general_dilated(a, b, (1, 1), ((1, 0), (0, 1))))
    close(f(x.astype(np.int32), w.astype(np.int32)), want.astype(np.int32), rtol=0, atol=0)
    widen = gjit(lambda a, b: lax.conv_general_dilated(a, b, (1, 1), ((1, 0), (0, 1)),
                                                       preferred_element_type=np.int32))
    close(widen(x.astype(np.int8), w.astype(np.int8)), want.astype(np.int32), rtol=0, atol=0)
    xf, wf = RNG.normal(size=(1, 2, 4, 3)), RNG.normal(size=(2, 2, 2, 2))
    up = gjit(lambda a, b: lax.conv_general_dilated(a, b, (1, 1), "VALID",
                                                    preferred_element_type=np.float64))
    args = (xf.astype(np.float32), wf.astype(np.float32))
    close(up(*args), _direct(*(a.astype(np.float64) for a in args), (1, 1), ((0, 0), (0, 0))),
          rtol=1e-12, atol=1e-12)
    xc, wc = xf + 1j * xf[:, ::-1], wf - 0.5j * wf
    cf = gjit(lambda a, b: lax.conv_general_dilated(a, b, (1, 1), "VALID", precision=HI))
    close(cf(xc.astype(np.complex64), wc.astype(np.complex64)),
          _direct(xc, wc, (1, 1), ((0, 0), (0, 0))).astype(np.complex64), rtol=1e-5, atol=1e-5)
    # float16 stays on the host (the product kernel has no float16 path) unless cuDNN is there
    h = gjit(lambda a, b: lax.conv_general_dilated(a, b, (1, 1), "VALID"))
    x16, w16 = xf.astype(np.float16), wf.astype(np.float16)
    text = h.lower(x16, w16).as_text()
    assert ("dn.conv(" if cudnn.available() else "rt.on_host") in text, text[-1500:]
    np.testing.assert_allclose(np.asarray(h(x16, w16)), _direct(xf, wf, (1, 1), ((0, 0), (0, 0))),
                               rtol=2e-2, atol=2e-2)


@check
def conv_through_cublas():
    """The product through cuBLAS (the numpy model of its call under the simulator): the
    patches @ kernel form, the kernel @ patchesᵀ form (batch stride 0 for the kernel) and a
    grouped product transposed into the output; precision picks the compute type."""
    x, w = RNG.normal(size=(2, 3, 4, 3)), RNG.normal(size=(4, 3, 2, 2))  # NCHW, OIHW
    depthwise = RNG.normal(size=(6, 1, 2, 2))
    pads = ((1, 0), (0, 1))
    with cublas_model(), _without_cudnn():
        for dn, fgc, wg in ((("NHWC", "HWIO", "NHWC"), 1, w), (("NCHW", "OIHW", "NCHW"), 1, w),
                            (("NHWC", "HWIO", "NHWC"), 3, depthwise)):
            xs, ws = x.transpose(_perm(dn[0], "NCHW")), wg.transpose(_perm(dn[1], "OIHW"))
            f = gjit(lambda a, b, dn=dn, fgc=fgc: lax.conv_general_dilated(
                a, b, (1, 1), pads, dimension_numbers=dn, feature_group_count=fgc,
                precision=HI))
            want = _direct(x, wg, (1, 1), pads, fgc=fgc).transpose(_perm(dn[2], "NCHW"))
            close(f(xs, ws), want, rtol=1e-12, atol=1e-12)
            text = f.lower(xs, ws).as_text()
            assert "cb.gemm(" in text and f"compute={cublas.COMPUTE_64F}" in text, text[-1500:]
        a32, b32 = x.astype(np.float32), w.astype(np.float32)
        with numbax.config.override("jax_default_matmul_precision", None):  # JAX's default
            tf32 = gjit(lambda a, b: lax.conv_general_dilated(a, b, (1, 1), pads))
            assert f"compute={cublas.COMPUTE_32F_FAST_TF32}" in tf32.lower(a32, b32).as_text()
        with numbax.config.override("jax_default_matmul_precision", "highest"):
            full = gjit(lambda a, b: lax.conv_general_dilated(a, b, (1, 1), pads))
            assert f"compute={cublas.COMPUTE_32F})" in full.lower(a32, b32).as_text()
        close(full(a32, b32), _direct(x, w, (1, 1), pads).astype(np.float32), rtol=1e-5,
              atol=1e-5)


def model_cudnn_call(a, b, out, c: cudnn.CudnnConv) -> None:
    """cuDNN's convolutions by their contract, in float64, on buffers read and written through
    the logical dims and element strides `c` gives (x [N, C, S...], w [K, C/g, K...], y [N, K,
    S'...]): fprop y = x ⋆ w (cross-correlation, padding before/after each spatial dim, window
    strides, kernel dilation, groups from C / (C/g)); dgrad x from (y, w) and wgrad w from
    (x, y), the two adjoints of fprop, tap by tap."""
    def view(buf, described, writeable=False):
        dims, steps = described
        assert max((d - 1) * s for d, s in zip(dims, steps)) < buf.size, (described, buf.size)
        return np.lib.stride_tricks.as_strided(buf, dims, tuple(s * buf.itemsize for s in steps),
                                               writeable=writeable)

    host_a, host_b, host_out = a.copy_to_host(), b.copy_to_host(), out.copy_to_host()
    roles = {"fprop": ("x", "w", "y"), "dgrad": ("y", "w", "x"), "wgrad": ("x", "y", "w")}
    ra, rb, rout = roles[c.kind]
    values = {ra: view(host_a, getattr(c, ra)).astype(np.float64),
              rb: view(host_b, getattr(c, rb)).astype(np.float64)}
    values[rout] = np.zeros(getattr(c, rout)[0])
    x, w, y = values["x"], values["w"], values["y"]
    groups = x.shape[1] // w.shape[1]
    assert c.kind == "fprop" or groups == 1
    kg, cg = w.shape[0] // groups, w.shape[1]
    for pos in np.ndindex(*y.shape[2:]):
        for tap in np.ndindex(*w.shape[2:]):
            at = [q * st + t * d - lo for q, st, t, d, lo in zip(pos, c.stride, tap, c.dilation,
                                                                 c.pre_padding)]
            if not all(0 <= i < n for i, n in zip(at, x.shape[2:])):
                continue
            xi, yo, wt = (..., *at), (..., *pos), (..., *tap)
            for g in range(groups):
                ks, cs = slice(g * kg, (g + 1) * kg), slice(g * cg, (g + 1) * cg)
                if c.kind == "fprop":
                    y[:, ks][yo] += x[:, cs][xi] @ w[ks][wt].T
                elif c.kind == "dgrad":
                    x[:, cs][xi] += y[:, ks][yo] @ w[ks][wt]
                else:
                    w[ks][wt] += y[:, ks][yo].T @ x[:, cs][xi]
    view(host_out, getattr(c, rout), writeable=True)[...] = values[rout].astype(host_out.dtype)
    out.copy_to_device(host_out)


@check
def conv_through_cudnn():
    """Convolutions cuDNN takes (the numpy model of its call under the simulator; cuDNN itself
    on a card): channels-last with an HWIO kernel (transposed to KRSC first) and an OHWI one
    (read in place), channels-first, strides with uneven padding and dilation, depthwise
    groups, 1-D and 3-D, float16; and the ones it must not take (lhs dilation, a weight
    gradient's batch-as-feature layout), which keep im2col."""
    x = RNG.normal(size=(2, 4, 7, 6))  # NCHW
    w = RNG.normal(size=(6, 4, 3, 2))  # OIHW
    dw = RNG.normal(size=(8, 1, 3, 3))  # depthwise, 2 per channel
    pads = ((2, 0), (1, 1))
    cases = [  # (dn, kernel, strides, padding, rhs_dilation, fgc, kernel transposed first)
        (("NHWC", "HWIO", "NHWC"), w, (1, 1), ((1, 1), (0, 1)), (1, 1), 1, True),
        (("NHWC", "OHWI", "NHWC"), w, (2, 1), pads, (1, 2), 1, False),
        (("NCHW", "OIHW", "NCHW"), w, (1, 2), pads, (2, 1), 1, False),
        (("NHWC", "HWIO", "NHWC"), dw, (1, 1), ((1, 1), (1, 1)), (1, 1), 4, True),
    ]
    tol = 1e-5 if cuda_runtime.simulator_enabled() else 2e-5
    with cublas_model(), library_model(cudnn, model_cudnn_call):
        uses_cudnn = cudnn.available()  # the model stands in for it under the simulator
        for dn, k, st, pad, rd, fgc, transposed in cases:
            xs = x.transpose(_perm(dn[0], "NCHW")).astype(np.float32)
            ks = k.transpose(_perm(dn[1], "OIHW")).astype(np.float32)
            f = gjit(lambda a, b, dn=dn, st=st, pad=pad, rd=rd, fgc=fgc:
                     lax.conv_general_dilated(a, b, st, pad, rhs_dilation=rd,
                                              dimension_numbers=dn, feature_group_count=fgc,
                                              precision=HI))
            want = _direct(x, k, st, pad, rhs_dilation=rd, fgc=fgc)
            close(f(xs, ks), want.transpose(_perm(dn[2], "NCHW")).astype(np.float32),
                  rtol=tol, atol=tol)
            if uses_cudnn:
                text = f.lower(xs, ks).as_text()
                assert "dn.conv(" in text and "tf32=False" in text, text[-800:]
                assert ("w_tr" in text) == transposed, text[-1500:]
        # 1-D channels-last and 3-D channels-first
        x1, w1 = RNG.normal(size=(2, 9, 3)), RNG.normal(size=(3, 3, 5))  # NWC, WIO
        f1 = gjit(lambda a, b: lax.conv_general_dilated(a, b, (2,), ((1, 2),),
                                                        dimension_numbers=("NWC", "WIO", "NWC"),
                                                        precision=HI))
        want1 = _direct(x1.transpose(0, 2, 1), w1.transpose(2, 1, 0), (2,), ((1, 2),))
        close(f1(x1.astype(np.float32), w1.astype(np.float32)),
              want1.transpose(0, 2, 1).astype(np.float32), rtol=tol, atol=tol)
        x3, w3 = RNG.normal(size=(1, 2, 4, 3, 5)), RNG.normal(size=(3, 2, 2, 2, 2))
        f3 = gjit(lambda a, b: lax.conv_general_dilated(a, b, (1, 1, 2), "SAME", precision=HI))
        pads3 = ((0, 1), (0, 1), (0, 1))  # SAME for even windows pads after
        close(f3(x3.astype(np.float32), w3.astype(np.float32)),
              _direct(x3, w3, (1, 1, 2), pads3).astype(np.float32), rtol=tol, atol=tol)
        # float16 (on the host without cuDNN; through cuDNN with it)
        h = (x.transpose(0, 2, 3, 1).astype(np.float16), w.transpose(2, 3, 1, 0).astype(np.float16))
        fh = gjit(lambda a, b: lax.conv_general_dilated(a, b, (1, 1), pads,
                                                        dimension_numbers=("NHWC", "HWIO", "NHWC")))
        wanth = _direct(x, w, (1, 1), pads).transpose(0, 2, 3, 1)
        close(fh(*h), wanth.astype(np.float16), rtol=2e-2, atol=5e-2)
        # not cuDNN's: a transposed convolution (lhs dilation) and the weight gradient
        xs, ks = x.astype(np.float32), w.astype(np.float32)
        ft = gjit(lambda a, b: lax.conv_general_dilated(a, b, (1, 1), pads, lhs_dilation=(2, 1),
                                                        precision=HI))
        close(ft(xs, ks), _direct(x, w, (1, 1), pads, lhs_dilation=(2, 1)).astype(np.float32),
              rtol=tol, atol=tol)
        assert "dn.conv(" not in ft.lower(xs, ks).as_text()

        def loss(a, b):
            return jnp.sum(lax.conv_general_dilated(a, b, (2, 1), pads, precision=HI) ** 2)

        ga, gb = gjit(numbax.grad(loss, argnums=(0, 1)))(xs, ks)
        eps = 1e-3  # the gradient against central differences along one random direction
        for g, which in ((ga, 0), (gb, 1)):
            d = RNG.normal(size=(xs, ks)[which].shape)
            args_p = [xs.astype(np.float64), ks.astype(np.float64)]
            args_m = [xs.astype(np.float64), ks.astype(np.float64)]
            args_p[which] = args_p[which] + eps * d
            args_m[which] = args_m[which] - eps * d
            num = (np.sum(_direct(*args_p, (2, 1), pads) ** 2)
                   - np.sum(_direct(*args_m, (2, 1), pads) ** 2)) / (2 * eps)
            np.testing.assert_allclose(np.sum(np.asarray(g, np.float64) * d), num, rtol=1e-3)


@check
def conv_gradients_through_cudnn():
    """A convolution's two gradients under jit(grad) as cuDNN's filter and data gradients
    (channels-last with an HWIO kernel, channels-first with an OIHW one; strides, SAME and
    uneven padding, dilation), against central differences of the float64 definition along
    random directions, and each call's kind in the program."""
    cases = [  # (dn, x shape (NCHW), kernel shape (OIHW), strides, padding, rhs dilation)
        (("NHWC", "HWIO", "NHWC"), (2, 3, 9, 8), (4, 3, 3, 3), (2, 2), "SAME", (1, 1)),
        (("NCHW", "OIHW", "NCHW"), (2, 3, 8, 7), (5, 3, 2, 3), (2, 1), ((1, 0), (2, 1)), (1, 2)),
        (("NHWC", "HWIO", "NHWC"), (1, 2, 6, 6), (3, 2, 3, 3), (1, 1), "VALID", (2, 1)),
    ]
    sim = cuda_runtime.simulator_enabled()
    with cublas_model(), library_model(cudnn, model_cudnn_call):
        for (dn, xs_shape, ws_shape, st, pad, rd), prec in itertools.product(
                cases, (HI, lax.Precision.DEFAULT)):
            # full float32 (filter gradients on im2col) and TF32 (every gradient on cuDNN)
            tol = 1e-4 if sim else 1e-3 if prec is HI else 3e-2
            x, w = RNG.normal(size=xs_shape), RNG.normal(size=ws_shape) * 0.5
            xs, ks = (x.transpose(_perm(dn[0], "NCHW")).astype(np.float32),
                      w.transpose(_perm(dn[1], "OIHW")).astype(np.float32))

            def conv(a, b, dn=dn, st=st, pad=pad, rd=rd, prec=prec):
                return lax.conv_general_dilated(a, b, st, pad, rhs_dilation=rd,
                                                dimension_numbers=dn, precision=prec)

            def loss(a, b, conv=conv):
                return jnp.sum(jnp.sin(conv(a, b)))

            g = gjit(numbax.grad(loss, argnums=(0, 1)))
            ga, gb = g(xs, ks)
            if cudnn.available():
                kinds = re.findall(r"kind='(\w+)'", g.lower(xs, ks).as_text())
                want = ({"fprop"} | ({"dgrad"} if st != (1, 1) else set())
                        | ({"wgrad"} if prec is not HI else set()))
                assert want == set(kinds), (dn, st, prec, kinds)
            eps = 1e-3
            base = [xs.astype(np.float64), ks.astype(np.float64)]
            for got, which in ((ga, 0), (gb, 1)):
                d = RNG.normal(size=base[which].shape)
                plus, minus = list(base), list(base)
                plus[which], minus[which] = base[which] + eps * d, base[which] - eps * d
                f64 = numbax.jit(lambda a, b, conv=conv: jnp.sum(jnp.sin(conv(a, b))),
                                 backend="cpu")
                num = (float(f64(*plus)) - float(f64(*minus))) / (2 * eps)
                np.testing.assert_allclose(np.sum(np.asarray(got, np.float64) * d), num,
                                           rtol=tol, atol=tol, err_msg=f"{dn} {st} arg {which}")
