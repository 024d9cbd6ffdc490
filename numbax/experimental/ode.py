"""numbax.experimental.ode: odeint (adaptive Dormand-Prince, adjoint gradients), as
jax.experimental.ode."""
from numbax._src.ode import odeint  # noqa: F401

__all__ = ["odeint"]
