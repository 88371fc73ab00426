"""Benchmark: the project's BFGS minimiser of P1's action (``smattn.p1.minimise_bfgs``) beside SciPy's
``scipy.optimize.minimize(method="BFGS")`` on the same problems, in the same process: same Cholesky parametrisation,
same closed-form gradient, same stopping rule g_max = max |dS/dU^(l)| < tol (checked in SciPy's callback), same warm
starts (previous temperature's minimiser and inverse Hessian, SciPy's through ``hess_inv0``). A SciPy run that stops
on "precision loss" short of the tolerance is restarted from its point with a fresh Hessian (up to 2 times).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/p1_minimise_bfgs.py [--P 300] [--heads 4 4] [--widths 10 1000]
        [--temperatures 1.5 0.25 0.05 0.01]

Synthetic paths (correlated Gaussian, the image task's path count), about a CPU-minute at the defaults. Prints, per
(N, T): steps, seconds, converged, g_max for both, and max |U_ours - U_scipy| and the action difference.
"""

import argparse
import time

import numpy as np
from scipy.optimize import minimize

from smattn.p1.action import Architecture, gp_point
from smattn.p1.kernels import PathGram
from smattn.p1.minimise import ActionProblem, MinimiseResult, pack_cholesky
from smattn.p1.minimise_bfgs import (
    ImageAction,
    cholesky_gradient,
    minimise_action_bfgs,
    readout_u,
    unpack_cholesky,
)


def minimise_action_scipy(problem, tol=1e-5, max_steps=2000, init=None, hinv=None, restarts=2):
    """SciPy's BFGS on the same objective; returns (MinimiseResult, final inverse Hessian)."""
    t0 = time.perf_counter()
    act = ImageAction(problem)
    Us0 = gp_point(problem.arch) if init is None else [np.asarray(U, dtype=np.float64) for U in init]
    sizes = [U.shape[0] for U in Us0]
    theta0 = pack_cholesky(Us0, problem.arch.heads)
    n = theta0.size
    seen = {}  # theta bytes -> (S, grads, parts, Us) of the latest evaluations

    def fun(theta):
        Us, Cs = unpack_cholesky(theta, sizes)
        S, grads, parts = act.value_grad(Us)
        if not np.isfinite(S):
            return np.inf, np.zeros(n)
        seen[theta.tobytes()] = (S, grads, parts, Us)
        if len(seen) > 64:
            seen.pop(next(iter(seen)))
        return S, cholesky_gradient(grads, Cs)

    def state(theta):
        if theta.tobytes() not in seen:
            fun(theta)
        S, grads, parts, Us = seen[theta.tobytes()]
        return S, parts, Us, max(float(np.abs(G).max()) for G in grads)

    S, parts, Us, gmax = state(theta0)
    mineigs = [min(float(np.linalg.eigvalsh(U).min()) for U in Us)]
    theta, steps, H = theta0, 0, (np.eye(n) if hinv is None else np.asarray(hinv))
    count = {"steps": 0}

    def callback(intermediate_result):
        _, _, Us_k, g_k = state(intermediate_result.x)
        count["steps"] += 1
        mineigs.append(min(float(np.linalg.eigvalsh(U).min()) for U in Us_k))
        if g_k < tol:
            raise StopIteration

    x0, H0 = theta0, (None if hinv is None else (H + H.T) / 2)  # SciPy demands an exactly symmetric hess_inv0
    for _ in range(1 + restarts):
        if gmax < tol:
            break
        r = minimize(
            fun,
            x0,
            jac=True,
            method="BFGS",
            callback=callback,
            options={"gtol": 0.0, "norm": np.inf, "maxiter": max_steps - count["steps"], "hess_inv0": H0},
        )
        theta, steps, H = r.x, count["steps"], r.hess_inv
        S, parts, Us, gmax = state(theta)
        if r.status != 2:  # 2: the line search failed ("precision loss"); anything else: no restart helps
            break
        x0, H0 = r.x, None
    h, w, s2, s2a = act.ent_args
    res = MinimiseResult(
        Us=list(Us),
        u=readout_u(float(np.trace(Us[-1])), h, w, s2, s2a),
        action=float(S),
        entropy=float(parts["entropy"]),
        energy=float(parts["energy"]),
        steps=steps,
        g_max=float(gmax),
        converged=bool(gmax < tol),
        min_eig=mineigs,
        seconds=time.perf_counter() - t0,
        method=f"scipy-bfgs-cholesky({act.n_evals} evals)",
    )
    return res, H


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--P", type=int, default=300)
    ap.add_argument("--heads", type=int, nargs="+", default=[4, 4])
    ap.add_argument("--D", type=int, default=20)
    ap.add_argument("--widths", type=float, nargs="+", default=[10.0, 1000.0])
    ap.add_argument("--temperatures", type=float, nargs="+", default=[1.5, 0.25, 0.05, 0.01])
    ap.add_argument("--tol", type=float, default=1e-5)
    a = ap.parse_args()
    heads = tuple(a.heads)
    rng = np.random.default_rng(0)
    xi = 0.6 * rng.normal(size=(a.P, 1, a.D)) + rng.normal(size=(a.P, int(np.prod(heads)), a.D))
    y = np.sign(xi[:, 0, 0] + 0.5 * rng.normal(size=a.P))
    gram = PathGram(xi)
    total = {"ours": 0.0, "scipy": 0.0}
    for N in a.widths:
        warm = {"ours": (None, None), "scipy": (None, None)}
        for T in sorted(a.temperatures, reverse=True):  # warm starts from the highest T down, as the theory grid
            prob = ActionProblem(Architecture.equal_width(heads, N), gram, y, T)
            init, hinv = warm["ours"]
            ours, H = minimise_action_bfgs(prob, tol=a.tol, max_steps=3000, init=init, hinv=hinv, return_hinv=True)
            warm["ours"] = (ours.Us, H)
            init, hinv = warm["scipy"]
            sp, H = minimise_action_scipy(prob, tol=a.tol, max_steps=3000, init=init, hinv=hinv)
            warm["scipy"] = (sp.Us, H)
            total["ours"] += ours.seconds
            total["scipy"] += sp.seconds
            print(
                f"P={a.P} heads={heads} N={N:g} T={T:g}: "
                f"ours {ours.steps} steps {ours.seconds:.2f} s converged {ours.converged} g_max {ours.g_max:.1e} | "
                f"scipy {sp.steps} steps {sp.seconds:.2f} s converged {sp.converged} g_max {sp.g_max:.1e} | "
                f"max|dU| {np.abs(ours.U - sp.U).max():.1e}, dS {ours.action - sp.action:.1e}",
                flush=True,
            )
    print(f"TOTAL seconds: ours {total['ours']:.1f}, scipy {total['scipy']:.1f}")


if __name__ == "__main__":
    main()
