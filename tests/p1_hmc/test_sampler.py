"""Theory vs NUTS on a small instance (docs/p1_theory.md#sampler): mean predictor and order parameter agree.

The theory is exact for N, P -> infinity at fixed P/N; at N = 8 finite-width corrections of relative size O(1/N)
remain on top of the sampling error, which the tolerances below allow for (they are not fitted to the result).
"""

import numpy as np
import pytest

from smattn.p1.action import Architecture
from smattn.p1.kernels import PathGram
from smattn.p1.minimise import ActionProblem, minimise_action
from smattn.p1.predictor import predictor
from smattn.p1.sampler import run_nuts


@pytest.mark.parametrize("sampler", ["collapsed", "full"])
def test_theory_matches_nuts_small_instance(sampler):
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
        xbar[:P],
        y,
        xbar[P:],
        arch,
        T,
        num_warmup=120,
        num_samples=120,
        num_chains=1,
        seed=0,
        max_tree_depth=6,
        sampler=sampler,
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


@pytest.mark.slow
def test_collapsed_and_full_samplers_agree_on_the_hmc_task():
    """HMC task (all four paths) at N = 10: the collapsed sampler (V0 integrated out) and the full sampler (the
    authors' method) sample the same posterior of U, so the posterior means of the 10 distinct U entries differ by
    less than 4 combined Monte-Carlo standard errors (ArviZ's MCSE; 4 sigma over 10 entries fails perfect agreement
    with probability ~6e-4), and the accuracies of the mean predictors by less than 4 combined accuracy MCSEs plus
    one test chain. Both runs (2 chains x (100 + 100) each) must have enough effective samples for this to test
    something (bulk ESS >= 20 on every entry). Mutation: the collapsed model with V0's prior variance doubled must
    fail it. ~5 CPU-minutes."""
    from smattn.p1 import hmc_task as H
    from smattn.p1.attention import attentioned_inputs_from_heads
    from smattn.p1.predictor import accuracy, accuracy_mcse

    tr, te = H.generate_hmc(100, H.SEED_TRAIN), H.generate_hmc(1000, H.SEED_TEST)
    heads = [{"W": W} for W in H.head_matrices("all")]
    s = np.sqrt(tr.x.shape[2] * 4)
    xb = attentioned_inputs_from_heads(tr.x, heads, "last") * s
    xt = attentioned_inputs_from_heads(te.x, heads, "last") * s
    arch = Architecture.equal_width((2, 2), 10)
    res = {
        k: run_nuts(xb, tr.y, xt, arch, 0.01, 100, 100, 2, 1, sampler=k, rhat_null_trials=0)
        for k in ("collapsed", "full")
    }
    c, f = res["collapsed"], res["full"]
    assert c.max_depth_fraction == 0.0 and c.divergences == 0
    iu = np.triu_indices(4)
    for r in (c, f):
        assert r.ess_U[iu].min() >= 20, r.ess_U
    z = np.abs(c.U_mean[iu] - f.U_mean[iu]) / np.hypot(c.mcse_U[iu], f.mcse_U[iu])
    assert z.max() < 4, (z, c.U_mean, f.U_mean)
    acc = {k: accuracy(r.mean_predictor, te.y) for k, r in res.items()}
    se = np.hypot(*(accuracy_mcse(r.mean_predictor, r.mcse_f, te.y) for r in (c, f)))
    assert abs(acc["collapsed"] - acc["full"]) <= 4 * se + 1e-3, (acc, se)


def test_rhat_pvalue_of_U_draws_reaches_the_ledger():
    """The sampler's R-hat p-value is that of the distinct (upper-triangle) U entries, and the ledger gets it as
    ``<prefix>.rhat_p<suffix>`` beside rhat_max (a record without it gives no entry)."""
    from smattn.p1 import convergence as conv
    from smattn.p1.sampler import _rhat_pvalue, nuts_ledger_entries

    rng = np.random.default_rng(3)
    U_c = rng.standard_normal((2, 40, 3, 3))
    U_c = (U_c + np.swapaxes(U_c, -1, -2)) / 2
    got = _rhat_pvalue(U_c, 50)
    iu = np.triu_indices(3)
    ref = conv.rhat_pvalue_of_draws(U_c[:, :, iu[0], iu[1]], trials=50)
    assert got == ref and got.n_params == 6
    assert _rhat_pvalue(U_c, 0) is None and _rhat_pvalue(U_c[:, :6], 50) is None
    out = nuts_ledger_entries({"rhat_U_max": 1.01, "rhat_U_p": 0.3}, "p1.hmc.nuts", "[N=10]")
    assert out == {"p1.hmc.nuts.rhat_max[N=10]": 1.01, "p1.hmc.nuts.rhat_p[N=10]": 0.3}
    assert "p1.hmc.nuts.rhat_p[N=10]" not in nuts_ledger_entries({"rhat_U_p": None}, "p1.hmc.nuts", "[N=10]")
