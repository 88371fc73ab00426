"""BFGS minimiser of P1's action for large P (the image task: P = 600, 16-64 paths); see docs/p1_theory.md.

The exact Newton minimiser :func:`smattn.p1.minimise.minimise_action` differentiates twice through a P x P Cholesky
(jax.hessian), which costs about a minute per step at P = 600 on one CPU core. Here instead:

* energy E(U) = ln det(K_U + T) + y^T (K_U + T)^-1 y and its **closed-form gradient**
  dE/dU_{pi pi'} = < Xi_pi Xi_pi'^T, (K_U + T)^-1 - alpha alpha^T >, alpha = (K_U + T)^-1 y, in NumPy/SciPy from the
  precomputed symmetrised path-pair Gram tensor (:class:`smattn.p1.kernels.PathGram`): two matrix-vector products with
  the [n_pairs, P*P] Gram matrix, one Cholesky and one inverse per evaluation;
* entropy S_ent(U^(1..L)) and its closed-form gradient in NumPy (tiny matrices; no JAX, so no compile time);
* dense BFGS (Armijo backtracking) on the Cholesky factors U^(l) = C_l C_l^T (log-diagonal), so every iterate is
  positive definite; stop when the reference's criterion g_max = max |dS/dM_l| < tol holds, where
  U^(l) = (M_l + M_l^T)/2 and S = (S_ent + E)/N_max (dS/dM_l equals the symmetric matrix gradient dS/dU^(l)).

The BFGS loop is written out rather than taken from ``scipy.optimize.minimize(method="BFGS")``: measured by
``benchmarks/p1_minimise_bfgs.py`` on the same problems (same parametrisation, same warm starts), SciPy's Wolfe line
search stops with "precision loss" at small width (N = 10) once the action's decrease falls below rounding, at
g_max ~ 1.3-1.6e-5, short of the reference's tol = 1e-5 even when restarted, while the Armijo loop here, which
accepts steps whose decrease is lost in rounding, reaches it. Where both converge they agree to the tolerance.

The result type is :class:`smattn.p1.minimise.MinimiseResult`, so callers can swap minimisers.
"""

from __future__ import annotations

import time

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.linalg.lapack import dpotri

from ..progress import progress
from .action import gp_point
from .minimise import ActionProblem, MinimiseResult, pack_cholesky


def _inv_logdet(A: np.ndarray):
    """(A^-1, ln det A) of a symmetric matrix via Cholesky; (None, inf) if A is not positive definite."""
    try:
        cf = cho_factor(A, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        return None, np.inf
    inv = cho_solve(cf, np.eye(A.shape[0]), check_finite=False)
    return (inv + inv.T) / 2, 2.0 * float(np.sum(np.log(np.diag(cf[0]))))


def readout_u(trace_UL: float, heads, widths, sigma2, sigma2_a) -> float:
    """Closed-form stationary readout scalar u (docs/p1_theory.md#action), stable root of u^2 + b u - c = 0."""
    HL, NLm1, NL = heads[-1], widths[-2], widths[-1]
    b = sigma2_a * (HL * NLm1 / NL - 1.0)
    c = sigma2_a * NLm1 * trace_UL / (sigma2[-1] * NL)
    disc = np.sqrt(b * b + 4.0 * c)
    return float(2.0 * c / (b + disc)) if b >= 0 else float((-b + disc) / 2.0)


def entropy_and_grad(Us, heads, widths, sigma2, sigma2_a):
    """S_ent(U^(1..L)) of docs/p1_theory.md#action (u eliminated in closed form) and its symmetric matrix
    gradients dS_ent/dU^(l).

        By stationarity of u the gradient is the partial derivative at fixed u (envelope theorem). Returns
        (S_ent, [grads]) or (inf, None) if some U^(l) is not positive definite.
    """
    L = len(heads)
    invs, lds = [], []
    for U in Us:
        inv, ld = _inv_logdet(U)
        if inv is None:
            return np.inf, None
        invs.append(inv)
        lds.append(ld)
    tr_UL = float(np.trace(Us[-1]))
    u = readout_u(tr_UL, heads, widths, sigma2, sigma2_a)
    if not u > 0:
        return np.inf, None
    N = widths
    S = N[L] * (u / sigma2_a - np.log(u))
    grads = [np.zeros_like(U) for U in Us]
    for l in range(L):  # python index l = layer l + 1
        Hl = heads[l]
        n = Us[l].shape[0] // Hl
        tr_part = np.einsum("aiaj->ij", Us[l].reshape(Hl, n, Hl, n))
        if l == L - 1:
            A_next, ld_next = np.eye(1) / u, np.log(u)
        else:
            A_next, ld_next = invs[l + 1], lds[l + 1]
        S += N[l] * (float(np.sum(A_next * tr_part.T)) / sigma2[l + 1] - lds[l] + Hl * ld_next)
        grads[l] += N[l] * (np.kron(np.eye(Hl), A_next) / sigma2[l + 1] - invs[l])
        if l < L - 1:  # d/dU^(l+1) of Tr((U^(l+1))^-1 tr_part) and of H_l ln det U^(l+1)
            grads[l + 1] += N[l] * (-(A_next @ tr_part @ A_next) / sigma2[l + 1] + Hl * A_next)
    return float(S), grads


class ImageAction:
    """S(U^(1..L)) = (S_ent + E)/N_max with gradients, for one ActionProblem.

    ``value_grad(Us)`` -> (S, [dS/dU^(l)] symmetric matrix gradients, parts dict) or (inf, None, None) if K_U + T or
    some U^(l) is not positive definite.
    """

    def __init__(self, problem: ActionProblem):
        self.problem = problem
        g = problem.gram
        self.Gflat = g.G.reshape(g.n_pairs, -1)  # [n_pairs, P*P] (a view)
        self.iu = g.iu
        self.offdiag = g.iu[0] != g.iu[1]
        self.y = np.asarray(problem.y, dtype=np.float64)
        self.T = float(problem.temperature)
        a = problem.arch
        self.ent_args = (tuple(a.heads), tuple(float(n) for n in a.widths), tuple(a.sigma2), float(a.sigma2_a))
        self.Nmax = float(max(a.widths))
        self.n_evals = 0

    def energy_grad(self, U1: np.ndarray):
        """(E, dE/dU^(1) [H_tot, H_tot]) or (inf, None) if K_U + T is not positive definite."""
        P = self.y.shape[0]
        K = (self.Gflat.T @ U1[self.iu]).reshape(P, P)
        K[np.diag_indices(P)] += self.T
        try:
            cf = cho_factor(K, lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            return np.inf, None
        alpha = cho_solve(cf, self.y, check_finite=False)
        R, info = dpotri(cf[0], lower=1)
        if info != 0:
            return np.inf, None
        R = np.tril(R) + np.tril(R, -1).T
        E = 2.0 * np.sum(np.log(np.diag(cf[0]))) + float(self.y @ alpha)
        R -= np.outer(alpha, alpha)
        gk = self.Gflat @ R.ravel()  # <G_k, R>
        gk[self.offdiag] *= 0.5  # G_k = Xi_pi Xi_pi'^T + transpose off the diagonal
        n = U1.shape[0]
        gU = np.zeros((n, n))
        gU[self.iu] = gk
        gU = gU + gU.T - np.diag(np.diag(gU))
        return E, gU

    def value_grad(self, Us):
        self.n_evals += 1
        for U in Us:
            if not np.all(np.isfinite(U)):
                return np.inf, None, None
        E, gE = self.energy_grad(Us[0])
        if not np.isfinite(E):
            return np.inf, None, None
        Sent, grads = entropy_and_grad(Us, *self.ent_args)
        if not np.isfinite(Sent):
            return np.inf, None, None
        grads = [(g + g.T) / 2 for g in grads]
        grads[0] = grads[0] + gE
        grads = [g / self.Nmax for g in grads]
        return (Sent + E) / self.Nmax, grads, {"entropy": Sent / self.Nmax, "energy": E / self.Nmax}


# --- Cholesky parametrisation --------------------------------------------------------------------------------------


def unpack_cholesky(theta: np.ndarray, sizes) -> tuple[list, list]:
    """Inverse of :func:`smattn.p1.minimise.pack_cholesky`: ([U^(l) = C_l C_l^T], [C_l]) for matrix sizes ``sizes``
    from the flattened lower triangles (log-diagonal) ``theta``."""
    Us, Cs, off = [], [], 0
    for n in sizes:
        k = n * (n + 1) // 2
        C = np.zeros((n, n))
        C[np.tril_indices(n)] = theta[off : off + k]
        off += k
        C[np.diag_indices(n)] = np.exp(np.clip(np.diag(C), -700, 700))
        Cs.append(C)
        Us.append(C @ C.T)
    return Us, Cs


def cholesky_gradient(grads, Cs) -> np.ndarray:
    """dS/dtheta from symmetric dS/dU^(l) and the Cholesky factors: dS/dC = 2 G C (lower part), diag x exp."""
    out = []
    for G, C in zip(grads, Cs, strict=True):
        dC = 2.0 * G @ C
        dC[np.diag_indices_from(dC)] *= np.diag(C)
        out.append(dC[np.tril_indices(C.shape[0])])
    return np.concatenate(out)


def minimise_action_bfgs(
    problem: ActionProblem,
    tol: float = 1e-5,
    max_steps: int = 2000,
    init=None,
    hinv: np.ndarray | None = None,
    return_hinv: bool = False,
    desc: str | None = None,
):
    """BFGS in the Cholesky parametrisation from the GP point (or ``init``, a list of PD U^(l)).

    ``hinv``: initial inverse-Hessian approximation in the Cholesky parameters (e.g. from a neighbouring (N, T) run,
    a warm start); ``return_hinv``: return ``(result, final inverse Hessian)`` instead of the result alone.

    Converged when g_max = max_l max |dS/dU^(l)| < tol (the reference's criterion on its M_l parameters). Stops
    unconverged after ``max_steps`` iterations or when the line search fails twice in a row (the second time along
    the gradient itself); a line search fails when no step halving finds an acceptable point before the step falls
    below the rounding of theta (otherwise, where tol is below the float64 resolution of the action, the unchanged
    point would be accepted as a step, every step, until ``max_steps``). ``desc``: report the
    iterations as progress lines (``smattn.progress``) under this name, with g_max; None: silent.
    """
    t0 = time.perf_counter()
    act = ImageAction(problem)
    Us0 = gp_point(problem.arch) if init is None else [np.asarray(U, dtype=np.float64) for U in init]
    sizes = [U.shape[0] for U in Us0]
    theta = pack_cholesky(Us0, problem.arch.heads)
    Us, Cs = unpack_cholesky(theta, sizes)
    S, grads, parts = act.value_grad(Us)
    if not np.isfinite(S):
        raise FloatingPointError("action is not finite at the starting point")
    g = cholesky_gradient(grads, Cs)
    n = theta.size
    first = hinv is None
    Hinv = np.eye(n) if hinv is None else np.array(hinv, dtype=np.float64)
    if Hinv.shape != (n, n):
        raise ValueError(f"hinv must be [{n}, {n}], got {Hinv.shape}")
    gmax = max(float(np.abs(G).max()) for G in grads)
    mineigs = [min(float(np.linalg.eigvalsh(U).min()) for U in Us)]
    steps, fails, converged = 0, 0, gmax < tol
    bar = None if desc is None else progress(desc=desc, total=int(max_steps), unit="step")
    while not converged and steps < max_steps:
        p = -Hinv @ g
        slope = float(g @ p)
        if slope >= 0:  # not a descent direction: reset the curvature model
            Hinv = np.eye(n)
            p, slope = -g, -float(g @ g)
        t = 1.0
        if first:  # scale the first step so that it moves theta by at most 0.1
            t = min(1.0, 0.1 / max(float(np.abs(p).max()), 1e-300))
        accepted = False
        for _ in range(50):
            cand = theta + t * p
            if np.array_equal(cand, theta):  # the step is below theta's rounding: no point can be accepted
                break
            Us_c, Cs_c = unpack_cholesky(cand, sizes)
            S_c, grads_c, parts_c = act.value_grad(Us_c)
            if np.isfinite(S_c) and S_c <= S + 1e-4 * t * slope:
                accepted = True
                break
            t *= 0.5
        if not accepted:
            fails += 1
            Hinv = np.eye(n)
            if fails >= 2:
                break
            continue
        fails = 0
        g_c = cholesky_gradient(grads_c, Cs_c)
        s_vec, y_vec = cand - theta, g_c - g
        sy = float(s_vec @ y_vec)
        if sy > 1e-12 * float(np.linalg.norm(s_vec) * np.linalg.norm(y_vec)):
            if first:
                Hinv = np.eye(n) * (sy / float(y_vec @ y_vec))
            rho = 1.0 / sy
            V = np.eye(n) - rho * np.outer(s_vec, y_vec)
            Hinv = V @ Hinv @ V.T + rho * np.outer(s_vec, s_vec)
            first = False
        theta, S, g, grads, parts, Us, Cs = cand, S_c, g_c, grads_c, parts_c, Us_c, Cs_c
        steps += 1
        gmax = max(float(np.abs(G).max()) for G in grads)
        mineigs.append(min(float(np.linalg.eigvalsh(U).min()) for U in Us))
        converged = gmax < tol
        if bar is not None:
            bar.update(1)
            bar.set_postfix(g_max=f"{gmax:.2e}", refresh=False)
    if bar is not None:
        bar.close()
    h, w, s2, s2a = act.ent_args
    u = readout_u(float(np.trace(Us[-1])), h, w, s2, s2a)
    res = MinimiseResult(
        Us=[np.asarray(U) for U in Us],
        u=u,
        action=float(S),
        entropy=float(parts["entropy"]),
        energy=float(parts["energy"]),
        steps=int(steps),
        g_max=float(gmax),
        converged=bool(converged),
        min_eig=mineigs,
        seconds=time.perf_counter() - t0,
        method=f"bfgs-cholesky({act.n_evals} evals)",
    )
    return (res, Hinv) if return_hinv else res
