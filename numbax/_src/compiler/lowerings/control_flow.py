"""Lowerings of cond, while and scan (lax/control_flow/). The CPU renders each as native
if/while/for statements (cpu/flow_statements.py) inside one @njit function
(cpu/control_flow.py), or, when a body holds something with no array form, as a Python loop in
the driver over the bodies compiled on their own; CUDA drives them from the host, each body
its own driver (cuda/driver.py)."""
from __future__ import annotations

from numbax._src.compiler.cpu import flow_statements, host_flow
from numbax._src.compiler.cuda import driver as cuda_driver
from numbax._src.compiler.registry import register
from numbax._src.lax.control_flow.conditionals import cond_p
from numbax._src.lax.control_flow.loops import scan_p, while_p

register(cond_p, backend="cpu", statements=flow_statements.render_cond, host=host_flow.host_cond)
register(while_p, backend="cpu", statements=flow_statements.render_while, host=host_flow.host_while)
register(scan_p, backend="cpu", statements=flow_statements.render_scan, host=host_flow.host_scan)
register(cond_p, backend="cuda", library=cuda_driver.CudaDriver.cond)
register(while_p, backend="cuda", library=cuda_driver.CudaDriver.while_loop)
register(scan_p, backend="cuda", library=cuda_driver.CudaDriver.scan)
