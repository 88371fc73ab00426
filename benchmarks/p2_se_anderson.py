"""Benchmark: how to reach the L = 2 state-evolution fixed point above alpha_first (why our Anderson mixing is kept).

    .venv/bin/python benchmarks/p2_se_anderson.py [--alpha 1.2] [--n-samples 300] [--tol 1e-6]

One small SE problem (c = 1, v_reg = 1e-3, diagonal Q, start Q0 = diag(0.05, 0.9), fixed teacher draws, 16 x 16
Gauss-Hermite nodes) solved four ways, each printed with its number of SE map evaluations (one channel average
R(Q) each: the cost), wall time and final (Q11, Q22):

  (a) plain damped iteration Q <- (1 - eta) Q + eta F(Q)           (state_evolution, accelerate=False)
  (b) ours: the damped iteration with safeguarded Anderson mixing   (state_evolution, accelerate=True)
  (c) scipy.optimize.anderson on F(Q) - Q
  (d) scipy.optimize.root(method="anderson") on F(Q) - Q

F is the undamped SE map of the diagonal overlap, F(Q) = (alpha R(Q))(I + alpha R(Q))^{-1}, with the denoiser's
parametrisation chosen at each Q as state_evolution does. Q11 = 0 is a fixed point of F at every alpha (an unstable
one above alpha_first): a root finder that is not told which way the iteration flows may land on it. Under 2
CPU-minutes.
"""

import argparse
import time

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--alpha", type=float, default=1.2)
    ap.add_argument("--n-samples", type=int, default=300)
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--max-iter", type=int, default=400)
    args = ap.parse_args()
    import scipy.optimize as so

    from smattn.p2.theory.channel_denoiser import choose_parametrisation
    from smattn.p2.theory.overlaps import clip_overlap
    from smattn.p2.theory.quadrature import QuadratureSettings
    from smattn.p2.theory.state_evolution import (
        channel_average,
        channel_covariance,
        draw_teacher,
        overlap_update,
        state_evolution,
    )

    c, v_reg, damping = 1.0, 1e-3, 0.8
    quad = QuadratureSettings(n1d=16, n_local=8)
    draws = draw_teacher(args.n_samples, 2, seed=4)
    q0 = np.array([0.05, 0.9])
    rows = []

    for name, acc in (("(a) plain damped", False), ("(b) ours (Anderson, safeguarded)", True)):
        t0 = time.perf_counter()
        r = state_evolution(
            args.alpha,
            c,
            2,
            draws=draws,
            damping=damping,
            q0=np.diag(q0),
            tol=args.tol,
            max_iter=args.max_iter,
            diagonal=True,
            v_reg=v_reg,
            accelerate=acc,
            quad=quad,
        )
        rows.append((name, r.iterations, time.perf_counter() - t0, np.diag(r.Q), r.converged))

    calls = {"n": 0}

    def residual(x):
        """F(Q) - x on the diagonal overlap x = (Q11, Q22) (F evaluated at x clipped to [0, 1))."""
        calls["n"] += 1
        x = np.asarray(x, dtype=np.float64)
        Q = clip_overlap(np.diag(x))
        method = choose_parametrisation(channel_covariance(Q, v_reg), quad.v_switch)
        avg = channel_average(Q, c, draws, quad.with_method(method), v_reg=v_reg)
        return np.diag(overlap_update(args.alpha * avg["R"])) - x

    def run_scipy(name, solve):
        calls["n"] = 0
        t0 = time.perf_counter()
        try:
            x, ok = solve()
        except (so.NoConvergence, ValueError, FloatingPointError, np.linalg.LinAlgError) as exc:
            x, ok = (exc.args[0] if isinstance(exc, so.NoConvergence) and exc.args else np.full(2, np.nan)), False
        rows.append((f"{name}", calls["n"], time.perf_counter() - t0, np.asarray(x, dtype=np.float64), ok))

    run_scipy(
        "(c) scipy.optimize.anderson", lambda: (so.anderson(residual, q0, f_tol=args.tol, maxiter=args.max_iter), True)
    )

    def root():
        sol = so.root(residual, q0, method="anderson", options={"fatol": args.tol, "maxiter": args.max_iter})
        return sol.x, bool(sol.success)

    run_scipy('(d) scipy.optimize.root(method="anderson")', root)

    print(
        f"L = 2 SE at alpha = {args.alpha:g} (c = {c:g}, v_reg = {v_reg:g}, {args.n_samples} teacher draws, "
        f"tol {args.tol:g}), start Q = diag({q0[0]:g}, {q0[1]:g})"
    )
    print(f"{'method':45s} {'F evals':>8s} {'time [s]':>9s} {'Q11':>10s} {'Q22':>10s}  converged")
    for name, n, t, q, ok in rows:
        print(f"{name:45s} {n:8d} {t:9.2f} {q[0]:10.6f} {q[1]:10.6f}  {ok}")


if __name__ == "__main__":
    main()
