"""jax.profiler on numbax: the trace's files where JAX writes them, its events (annotated
regions, steps, decorated functions, jitted calls and their runs, nested in time as they ran),
the one-trace-at-a-time rule, and jit's fast dispatch back after the trace."""
import gzip
import json
import os
import socket

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import profiler


def _events(log_dir) -> tuple[list[dict], list[str]]:
    (run,) = os.listdir(os.path.join(log_dir, "plugins", "profile"))
    folder = os.path.join(log_dir, "plugins", "profile", run)
    files = sorted(os.listdir(folder))
    with gzip.open(os.path.join(folder, f"{socket.gethostname()}.trace.json.gz")) as f:
        trace = json.loads(f.read())
    return [e for e in trace["traceEvents"] if e["ph"] == "X"], files


def _inside(inner: dict, outer: dict) -> bool:
    return outer["ts"] <= inner["ts"] and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"]


def test_a_trace_records_regions_steps_functions_and_jitted_calls(tmp_path):
    step = numbax.jit(lambda w, x: w - 0.1 * x)
    loss = profiler.annotate_function(lambda w: float(jnp.sum(w * w)), name="loss", kind="l2")
    w = np.ones(4)
    with profiler.trace(tmp_path, create_perfetto_trace=True):
        with profiler.TraceAnnotation("training", epochs=1):
            for i in range(2):
                with profiler.StepTraceAnnotation("train", step_num=i):
                    w = step(w, np.full(4, 2.0))
            total = loss(w)
    assert total == pytest.approx(4 * 0.6 ** 2)
    events, files = _events(tmp_path)
    assert files == sorted([f"{socket.gethostname()}.trace.json.gz", "perfetto_trace.json.gz"])
    by_name: dict[str, list[dict]] = {}
    for e in events:
        by_name.setdefault(e["name"], []).append(e)
    (training,) = by_name["training"]
    assert training["args"] == {"epochs": "1"}
    steps = by_name["train"]
    assert [s["args"]["step_num"] for s in steps] == ["0", "1"]
    calls, runs = by_name["jit(<lambda>)"], by_name["jit(<lambda>): run"]
    assert len(calls) == len(runs) == 2
    for s, call, run in zip(steps, calls, runs, strict=True):
        assert _inside(s, training) and _inside(call, s) and _inside(run, call)
    (annotated,) = by_name["loss"]
    assert annotated["args"] == {"kind": "l2"} and _inside(annotated, training)


def test_one_trace_at_a_time_and_fast_dispatch_after(tmp_path):
    with pytest.raises(RuntimeError, match="No profile started"):
        profiler.stop_trace()
    profiler.start_trace(str(tmp_path))
    assert numbax.config._fast_ctx is None  # jitted calls take the recorded path
    with pytest.raises(RuntimeError, match="already been started"):
        profiler.start_trace(str(tmp_path / "other"))
    profiler.stop_trace()
    assert numbax.config._fast_ctx is not None
    events, files = _events(tmp_path)
    assert events == [] and files == [f"{socket.gethostname()}.trace.json.gz"]
    with pytest.raises(TypeError, match="log_dir"):
        profiler.start_trace(None)
    with pytest.raises(NotImplementedError, match="jax.profiler.trace"):
        profiler.start_server(9999)


def test_annotations_outside_a_trace_record_nothing(tmp_path):
    with profiler.TraceAnnotation("before"):
        pass
    with profiler.trace(tmp_path):
        with profiler.TraceAnnotation("during"):
            pass
    events, _ = _events(tmp_path)
    assert [e["name"] for e in events] == ["during"]
