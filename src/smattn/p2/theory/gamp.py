"""GAMP for the deep tied-attention target (P2 Algorithm 1) with the analytic channel Jacobian and damping.

API for other groups: run_gamp(d, alpha, n_iter, seed, damping, ..., init=None) -> GampResult with per-iteration
M (iters, p, p) = W_hat W^T / d, Q (iters, p, p) = W_hat W_hat^T / d and the plug-in test error (iters,);
init=GampInit(overlap) starts from an informed estimate (docs/p2_dynamics.md#gamp-iterations).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...progress import progress
from .attention_link import attention_output, check_skip, link_logits
from .box_channel import AUTHORS_BOX, BoxRule, box_g_out
from .channel_denoiser import g_out
from .prior_denoiser import f_in
from .quadrature import DEFAULT_QUADRATURE, QuadratureSettings

__all__ = ["GampInit", "GampResult", "make_data", "run_gamp"]


@dataclass(frozen=True)
class GampInit:
    """Informed start of GAMP at a prescribed overlap with the teacher (one entry per layer).

    overlap m_k in [0, 1); self_overlap q_k >= m_k^2 (default m_k); variance: the C_hat^0 diagonal (default 1 - q_k).
    W_hat^0_k = m_k w_k + sqrt(q_k - m_k^2) xi_k, with xi_k standard normal draws projected orthogonally to the
    teacher rows and rescaled to |xi_k|^2 = d, so that M^0_kk = m_k |w_k|^2 / d exactly and Q^0_kk ~= q_k.  The
    default q = m, C_hat^0 = I - diag(m) is the Bayes-optimal (Nishimori) relation that the state evolution assumes;
    q > m with a smaller variance mimics the state a random start drifts into (docs/p2_dynamics.md#gamp-iterations).
    W_hat^0 does not depend on the data, so the first step needs no Onsager term (g_out^{-1} = 0).
    """

    overlap: tuple
    self_overlap: tuple | None = None
    variance: tuple | None = None

    def __post_init__(self):
        m = np.asarray(self.overlap, dtype=np.float64)
        if m.ndim != 1 or not np.all((m >= 0) & (m < 1)):
            raise ValueError(f"GampInit.overlap must be one value in [0, 1) per layer, got {self.overlap!r}")
        q = m if self.self_overlap is None else np.asarray(self.self_overlap, dtype=np.float64)
        if q.shape != m.shape or not np.all(q >= m**2):
            raise ValueError(f"GampInit.self_overlap needs one value >= overlap^2 per layer, got {self.self_overlap!r}")
        v = 1.0 - q if self.variance is None else np.asarray(self.variance, dtype=np.float64)
        if v.shape != m.shape or not np.all(v > 0):
            raise ValueError(f"GampInit.variance must have one value > 0 per layer, got {self.variance!r}")

    def start(self, W, xi):
        """(W_hat^0 (p, d), C_hat^0 (p, p)) from the teacher W (p, d) and standard normal draws xi (p, d)."""
        m = np.asarray(self.overlap, dtype=np.float64)
        p, d = W.shape
        if m.shape != (p,):
            raise ValueError(f"GampInit.overlap has {m.size} entries for {p} layers")
        q = m if self.self_overlap is None else np.asarray(self.self_overlap, dtype=np.float64)
        v = 1.0 - q if self.variance is None else np.asarray(self.variance, dtype=np.float64)
        basis, _ = np.linalg.qr(W.T)  # (d, p) orthonormal span of the teacher
        xi = xi - (xi @ basis) @ basis.T
        xi *= np.sqrt(d) / np.linalg.norm(xi, axis=1, keepdims=True)
        return m[:, None] * W + np.sqrt(q - m**2)[:, None] * xi, np.diag(v)


@dataclass
class GampResult:
    """Per-iteration record (index t = state after the t-th update, t = 1..n_iter).

    M: (n_iter, p, p) rows = estimate layer, columns = teacher layer; Q: (n_iter, p, p); test_error: (n_iter,)
    plug-in error E||g(W x) - g(W_hat x)||_F^2 on fresh samples; delta: (n_iter,) ||M^t - M^{t-1}||_F;
    A: (n_iter, p, p); min_ess: (n_iter,) smallest effective node count of the denoiser; W_hat, W (p, d);
    M0, Q0: (p, p) overlaps of the start W_hat^0.
    """

    M: np.ndarray
    Q: np.ndarray
    test_error: np.ndarray
    delta: np.ndarray
    A: np.ndarray
    min_ess: np.ndarray
    W_hat: np.ndarray
    W: np.ndarray
    M0: np.ndarray
    Q0: np.ndarray


def _project(W, X):
    """sum_d W[a, d] X[n, t, d] as (n, p, 2): one matrix product (BLAS) instead of an einsum loop."""
    n, T, d = X.shape
    return (X.reshape(n * T, d) @ W.T).reshape(n, T, -1).transpose(0, 2, 1)


def _back_project(g, X):
    """sum_{n, t} g[n, a, t] X[n, t, d] as (p, d): one matrix product (BLAS)."""
    n, T, d = X.shape
    return g.transpose(1, 0, 2).reshape(-1, n * T) @ X.reshape(n * T, d)


def make_data(W, n, rng, c, noise: float = 0.0, noise_rng=None):
    """Inputs X (n, T=2, d) i.i.d. N(0,1), the observation logits (n, 2) of the deep attention target and the
    teacher's pre-activations Z (n, L, 2) the observations were computed from.

    noise: variance Delta of i.i.d. Gaussian noise added to every pre-activation before the link (the state
    evolution's teacher with v_reg = Delta, Z = Q^{1/2} xi + (I - Q + Delta I)^{1/2} U); drawn from noise_rng, so
    that X and every later draw of rng are those of the noiseless data.  Z then includes the noise.
    """
    p, d = W.shape
    if noise < 0:
        raise ValueError(f"noise variance must be >= 0, got {noise}")
    X = rng.standard_normal((n, 2, d))
    Z = np.einsum("ad,ntd->nat", W, X) / np.sqrt(d)
    if noise > 0:
        if noise_rng is None:
            raise ValueError("make_data: noise > 0 needs its own noise_rng")
        Z = Z + np.sqrt(noise) * noise_rng.standard_normal(Z.shape)
    return X, link_logits(Z, c), Z


def run_gamp(
    d: int,
    alpha: float,
    n_iter: int,
    seed: int = 0,
    *,
    damping: float = 0.8,
    c: float = 1.0,
    L: int = 2,
    lam: float = 0.0,
    n_test: int = 1000,
    v_reg: float = 1e-3,
    quad: QuadratureSettings = DEFAULT_QUADRATURE,
    init: GampInit | None = None,
    onsager_v_reg: bool = False,
    onsager: str = "damped",
    data_noise: float = 0.0,
    integrator: str = "gauss_hermite",
    box: BoxRule = AUTHORS_BOX,
    box_jacobian: str = "analytic",
    progress_desc: str | None = None,
    observer=None,
) -> GampResult:
    """Run GAMP on synthetic data of dimension d with n = floor(alpha d) samples.

    damping: weight of the new iterate (reference 0.8); lam: side-information strength (S = sqrt(lam) W + noise);
    v_reg: added to V inside the denoiser only (reference 1e-3); quad: the denoiser's quadrature.
    Initialisation as the reference: W_hat^0 i.i.d. N(0, 1), C_hat^0 = I, g_out^{-1} = 0; init (GampInit) starts
    at a prescribed overlap instead (same random draws).  onsager_v_reg: the Onsager term uses C_hat + v_reg I (the
    variance the denoiser is given) instead of the reference's C_hat (a diagnostic variant).  progress_desc: label
    of the progress lines of the iteration loop (smattn.progress; none when None).  observer: called after every
    iteration t (from 1) as observer(t, state) with state a dict of W (p, d), Z (n, p, 2) the teacher's
    pre-activations, W_hat, C_hat (p, p) after the
    damped update, V (p, p) the denoiser was given (without v_reg), omega (n, p, 2), g_out (n, p, 2) and its
    Jacobian dg (n, p, 2, p, 2) (diagnostics; must not modify them).
    onsager: how the Onsager term of a damped iteration is formed (the same for damping = 1).  "latest" (the
    authors' code): omega^t = W_hat^t X / sqrt(d) - C_hat^t g^{t-1}, the damped variance times the latest g_out.
    "damped" (default): omega^t = W_hat^t X / sqrt(d) - S^t with S^t = eta C^{t-1} g^{t-1} + (1 - eta) S^{t-1}, S^0 = 0,
    C = (I + A)^{-1} the undamped new variance: the damped estimate W_hat^t = eta f_in(b^{t-1}) +
    (1 - eta) W_hat^{t-1} carries the self-interaction of every earlier g_out with these weights, and S removes
    exactly that (with a Gaussian prior f_in is linear in b with slope C); at a fixed point both are C_hat g
    (docs/p2_dynamics.md#gamp-first-layer-at-finite-d).
    data_noise: variance Delta of Gaussian noise on the teacher's pre-activations (make_data); 0 (default) gives
    the noiseless data of the paper and the authors' code, Delta = v_reg the model the state evolution describes
    (docs/p2_theory.md#gamp).  The noise has its own random stream (seed, 1): teacher, inputs, test set and start
    are those of the noiseless run with the same seed.
    integrator: the output channel's integrator: "gauss_hermite" (default: quad, grids centred on omega, analytic
    Jacobian) or "authors_box" (L = 2: the authors' fixed box z1 in [-3, 3]^2 by the fixed rule ``box``,
    :mod:`.box_channel`; box_jacobian "fd" their central differences, "analytic" the exact derivative of the
    box-restricted g_out, which those differences approximate to ~1e-7 relative on a fixed rule and which costs a
    ninth; docs/p2_dynamics.md#the-authors-integrator).
    """
    if integrator not in ("gauss_hermite", "authors_box"):
        raise ValueError(f"integrator must be 'gauss_hermite' or 'authors_box', got {integrator!r}")
    if integrator == "authors_box" and L != 2:
        raise ValueError("the authors' box integrator is for L = 2 only")
    if onsager not in ("latest", "damped"):
        raise ValueError(f"onsager must be 'latest' or 'damped', got {onsager!r}")
    if d < 2 or n_iter < 1 or alpha <= 0:
        raise ValueError(f"need d >= 2, n_iter >= 1, alpha > 0; got d={d}, n_iter={n_iter}, alpha={alpha}")
    if not 0 < damping <= 1:
        raise ValueError(f"damping must be in (0, 1], got {damping}")
    check_skip(c)
    rng = np.random.default_rng(seed)
    n = int(np.floor(alpha * d))
    W = rng.standard_normal((L, d))
    X, ell, Z = make_data(W, n, rng, c, data_noise, np.random.default_rng([seed, 1]) if data_noise > 0 else None)
    Xt = rng.standard_normal((n_test, 2, d))
    y_test = attention_output(np.einsum("ad,ntd->nat", W, Xt) / np.sqrt(d), c)
    S = np.sqrt(lam) * W + rng.standard_normal((L, d)) if lam > 0 else None
    W_hat = rng.standard_normal((L, d))
    C_hat = np.eye(L)
    if init is not None:
        W_hat, C_hat = init.start(W, W_hat)
    g_prev = np.zeros((n, L, 2))
    ons = np.zeros((n, L, 2))  # the Onsager term subtracted from omega
    rec = {k: [] for k in ("M", "Q", "err", "delta", "A", "ess")}
    M_prev = W_hat @ W.T / d
    M0, Q0 = M_prev, W_hat @ W_hat.T / d
    sq = np.sqrt(d)
    steps = range(n_iter) if progress_desc is None else progress(range(n_iter), desc=progress_desc)
    v_ons = v_reg * np.eye(L) if onsager_v_reg else np.zeros((L, L))
    for t in steps:
        V = 0.5 * (C_hat + C_hat.T)
        if onsager == "latest":
            ons = np.einsum("ab,nbt->nat", V + v_ons, g_prev)
        omega = _project(W_hat, X) / sq - ons
        if integrator == "authors_box":
            gout, dg, mom = box_g_out(ell, omega, V + v_reg * np.eye(L), c, box, jacobian=box_jacobian)
        else:
            gout, dg, mom = g_out(ell, omega, V + v_reg * np.eye(L), c, quad, jacobian=True)
        A = -np.einsum("natbt->ab", dg) / d
        A = 0.5 * (A + A.T)
        B = _back_project(gout, X) / sq + A @ W_hat
        W_new, C_new = f_in(A, B, lam, S)
        W_hat = damping * W_new + (1.0 - damping) * W_hat
        C_hat = damping * C_new + (1.0 - damping) * C_hat
        g_prev = gout
        if onsager == "damped":
            ons = damping * np.einsum("ab,nbt->nat", C_new + v_ons, gout) + (1.0 - damping) * ons
        if observer is not None:
            observer(t + 1, dict(W=W, Z=Z, W_hat=W_hat, C_hat=C_hat, V=V, omega=omega, g_out=gout, dg=dg))
        M = W_hat @ W.T / d
        y_hat = attention_output(_project(W_hat, Xt) / sq, c)
        rec["M"].append(M)
        rec["Q"].append(W_hat @ W_hat.T / d)
        rec["err"].append(float(np.mean(np.sum((y_test - y_hat) ** 2, axis=(1, 2)))))
        rec["delta"].append(float(np.linalg.norm(M - M_prev)))
        rec["A"].append(A)
        rec["ess"].append(float(mom.ess.min()))
        M_prev = M
    return GampResult(
        M=np.array(rec["M"]),
        Q=np.array(rec["Q"]),
        test_error=np.array(rec["err"]),
        delta=np.array(rec["delta"]),
        A=np.array(rec["A"]),
        min_ess=np.array(rec["ess"]),
        W_hat=W_hat,
        W=W,
        M0=M0,
        Q0=Q0,
    )
