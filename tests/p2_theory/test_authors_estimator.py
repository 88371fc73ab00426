"""The authors' box Monte-Carlo estimator: the fused evaluation (both signs of the last layer from one pair of
quadratic forms, cache-sized blocks) gives the direct per-sign evaluation's numbers on the same random points."""

import numpy as np
import pytest

from smattn.p2.theory.attention_link import link_logits
from smattn.p2.theory.authors_estimator import AuthorsSettings, authors_g_out, authors_state_evolution
from smattn.p2.theory.overlaps import sqrtm_psd


def _observations(Q, n, seed, v_reg=1e-3):
    rng = np.random.default_rng(seed)
    L = Q.shape[0]
    V = (1.0 + v_reg) * np.eye(L) - Q
    om = np.einsum("ab,nbt->nat", sqrtm_psd(Q), rng.standard_normal((n, L, 2)))
    Z = om + np.einsum("ab,nbt->nat", sqrtm_psd(V), rng.standard_normal((n, L, 2)))
    return link_logits(Z, 0.7), om, V


@pytest.mark.parametrize(
    "Q",
    [
        np.array([[0.3, 0.1], [0.1, 0.95]]),  # off-diagonal V: the cross terms of the quadratic form
        np.diag([0.55, 0.55, 0.996]),  # the published depth-3 point, where the floor acts
        np.array([[0.4, 0.05, 0.1], [0.05, 0.3, -0.08], [0.1, -0.08, 0.9]]),
    ],
)
def test_fused_box_sums_equal_the_direct_evaluation(Q):
    """Same generator, same points: g_out, Z_out and the floored set agree to rounding (fused and, for L = 2,
    compiled sums against the direct evaluation). 23 samples with chunks of 5 and blocks of 2 samples cover a ragged
    last chunk and block. Fails if the odd part of the last layer (Delta)
    is replaced by the even one (W), or a cross term P_aL is dropped."""
    ell, om, V = _observations(Q, 23, seed=4)
    kw = dict(n_points=1000, chunk_elems=5 * 1000 * 2 * (Q.shape[0] - 1))
    g_d, z_d, f_d = authors_g_out(ell, om, V, 0.7, np.random.default_rng(9), AuthorsSettings(kernel="direct", **kw))
    fused = AuthorsSettings(kernel="fused", block_elems=2000, **kw)
    g_f, z_f, f_f = authors_g_out(ell, om, V, 0.7, np.random.default_rng(9), fused)
    np.testing.assert_allclose(z_f, z_d, rtol=1e-12, atol=0)
    np.testing.assert_allclose(g_f, g_d, rtol=1e-10, atol=1e-12 * np.abs(g_d).max())
    np.testing.assert_array_equal(f_f, f_d)
    if Q.shape[0] == 2:  # the compiled sums (L = 2), chunks of 5 samples, the last one padded
        comp = AuthorsSettings(kernel="compiled", **kw)
        g_c, z_c, f_c = authors_g_out(ell, om, V, 0.7, np.random.default_rng(9), comp)
        np.testing.assert_allclose(z_c, z_d, rtol=1e-12, atol=0)
        np.testing.assert_allclose(g_c, g_d, rtol=1e-10, atol=1e-12 * np.abs(g_d).max())
        np.testing.assert_array_equal(f_c, f_d)
    if Q.shape[0] == 3 and Q[2, 2] > 0.99:
        assert 0 < f_d.mean() < 1  # the floor is exercised


def test_fused_short_state_evolution_equals_the_direct_one():
    """A short two-layer run of the authors' SE (the phase-diagram read-off procedure) gives the same iterates."""
    kw = dict(q0=0.05, iterations=4, n_samples=12, seed=2, damping=0.8, tail=1, L=2)
    a = authors_state_evolution(0.9, 1.0, settings=AuthorsSettings(n_points=500, kernel="direct"), **kw)
    b = authors_state_evolution(0.9, 1.0, settings=AuthorsSettings(n_points=500), **kw)
    np.testing.assert_allclose(b.history, a.history, rtol=1e-9, atol=1e-12)


def test_unknown_kernel_is_refused():
    with pytest.raises(ValueError, match="kernel"):
        AuthorsSettings(kernel="jax")
