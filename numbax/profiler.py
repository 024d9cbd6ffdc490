"""numbax.profiler: traces of annotated regions and jitted calls (jax.profiler), written in the
Chrome trace-event format that Perfetto and TensorBoard's trace viewer open."""
from numbax._src.profiler import (  # noqa: F401
    StepTraceAnnotation,
    TraceAnnotation,
    annotate_function,
    device_memory_profile,
    save_device_memory_profile,
    start_server,
    start_trace,
    stop_server,
    stop_trace,
    trace,
)

__all__ = ["StepTraceAnnotation", "TraceAnnotation", "annotate_function",
           "device_memory_profile", "save_device_memory_profile", "start_server", "start_trace",
           "stop_server", "stop_trace", "trace"]
