"""Minimisation of P1's action over the order parameters (docs/p1_theory.md#minimisers), plus the reference's
plain-Adam scheme.

:func:`minimise_action` (default) parametrises every ``U^(l) = C_l C_l^T`` with ``C_l`` lower triangular with a
positive (exponentiated) diagonal, so every iterate is positive definite by construction, and runs a damped
Newton method with the exact (autodiff) Hessian, eigenvalue-modified to be positive definite ("saddle-free"
Newton), and an Armijo backtracking line search. It stops when the reference's criterion holds:
``g_max = max |dS/dM_l| < tol`` where ``U^(l) = (M_l + M_l^T)/2`` and ``S = (S_ent + E)/N_max``
(:mod:`smattn.p1.action`). :func:`minimise_action_adam` is the reference's scheme (Adam on ``M_l`` from the GP point),
kept for benchmarks.

Compiled functions depend only on the head numbers (and array shapes); widths, variances, temperature and data are
runtime arguments, so a width sweep compiles once.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
import optax

from .action import Architecture, action, energy, entropy, gp_point, readout_scalar
from .kernels import PathGram


class _ArchView:
    """Architecture with traced widths/variances (used inside compiled functions)."""

    def __init__(self, heads, widths, sigma2, sigma2_a):
        self.heads, self.widths, self.sigma2, self.sigma2_a = heads, widths, sigma2, sigma2_a
        self.L = len(heads)


@dataclass
class ActionProblem:
    """One theory problem: architecture, training-set path Grams, labels y [P] and Gibbs temperature."""

    arch: Architecture
    gram: PathGram
    y: np.ndarray
    temperature: float

    def __post_init__(self):
        self.y = np.asarray(self.y, dtype=np.float64)
        if self.y.shape != (self.gram.P,):
            raise ValueError(f"y must have shape [P]=[{self.gram.P}], got {self.y.shape}")
        if self.gram.Htot != self.arch.n_paths:
            raise ValueError(
                f"gram has {self.gram.Htot} paths but the architecture {self.arch.heads} has {self.arch.n_paths}"
            )
        if not self.temperature > 0:
            raise ValueError(f"temperature must be positive, got {self.temperature}")

    def data(self):
        a = self.arch
        return (
            jnp.asarray(a.widths),
            jnp.asarray(a.sigma2),
            jnp.asarray(a.sigma2_a),
            jnp.asarray(self.gram.G),
            jnp.asarray(self.y),
            jnp.asarray(self.temperature),
        )


@dataclass
class MinimiseResult:
    """Minimiser output. Us: list of U^(1)..U^(L) (NumPy); u: readout scalar; g_max in the reference's normalisation."""

    Us: list
    u: float
    action: float
    entropy: float
    energy: float
    steps: int
    g_max: float
    converged: bool
    min_eig: list = field(default_factory=list)  # min eigenvalue over all U^(l) at every accepted iterate
    seconds: float = 0.0
    method: str = "newton"

    @property
    def U(self) -> np.ndarray:
        return self.Us[0]

    def summary(self) -> dict:
        return {
            "steps": int(self.steps),
            "g_max": float(self.g_max),
            "converged": bool(self.converged),
            "action": float(self.action),
            "entropy": float(self.entropy),
            "energy": float(self.energy),
            "u": float(self.u),
            "min_eig_U": float(min(self.min_eig)) if self.min_eig else float("nan"),
            "seconds": float(self.seconds),
            "method": self.method,
        }


def _sizes(heads):
    return tuple(int(np.prod(heads[l:])) for l in range(len(heads)))


@functools.cache
def _compiled(heads: tuple):
    sizes = _sizes(heads)
    Htot = sizes[0]
    iu = tuple(np.asarray(a) for a in np.triu_indices(Htot))
    tril = [np.tril_indices(n) for n in sizes]
    counts = [len(t[0]) for t in tril]

    def unpack(theta):
        Us, off = [], 0
        for n, (r, c), k in zip(sizes, tril, counts, strict=True):
            v = theta[off : off + k]
            off += k
            C = jnp.zeros((n, n)).at[r, c].set(v)
            d = jnp.diag(C)
            C = C - jnp.diag(d) + jnp.diag(jnp.exp(d))
            Us.append(C @ C.T)
        return Us

    def S_of_Us(Us, widths, sigma2, sigma2_a, G, y, T):
        return action(Us, _ArchView(heads, widths, sigma2, sigma2_a), G, iu, y, T)

    def S_theta(theta, *data):
        return S_of_Us(unpack(theta), *data)

    def S_M(Ms, *data):
        return S_of_Us([(M + M.T) / 2 for M in Ms], *data)

    def value_grads(theta, *data):
        S, g = jax.value_and_grad(S_theta)(theta, *data)
        Us = unpack(theta)
        gM = jax.grad(S_M)(Us, *data)
        gmax = jnp.max(jnp.stack([jnp.max(jnp.abs(x)) for x in gM]))
        mineig = jnp.min(jnp.stack([jnp.min(jnp.linalg.eigvalsh(U)) for U in Us]))
        return S, g, gmax, mineig

    def parts(Us, widths, sigma2, sigma2_a, G, y, T):
        arch = _ArchView(heads, widths, sigma2, sigma2_a)
        u = readout_scalar(jnp.trace(Us[-1]), arch)
        return entropy(Us, arch), energy(Us[0], G, iu, y, T), u

    def gmax_M(Ms, *data):
        gM = jax.grad(S_M)(list(Ms), *data)
        S = S_M(list(Ms), *data)
        return S, gM, jnp.max(jnp.stack([jnp.max(jnp.abs(x)) for x in gM]))

    return dict(
        unpack=jax.jit(unpack),
        S=jax.jit(S_theta),
        value_grads=jax.jit(value_grads),
        hess=jax.jit(jax.hessian(S_theta)),
        parts=jax.jit(parts),
        gmax_M=jax.jit(gmax_M),
        counts=counts,
        tril=tril,
        sizes=sizes,
    )


def pack_cholesky(Us, heads) -> np.ndarray:
    """Inverse of the parametrisation: Cholesky factors of PD matrices U^(l), log-diagonal, flattened."""
    comp = _compiled(tuple(heads))
    out = []
    for U, (r, c) in zip(Us, comp["tril"], strict=True):
        C = np.linalg.cholesky(np.asarray(U, dtype=np.float64))
        C[np.diag_indices_from(C)] = np.log(np.diag(C))
        out.append(C[r, c])
    return np.concatenate(out)


def _finish(problem, Us, steps, gmax, converged, mineigs, t0, method):
    comp = _compiled(problem.arch.heads)
    S_ent, E, u = comp["parts"]([jnp.asarray(U) for U in Us], *problem.data())
    Nmax = max(problem.arch.widths)
    return MinimiseResult(
        Us=[np.asarray(U) for U in Us],
        u=float(u),
        action=float((S_ent + E) / Nmax),
        entropy=float(S_ent / Nmax),
        energy=float(E / Nmax),
        steps=int(steps),
        g_max=float(gmax),
        converged=bool(converged),
        min_eig=[float(m) for m in mineigs],
        seconds=time.perf_counter() - t0,
        method=method,
    )


def minimise_action(problem: ActionProblem, tol: float = 1e-5, max_steps: int = 200, init=None) -> MinimiseResult:
    """Damped saddle-free Newton in the Cholesky parametrisation, from the GP point (or ``init``: list of PD U^(l)).

    Stops when g_max < tol (converged) or after ``max_steps`` Newton steps or when the line search cannot decrease
    the action any more (not converged). ``entropy``/``energy`` in the result are divided by N_max like the action.
    """
    t0 = time.perf_counter()
    heads = problem.arch.heads
    comp = _compiled(heads)
    data = problem.data()
    Us0 = gp_point(problem.arch) if init is None else init
    theta = jnp.asarray(pack_cholesky(Us0, heads))
    S, g, gmax, mineig = comp["value_grads"](theta, *data)
    mineigs = [float(mineig)]
    steps, converged = 0, False
    while True:
        if not np.isfinite(float(S)):
            raise FloatingPointError(f"action is not finite at step {steps} (S={float(S)})")
        if float(gmax) < tol:
            converged = True
            break
        if steps >= max_steps:
            break
        Hm = np.asarray(comp["hess"](theta, *data))
        Hm = (Hm + Hm.T) / 2
        w, V = np.linalg.eigh(Hm)
        wa = np.maximum(np.abs(w), 1e-10 * max(1.0, np.abs(w).max()))
        gn = np.asarray(g)
        p = -V @ ((V.T @ gn) / wa)
        slope = float(gn @ p)
        t, accepted = 1.0, False
        for _ in range(60):
            cand = theta + t * p
            Sc = float(comp["S"](cand, *data))
            if np.isfinite(Sc) and Sc <= float(S) + 1e-4 * t * slope and Sc < float(S):
                accepted = True
                break
            t *= 0.5
        if not accepted:
            # Near the minimum the decrease of S falls below rounding: accept the full Newton step if S does not
            # rise beyond rounding and the gradient shrinks (the stopping criterion is on the gradient).
            cand = theta + p
            Sc, gc, gmc, mc = comp["value_grads"](cand, *data)
            if (
                np.isfinite(float(Sc))
                and float(Sc) <= float(S) + 1e-12 * max(1.0, abs(float(S)))
                and float(gmc) < float(gmax)
            ):
                theta, S, g, gmax, mineig = cand, Sc, gc, gmc, mc
                steps += 1
                mineigs.append(float(mineig))
                continue
            break  # stalled: stop, reported as not converged
        theta = cand
        steps += 1
        S, g, gmax, mineig = comp["value_grads"](theta, *data)
        mineigs.append(float(mineig))
    Us = [np.asarray(U) for U in comp["unpack"](theta)]
    return _finish(problem, Us, steps, float(gmax), converged, mineigs, t0, "newton-cholesky")


def minimise_action_adam(
    problem: ActionProblem,
    lr: float = 0.1,
    tol: float = 1e-5,
    max_steps: int = 50_000,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-8,
) -> MinimiseResult:
    """The reference's scheme: Adam (``optax.adam``, constant learning rate) on unconstrained M_l
    (U^(l) = (M_l + M_l^T)/2) from the GP point; stops at the first iterate with g_max < tol.

    Positive definiteness is not enforced; a non-PD iterate makes the action NaN and the run stops unconverged.
    """
    t0 = time.perf_counter()
    comp = _compiled(problem.arch.heads)
    data = problem.data()
    Ms = [jnp.asarray(U) for U in gp_point(problem.arch)]

    opt = optax.adam(lr, b1=b1, b2=b2, eps=eps)

    def body(carry):
        Ms, state, k, _, _ = carry
        S, gM, gmax = comp["gmax_M"](Ms, *data)
        updates, new_state = opt.update(gM, state, Ms)
        newMs = optax.apply_updates(Ms, updates)
        stop = (gmax < tol) | ~jnp.isfinite(S)

        def keep(old, new):
            return jax.tree_util.tree_map(lambda a, b: jnp.where(stop, a, b), old, new)

        return keep(Ms, newMs), keep(state, new_state), jnp.where(stop, k, k + 1), gmax, stop

    def cond(carry):
        return (~carry[4]) & (carry[2] < max_steps)

    init = (Ms, opt.init(Ms), jnp.asarray(0), jnp.asarray(jnp.inf), jnp.asarray(False))
    Ms, _, k, _, _ = jax.jit(lambda c: jax.lax.while_loop(cond, body, c))(init)
    S, _, gmax = comp["gmax_M"](Ms, *data)
    Us = [np.asarray((M + M.T) / 2) for M in Ms]
    converged = bool(np.isfinite(float(S)) and float(gmax) < tol)
    mineig = [min(float(np.linalg.eigvalsh(U).min()) for U in Us)]
    return _finish(problem, Us, int(k), float(gmax), converged, mineig, t0, f"adam(lr={lr})")


def stopping_distance_bound(problem: ActionProblem, Us, grad_tol: float) -> float:
    """First-order bound on how far a point that passes the stopping rule ``max |dS/dM| < grad_tol`` can lie from
    the minimiser ``Us`` (list of U^(l)): ``|H^-1 g|_2 <= |g|_2 / lambda_min(H)``, H the Hessian of S in the distinct
    entries of the U^(l), g at most ``grad_tol`` per diagonal entry and ``2 grad_tol`` per off-diagonal one (such an
    entry is M_ij and M_ji at once). Raises if ``Us`` is not a minimum (lambda_min <= 0).
    """
    arch, gram = problem.arch, problem.gram
    sizes = [np.asarray(U).shape[0] for U in Us]
    idx = [np.triu_indices(n) for n in sizes]
    G, y = jnp.asarray(gram.G), jnp.asarray(problem.y)

    def S(v):
        levels, off = [], 0
        for n, (r, c) in zip(sizes, idx, strict=True):
            k = len(r)
            M = jnp.zeros((n, n)).at[r, c].set(v[off : off + k])
            levels.append(M + jnp.triu(M, 1).T)
            off += k
        return action(levels, arch, G, gram.iu, y, problem.temperature)

    v = jnp.concatenate([jnp.asarray(U)[r, c] for U, (r, c) in zip(Us, idx, strict=True)])
    lam_min = float(np.linalg.eigvalsh(np.asarray(jax.hessian(S)(v))).min())
    if not lam_min > 0:
        raise ValueError(f"not at a minimum: smallest Hessian eigenvalue {lam_min}")
    g_max = np.concatenate([np.where(r == c, 1.0, 2.0) for r, c in idx]) * grad_tol
    return float(np.linalg.norm(g_max) / lam_min)
