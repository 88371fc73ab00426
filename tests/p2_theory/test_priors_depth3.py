"""Prior denoiser with side information, state evolution with side information, depth-3 channel."""

import numpy as np
import pytest

from smattn.p2.theory.attention_link import link_logits
from smattn.p2.theory.channel_denoiser import posterior_moments
from smattn.p2.theory.prior_denoiser import f_in
from smattn.p2.theory.quadrature import QuadratureSettings
from smattn.p2.theory.state_evolution import state_evolution


def test_prior_denoiser_is_the_gaussian_posterior_with_side_information():
    rng = np.random.default_rng(0)
    A = np.array([[1.5, 0.2], [0.2, 0.7]])
    B = rng.standard_normal((2, 5))
    S = rng.standard_normal((2, 5))
    lam = 0.6
    W, C = f_in(A, B, lam, S)
    # posterior of w ~ N(0, I) with "likelihoods" exp(b.w - w.A w/2) and N(S; sqrt(lam) w, I)
    prec = np.eye(2) + A + lam * np.eye(2)
    np.testing.assert_allclose(C, np.linalg.inv(prec), atol=1e-12)
    np.testing.assert_allclose(W, np.linalg.solve(prec, B + np.sqrt(lam) * S), atol=1e-12)
    with pytest.raises(ValueError, match="lam"):
        f_in(A, B, -1.0)


def test_side_information_moves_se_off_the_trivial_fixed_point():
    lam = 0.5
    res = state_evolution(
        0.05, 1.0, 2, n_samples=200, seed=0, lam=lam, tol=1e-6, max_iter=200, quad=QuadratureSettings(n1d=24)
    )
    assert res.converged
    # below alpha_last the channel adds little: Q ~ lam / (1 + lam) on the diagonal
    assert np.all(np.diag(res.Q) > 0.9 * lam / (1 + lam))
    res0 = state_evolution(0.05, 1.0, 2, n_samples=200, seed=0, tol=1e-6, max_iter=200, quad=QuadratureSettings(n1d=24))
    assert np.all(np.abs(res0.Q) < 1e-4)


def test_depth3_channel_grid_convergence_and_symmetry():
    rng = np.random.default_rng(4)
    n = 6
    Q = np.diag([0.3, 0.3, 0.5])
    V = np.eye(3) - Q
    Z = rng.standard_normal((n, 3, 2))
    om = np.einsum("ab,nbt->nat", np.sqrt(Q), Z) * np.sqrt(np.diag(Q))[None, :, None] ** 0
    ell = link_logits(Z, 1.0)
    coarse = posterior_moments(ell, om, V, 1.0, QuadratureSettings(n1d=10))
    fine = posterior_moments(ell, om, V, 1.0, QuadratureSettings(n1d=16))
    np.testing.assert_allclose(coarse.mean, fine.mean, atol=2e-2)
    # at omega = 0 each layer's posterior mean vanishes by the per-layer sign symmetry
    m0 = posterior_moments(ell, np.zeros_like(om), np.eye(3), 1.0, QuadratureSettings(n1d=10))
    assert np.abs(m0.mean).max() < 1e-10


def test_depth3_compiled_grid_equals_the_numpy_reference():
    rng = np.random.default_rng(11)
    n = 37  # not a multiple of the chunk: exercises the padded last chunk
    Q = np.array([[0.4, 0.05, 0.0], [0.05, 0.3, 0.1], [0.0, 0.1, 0.9]])
    V = np.eye(3) - Q + 1e-3 * np.eye(3)
    Z = rng.standard_normal((n, 3, 2))
    om = 0.8 * Z + 0.3 * rng.standard_normal((n, 3, 2))
    ell = link_logits(Z, 0.7)
    kw = dict(n1d=7, method="A", chunk_elems=7**4 * 6 * 10)
    ref = posterior_moments(ell, om, V, 0.7, QuadratureSettings(backend="numpy", **kw))
    fast = posterior_moments(ell, om, V, 0.7, QuadratureSettings(backend="jax", **kw))
    for name in ("mean", "cov", "log_norm", "ess"):
        a, b = getattr(ref, name), getattr(fast, name)
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-11, err_msg=name)
    with pytest.raises(ValueError, match="backend"):
        QuadratureSettings(backend="torch")
    # two worker processes share the samples: the serial result to rounding
    two = posterior_moments(ell, om, V, 0.7, QuadratureSettings(backend="jax", workers=2, **kw))
    for name in ("mean", "cov", "log_norm", "ess"):
        np.testing.assert_allclose(getattr(two, name), getattr(fast, name), rtol=1e-12, atol=1e-14, err_msg=name)
    with pytest.raises(ValueError, match="workers"):
        QuadratureSettings(workers=0)


def test_depth3_mean_only_moments_on_a_peaked_diagonal_channel_equal_the_compiled_grid():
    """Diagonal V (the state evolution's case) and a peaked posterior, where most node weights underflow: the NumPy
    grid's mean without the covariance against the compiled grid (its own exponentials, full moments)."""
    rng = np.random.default_rng(12)
    n = 9
    Q = np.diag([0.93, 0.91, 0.9986])
    V = np.eye(3) - Q + 1e-3 * np.eye(3)
    Z = rng.standard_normal((n, 3, 2))
    om = np.sqrt(Q) @ Z + 0.05 * rng.standard_normal((n, 3, 2))
    ell = link_logits(Z, 1.0)
    kw = dict(n1d=8, method="A")
    fast = posterior_moments(ell, om, V, 1.0, QuadratureSettings(backend="jax", **kw))
    mean_only = posterior_moments(ell, om, V, 1.0, QuadratureSettings(backend="numpy", **kw), covariance=False)
    assert mean_only.cov is None
    assert np.median(mean_only.ess) < 50  # peaked: a few of the 2 x 8^4 nodes carry the weight
    for name in ("mean", "log_norm", "ess"):
        np.testing.assert_allclose(getattr(mean_only, name), getattr(fast, name), rtol=1e-9, atol=1e-11, err_msg=name)
    full = posterior_moments(ell, om, V, 1.0, QuadratureSettings(backend="numpy", **kw))
    np.testing.assert_array_equal(full.mean, mean_only.mean)
