"""numbax.nn's attention and block-scaled products: dot_product_attention (JAX's 'xla' path:
masks, bias, causal and local windows, sequence lengths, grouped heads), scaled_matmul,
scaled_dot_general and get_scaled_dot_general_config. They stand apart from the activations
because they are products of arrays, not elementwise maps."""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import core, dtypes, jnp
from numbax._src.custom_derivatives import stop_gradient
from numbax._src.dtypes import finfo_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax import dot as lax_dot
from numbax._src.nn.functions import logsumexp, softmax

__all__ = ["dot_product_attention", "get_scaled_dot_general_config", "scaled_dot_general",
           "scaled_matmul"]

_API = "numbax.nn.dot_product_attention"


def _ensure_4d(t: Any) -> Any:
    t = jnp.asarray(t)
    missing = 4 - core.get_aval(t).ndim
    return jnp.expand_dims(t, tuple(range(missing))) if missing > 0 else t


def _check(t: Any, shape: Sequence[int], dtype: Any, name: str) -> None:
    """t's rank, sizes (-1: any) and dtype, as JAX checks them (ValueError naming t)."""
    if t is None:
        return
    aval = core.get_aval(t)
    if aval.ndim != len(shape) or any(w != -1 and g != w for g, w in zip(aval.shape, shape)):
        want = tuple("*" if w == -1 else w for w in shape)
        raise NumbaxValueError(
            f"{_API}: {name} has shape {aval.shape}, expected a shape like {want} (as 4D "
            "BTNH/BSKH/BNTS arrays, leading axes added to 3D inputs).")
    if dtype is not None and aval.dtype != dtype:
        raise NumbaxValueError(
            f"{_API}: {name} has dtype {aval.dtype}, expected {np.dtype(dtype)}. Convert it "
            f"with {name}.astype(...).")


def _large_negative(dtype: np.dtype) -> Any:
    """JAX's mask fill: -0.7 * max, capped at float32's range (softmax runs in float32)."""
    big = min(float(finfo_of(dtype).max), float(np.finfo(np.float32).max))
    return jnp.asarray(-0.7 * big, dtype=dtype)


def _combined_mask(shape: tuple[int, ...], mask: Any, is_causal: bool, q_seqlen: Any,
                   kv_seqlen: Any, window: tuple[int, int] | None) -> Any:
    """The bool (B, N, T, S) mask of the logits to keep, or None when nothing is masked."""
    t, s = shape[2], shape[3]
    parts = []
    if mask is not None:
        parts.append(mask)
    if is_causal:
        parts.append(jnp.tril(jnp.ones((t, s), dtype=bool))[None, None])
    if window is not None:
        q_pos = jnp.arange(t)[:, None]
        k_pos = jnp.arange(s)[None, :]
        left, right = window
        parts.append(((q_pos <= k_pos + left) & (q_pos >= k_pos - right))[None, None])
    if q_seqlen is not None or kv_seqlen is not None:
        keep = jnp.ones((1, t, s), dtype=bool)
        if q_seqlen is not None:
            keep = keep & (jnp.arange(t)[None, :, None] < q_seqlen[:, None, None])
        if kv_seqlen is not None:
            keep = keep & (jnp.arange(s)[None, None, :] < kv_seqlen[:, None, None])
        parts.append(keep[:, None])
    if not parts:
        return None
    combined = jnp.ones(shape, dtype=bool)
    for part in parts:
        combined = combined & part
    return combined


def _attention_xla(query: Any, key: Any, value: Any, bias: Any, mask: Any, is_causal: bool,
                   scale: float, q_seqlen: Any, kv_seqlen: Any,
                   window: tuple[int, int] | None, return_residual: bool) -> Any:
    """JAX's 'xla' attention: logits in promote(dtype, float32), softmax in float32."""
    n, k = core.get_aval(query).shape[2], core.get_aval(key).shape[2]
    if n != k:  # grouped heads: query head j reads key/value head j // (n // k)
        key = jnp.repeat(key, n // k, axis=2)
        value = jnp.repeat(value, n // k, axis=2)
    kv_dtype = core.get_aval(key).dtype
    logits_dtype = jnp.promote_types(core.get_aval(query).dtype, np.float32)
    logits = jnp.einsum("BTNH,BSNH->BNTS", query.astype(logits_dtype), key.astype(logits_dtype))
    logits = logits * jnp.asarray(scale, dtype=logits_dtype)
    if bias is not None:
        logits = (logits + bias).astype(logits_dtype)
    keep = _combined_mask(core.get_aval(logits).shape, mask, is_causal, q_seqlen, kv_seqlen,
                          window)
    if keep is not None:
        logits = jnp.where(keep, logits, _large_negative(logits_dtype))
    logits = logits.astype(np.float32)
    probs = softmax(logits, axis=-1).astype(kv_dtype)
    encoded = jnp.einsum("BNTS,BSNH->BTNH", probs, value)
    if q_seqlen is not None:
        rows = jnp.arange(core.get_aval(encoded).shape[1])[None, :] < q_seqlen[:, None]
        encoded = encoded * rows[:, :, None, None].astype(core.get_aval(encoded).dtype)
    if not return_residual:
        return encoded
    lse = jnp.transpose(logsumexp(logits, axis=-1).astype(kv_dtype), (0, 2, 1))
    return encoded, stop_gradient(lse)


def dot_product_attention(query: Any, key: Any, value: Any, bias: Any = None, mask: Any = None,
                          *, scale: float | None = None, is_causal: bool = False,
                          query_seq_lengths: Any = None, key_value_seq_lengths: Any = None,
                          local_window_size: int | tuple[int, int] | None = None,
                          implementation: str | None = None,
                          return_residual: bool = False) -> Any:
    """Scaled dot-product attention, softmax(Q K^T * scale + bias, masked) V, per head.

    Shapes: query (B, T, N, H) or (T, N, H); key and value (B, S, K, H) or (S, K, H) with N a
    multiple of K (grouped-query attention when K < N); bias and mask broadcastable to
    (B, N, T, S). Logits are computed in promote(dtype, float32) and the softmax in float32, as
    JAX's 'xla' implementation does; masked logits get a large negative value (not -inf).

    Args:
      query, key, value: the attention inputs (key and value of one shape and dtype, query of
        the same dtype and head size H).
      bias: optional additive bias for the logits.
      mask: optional bool mask; True keeps a logit.
      scale: the logit scale (default 1 / sqrt(H)).
      is_causal: mask out keys after each query position.
      query_seq_lengths: optional int32 (B,) valid query lengths (later rows of the output
        are 0).
      key_value_seq_lengths: optional int32 (B,) valid key/value lengths.
      local_window_size: (left, right) window each query attends within (an int: both).
      implementation: None or 'xla'. Unlike JAX: 'cudnn' is refused (numbax has no cuDNN
        attention kernel).
      return_residual: also return the softmax's logsumexp, shape (B, T, N) or (T, N).

    Returns:
      The attention output of query's shape, or (output, residual).
    """
    output_shape = tuple(core.get_aval(jnp.asarray(query)).shape)
    q, k, v = _ensure_4d(query), _ensure_4d(key), _ensure_4d(value)
    bias = None if bias is None else _ensure_4d(bias)
    mask = None if mask is None else _ensure_4d(mask)
    q_len = None if query_seq_lengths is None else jnp.asarray(query_seq_lengths)
    kv_len = None if key_value_seq_lengths is None else jnp.asarray(key_value_seq_lengths)
    if isinstance(local_window_size, (int, np.integer)):
        local_window_size = (int(local_window_size), int(local_window_size))
    b, s, heads_kv, h = core.get_aval(k).shape
    kv_dtype = core.get_aval(k).dtype
    _check(v, (b, s, heads_kv, h), kv_dtype, "value")
    _check(q, (b, -1, -1, h), kv_dtype, "query")
    _check(mask, (-1,) * 4, np.dtype(bool), "mask")
    _check(bias, (-1,) * 4, None, "bias")
    _check(q_len, (b,), np.dtype(np.int32), "query_seq_lengths")
    _check(kv_len, (b,), np.dtype(np.int32), "key_value_seq_lengths")
    heads_q = core.get_aval(q).shape[2]
    if heads_q % heads_kv:
        raise NumbaxValueError(
            f"{_API}: query has {heads_q} heads and key has {heads_kv}, expected a multiple "
            "(grouped-query attention repeats each key/value head).")
    if implementation not in (None, "xla"):
        if implementation == "cudnn":
            raise NumbaxValueError(
                f"{_API}: implementation is 'cudnn', expected None or 'xla'. Unlike JAX, "
                "numbax has no cuDNN attention kernel; use implementation=None.")
        raise NumbaxValueError(
            f"{_API}: implementation is {implementation!r}, expected None, 'xla' or 'cudnn'.")
    scale_val = (1.0 / np.sqrt(h)) if scale is None else scale
    out = _attention_xla(q, k, v, bias, mask, bool(is_causal), scale_val, q_len, kv_len,
                         local_window_size, return_residual)
    if return_residual:
        out, residual = out
        return jnp.reshape(out, output_shape), jnp.reshape(residual, output_shape[:-1])
    return jnp.reshape(out, output_shape)


# ----------------------------------------------------------------------------- block scaling


def scaled_matmul(lhs: Any, rhs: Any, lhs_scales: Any, rhs_scales: Any,
                  preferred_element_type: Any = np.float32) -> Any:
    """Block-scaled batched matmul: einsum('BMK,BNK->BMN', lhs * s_l, rhs * s_r) with each
    scale repeated over its block of K (block size K // scales.shape[-1]).

    Unlike JAX (whose only kernel is cuDNN's, for float8/float4 operands on Blackwell GPUs and
    NotImplementedError on CPU): this is the formula JAX documents, computed in float32 on any
    float inputs.

    Args:
      lhs: (B, M, K) operand.
      rhs: (B, N, K) operand.
      lhs_scales: (B, M, K_a) scales, K % K_a == 0.
      rhs_scales: (B, N, K_b) scales, K % K_b == 0.
      preferred_element_type: the output dtype (default float32).

    Returns:
      A (B, M, N) array.

    >>> a = np.array([1.0, 2.0, 3.0]).reshape(1, 1, 3)
    >>> b = np.array([4.0, 5.0, 6.0]).reshape(1, 1, 3)
    >>> s = np.array([0.5]).reshape(1, 1, 1)
    >>> scaled_matmul(a, b, s, s).tolist()
    [[[8.0]]]
    """
    api = "numbax.nn.scaled_matmul"
    arrays = [jnp.asarray(v) for v in (lhs, rhs, lhs_scales, rhs_scales)]
    shapes = [tuple(core.get_aval(v).shape) for v in arrays]
    names = ("lhs", "rhs", "lhs_scales", "rhs_scales")
    for name, shape in zip(names, shapes):
        if len(shape) != 3:
            raise NumbaxValueError(f"{api}: {name} has shape {shape}, expected a 3D array.")
    (ba, m, ka), (bb, n, kb), (bsa, msa, ksa), (bsb, nsb, ksb) = shapes
    if ka != kb or ba != bb:
        raise NumbaxValueError(
            f"{api}: lhs has shape {shapes[0]} and rhs has shape {shapes[1]}, expected equal "
            "batch (B) and contracting (K) sizes.")
    if ksa != ksb or bsa != bsb or msa != m or nsb != n or ka % max(ksa, 1):
        raise NumbaxValueError(
            f"{api}: lhs_scales has shape {shapes[2]} and rhs_scales has shape {shapes[3]}, "
            f"expected ({ba}, {m}, K_s) and ({ba}, {n}, K_s) with K_s dividing K={ka}.")
    out_dtype = dtypes.canonicalize_dtype(preferred_element_type, context=api)
    f32 = np.float32
    a, b, sa, sb = (v.astype(f32) for v in arrays)
    a = a * jnp.repeat(sa, ka // ksa, axis=-1)
    b = b * jnp.repeat(sb, kb // ksb, axis=-1)
    return jnp.einsum("BMK,BNK->BMN", a, b).astype(out_dtype)


@dataclasses.dataclass(frozen=True)
class BlockScaleConfig:
    """JAX's block-scaling configuration for scaled_dot_general (mode, block size, types)."""

    mode: str
    block_size: int
    data_type: Any
    scale_type: Any
    global_scale: Any
    infer_only: bool


def get_scaled_dot_general_config(mode: str, global_scale: Any = None) -> BlockScaleConfig:
    """The quantisation config of a mode: 'mxfp8' (blocks of 32, e4m3fn data, e8m0fnu scales)
    or 'nvfp4' (blocks of 16, e2m1fn data, e4m3fn scales, a float32 global scale).

    Unlike JAX: data_type and scale_type are the dtype names (numbax has no float8/float4
    dtypes).

    Args:
      mode: 'mxfp8' or 'nvfp4'.
      global_scale: nvfp4's float32 (1,) global scale (default ones).

    Returns:
      A BlockScaleConfig.
    """
    if mode == "nvfp4":
        scale = jnp.ones((1,), dtype=np.float32) if global_scale is None else global_scale
        return BlockScaleConfig("nvfp4", 16, "float4_e2m1fn", "float8_e4m3fn", scale, False)
    if mode == "mxfp8":
        return BlockScaleConfig("mxfp8", 32, "float8_e4m3fn", "float8_e8m0fnu", None, False)
    raise NumbaxValueError(
        f"numbax.nn.get_scaled_dot_general_config: mode is {mode!r}, expected 'nvfp4' or "
        "'mxfp8'.")


def scaled_dot_general(lhs: Any, rhs: Any, dimension_numbers: Any,
                       preferred_element_type: Any = np.float32,
                       configs: list[BlockScaleConfig] | None = None,
                       implementation: str | None = None) -> Any:
    """dot_general with block-scaled quantised operands; without configs, lax.dot_general.

    Unlike JAX on GPUs: with `configs` (float8/float4 quantisation, which JAX runs only through
    cuDNN and refuses on CPU with NotImplementedError) numbax raises too; without configs it
    is lax.dot_general with preferred_element_type, as in JAX.

    Args:
      lhs, rhs: the operands.
      dimension_numbers: ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)).
      preferred_element_type: the output dtype (default float32).
      configs: None, or the BlockScaleConfigs of lhs, rhs and the gradients.
      implementation: deprecated in JAX and ignored.

    Returns:
      The dot_general result.
    """
    if configs is not None:
        raise NumbaxTypeError(
            "numbax.nn.scaled_dot_general: configs is given, expected None. Block-scaled "
            "float8/float4 products need those dtypes and a cuDNN kernel (JAX itself raises "
            "NotImplementedError on CPU); pass configs=None for an ordinary dot_general.")
    out_dtype = dtypes.canonicalize_dtype(preferred_element_type,
                                          context="numbax.nn.scaled_dot_general")
    return lax_dot.dot_general(lhs, rhs, dimension_numbers,
                               preferred_element_type=out_dtype)
