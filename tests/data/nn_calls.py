"""The dot_product_attention calls whose outputs make_nn_reference.py records from jax.nn and
tests/test_nn.py compares numbax.nn with: one table, written once for both APIs."""
from collections.abc import Callable
from typing import Any


def attention_cases(nn: Any, a: dict) -> dict[str, Callable]:
    """name -> thunk calling nn.dot_product_attention on the arrays `a`."""
    dpa = nn.dot_product_attention
    return {
        "plain": lambda: dpa(a["q"], a["k"], a["v"]),
        "gqa": lambda: dpa(a["q"], a["k2"], a["v2"]),
        "mqa": lambda: dpa(a["q"], a["k1"], a["v1"], is_causal=True),
        "bias": lambda: dpa(a["q"], a["k"], a["v"], bias=a["bias"]),
        "bias_bcast_gqa": lambda: dpa(a["q"], a["k2"], a["v2"], bias=a["bias1"]),
        "mask": lambda: dpa(a["q"], a["k"], a["v"], mask=a["mask"]),
        "causal": lambda: dpa(a["q"], a["k"], a["v"], is_causal=True),
        "window": lambda: dpa(a["q"], a["k"], a["v"], local_window_size=(2, 1)),
        "window_int": lambda: dpa(a["q"], a["k"], a["v"], local_window_size=1),
        "kv_lengths": lambda: dpa(a["q"], a["k"], a["v"], key_value_seq_lengths=a["kvlen"]),
        "q_lengths": lambda: dpa(a["q"], a["k"], a["v"], query_seq_lengths=a["qlen"]),
        "scale": lambda: dpa(a["q"], a["k"], a["v"], scale=0.1, mask=a["mask"],
                             is_causal=True),
        "rank3": lambda: dpa(a["q3"], a["k3"], a["v3"]),
        "residual": lambda: dpa(a["q"], a["k2"], a["v2"], is_causal=True,
                                key_value_seq_lengths=a["kvlen"], return_residual=True),
    }
