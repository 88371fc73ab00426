"""P1's hidden-Markov-chain (HMC) classification task and its fixed attention heads (spec §4, Appendix A).

Data: two hidden states with feature vectors ``v_+ = sqrt2 (1_100, 0_100)``, ``v_- = sqrt2 (0_100, 1_100)``
(N_f = 200); chains of 30 tokens; class +1 stays with probability 0.7, class -1 with 0.3. Token features
``v_state + eta`` with noise ``s_par1 P_e1 z + s_par2 P_e2 z + s_perp P_perp z``, z ~ N(0, 1_200). A bos token
(zero features) is prepended and a one-hot position (31) appended: tokens have D = 231, T = 31.

The random draws follow the reference exactly (torch CPU generator, float64): see :func:`generate_hmc` and
:func:`random_head`. Arrays returned: ``x`` [P, 31, 231] (token-first, as everywhere in ``smattn.p1``), ``y`` [P]
(first half +1, second half -1), ``states`` [P, 30] (+1/-1 hidden states).

Heads (W style, e_st = x_s^T W x_t, key on the left), all multiplied by the hardness beta = 10:
:func:`good_head_layer1` (same-state previous token, else bos), :func:`uniform_head` (exactly uniform attention),
:func:`random_head` (seeded Gaussian blocks; strength 0 gives the zero matrix = uniform attention).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

N_FEAT = 200
CHAIN = 30
T_TOK = CHAIN + 1
D_TOK = N_FEAT + T_TOK
BETA = 10.0

SEED_TRAIN, SEED_TEST = 27, 59
SEED_L1_GOOD, SEED_L1_RANDOM, SEED_L2_GOOD, SEED_L2_RANDOM = 127, 147, 217, 247


def feature_vectors() -> tuple[np.ndarray, np.ndarray]:
    """v_+ and v_- (each [200]), orthogonal with squared norm 200."""
    vp = np.zeros(N_FEAT)
    vm = np.zeros(N_FEAT)
    vp[: N_FEAT // 2] = np.sqrt(2.0)
    vm[N_FEAT // 2 :] = np.sqrt(2.0)
    return vp, vm


def noise_projectors() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """P_e1 (along v_+ - v_-), P_e2 (along v_+ + v_-), P_perp (out of plane); each [200, 200]."""
    vp, vm = feature_vectors()
    e1 = (vp - vm) / np.linalg.norm(vp - vm)
    e2 = (vp + vm) / np.linalg.norm(vp + vm)
    P1, P2 = np.outer(e1, e1), np.outer(e2, e2)
    return P1, P2, np.eye(N_FEAT) - P1 - P2


@dataclass
class HMCData:
    """x: [P, 31, 231]; y: [P]; states: [P, 30] (hidden states, +1/-1)."""

    x: np.ndarray
    y: np.ndarray
    states: np.ndarray


def _set_seed(seed: int) -> torch.Generator:
    g = torch.Generator(device="cpu")
    g.manual_seed(int(seed))
    return g


def generate_hmc(
    n_examples: int, seed: int, sigma_perp: float = 1.0, sigma_par: tuple = (1.0, 1.0), p_stay: tuple = (0.7, 0.3)
) -> HMCData:
    """Generate ``n_examples`` chains (first half class +1 with p_stay[0], then class -1 with p_stay[1]).

    Draw order (reference, Appendix A): per class, per chain, one uniform for the initial state (state + if >= 0.5),
    then one uniform per following token (stay if < p_stay); after all chains one standard normal tensor of
    shape [P, 200, 30] (example, feature, token).
    """
    if n_examples < 2 or n_examples % 2:
        raise ValueError(f"n_examples must be a positive even number, got {n_examples}")
    if sigma_perp < 0 or min(sigma_par) < 0:
        raise ValueError(f"noise strengths must be non-negative, got sigma_perp={sigma_perp}, sigma_par={sigma_par}")
    g = _set_seed(seed)
    half = n_examples // 2
    states = np.empty((n_examples, CHAIN), dtype=np.int64)
    i = 0
    for ps in p_stay:
        for _ in range(half):
            s = 1 if torch.rand(1, generator=g, dtype=torch.float64).item() >= 0.5 else -1
            states[i, 0] = s
            for t in range(1, CHAIN):
                if torch.rand(1, generator=g, dtype=torch.float64).item() >= ps:
                    s = -s
                states[i, t] = s
            i += 1
    z = torch.randn(n_examples, N_FEAT, CHAIN, generator=g, dtype=torch.float64).numpy()
    P1, P2, Pp = noise_projectors()
    noise_op = sigma_par[0] * P1 + sigma_par[1] * P2 + sigma_perp * Pp
    eta = np.einsum("ij,pjt->pti", noise_op, z)  # [P, 30, 200]
    vp, vm = feature_vectors()
    feats = np.where(states[..., None] > 0, vp, vm) + eta
    x = np.zeros((n_examples, T_TOK, D_TOK))
    x[:, 1:, :N_FEAT] = feats
    x[:, np.arange(T_TOK), N_FEAT + np.arange(T_TOK)] = 1.0
    y = np.concatenate([np.ones(half), -np.ones(half)])
    return HMCData(x=x, y=y, states=states)


def clean_tokens(states: np.ndarray) -> np.ndarray:
    """Noise-free inputs for given hidden states [B, 30] -> x [B, 31, 231] (for checks of the heads)."""
    states = np.asarray(states)
    vp, vm = feature_vectors()
    x = np.zeros((states.shape[0], T_TOK, D_TOK))
    x[:, 1:, :N_FEAT] = np.where(states[..., None] > 0, vp, vm)
    x[:, np.arange(T_TOK), N_FEAT + np.arange(T_TOK)] = 1.0
    return x


def good_head_layer1(beta: float = BETA) -> np.ndarray:
    """Layer-1 good head [231, 231]: W_ff = q q^T, q = (v_+ - v_-)/200; previous-token and bos position scores."""
    vp, vm = feature_vectors()
    q = (vp - vm) / (np.dot(vp - vm, vp - vm) / 2)
    W = np.zeros((D_TOK, D_TOK))
    W[:N_FEAT, :N_FEAT] = np.outer(q, q)
    pp = np.zeros((T_TOK, T_TOK))
    for s in range(1, CHAIN):
        pp[s, s + 1] = 1.0
    pp[0, 1:] = 1.5
    W[N_FEAT:, N_FEAT:] = pp
    return beta * W


def uniform_head(beta: float = BETA) -> np.ndarray:
    """Layer-2 good head [231, 231]: all-ones position block, so every logit equals beta (uniform attention)."""
    W = np.zeros((D_TOK, D_TOK))
    W[N_FEAT:, N_FEAT:] = 1.0
    return beta * W


def random_head(seed: int, strength: float = 1.0, beta: float = BETA) -> np.ndarray:
    """Random head [231, 231] with the reference's draw order after seeding with ``seed``.

    Feature block G_ff/200 (200x200 draw), position block G_pp (31x31 draw), then a full 231x231 draw divided by
    sqrt(200) of which only the two off-diagonal blocks are kept; every block times ``strength``, sum, times beta.
    ``strength = 0`` gives the zero matrix (exactly uniform attention).
    """
    g = _set_seed(seed)
    Gff = torch.randn(N_FEAT, N_FEAT, generator=g, dtype=torch.float64).numpy() / N_FEAT
    Gpp = torch.randn(T_TOK, T_TOK, generator=g, dtype=torch.float64).numpy()
    Gfull = torch.randn(D_TOK, D_TOK, generator=g, dtype=torch.float64).numpy() / np.sqrt(N_FEAT)
    W = np.zeros((D_TOK, D_TOK))
    W[:N_FEAT, :N_FEAT] = strength * Gff
    W[N_FEAT:, N_FEAT:] = strength * Gpp
    W[:N_FEAT, N_FEAT:] = strength * Gfull[:N_FEAT, N_FEAT:]
    W[N_FEAT:, :N_FEAT] = strength * Gfull[N_FEAT:, :N_FEAT]
    return beta * W


#: Model variants of spec §4.3: layer-1 heads, layer-2 heads, sigma_perp. Path names in flat order.
VARIANTS = {
    "all": {
        "layer1": ["good", "random"],
        "layer2": ["uniform", "random"],
        "sigma_perp": 1.0,
        "paths": ["g", "a1", "d", "a2"],
    },
    "good": {"layer1": ["good"], "layer2": ["uniform"], "sigma_perp": 1.0, "paths": ["g"]},
    "good_denoising": {"layer1": ["good", "random"], "layer2": ["uniform"], "sigma_perp": 1.0, "paths": ["g", "d"]},
    "two_path_random": {"layer1": ["good", "random"], "layer2": ["uniform"], "sigma_perp": 5.0, "paths": ["g", "d"]},
    "two_path_uniform": {"layer1": ["good", "blank"], "layer2": ["uniform"], "sigma_perp": 5.0, "paths": ["g", "d"]},
}


def head_matrices(variant: str) -> list[np.ndarray]:
    """Per-layer W tensors [H_l, 231, 231] of a variant (layer 1 first); the seeds are the reference's."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown HMC variant {variant!r}; choose from {sorted(VARIANTS)}")
    spec = VARIANTS[variant]
    makers = {
        1: {
            "good": lambda: good_head_layer1(),
            "random": lambda: random_head(SEED_L1_RANDOM, 1.0),
            "blank": lambda: random_head(SEED_L1_RANDOM, 0.0),
        },
        2: {"uniform": lambda: uniform_head(), "random": lambda: random_head(SEED_L2_RANDOM, 1.0)},
    }
    return [np.stack([makers[1][n]() for n in spec["layer1"]]), np.stack([makers[2][n]() for n in spec["layer2"]])]
