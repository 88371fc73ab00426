"""The HMC task generator and its fixed heads (spec §4, Appendix A)."""

import numpy as np
import pytest
import torch

from smattn.p1 import hmc_task as H
from smattn.p1.attention import attention_w, attentioned_inputs_from_heads
from smattn.p1.kernels import PathGram, kernel_U
from smattn.p1.predictor import accuracy, predictor


@pytest.fixture(scope="module")
def test_set():
    return H.generate_hmc(1000, H.SEED_TEST)


def test_shapes_labels_positions(test_set):
    d = test_set
    assert d.x.shape == (1000, 31, 231) and d.y.shape == (1000,) and d.states.shape == (1000, 30)
    assert (d.y[:500] == 1).all() and (d.y[500:] == -1).all()
    np.testing.assert_array_equal(d.x[:, 0, :200], 0.0)  # bos has zero features
    np.testing.assert_array_equal(d.x[:, :, 200:], np.broadcast_to(np.eye(31), (1000, 31, 31)))


def test_class_statistics(test_set):
    s = test_set.states
    switch = np.diff(s, axis=1) != 0
    # 500 chains x 29 transitions per class: binomial std ~ 0.004
    assert switch[:500].mean() == pytest.approx(0.3, abs=0.015)
    assert switch[500:].mean() == pytest.approx(0.7, abs=0.015)
    assert (s[:, 0] == 1).mean() == pytest.approx(0.5, abs=0.05)


def test_noise_covariance_in_and_out_of_plane():
    d = H.generate_hmc(200, 3, sigma_perp=5.0)
    vp, vm = H.feature_vectors()
    eta = d.x[:, 1:, :200] - np.where(d.states[..., None] > 0, vp, vm)
    P1, P2, Pp = H.noise_projectors()
    e = eta.reshape(-1, 200)
    var_e1 = np.mean((e @ (vp - vm) / np.linalg.norm(vp - vm)) ** 2)
    var_e2 = np.mean((e @ (vp + vm) / np.linalg.norm(vp + vm)) ** 2)
    var_perp = np.sum((e @ Pp) ** 2) / e.shape[0] / 198
    assert var_e1 == pytest.approx(1.0, rel=0.1) and var_e2 == pytest.approx(1.0, rel=0.1)
    assert var_perp == pytest.approx(25.0, rel=0.02)


def test_reference_draw_order():
    """Initial-state and transition uniforms come first, then one normal tensor [P, 200, 30] (Appendix A)."""
    d = H.generate_hmc(4, 11, sigma_perp=1.0)
    g = torch.Generator().manual_seed(11)
    u = torch.rand(4 * 30, generator=g, dtype=torch.float64).numpy().reshape(4, 30)
    p_stay = np.array([0.7, 0.7, 0.3, 0.3])
    s0 = np.where(u[:, 0] >= 0.5, 1, -1)
    np.testing.assert_array_equal(d.states[:, 0], s0)
    flips = np.cumprod(np.where(u[:, 1:] >= p_stay[:, None], -1, 1), axis=1)
    np.testing.assert_array_equal(d.states[:, 1:], s0[:, None] * flips)
    z = torch.randn(4, 200, 30, generator=g, dtype=torch.float64).numpy()
    vp, vm = H.feature_vectors()
    eta = d.x[:, 1:, :200] - np.where(d.states[..., None] > 0, vp, vm)
    np.testing.assert_allclose(eta, np.transpose(z, (0, 2, 1)), atol=1e-12)  # all strengths 1 => eta = z
    # deterministic given the seed
    np.testing.assert_array_equal(H.generate_hmc(4, 11).x, d.x)


def test_good_heads_on_clean_tokens():
    rng = np.random.default_rng(0)
    states = np.where(rng.random((20, 30)) < 0.5, 1, -1)
    x = H.clean_tokens(states)
    A1 = attention_w(x, H.good_head_layer1()[None])[:, 0]  # [B, s, t]
    for b in range(20):
        for t in range(2, 31):  # query token t (chain index t-1) and its previous token t-1
            same = states[b, t - 1] == states[b, t - 2]
            target = t - 1 if same else 0
            # logits: same-state previous token 2*beta, bos 1.5*beta, any other token +-beta
            assert A1[b, :, t].argmax() == target and A1[b, target, t] > 0.8
    A2 = attention_w(x, H.uniform_head()[None])
    np.testing.assert_allclose(A2, 1.0 / 31, atol=1e-15)
    blank = H.random_head(H.SEED_L1_RANDOM, 0.0)
    assert not blank.any()


def test_random_heads_are_seeded_and_blockwise():
    W1 = H.random_head(H.SEED_L1_RANDOM)
    np.testing.assert_array_equal(W1, H.random_head(H.SEED_L1_RANDOM))
    assert not np.allclose(W1, H.random_head(H.SEED_L2_RANDOM))
    g = torch.Generator().manual_seed(H.SEED_L1_RANDOM)
    Gff = torch.randn(200, 200, generator=g, dtype=torch.float64).numpy()
    np.testing.assert_allclose(W1[:200, :200], 10 * Gff / 200, rtol=1e-14)
    with pytest.raises(ValueError, match="variant"):
        H.head_matrices("nope")


def test_gp_accuracy_order_on_reference_instance():
    """GP(all paths) < GP(good) < GP(good + denoising), the ordering of Fig. 2c (spec §7)."""
    tr = H.generate_hmc(100, H.SEED_TRAIN)
    te = H.generate_hmc(400, H.SEED_TEST)
    acc = {}
    for v in ("all", "good", "good_denoising"):
        heads = [{"W": W} for W in H.head_matrices(v)]
        xi, xt = (attentioned_inputs_from_heads(d.x, heads, "last") for d in (tr, te))
        acc[v] = accuracy(predictor(np.eye(xi.shape[1]), xi, tr.y, xt, 0.01), te.y)
        np.testing.assert_allclose(
            PathGram(xi).kernel(np.eye(xi.shape[1])), kernel_U(np.eye(xi.shape[1]), xi), rtol=1e-12
        )
    assert acc["all"] < acc["good"] < acc["good_denoising"]
