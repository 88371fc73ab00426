"""State evolution of Bayes-optimal GAMP for deep attention targets (P2 Eq. 14).

Q^{t+1} = (1 - eta) Q^t + eta * (Qhat + lam I)(I + Qhat + lam I)^{-1},  Qhat = alpha R(Q^t),
R(Q) = E_{xi,U}[ sum_t g_out[:, t] g_out[:, t]^T ],  omega = Q^{1/2} xi,  Z = omega + (I - Q)^{1/2} U,  V = I - Q.
The expectation is a Monte-Carlo average over a fixed set of teacher draws (common random numbers across
iterations, so the iteration is a deterministic map whose fixed point is tested for convergence).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .attention_link import check_skip, link_logits
from .channel_denoiser import choose_parametrisation, g_out
from .overlaps import clip_overlap, sqrtm_psd
from .quadrature import DEFAULT_QUADRATURE, QuadratureSettings

__all__ = [
    "TeacherDraws",
    "draw_teacher",
    "draw_teacher_qmc",
    "channel_covariance",
    "channel_average",
    "SEResult",
    "state_evolution",
    "overlap_update",
    "anderson_step",
]


@dataclass
class TeacherDraws:
    """Standard normal draws xi, U, each (N, L, 2)."""

    xi: np.ndarray
    U: np.ndarray


def draw_teacher(n_samples: int, L: int, seed: int) -> TeacherDraws:
    if n_samples < 1:
        raise ValueError(f"n_samples must be >= 1, got {n_samples}")
    rng = np.random.default_rng(seed)
    return TeacherDraws(rng.standard_normal((n_samples, L, 2)), rng.standard_normal((n_samples, L, 2)))


def draw_teacher_qmc(log2_n: int, L: int, seed) -> TeacherDraws:
    """2**log2_n quasi-random teacher draws: one scrambled Sobol' point set in 4L dimensions mapped through the
    inverse normal CDF (xi from the first 2L coordinates, U from the last 2L), each (2**log2_n, L, 2).

    Averages over such a set are unbiased for every scrambling (seed: an int or a numpy SeedSequence); independent
    scramblings give an honest error bar (their spread), see thresholds.alpha_last.
    """
    from scipy.stats import norm, qmc

    if int(log2_n) != log2_n or not 1 <= log2_n <= 24:
        raise ValueError(f"log2_n must be an integer in [1, 24], got {log2_n!r}")
    x = qmc.Sobol(4 * L, scramble=True, seed=np.random.default_rng(seed)).random_base2(int(log2_n))
    g = norm.ppf(x).reshape(-1, 2, L, 2)
    return TeacherDraws(np.ascontiguousarray(g[:, 0]), np.ascontiguousarray(g[:, 1]))


def channel_covariance(Q, v_reg: float = 0.0):
    """V = I - Q + Delta I (Q clipped to [0, 1) first): the channel covariance at overlap Q (L, L)."""
    if v_reg < 0:
        raise ValueError(f"v_reg must be >= 0, got {v_reg}")
    Q = clip_overlap(Q)
    return (1.0 + v_reg) * np.eye(Q.shape[0]) - Q


def channel_average(
    Q,
    c: float,
    draws: TeacherDraws,
    quad: QuadratureSettings = DEFAULT_QUADRATURE,
    *,
    want_k1: bool = False,
    v_reg: float = 0.0,
    per_draw: bool = False,
):
    """R(Q) (L, L) and per-sample diagnostics at overlap Q.

    v_reg: pre-activation noise variance Delta added to the teacher's residual variance and to V, as in the
    reference code (which uses 1e-3): Z = Q^{1/2} xi + (I - Q + Delta I)^{1/2} U, V = I - Q + Delta I.
    Delta = 0 is the noiseless model of the paper.  quad: the denoiser's quadrature.

    Returns dict with R, R_se (standard error of each entry), min_ess, method, if per_draw the per-draw terms
    g_out g_out^T summed over tokens (N, L, L) whose mean is R, and, if want_k1, the first-layer
    linear-growth coefficient K1 = E || d g_out[1] / d omega[1] ||_F^2, i.e. E || E[z1 z1^T | y, omega] - I ||_F^2 at
    Q_11 = 0, Q_12 = 0 and Delta = 0 (the self-consistent first-layer threshold, see thresholds).
    """
    Q = clip_overlap(Q)
    L = Q.shape[0]
    if draws.xi.shape[1] != L:
        raise ValueError(f"teacher draws are for L = {draws.xi.shape[1]}, Q is {L}x{L}")
    sQ = sqrtm_psd(Q)
    V = channel_covariance(Q, v_reg)
    sV = sqrtm_psd(V)
    omega = np.einsum("ab,nbt->nat", sQ, draws.xi)
    Z = omega + np.einsum("ab,nbt->nat", sV, draws.U)
    ell = link_logits(Z, c)
    g, _, mom = g_out(ell, omega, V, c, quad, jacobian=False, covariance=want_k1)
    per = np.einsum("nat,nbt->nab", g, g)
    out = {
        "R": per.mean(0),
        "R_se": per.std(0, ddof=1) / np.sqrt(len(per)),
        "min_ess": float(mom.ess.min()),
        "median_ess": float(np.median(mom.ess)),
        "method": mom.method,
    }
    if per_draw:
        out["per_draw"] = per
    if want_k1:
        # d g_out[1, t] / d omega[1, s] = (Cov(z1t, z1s) - V11 delta_ts) / V11^2 (cross-layer blocks vanish by symmetry)
        G = (mom.cov[:, 0:2, 0:2] - V[0, 0] * np.eye(2)) / V[0, 0] ** 2
        k = np.sum(G**2, axis=(1, 2))
        out["K1"] = float(k.mean())
        out["K1_se"] = float(k.std(ddof=1) / np.sqrt(len(k)))
    return out


def overlap_update(Qhat, lam: float = 0.0):
    """Q = (Qhat + lam I)(I + Qhat + lam I)^{-1} (symmetrised)."""
    L = Qhat.shape[0]
    H = Qhat + lam * np.eye(L)
    Q = H @ np.linalg.inv(np.eye(L) + H)
    return 0.5 * (Q + Q.T)


@dataclass
class SEResult:
    """Fixed point of the state evolution with its convergence record.

    Q: (L, L) final overlap; history: (iters+1, L, L) iterates (history[0] = Q0); converged, iterations, residual
    (max |Q^{t+1} - Q^t| at the last step); min_ess: smallest effective node count seen.
    """

    Q: np.ndarray
    history: np.ndarray
    converged: bool
    iterations: int
    residual: float
    min_ess: float
    methods: list = field(default_factory=list)


def anderson_step(xs, gs):
    """Type-II Anderson mixing: x_new = sum_i gamma_i g_i minimising ||sum_i gamma_i (g_i - x_i)||, sum gamma = 1.

    xs, gs: lists of (k,) iterates and their images under the damped map (oldest first, at least two).
    Returns the mixed point (k,), or None when the least-squares problem fails.
    """
    F = np.array(gs) - np.array(xs)  # (m, k) residuals
    dF = (F[1:] - F[:-1]).T  # (k, m-1)
    try:
        theta, *_ = np.linalg.lstsq(dF, F[-1], rcond=1e-10)
    except np.linalg.LinAlgError:
        return None
    G = np.array(gs)
    return G[-1] - (G[1:] - G[:-1]).T @ theta


def _anderson_proposal(xs, gs, Q, Q_plain, res, tol, project, unvec, iu):
    """The Anderson-mixed next iterate (L, L), or None where it is not trusted.

    It is accepted only if it is finite, moves every entry the way the plain damped step Q -> Q_plain does (never
    extrapolating across an unstable direction, e.g. back onto the q11 = 0 branch while q11 grows), keeps the
    diagonal in [0, 1) and moves less than 10 plain residuals.  Kept over a library root finder: see
    benchmarks/p2_se_anderson.py.
    """
    cand = anderson_step(xs, gs)
    if cand is None or not np.all(np.isfinite(cand)):
        return None
    Qa = project(unvec(cand))
    d, step_a, step_p = np.diag(Qa), (Qa - Q)[iu], (Q_plain - Q)[iu]
    same_way = np.all((step_a * step_p > 0) | (np.abs(step_a) <= tol))
    if same_way and np.all(d >= 0.0) and np.all(d < 1.0) and np.max(np.abs(step_a)) < 10.0 * res:
        return Qa
    return None


def state_evolution(
    alpha: float,
    c: float,
    L: int = 2,
    *,
    n_samples: int = 2000,
    seed: int = 0,
    damping: float = 0.8,
    q0=0.05,
    tol: float = 1e-5,
    max_iter: int = 200,
    lam: float = 0.0,
    clamp: dict | None = None,
    diagonal: bool = False,
    draws: TeacherDraws | None = None,
    v_reg: float = 0.0,
    accelerate: bool = False,
    anderson_m: int = 3,
    quad: QuadratureSettings = DEFAULT_QUADRATURE,
) -> SEResult:
    """Damped, symmetrised state evolution from Q0 = q0 * I (or a given (L, L) matrix q0).

    alpha >= 0 sample complexity; c > 0 skip strength; damping = weight of the new value (0 < eta <= 1);
    clamp: {layer_index: value} keeps those diagonal entries fixed (App. E.2, Fig. 5); diagonal: project Q on its
    diagonal after each step; v_reg: pre-activation noise Delta (see channel_average);
    accelerate: Anderson mixing (memory anderson_m) of the damped map, L = 2 only, used only while the plain iteration
    contracts (its residual decreased at the last step) and only when the mixed point moves every entry the way the
    plain step does and stays in [0, 1) (anderson_step, _anderson_proposal); it changes how fast the fixed point is
    reached, not the fixed point (the stopping test is always the residual max |G(Q) - Q| of one plain damped step
    G, and the returned Q is G(Q));
    quad: the denoiser's quadrature (with method "auto", the mode-centred "A*" is kept once the overlap has entered
    the peaked regime).
    """
    if alpha < 0:
        raise ValueError(f"alpha must be >= 0, got {alpha}")
    if not 0 < damping <= 1:
        raise ValueError(f"damping (weight of the new iterate) must be in (0, 1], got {damping}")
    check_skip(c)
    if L not in (2, 3):
        raise ValueError(f"L must be 2 or 3, got {L}")
    if accelerate and L == 3:
        # measured (docs/p2_theory.md, Depth 3): from 0.05 I at alpha = 2 the mixed step put Q22 on the invariant
        # set Q22 = 0 at iteration 3 and the run ended at (1, 0, 1), while the plain iteration reaches (0.97, 0.96, 1)
        raise ValueError("Anderson mixing is not used for L = 3: it can land on an invariant Q_kk = 0 set")
    Q = q0 * np.eye(L) if np.ndim(q0) == 0 else np.array(q0, dtype=np.float64)
    clamp = dict(clamp or {})
    for k, v in clamp.items():
        if not (0 <= int(k) < L and 0.0 <= v < 1.0):
            raise ValueError(f"clamp must map layer indices 0..{L - 1} to values in [0, 1); got {clamp}")
        Q[int(k), :] = 0.0
        Q[:, int(k)] = 0.0
        Q[int(k), int(k)] = v
    draws = draws if draws is not None else draw_teacher(n_samples, L, seed)
    iu = np.triu_indices(L)

    def project(Qn):
        Qn = 0.5 * (Qn + Qn.T)
        if diagonal:
            Qn = np.diag(np.diag(Qn))
        for k, v in clamp.items():
            Qn[int(k), :] = 0.0
            Qn[:, int(k)] = 0.0
            Qn[int(k), int(k)] = v
        return clip_overlap(Qn)

    def unvec(v):
        M = np.zeros((L, L))
        M[iu] = v
        return M + np.triu(M, 1).T

    hist = [Q.copy()]
    min_ess = np.inf
    methods = []
    converged = False
    res = np.inf
    it = 0
    xs, gs = [], []
    auto = quad.method == "auto"
    step_quad = quad
    sticky = None
    for it in range(1, max_iter + 1):  # noqa: B007 (read after the loop: the number of iterations run)
        if alpha == 0:
            Qnew_full = overlap_update(np.zeros((L, L)), lam)
        else:
            if auto:
                # the peaked-regime method, once chosen, is kept for the rest of the run: switching back and forth
                # at the v_switch boundary would make the iterated map discontinuous (quadrature rules differ)
                pick = choose_parametrisation(channel_covariance(Q, v_reg), quad.v_switch)
                sticky = "A*" if (sticky == "A*" or pick == "A*") else pick
                step_quad = quad.with_method(sticky)
            avg = channel_average(Q, c, draws, step_quad, v_reg=v_reg)
            min_ess = min(min_ess, avg["min_ess"])
            methods.append(avg["method"])
            Qnew_full = overlap_update(alpha * avg["R"], lam)
        Qplain = project((1.0 - damping) * Q + damping * Qnew_full)
        res_prev, res = res, float(np.max(np.abs(Qplain - Q)))
        if res < tol:
            Q = Qplain
            hist.append(Q.copy())
            converged = True
            break
        Qnext = Qplain
        if accelerate:
            xs.append(Q[iu].copy())
            gs.append(Qplain[iu].copy())
            del xs[: -(anderson_m + 1)], gs[: -(anderson_m + 1)]
            if len(xs) >= 2 and res < res_prev:
                Qa = _anderson_proposal(xs, gs, Q, Qplain, res, tol, project, unvec, iu)
                if Qa is not None:
                    Qnext = Qa
            else:
                xs, gs = xs[-1:], gs[-1:]
        Q = Qnext
        hist.append(Q.copy())
    return SEResult(
        Q=Q,
        history=np.array(hist),
        converged=converged,
        iterations=it,
        residual=res,
        min_ess=float(min_ess),
        methods=methods,
    )
