"""Weak-recovery thresholds of the two-layer attention target (P2 Thm 2.3, App. E.2).

* last layer (initial recovery): alpha_last = 1 / max_a K_aa with K_aa = E_y || E[z_a z_a^T | y] - I ||_F^2 at Q = 0;
* first layer given the last, two readings of App. E.2:
  - literal ("last layer perfectly recovered", z2 known): K_lit = E || E[z1 z1^T | y, z2] - I ||_F^2, computed
    exactly by enumerating the closed-form first-layer branches (no grid); alpha_first_literal = 1 / K_lit;
  - self-consistent: on the phase-II branch Q = diag(0, q2) of the state evolution,
    alpha(q2) = q2 / ((1 - q2) R_2(q2)) and K1(q2) = E || d g_out[1] / d omega[1] ||_F^2; the first layer becomes
    unstable where alpha(q2) K1(q2) = 1, i.e. q2 K1(q2) = (1 - q2) R_2(q2).  The paper's numbers correspond to this
    reading with the reference code's regulariser v_reg = 1e-3 (alpha_first_refined; docs/p2_theory.md).

The outer Gaussian expectations are randomised quasi-Monte-Carlo averages by default: n_rep independent
scramblings of a Sobol' point set; the estimate is their mean and the standard error their spread / sqrt(n_rep)
(an honest error bar, unlike a per-draw standard error, which does not apply to quasi-random points).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import toms748

from smattn.progress import progress

from .attention_link import check_skip, link_logits, preimage, solve_softmax_layer
from .channel_denoiser import posterior_moments
from .quadrature import DEFAULT_QUADRATURE, QuadratureSettings
from .state_evolution import TeacherDraws, channel_average, draw_teacher, draw_teacher_qmc

__all__ = [
    "initial_operator",
    "qmc_plan",
    "alpha_last",
    "first_layer_literal",
    "phase_two_curve",
    "alpha_first",
    "alpha_first_refined",
    "branch_point",
    "linearised_root",
    "Thresholds",
    "thresholds",
]

SAMPLINGS = ("qmc", "mc")


def initial_operator(c: float, draws: TeacherDraws, quad: QuadratureSettings = DEFAULT_QUADRATURE):
    """K (L, L) of the Hadamard-form linear operator F(M)_ab = alpha K_ab M_ab at Q = 0 (Thm 2.3).

    Uses the cross-layer-block form K_ab = sum_{t,s} E[G^a_ts G^b_ts], G^a = E[z_a z_a^T | y] - I.
    Returns (K, K_se, min_ess).
    """
    L = draws.xi.shape[1]
    Z = draws.U
    ell = link_logits(Z, c)
    mom = posterior_moments(ell, np.zeros_like(Z), np.eye(L), c, quad)
    G = np.empty((Z.shape[0], L, 2, 2))
    for a in range(L):
        blk = mom.cov[:, 2 * a : 2 * a + 2, 2 * a : 2 * a + 2] + np.einsum("nt,ns->nts", mom.mean[:, a], mom.mean[:, a])
        G[:, a] = blk - np.eye(2)
    per = np.einsum("nats,nbts->nab", G, G)
    return per.mean(0), per.std(0, ddof=1) / np.sqrt(len(per)), float(mom.ess.min())


def qmc_plan(n_samples: int, n_rep: int):
    """Split about n_samples draws into n_rep scramblings of 2**log2_n points (log2_n >= 1, rounded down).

    Returns (log2_n, total number of draws used)."""
    if n_rep < 2:
        raise ValueError(f"n_rep must be >= 2 (the error bar is the spread of the scramblings), got {n_rep}")
    log2_n = max(1, int(np.floor(np.log2(max(n_samples, 2) / n_rep))))
    return log2_n, n_rep * 2**log2_n


def alpha_last(
    c: float,
    quad: QuadratureSettings = DEFAULT_QUADRATURE,
    *,
    n_samples: int = 20000,
    seed: int = 0,
    sampling: str = "qmc",
    n_rep: int = 8,
    se_target: float | None = None,
    n_start: int = 4096,
    show_progress: bool = False,
):
    """Initial-recovery threshold 1 / max_a K_aa and the K matrix (dict).

    sampling "qmc": n_rep scrambled Sobol' sets of 2**log2_n points (qmc_plan; about n_samples draws in all), K is
    their mean and K_se their spread / sqrt(n_rep); "mc": n_samples plain Monte-Carlo draws, per-draw standard
    error.
    se_target ("qmc" only): the sample is sized by the standard error it must reach.  The sets start with about
    n_start draws in all and every set is doubled (its next 2**log2_n Sobol' points, so a set stays a scrambled net
    and no draw is evaluated twice) until alpha_se <= se_target or the sets hold about n_samples draws in all (the
    cap).  The result is then the same as a single pass at the final size.  The stopping rule looks at the estimated
    standard error itself, which is somewhat optimistic in the sample that stops (se_history records every step).
    Returns dict with alpha, alpha_se (K_se / K^2 of the leading entry), layer (1-based), K, K_se (L, L),
    min_ess, n_used, sampling and, for qmc, K_reps (n_rep, L, L), se_target, se_reached and se_history
    (list of (n_used, alpha_se) after each size).
    """
    check_skip(c)
    if sampling not in SAMPLINGS:
        raise ValueError(f"sampling must be one of {SAMPLINGS}, got {sampling!r}")
    if se_target is not None and not (sampling == "qmc" and se_target > 0):
        raise ValueError(f"se_target needs sampling 'qmc' and a value > 0, got {se_target!r} with {sampling!r}")
    if sampling == "mc":
        K, K_se, ess = initial_operator(c, draw_teacher(n_samples, 2, seed), quad)
        extra = {"n_used": int(n_samples)}
    else:
        log2_cap, _ = qmc_plan(n_samples, n_rep)
        log2_n = log2_cap if se_target is None else min(log2_cap, qmc_plan(n_start, n_rep)[0])
        seeds = np.random.SeedSequence(seed).spawn(n_rep)
        sums, done, ess, history = 0.0, 0, np.inf, []
        while True:
            parts = []
            it = progress(seeds, desc=f"alpha_last c={c:g} (QMC sets of {2**log2_n})") if show_progress else seeds
            for s in it:
                # a fresh copy of the set's seed sequence: SciPy's scrambling spawns from it, so a reused object
                # would scramble the set differently at every size (and its prefix would not be the smaller set)
                d = draw_teacher_qmc(log2_n, 2, np.random.SeedSequence(s.entropy, spawn_key=s.spawn_key))
                K_r, _, e = initial_operator(c, TeacherDraws(d.xi[done:], d.U[done:]), quad)
                parts.append(K_r * (len(d.xi) - done))  # the sum over the new points of the set
                ess = min(ess, e)
            sums, done = sums + np.array(parts), 2**log2_n
            reps = sums / done
            K, K_se = reps.mean(0), reps.std(0, ddof=1) / np.sqrt(n_rep)
            a = int(np.argmax(np.diag(K)))
            se = float(K_se[a, a] / K[a, a] ** 2)
            history.append((n_rep * done, se))
            if se_target is None or se <= se_target or log2_n >= log2_cap:
                break
            log2_n += 1
        extra = {
            "n_used": int(n_rep * done),
            "K_reps": reps,
            "se_target": se_target,
            "se_reached": bool(se_target is None or se <= se_target),
            "se_history": history,
        }
    a = int(np.argmax(np.diag(K)))
    return {
        "alpha": float(1.0 / K[a, a]),
        "layer": a + 1,
        "K": K,
        "K_se": K_se,
        "min_ess": float(ess),
        "alpha_se": float(K_se[a, a] / K[a, a] ** 2),
        "sampling": sampling,
        **extra,
    }


def first_layer_literal(c: float, *, n_samples: int = 200000, seed: int = 0):
    """K_lit = E || E[z1 z1^T | y, z2] - I ||_F^2 with z2 known exactly (branch enumeration; no quadrature).

    Returns dict with K, its standard error, alpha = 1/K and the fraction of samples with a second admissible
    first-layer pre-image of the other sign class (which is what makes K < 6).
    """
    check_skip(c)
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n_samples, 2, 2))
    x = preimage(link_logits(Z, c))
    z2 = Z[:, 1, :]
    cand, logw = [], []
    for s in (1.0, -1.0):
        w, lj, ok = solve_softmax_layer(z2, s * x, c)
        for b in (1.0, -1.0):
            z1 = b * w
            cand.append(z1)
            logw.append(np.where(ok, -0.5 * np.sum(z1 * z1, axis=-1) - lj, -np.inf))
    cand = np.stack(cand, 1)
    logw = np.stack(logw, 1)
    mx = logw.max(1, keepdims=True)
    good = np.isfinite(mx[:, 0])
    n_bad = int(np.sum(~good))
    if n_bad > max(10, n_samples // 1000):
        raise FloatingPointError(f"{n_bad} samples have no admissible first-layer pre-image")
    # rounding can push the true branch out of the open admissible set when z11 ~ z12 (p + q ~ 1): drop those
    cand, logw, mx = cand[good], logw[good], mx[good]
    w = np.exp(logw - mx)
    w /= w.sum(1, keepdims=True)
    second = np.einsum("nk,nkt,nks->nts", w, cand, cand)
    k = np.sum((second - np.eye(2)) ** 2, axis=(1, 2))
    n_ok = np.sum(np.isfinite(logw), axis=1)
    return {
        "K": float(k.mean()),
        "K_se": float(k.std(ddof=1) / np.sqrt(len(k))),
        "alpha": float(1.0 / k.mean()),
        "frac_extra_branch": float(np.mean(n_ok > 2)),
        "dropped": n_bad,
    }


def phase_two_curve(
    q_grid,
    c: float,
    quad: QuadratureSettings = DEFAULT_QUADRATURE,
    *,
    n_samples: int = 4000,
    seed: int = 0,
    v_reg: float = 0.0,
    draws: TeacherDraws | None = None,
    show_progress: bool = False,
):
    """Explicit phase-II fixed-point curve and first-layer growth rate on Q = diag(0, q2).

    q_grid: (m,) values of q2 in (0, 1).  Returns dict of arrays (m,): q2, R2, alpha = q2/((1-q2)R2), K1, K1_se,
    min_ess.  Common random numbers across q2: the given draws, else n_samples Monte-Carlo draws from seed
    (R2_se, K1_se are per-draw standard errors, meaningful for Monte-Carlo draws only).
    """
    check_skip(c)
    q_grid = np.asarray(q_grid, dtype=np.float64)
    if np.any((q_grid <= 0) | (q_grid >= 1)):
        raise ValueError("q_grid values must lie in (0, 1)")
    draws = draws if draws is not None else draw_teacher(n_samples, 2, seed)
    out = {k: np.empty(len(q_grid)) for k in ("R2", "R2_se", "alpha", "K1", "K1_se", "min_ess")}
    idx = range(len(q_grid))
    for i in progress(idx, desc=f"phase-II branch c={c:g}", unit="q2") if show_progress else idx:
        q = q_grid[i]
        avg = channel_average(np.diag([0.0, q]), c, draws, quad, want_k1=True, v_reg=v_reg)
        out["R2"][i] = avg["R"][1, 1]
        out["R2_se"][i] = avg["R_se"][1, 1]
        out["alpha"][i] = q / ((1.0 - q) * avg["R"][1, 1])
        out["K1"][i] = avg["K1"]
        out["K1_se"][i] = avg["K1_se"]
        out["min_ess"][i] = avg["min_ess"]
    out["q2"] = q_grid
    return out


def alpha_first(curve: dict, alpha_last: float | None = None, K11: float | None = None):
    """Self-consistent first-layer threshold from a phase_two_curve: first sign change of alpha(q2) K1(q2) - 1.

    If alpha_last and K11 (the K operator at Q = 0) are given, the branch's end point q2 = 0 (alpha = alpha_last,
    K1 = K11) is prepended, so that a crossing below the first grid point is found too.  Linear interpolation in
    q2 between the bracketing points.  Returns dict(alpha, q2, found); alpha = nan if no crossing on the grid.
    """
    q2, a_c, k1 = curve["q2"], curve["alpha"], curve["K1"]
    if alpha_last is not None and K11 is not None:
        q2 = np.concatenate([[0.0], q2])
        a_c = np.concatenate([[alpha_last], a_c])
        k1 = np.concatenate([[K11], k1])
    h = a_c * k1 - 1.0
    if h[0] >= 0:
        return {"alpha": float(a_c[0]), "q2": float(q2[0]), "found": True}
    idx = np.nonzero((h[:-1] < 0) & (h[1:] >= 0))[0]
    if len(idx) == 0:
        return {"alpha": float("nan"), "q2": float("nan"), "found": False}
    i = int(idx[0])
    t = -h[i] / (h[i + 1] - h[i])
    q = q2[i] + t * (q2[i + 1] - q2[i])
    a = a_c[i] + t * (a_c[i + 1] - a_c[i])
    return {"alpha": float(a), "q2": float(q), "found": True}


def branch_point(q: float, c: float, reps, quad: QuadratureSettings, v_reg: float) -> dict:
    """alpha(q2), K1(q2) and h = alpha K1 - 1 at one q2: pooled over the scramblings and per scrambling."""
    avgs = [channel_average(np.diag([0.0, q]), c, d, quad, want_k1=True, v_reg=v_reg) for d in reps]
    R2 = np.array([a["R"][1, 1] for a in avgs])
    K1 = np.array([a["K1"] for a in avgs])
    alpha_r = q / ((1.0 - q) * R2)
    alpha = q / ((1.0 - q) * R2.mean())
    return {
        "q2": float(q),
        "alpha": float(alpha),
        "K1": float(K1.mean()),
        "h": float(alpha * K1.mean() - 1.0),
        "alpha_r": alpha_r,
        "h_r": alpha_r * K1 - 1.0,
        "min_ess": float(min(a["min_ess"] for a in avgs)),
    }


def _coarse_scan(q_grid, c, quad, draws, v_reg, last, show_progress):
    """The phase-II curve on q_grid (increasing) from one set of draws, evaluated up to its first sign change of
    h = alpha K1 - 1 (the branch end q2 = 0 from the alpha_last record `last`, if given, comes first).

    Returns the evaluated part of the curve (phase_two_curve's dict) and alpha_first of it (the same as alpha_first
    of the whole curve: it takes the first sign change)."""
    end = (last["alpha"], last["K"][0, 0]) if last is not None else ()
    parts = []
    if not (end and end[0] * end[1] >= 1.0):  # the first layer is not already unstable at the branch end
        it = range(len(q_grid))
        bar = progress(it, desc=f"phase-II branch c={c:g}", unit="q2") if show_progress else it
        for i in bar:
            p = phase_two_curve(q_grid[i : i + 1], c, quad, draws=draws, v_reg=v_reg)
            parts.append(p)
            if p["alpha"][0] * p["K1"][0] >= 1.0:
                break
    keys = ("q2", "R2", "R2_se", "alpha", "K1", "K1_se", "min_ess")
    coarse = {k: np.concatenate([p[k] for p in parts]) if parts else np.empty(0) for k in keys}
    return coarse, alpha_first(coarse, *end)


def _grid_bracket(grid, q_first, h_at):
    """Neighbouring grid points (lo, hi) with pooled h(lo) < 0 <= h(hi), starting from the grid interval of the
    coarse root q_first and moving along the grid while the pooled h does not change sign there; None if it
    never does."""
    hi = min(max(int(np.searchsorted(grid, q_first)), 1), len(grid) - 1)
    lo = hi - 1
    for _ in range(len(grid)):
        a, b = h_at(grid[lo])["h"], h_at(grid[hi])["h"]
        if a < 0 <= b:
            return grid[lo], grid[hi]
        if a >= 0 and lo > 0:
            lo, hi = lo - 1, lo
        elif b < 0 and hi < len(grid) - 1:
            lo, hi = hi, hi + 1
        else:
            return None
    return None


def _probe_bracket(q_c, grid, h_at, tries: int = 6):
    """A bracket (lo, hi) of the pooled root, pooled h(lo) < 0 <= h(hi), from the coarse root q_c: h at q_c, then
    at q_c -+ delta towards the sign change, delta = (1 - q_c) / 10 doubling while the sign stays (within the
    grid's range); None if it does not change sign there."""
    lo_lim, hi_lim = float(grid[0]), float(grid[-1])
    q0 = float(np.clip(q_c, lo_lim, hi_lim))
    a, delta = h_at(q0)["h"], 0.1 * (1.0 - q0)
    step = 1.0 if a < 0 else -1.0
    for _ in range(tries):
        q1 = float(np.clip(q0 + step * delta, lo_lim, hi_lim))
        if q1 == q0:
            return None
        b = h_at(q1)["h"]
        if (a < 0) != (b < 0):
            return (q0, q1) if step > 0 else (q1, q0)
        q0, a, delta = q1, b, 2.0 * delta
    return None


def _refine(h_at, cache, qa, qb, q_tol, max_refine):
    """Root of the pooled h in (qa, qb) by SciPy's TOMS 748 to q_tol, and the tightest evaluated bracket around it.

    Returns (qa, qb, converged) with h(qa) < 0 <= h(qb) among the cached points."""
    root, info = toms748(lambda q: h_at(q)["h"], qa, qb, xtol=q_tol, maxiter=max_refine, full_output=True, disp=False)
    qs = sorted(q for q in cache if qa <= q <= qb)
    pairs = [(u, v) for u, v in zip(qs[:-1], qs[1:], strict=True) if cache[u]["h"] < 0 <= cache[v]["h"]]
    u, v = min(pairs, key=lambda p: abs(0.5 * (p[0] + p[1]) - root))
    return u, v, bool(info.converged)


def linearised_root(a: dict, b: dict, wa: dict, wb: dict, n_rep: int) -> dict:
    """alpha_first and its error bar from pooled branch points: a, b the tightest evaluated bracket of the root
    (h(a) < 0 <= h(b)), wa, wb a wider one (the bracket the refinement started from).

    The root q* of the linear interpolation of h in (a, b), with alpha, K1 and the per-scrambling alpha_r, h_r
    interpolated there; per scrambling r the linearised root alpha_r(q*) - alpha'(q*) h_r(q*) / h'(q*), and the
    standard error is their spread / sqrt(n_rep).  The slopes h', alpha' are secants over the wider bracket: the
    per-scrambling roots lie a few 1e-3 in q2 from q* (q2_se), and over the tightest bracket (~1e-5 wide) the
    secant of h is dominated by small jumps of the quadrature rule in q2 (a few 1e-4 in h in the mode-centred
    parametrisation), which made it up to twice the slope on the scale of the roots."""
    dq = b["q2"] - a["q2"]
    q_star = a["q2"] - a["h"] * dq / (b["h"] - a["h"])
    t = (q_star - a["q2"]) / dq
    wq = wb["q2"] - wa["q2"]
    dh, dal = (wb["h"] - wa["h"]) / wq, (wb["alpha"] - wa["alpha"]) / wq
    h_r = a["h_r"] + t * (b["h_r"] - a["h_r"])
    al_r = a["alpha_r"] + t * (b["alpha_r"] - a["alpha_r"])
    first_r = al_r - dal * h_r / dh
    return {
        "alpha": float(a["alpha"] + t * (b["alpha"] - a["alpha"])),
        "alpha_se": float(first_r.std(ddof=1) / np.sqrt(n_rep)),
        "q2": float(q_star),
        "q2_se": float((q_star - h_r / dh).std(ddof=1) / np.sqrt(n_rep)),
        "K1": float(a["K1"] + t * (b["K1"] - a["K1"])),
        "alpha_reps": first_r,
        "slopes": (dh, dal),
    }


def _first_result(base: dict, **fields) -> dict:
    """A result of alpha_first_refined: the defaults of "nothing found", overridden by fields."""
    nan = float("nan")
    out = {"alpha": nan, "alpha_se": nan, "q2": nan, "q2_se": nan, "K1": nan, "found": False, "how": "none"}
    out.update(n_evaluations=0, min_ess=nan, points={}, alpha_grid_shift=nan, refine_converged=False)
    return {**base, **out, **fields}


def alpha_first_refined(
    c: float,
    quad: QuadratureSettings = DEFAULT_QUADRATURE,
    *,
    q_grid,
    v_reg: float = 0.0,
    n_samples: int = 16384,
    n_rep: int = 8,
    seed: int = 0,
    last: dict | None = None,
    q_tol: float = 3e-4,
    max_refine: int = 12,
    quad_check: QuadratureSettings | None = None,
    check_share: float = 0.25,
    show_progress: bool = False,
) -> dict:
    """Self-consistent first-layer threshold with a standard error (randomised quasi-Monte-Carlo).

    1. bracket: the phase-II curve on q_grid (q2 values in (0, 1)) from the first scrambling alone, up to its first
       sign change of h(q2) = alpha(q2) K1(q2) - 1 (alpha_first; the end point q2 = 0 of the branch is added when
       last, the alpha_last record, is given);
    2. refine: the root of h averaged over all n_rep scramblings (about n_samples draws in all, common to every
       q2) by SciPy's TOMS 748 (scipy.optimize.toms748) to q_tol, in a bracket found by probing from the coarse
       root q_c by steps of (1 - q_c)/10, 2 (1 - q_c)/10, ... (_probe_bracket), else in the grid interval of step
       1 moved along q_grid until the pooled h changes sign (q_tol 3e-4: the linear interpolation of step 3 in a
       bracket that wide moves alpha by ~1e-5, against a standard error of a few 1e-3);
    3. error bar: per scrambling r, the linearised root alpha_r(q*) - alpha'(q*) h_r(q*) / h'(q*) (secant slopes
       of the pooled curve over the bracket of step 2, see linearised_root); the standard error is their
       spread / sqrt(n_rep);
    4. quadrature check (if quad_check is given): h at the root with quad and with quad_check on the same draws (the
       first check_share of every set); alpha_grid_shift = -alpha'(q*) dh / h'(q*) is the move of the threshold
       under the finer quadrature.

    Returns dict with alpha, alpha_se, q2, q2_se, K1 (at the root), found, how ("refined", "at alpha_last" when the
    first layer is already unstable at the start of the branch, "none" when h < 0 on the whole grid), n_used,
    n_evaluations (pooled points), refine_converged, min_ess, coarse (the step-1 curve up to its sign change, dict of
    arrays) and the evaluated points (q2, alpha, h).
    """
    check_skip(c)
    if not 0 < check_share <= 1:
        raise ValueError(f"check_share must lie in (0, 1], got {check_share!r}")
    q_grid = np.sort(np.asarray(q_grid, dtype=np.float64))
    log2_n, n_used = qmc_plan(n_samples, n_rep)
    reps = [draw_teacher_qmc(log2_n, 2, s) for s in np.random.SeedSequence(seed).spawn(n_rep)]
    coarse, first = _coarse_scan(q_grid, c, quad, reps[0], v_reg, last, show_progress)
    base = {"n_used": int(n_used), "coarse": coarse, "v_reg": float(v_reg)}
    if not first["found"]:
        return _first_result(base)
    if first["q2"] == 0.0:
        return _first_result(
            base,
            alpha=first["alpha"],
            alpha_se=float(last["alpha_se"]),
            q2=0.0,
            q2_se=0.0,
            K1=float(last["K"][0, 0]),
            found=True,
            how="at alpha_last",
        )
    cache = {}
    bar = (
        progress(total=max_refine + 4, desc=f"alpha_first c={c:g} v_reg={v_reg:g}", unit="eval")
        if show_progress
        else None
    )

    def h_at(q):
        q = float(q)
        if q not in cache:
            cache[q] = branch_point(q, c, reps, quad, v_reg)
            if bar is not None:
                bar.update(1)
                bar.set_postfix(q2=f"{q:.6f}", h=f"{cache[q]['h']:.1e}", refresh=False)
        return cache[q]

    bracket = _probe_bracket(first["q2"], q_grid, h_at) or _grid_bracket(q_grid, first["q2"], h_at)
    if bracket is None:
        if bar is not None:
            bar.close()
        return _first_result(
            base,
            alpha=first["alpha"],
            q2=first["q2"],
            found=True,
            how="coarse only (pooled h does not change sign)",
            n_evaluations=len(cache),
            min_ess=float(min(p["min_ess"] for p in cache.values())),
            points=_points(cache),
        )
    qa, qb, converged = _refine(h_at, cache, *bracket, q_tol, max_refine)
    if bar is not None:
        bar.close()
    root = linearised_root(cache[qa], cache[qb], cache[bracket[0]], cache[bracket[1]], n_rep)
    dh, dal = root.pop("slopes")
    shift = float("nan")
    if quad_check is not None:
        m = max(2, int(check_share * 2**log2_n))
        sub = [TeacherDraws(d.xi[:m], d.U[:m]) for d in reps]
        h0 = branch_point(root["q2"], c, sub, quad, v_reg)["h"]
        h1 = branch_point(root["q2"], c, sub, quad_check, v_reg)["h"]
        shift = float(-dal * (h1 - h0) / dh)
    return _first_result(
        base,
        **root,
        alpha_grid_shift=shift,
        found=True,
        how="refined",
        refine_converged=converged,
        n_evaluations=len(cache),
        min_ess=float(min(p["min_ess"] for p in cache.values())),
        points=_points(cache),
    )


def _points(cache: dict) -> dict:
    qs = sorted(cache)
    return {k: np.array([cache[q][k] for q in qs]) for k in ("q2", "alpha", "K1", "h")}


@dataclass
class Thresholds:
    """Thresholds at one skip strength c: alpha_last (dict of alpha_last), alpha_first (dict of
    alpha_first_refined at the given v_reg) and the literal first-layer threshold (dict of first_layer_literal)."""

    c: float
    alpha_last: dict
    alpha_first: dict
    literal: dict


def thresholds(
    c: float,
    q_grid,
    quad: QuadratureSettings = DEFAULT_QUADRATURE,
    *,
    n_k: int = 65536,
    n_first: int = 16384,
    n_rep: int = 8,
    seed: int = 0,
    n_literal: int = 200000,
    v_reg: float = 1e-3,
) -> Thresholds:
    """All three thresholds at skip strength c; alpha_first under the paper's definition (v_reg = 1e-3) by default."""
    last = alpha_last(c, quad, n_samples=n_k, seed=seed, n_rep=n_rep)
    first = alpha_first_refined(
        c, quad, q_grid=q_grid, v_reg=v_reg, n_samples=n_first, n_rep=n_rep, seed=seed + 1, last=last
    )
    lit = first_layer_literal(c, n_samples=n_literal, seed=seed + 2)
    return Thresholds(c=c, alpha_last=last, alpha_first=first, literal=lit)
