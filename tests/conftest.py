"""Test-wide settings: checks on, float64 default (NumPy semantics); module generators replay."""
import numpy as np
import pytest

import numbax

numbax.config.update("jax_enable_checks", True)

_FIRST_STATES = {}


@pytest.fixture(autouse=True)
def module_generators_replay(request):
    """A module's own generator (RNG or rng) starts each test where it stood before that
    module's first test, so a test draws the same numbers whichever tests ran before it on
    its xdist worker. Without this a tolerance could pass in one order and fail in another."""
    module = request.module
    for name in ("RNG", "rng"):
        generator = getattr(module, name, None)
        if isinstance(generator, np.random.Generator):
            state = _FIRST_STATES.setdefault((module.__name__, name), generator.bit_generator.state)
            generator.bit_generator.state = state
