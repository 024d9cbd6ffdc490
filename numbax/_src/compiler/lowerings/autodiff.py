"""Autodiff markers that are identities on values: checkpoint_name's `name` (fuses as a copy
of its operand)."""
from __future__ import annotations

from numbax._src.checkpoint_policies import name_p
from numbax._src.compiler.lowerings.elementwise import elementwise
from numbax._src.compiler.lowerings.forms import template

elementwise(name_p, template("{0}"), template("{0}"), cuda_complex=template("{0}"))
