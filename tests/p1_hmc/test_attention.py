"""Attention paths, attentioned inputs and the network forward pass (spec §1)."""

import jax.numpy as jnp
import numpy as np
import pytest

from smattn.p1.attention import (
    attention_qk,
    attention_w,
    attentioned_inputs,
    layer_attention,
    path_attention,
    readout_vector,
)
from smattn.p1.kernels import kernel_U
from smattn.p1.network import effective_weights, forward_layers, forward_paths, order_parameter_sample


def _random_weights(rng, D, heads, N):
    w = {"V0": rng.standard_normal((N[0], D))}
    for l, H in enumerate(heads, start=1):
        w[f"V{l}"] = rng.standard_normal((H, N[l], N[l - 1]))
    w["a"] = rng.standard_normal(N[-1])
    return {k: jnp.asarray(v) for k, v in w.items()}


def test_softmax_over_keys_columns_sum_to_one():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 5, 4))
    A = attention_w(x, rng.standard_normal((2, 4, 4)))
    assert A.shape == (3, 2, 5, 5)
    np.testing.assert_allclose(A.sum(axis=2), 1.0, atol=1e-12)
    # key-first: A[b,h,s,t] proportional to exp(x_s W x_t)
    W = rng.standard_normal((1, 4, 4))
    A = attention_w(x[:1], W)
    e = x[0] @ W[0] @ x[0].T  # e[s, t]
    ref = np.exp(e) / np.exp(e).sum(axis=0, keepdims=True)
    np.testing.assert_allclose(A[0, 0], ref, rtol=1e-12)


def test_qk_equals_w_style_with_product_matrix():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 6, 5))
    WQ, WK = rng.standard_normal((3, 4, 5)), rng.standard_normal((3, 4, 5))
    W = np.einsum("hgd,hge->hde", WK, WQ) / 2.0  # W = W_K^T W_Q / sqrt(G), G = 4
    np.testing.assert_allclose(attention_qk(x, WQ, WK), attention_w(x, W), rtol=1e-10)


@pytest.mark.parametrize("heads", [(2,), (2, 3), (2, 1, 3)])
@pytest.mark.parametrize("readout", ["last", "first", "mean"])
def test_path_form_equals_layer_forward(heads, readout):
    """f computed through attention paths and effective weights equals the literal layer-by-layer network."""
    rng = np.random.default_rng(2)
    B, T, D = 3, 5, 4
    N = [3 + l for l in range(len(heads) + 1)]
    x = rng.standard_normal((B, T, D))
    layer_heads = [{"W": rng.standard_normal((H, D, D))} for H in heads]
    attn = layer_attention(x, layer_heads)
    abar = path_attention(attn, readout)
    Htot = int(np.prod(heads))
    assert abar.shape == (B, Htot, T)
    xbar = attentioned_inputs(x, abar) * np.sqrt(D * Htot)
    w = _random_weights(rng, D, heads, N)
    f_layers = forward_layers(w, jnp.asarray(x), [jnp.asarray(a) for a in attn], readout)
    f_paths = forward_paths(w, jnp.asarray(xbar))
    np.testing.assert_allclose(np.asarray(f_paths), np.asarray(f_layers), rtol=1e-10)


def test_path_order_lowest_head_slowest():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 4, 3))
    A1 = attention_w(x, rng.standard_normal((2, 3, 3)))
    A2 = attention_w(x, rng.standard_normal((3, 3, 3)))
    abar = path_attention([A1, A2], "last")
    for h1 in range(2):
        for h2 in range(3):
            np.testing.assert_allclose(abar[0, h1 * 3 + h2], A1[0, h1] @ A2[0, h2, :, -1], rtol=1e-12)
    np.testing.assert_allclose(readout_vector(A2, "mean"), A2.mean(-1))
    with pytest.raises(ValueError, match="readout"):
        readout_vector(A2, "cls")


def test_prior_average_of_weight_gram_is_identity_and_gives_gp_kernel():
    """Under the prior E[w w^T / N_0] = 1, so E[f f'] = K_GP = sum_pi xi_pi . xi_pi (spec §2.1, §3.3)."""
    rng = np.random.default_rng(4)
    heads, N, D = (2, 2), [40, 40, 40], 3
    acc = np.zeros((4, 4))
    n = 300
    for _ in range(n):
        acc += np.asarray(order_parameter_sample(_random_weights(rng, D, heads, N)))
    acc /= n
    np.testing.assert_allclose(acc, np.eye(4), atol=0.12)
    # exact check of the identity f = sum_pi w_pi^T V0 xi_pi / (sigma0 sqrt(N0))
    x = rng.standard_normal((2, 5, D))
    attn = layer_attention(x, [{"W": rng.standard_normal((2, D, D))}, {"W": rng.standard_normal((2, D, D))}])
    xi = attentioned_inputs(x, path_attention(attn, "last"))
    w = _random_weights(rng, D, heads, N)
    weff = np.asarray(effective_weights(w))
    f = np.einsum("pn,nd,bpd->b", weff, np.asarray(w["V0"]), xi) / np.sqrt(N[0])
    np.testing.assert_allclose(
        f, np.asarray(forward_layers(w, jnp.asarray(x), [jnp.asarray(a) for a in attn])), rtol=1e-10
    )
    assert kernel_U(np.eye(4), xi).shape == (2, 2)


def test_bad_shapes_raise():
    with pytest.raises(ValueError, match="shape"):
        attention_w(np.zeros((2, 3)), np.zeros((1, 3, 3)))
    with pytest.raises(ValueError, match="W must"):
        attention_w(np.zeros((1, 2, 3)), np.zeros((1, 4, 4)))
