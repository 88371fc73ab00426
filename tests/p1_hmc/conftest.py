"""Shared setup for the p1_hmc tests: float64 JAX, one thread."""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

from smattn.device import jax_setup

jax_setup(x64=True)  # after XLA_FLAGS and before the imports below (float64 before any JAX array exists)

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from smattn.p1.action import Architecture  # noqa: E402
from smattn.p1.kernels import PathGram  # noqa: E402
from smattn.p1.minimise import ActionProblem  # noqa: E402


def _make_problem(heads, N, T=0.05, P=16, D=5, seed=0, correlated=False):
    """(ActionProblem, paths xi [P, H_tot, D]) on random paths at equal widths N and temperature T.

    correlated=False: independent paths xi ~ N(0, 1/(D H_tot)), labels sign(noise + 5 xi[:, 0, 0]);
    correlated=True: paths sharing a common component (so off-diagonal U entries matter), random labels with the
    first two fixed to +1, -1.
    """
    rng = np.random.default_rng(seed)
    Htot = int(np.prod(heads))
    if correlated:
        xi = 0.6 * rng.normal(size=(P, 1, D)) + rng.normal(size=(P, Htot, D))
        y = np.where(rng.random(P) < 0.5, -1.0, 1.0)
        y[:2] = (1.0, -1.0)
    else:
        xi = rng.standard_normal((P, Htot, D)) / np.sqrt(D * Htot)
        y = np.sign(rng.standard_normal(P) + xi[:, 0, 0] * 5)
    return ActionProblem(Architecture.equal_width(heads, N), PathGram(xi), y, T), xi


def _random_pd(n, rng, scale=0.3):
    """I + A A^T with A [n, n] of i.i.d. N(0, scale^2) entries drawn from ``rng``."""
    A = rng.standard_normal((n, n)) * scale
    return np.eye(n) + A @ A.T


@pytest.fixture
def make_problem():
    """Factory: make_problem(heads, N, T=0.05, P=16, D=5, seed=0, correlated=False) -> (ActionProblem, xi)."""
    return _make_problem


@pytest.fixture
def random_pd():
    """Factory: random_pd(n, rng, scale=0.3) -> a positive definite [n, n] matrix."""
    return _random_pd
