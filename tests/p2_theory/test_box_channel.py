"""The authors' box integrator (smattn.p2.theory.box_channel) against independent references: scipy's adaptive
dblquad of the authors' integrand on [-3, 3]^2, central differences against the exact box Jacobian, our
Gauss-Hermite denoiser where the box does not cut the posterior, and the two backends against each other."""

import numpy as np
import pytest
from scipy.integrate import dblquad

from smattn.p2.theory.attention_link import link_logits
from smattn.p2.theory.box_channel import AUTHORS_BOX, BoxRule, box_g_out, box_moments
from smattn.p2.theory.channel_denoiser import g_out
from smattn.p2.theory.gamp import run_gamp
from smattn.p2.theory.gamp_box import trapped_rerun

C = 1.0


def _authors_mean(ell, omega, V, k, half=3.0, tol=1e-11):
    """Posterior moment k (flat index layer * 2 + token; None: the normalisation) by dblquad on the box, the
    integrand written from the authors' formulas (softmax with the skip matrix, np.linalg.solve, 1/det A)."""
    r = np.sqrt(ell[0] + ell[1] + 1e-6)
    x = np.array([-ell[0] / r, ell[1] / r])
    P = np.linalg.inv(V)

    def f(b, a):
        z1 = np.array([a, b])
        S = np.exp(np.outer(z1, z1))
        A = S / S.sum(axis=1, keepdims=True) + C * np.eye(2)
        tot = 0.0
        for s in (1.0, -1.0):
            Z = np.stack([z1, np.linalg.solve(A, s * x)])
            D = Z - omega
            w = np.exp(-0.5 * np.trace(D.T @ P @ D)) / abs(np.linalg.det(A))
            tot += w * (1.0 if k is None else Z.ravel()[k])
        return tot

    return dblquad(f, -half, half, -half, half, epsabs=tol, epsrel=tol)[0]


@pytest.mark.parametrize(
    "V, spread",
    [
        (np.eye(2) + 1e-3 * np.eye(2), 1.0),  # the start: wide, cut by the box
        (np.array([[0.2, 0.01], [0.01, 0.004]]) + 1e-3 * np.eye(2), 0.7),  # the trapped state: last layer peaked
    ],
)
def test_fixed_rule_matches_dblquad_on_the_box(V, spread):
    rng = np.random.default_rng(7)
    Zt = rng.standard_normal((1, 2, 2))
    ell = link_logits(Zt, C)
    omega = Zt + spread * np.einsum("ab,nbt->nat", np.linalg.cholesky(V), rng.standard_normal((1, 2, 2)))
    norm = _authors_mean(ell[0], omega[0], V, None)
    ref = np.array([_authors_mean(ell[0], omega[0], V, k) for k in range(4)]) / norm
    mom = box_moments(ell, omega, V, C, AUTHORS_BOX, covariance=False)
    np.testing.assert_allclose(mom.mean.ravel(), ref, rtol=0, atol=1e-7)


def _states(n=40, seed=3):
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, 2, 2))
    V = np.array([[0.5, 0.03], [0.03, 0.02]])
    omega = Z + 0.5 * rng.standard_normal((n, 2, 2))
    return link_logits(Z, C), omega, V


def test_finite_differences_approximate_the_exact_box_jacobian():
    ell, omega, V = _states()
    g_fd, dg_fd, _ = box_g_out(ell, omega, V, C, AUTHORS_BOX, jacobian="fd")
    g_an, dg_an, _ = box_g_out(ell, omega, V, C, AUTHORS_BOX, jacobian="analytic")
    np.testing.assert_array_equal(g_fd, g_an)
    scale = np.abs(dg_an).max()
    np.testing.assert_allclose(dg_fd, dg_an, rtol=0, atol=1e-6 * scale)
    # and a coarse difference of g_out itself (step 1e-3) agrees with both to its O(h^2) error
    h = 1e-3
    om = omega.copy()
    om[:, 0, 1] += h
    gp = box_g_out(ell, om, V, C, AUTHORS_BOX, jacobian=None)[0]
    om[:, 0, 1] -= 2 * h
    gm = box_g_out(ell, om, V, C, AUTHORS_BOX, jacobian=None)[0]
    np.testing.assert_allclose((gp - gm) / (2 * h), dg_an[:, :, :, 0, 1], rtol=0, atol=1e-4 * scale)


def test_box_agrees_with_gauss_hermite_when_the_box_holds_the_posterior():
    # small first-layer variance around |omega1| < 1: the box [-3, 3]^2 cuts nothing, both are the same integral
    rng = np.random.default_rng(11)
    n = 30
    Z = 0.4 * rng.standard_normal((n, 2, 2))
    ell = link_logits(Z, C)
    V = np.array([[0.05, 0.0], [0.0, 0.2]])
    omega = Z + 0.1 * rng.standard_normal((n, 2, 2))
    # without the authors' 1e-6 under the pre-image's square root (which moves x by ~1e-6 / (l1 + l2))
    exact = BoxRule(sqrt_eps=0.0)
    g_box, dg_box, _ = box_g_out(ell, omega, V, C, exact, jacobian="analytic")
    g_gh, dg_gh, _ = g_out(ell, omega, V, C)
    np.testing.assert_allclose(g_box, g_gh, rtol=0, atol=1e-6 * np.abs(g_gh).max())
    np.testing.assert_allclose(dg_box, dg_gh, rtol=0, atol=1e-5 * np.abs(dg_gh).max())
    # a wide first layer is cut by the box: the two integrators then differ (what the GAMP comparison tests)
    g_wide = box_g_out(ell, 2.5 + omega, np.eye(2), C, AUTHORS_BOX, jacobian=None)[0]
    g_wide_gh = g_out(ell, 2.5 + omega, np.eye(2), C, jacobian=False)[0]
    assert np.abs(g_wide - g_wide_gh).max() > 0.1


def test_numpy_and_jax_backends_agree():
    ell, omega, V = _states(n=12)
    a = box_g_out(ell, omega, V, C, BoxRule(backend="numpy"), jacobian="analytic")
    b = box_g_out(ell, omega, V, C, BoxRule(backend="jax"), jacobian="analytic")
    np.testing.assert_allclose(a[0], b[0], rtol=0, atol=1e-10)
    np.testing.assert_allclose(a[1], b[1], rtol=0, atol=1e-8 * np.abs(a[1]).max())


def test_box_rule_and_integrator_validation():
    with pytest.raises(ValueError):
        BoxRule(panels=0)
    with pytest.raises(ValueError):
        BoxRule(backend="cuda")
    with pytest.raises(ValueError):
        run_gamp(10, 1.2, 1, integrator="adaptive")
    with pytest.raises(ValueError):
        run_gamp(10, 1.2, 1, L=3, integrator="authors_box")
    ell, omega, V = _states(n=2)
    with pytest.raises(ValueError):
        box_g_out(ell, omega, V, C, jacobian="exact")


def test_trapped_rerun_reruns_exactly_the_trapped_seeds():
    rule = AUTHORS_BOX
    # learned_min above any reachable value: every seed counts as trapped and is rerun with the box
    out = trapped_rerun(40, 1.2, 2, [0, 1], box=rule, learned_min=5.0, log=lambda *_: None)
    assert out["runs"] == 2 and out["trapped"] == 2 and out["learned_of_trapped"] == 0
    assert all("C1_box" in r and not r["learned_box"] for r in out["rows"])
    # the rerun has the same teacher, data and start: its first iterate's overlap with the teacher is that of
    # a box run of the same seed, not of our integrator's
    rb = run_gamp(40, 1.2, 2, seed=1, onsager="latest", integrator="authors_box", box=rule)
    assert out["rows"][1]["C1_box"] == pytest.approx(float(np.abs(rb.M[-1, 0, 0]) / np.sqrt(rb.Q[-1, 0, 0])))
    out = trapped_rerun(40, 1.2, 2, [0], box=rule, learned_min=0.0, log=lambda *_: None)
    assert out["trapped"] == 0 and "C1_box" not in out["rows"][0] and np.isnan(out["iter_s_authors_box"])
