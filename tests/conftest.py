"""Test-wide settings: checks on, float64 default (NumPy semantics)."""
import numbax

numbax.config.update("jax_enable_checks", True)
