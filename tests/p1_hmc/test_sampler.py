"""Theory vs NUTS on a small instance (spec §3): mean predictor and order parameter agree.

The theory is exact for N, P -> infinity at fixed P/N; at N = 8 finite-width corrections of relative size O(1/N)
remain on top of the sampling error, which the tolerances below allow for (they are not fitted to the result).
"""

import numpy as np

from smattn.p1.action import Architecture
from smattn.p1.kernels import PathGram
from smattn.p1.minimise import ActionProblem, minimise_action
from smattn.p1.predictor import predictor
from smattn.p1.sampler import run_nuts


def test_theory_matches_nuts_small_instance():
    rng = np.random.default_rng(0)
    P, Pt, Ht, D, N, T = 20, 30, 2, 8, 8, 0.1
    xbar = rng.standard_normal((P + Pt, Ht, D))
    xbar[:, 0, 0] *= 3
    y = np.sign(xbar[:P, 0, 0] + 0.3 * rng.standard_normal(P))
    xi = xbar / np.sqrt(D * Ht)
    arch = Architecture.equal_width((2, 1), N)
    th = minimise_action(ActionProblem(arch, PathGram(xi[:P]), y, T))
    assert th.converged
    mean_th = predictor(th.U, xi[:P], y, xi[P:], T)
    s = run_nuts(
        xbar[:P], y, xbar[P:], arch, T, num_warmup=120, num_samples=120, num_chains=1, seed=0, max_tree_depth=6
    )
    assert s.divergences == 0
    assert s.U.shape == (120, 2, 2) and s.f_test.shape == (120, Pt)
    print(s.summary())
    se_U = s.U.std(axis=0) / np.sqrt(np.maximum(s.ess_U, 1.0))
    # the theory moved U away from the GP value 1 and the sampler sees the same direction and size
    assert th.U[1, 1] < 0.6
    np.testing.assert_array_less(np.abs(s.U_mean - th.U), 4 * se_U + 0.15 * np.abs(th.U).max())
    rel = np.abs(s.mean_predictor - mean_th).mean() / np.abs(mean_th).mean()
    assert rel < 0.15
    assert np.mean(np.sign(s.mean_predictor) == np.sign(mean_th)) > 0.9
