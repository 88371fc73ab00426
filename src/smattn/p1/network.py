"""The Bayesian network of P1 written in JAX: forward pass and effective weights
(docs/p1_theory.md#network-and-attention-paths).

Weights (a dict, as sampled by :mod:`smattn.p1.sampler`): ``V0`` [N_0, D], ``V1`` .. ``VL`` with ``Vl`` of shape
[H_l, N_l, N_{l-1}], ``a`` [N_L]. Fixed attention enters through

* ``attn``: list of L attention tensors [B, H_l, T, T] (key first) for the layer-by-layer forward
  (:func:`forward_layers`, the literal definition, used in tests), or
* ``xbar`` [B, H_tot, T->D]: the un-normalised path-attended inputs ``sum_s abar_pi(s) x_s`` [B, H_tot, D]
  (:func:`forward_paths`, the exact and cheaper path form ``f = sum_pi w_pi^T V0 xbar_pi / sqrt(D H_tot N_0)``).

Effective weights ``w_pi = (a^T V^(L)_{h_L} ... V^(1)_{h_1})^T / sqrt(N_L ... N_1)`` [H_tot, N_0] (paths row-major
over (h_1..h_L)); the sampled order parameter of Eq. 13 is ``w w^T / N_0``.
"""

from __future__ import annotations

import jax.numpy as jnp


def n_layers(weights: dict, need_v0: bool = True) -> int:
    """Number of value layers L (keys V1..VL); the weights need ``a`` and, unless ``need_v0`` is False, ``V0``."""
    L = 0
    while f"V{L + 1}" in weights:
        L += 1
    if L == 0 or (need_v0 and "V0" not in weights) or "a" not in weights:
        raise ValueError(f"weights need V0, V1..VL and a; got keys {sorted(weights)}")
    return L


def effective_weights(weights: dict):
    """w [H_tot, N_0] from readout and value weights (V0 is not used and may be absent; no 1/sqrt(H) factors)."""
    L = n_layers(weights, need_v0=False)
    VL = weights[f"V{L}"]  # [H_L, N_L, N_{L-1}]
    R = jnp.einsum("n,hnm->hm", weights["a"], VL) / jnp.sqrt(VL.shape[1])
    for l in range(L - 1, 0, -1):
        V = weights[f"V{l}"]  # [H_l, N_l, N_{l-1}]
        R = jnp.einsum("rn,hnm->hrm", R, V) / jnp.sqrt(V.shape[1])
        R = R.reshape(-1, V.shape[2])
    return R


def order_parameter_sample(weights: dict):
    """U_samp = w w^T / N_0 for one weight sample, [H_tot, H_tot]."""
    w = effective_weights(weights)
    return w @ w.T / w.shape[1]


def forward_paths(weights: dict, xbar):
    """f(x) [B] from path-attended inputs xbar [B, H_tot, D] (sum_s abar_pi(s) x_s, no normalisation)."""
    w = effective_weights(weights)
    V0 = weights["V0"]
    B, Htot, D = xbar.shape
    proj = jnp.einsum("nd,bpd->bpn", V0, xbar)
    return jnp.einsum("pn,bpn->b", w, proj) / jnp.sqrt(D * Htot * V0.shape[0])


def forward_layers(weights: dict, x, attn: list, readout: str = "last"):
    """Literal layer-by-layer forward (P1 Eq. 1; docs/p1_theory.md#network-and-attention-paths).

    x: [B, T, D]; attn: list of L [B, H_l, T, T] -> f [B]."""
    L = n_layers(weights)
    V0 = weights["V0"]
    z = jnp.einsum("nd,btd->btn", V0, x) / jnp.sqrt(x.shape[2])  # [B, T, N_0]
    for l in range(1, L):
        V = weights[f"V{l}"]
        A = attn[l - 1]
        mixed = jnp.einsum("bsn,bhst->bhtn", z, A)
        z = jnp.einsum("hmn,bhtn->btm", V, mixed) / jnp.sqrt(V.shape[0] * V.shape[2])
    A = attn[L - 1]
    if readout == "last":
        abar = A[..., -1]
    elif readout == "first":
        abar = A[..., 0]
    elif readout == "mean":
        abar = A.mean(axis=-1)
    else:
        raise ValueError(f"readout must be 'last', 'first' or 'mean', got {readout!r}")
    V = weights[f"V{L}"]
    zeta = jnp.einsum("hmn,bsn,bhs->bm", V, z, abar) / jnp.sqrt(V.shape[0] * V.shape[2])
    return zeta @ weights["a"] / jnp.sqrt(V.shape[1])
