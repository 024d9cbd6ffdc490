"""The sampler calls whose outputs make_samplers_reference.py records from jax.random and
tests/test_random.py compares numbax.random with: one table, written once for both APIs."""
from collections.abc import Callable
from typing import Any

import numpy as np


def sampler_calls(r: Any) -> dict[str, Callable]:
    """name -> fn(key) drawing with the random module `r` (jax.random or numbax.random)."""
    f32 = np.float32
    return {
        "cauchy": lambda k: r.cauchy(k, (8,)),
        "laplace": lambda k: r.laplace(k, (8,)),
        "logistic": lambda k: r.logistic(k, (8,)),
        "lognormal": lambda k: r.lognormal(k, f32(0.5), (8,)),
        "pareto": lambda k: r.pareto(k, f32([1.5, 3.0]), (4, 2)),
        "maxwell": lambda k: r.maxwell(k, (8,)),
        "double_sided_maxwell": lambda k: r.double_sided_maxwell(k, f32(1.0), f32(2.0), (8,)),
        "double_sided_maxwell_vec": lambda k: r.double_sided_maxwell(k, f32([0, 1]), f32(1)),
        "rayleigh": lambda k: r.rayleigh(k, f32(2.0), (8,)),
        "triangular": lambda k: r.triangular(k, f32(-1.0), f32(0.5), f32(2.0), (8,)),
        "wald": lambda k: r.wald(k, f32([0.5, 2.0]), (4, 2)),
        "weibull_min": lambda k: r.weibull_min(k, f32(2.0), f32(1.5), (8,)),
        "exponential": lambda k: r.exponential(k, (8,)),
        "gumbel_high": lambda k: r.gumbel(k, (8,), mode="high"),
        "gumbel_highest": lambda k: r.gumbel(k, (8,), mode="highest"),
        "rademacher": lambda k: r.rademacher(k, (16,)),
        "rademacher_f32": lambda k: r.rademacher(k, (8,), f32),
        "geometric": lambda k: r.geometric(k, f32(0.3), (16,)),
        "poisson_small": lambda k: r.poisson(k, f32(3.0), (16,)),
        "poisson_large": lambda k: r.poisson(k, f32([25.0, 400.0]), (8, 2)),
        "poisson_zero": lambda k: r.poisson(k, f32([0.0, 0.5]), (2, 2)),
        "binomial_small": lambda k: r.binomial(k, f32(10.0), f32(0.3), (16,)),
        "binomial_large": lambda k: r.binomial(k, f32(100.0), f32([0.4, 0.8]), (8, 2)),
        "binomial_edge": lambda k: r.binomial(k, f32([5, -1, np.inf, 5]),
                                              f32([0.5, 0.5, 0.5, np.nan])),
        "multinomial": lambda k: r.multinomial(k, f32(20.0), f32([0.2, 0.3, 0.5])),
        "multinomial_batch": lambda k: r.multinomial(k, f32([10.0, 50.0]),
                                                     f32([[0.1, 0.9], [0.5, 0.5]])),
        "gamma": lambda k: r.gamma(k, f32([0.3, 1.0, 2.5, 10.0])),
        "loggamma": lambda k: r.loggamma(k, f32([0.05, 1.0, 4.0])),
        "beta": lambda k: r.beta(k, f32(2.0), f32([0.5, 3.0])),
        "dirichlet": lambda k: r.dirichlet(k, f32([0.5, 1.0, 2.0]), (2,)),
        "chisquare": lambda k: r.chisquare(k, f32([1.0, 4.0, 9.0])),
        "f": lambda k: r.f(k, f32(3.0), f32([5.0, 10.0])),
        "t": lambda k: r.t(k, f32([1.0, 5.0, 30.0])),
        "generalized_normal": lambda k: r.generalized_normal(k, 1.5, (6,)),
        "ball": lambda k: r.ball(k, 3, 2, (4,)),
        "ball_p1": lambda k: r.ball(k, 2, 1.0, (3,)),
        "orthogonal": lambda k: r.orthogonal(k, 3),
        "orthogonal_wide": lambda k: r.orthogonal(k, 2, (2,), m=4),
        "categorical_high": lambda k: r.categorical(k, f32([0.1, 2.0, -1.0]), shape=(8,),
                                                    mode="high"),
        "choice_p_noreplace": lambda k: r.choice(k, 6, (3,), replace=False,
                                                 p=f32([0.1, 0.2, 0.3, 0.1, 0.2, 0.1]),
                                                 mode="high"),
        "randint_big": lambda k: r.randint(k, (6,), -2 ** 31, 2 ** 31 - 1),
    }
