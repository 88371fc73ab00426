"""What the P2 theory costs at paper scale, before and after the savings, measured in one process.

Question: What did the P2 theory's paper-scale savings (after commit 25fc591) save, piece by piece, and did they
keep the numbers?
Finding: The depth-3 channel grid's blocked NumPy path beats the compiled JAX grid on a CPU (hence NumPy as the
default backend for L = 3); in the phase-diagram read-offs the exceedance switches on once along the alpha grid, so
bisection reads the scan's value with fewer short runs; the thresholds and denoisers give the same numbers before
and after. The per-piece CPU seconds are not in the docs (the commit messages of 18fbef3 and e85c486 give about 1.8x
less CPU than the JAX grid, and 35 instead of 46 pooled evaluations for alpha_first).
Recorded in: docs/p2_theory.md, Thresholds ("Costs before and after"), Depth 3 ("Cost") and Deviations.

"Before" is the theory package of an earlier commit (``--before``, default the last commit before these savings),
loaded beside the current one (tools/baseline_package.py), so both run on the same machine at the same time.
Times are CPU seconds of this process (time.process_time), which a shared machine disturbs less than wall time.

    python studies/p2_paper_cost.py authors      # the authors' estimator: direct vs fused box sums (one average)
    python studies/p2_paper_cost.py denoiser     # one L = 2 channel average, before vs after (A, A*, ridge grid)
    python studies/p2_paper_cost.py thresholds [--scale paper] [--c 1 4]   # p2_thresholds_c, piece by piece
    python studies/p2_paper_cost.py hypotheses [--scale laptop] [--estimator grid] [--c 1]  # read-off search
    python studies/p2_paper_cost.py slopes      # alpha_first's error bar: slopes over narrow and wide brackets
    python studies/p2_paper_cost.py project     # these rules at paper scale, projected from measured unit costs
Options: --quick (small sizes: a smoke check of the script itself).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))  # tools/baseline_package.py
from baseline_package import submodule  # noqa: E402

BEFORE = "25fc591"  # the last commit before the P2 paper-scale savings
P3_DRAWS = 2000  # teacher draws of the depth-3 SE at paper scale (l3_n_samples)
D3_ITERATIONS = 679  # SE iterations of the depth-3 sweep at paper scale, all 16 alphas (docs/p2_theory.md, Depth 3)
ROOT = Path(__file__).resolve().parents[1]


def cpu(f):
    """(result, CPU seconds) of f()."""
    t0 = time.process_time()
    r = f()
    return r, time.process_time() - t0


def scale_params(scale: str) -> dict:
    """The p2_theory config group at one scale (plain values)."""
    import yaml

    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())["p2_theory"]
    return {k: (v[scale] if isinstance(v, dict) and scale in v else v) for k, v in cfg.items()}


def bench_authors(a):
    from smattn.p2.theory.authors_estimator import AuthorsSettings, authors_channel_average
    from smattn.p2.theory.state_evolution import draw_teacher

    P = scale_params("paper")
    cases = [
        ("L=2 (phase-diagram read-off)", 2, np.array([[0.3, 0.02], [0.02, 0.98]]), P["pd_hyp_samples"]),
        ("L=3 (Fig. 3 left, reference mode)", 3, np.diag([0.55, 0.55, 0.996]), P["l3_authors_n_samples"]),
    ]
    for name, L, Q, n in cases:
        n = 20 if a.quick else n
        d = draw_teacher(n, L, 0)
        out = {}
        for kernel in ("direct", "fused", "direct", "fused"):  # interleaved: the best of two each
            s = AuthorsSettings(kernel=kernel)
            r, t = cpu(
                lambda s=s, Q=Q, d=d: authors_channel_average(Q, 1.0, d.xi, d.U, np.random.default_rng(1), settings=s)
            )
            out.setdefault(kernel, []).append(t)
            out[kernel + "_r"] = r
        td, tf = min(out["direct"]), min(out["fused"])
        dR = np.abs(out["fused_r"]["R"] - out["direct_r"]["R"]).max() / np.abs(out["direct_r"]["R"]).max()
        print(
            f"[authors] {name}, {n} samples x 2 x 10^4 box points: direct {td:.2f} s -> fused {tf:.2f} s "
            f"({td / tf:.1f}x); max relative |R difference| {dR:.1e}; floored share "
            f"{out['fused_r']['floor_fraction']:.2f} = {out['direct_r']['floor_fraction']:.2f}"
        )
        its = P["pd_hyp_iterations"] if L == 2 else P["l3_authors_iterations"]
        print(f"           one short run of {its} iterations: {its * td:.0f} s -> {its * tf:.0f} s (projected)")


def bench_denoiser(a):
    from smattn.p2.theory import state_evolution as new
    from smattn.p2.theory.quadrature import QuadratureSettings

    old = submodule(a.before, "state_evolution")
    OQS = submodule(a.before, "quadrature").QuadratureSettings
    d = new.draw_teacher_qmc(8 if a.quick else 11, 2, 1)
    cases = [
        (1.0, np.diag([0.0, 0.7]), 32, "A: phase-II branch below the peaked regime"),
        (1.0, np.diag([0.0, 0.975]), 32, "A*: first-layer threshold"),
        (1.0, np.array([[0.5, 0.02], [0.02, 0.99]]), 24, "A*: SE above alpha_first"),
        (1e-4, np.diag([0.0, 0.5]), 32, "A, ridge grid (c < 0.05)"),
    ]
    for c, Q, n1d, what in cases:
        t = {}
        for who, mod, qs in (("before", old, OQS), ("after", new, QuadratureSettings)) * 2:
            r, s = cpu(
                lambda mod=mod, qs=qs, c=c, Q=Q, n1d=n1d: mod.channel_average(
                    Q, c, mod.TeacherDraws(d.xi, d.U), qs(n1d=n1d), want_k1=True
                )
            )
            t.setdefault(who, []).append(s)
            t[who + "_r"] = r
        b, f = min(t["before"]), min(t["after"])
        dR = np.abs(t["after_r"]["R"] - t["before_r"]["R"]).max() / np.abs(t["before_r"]["R"]).max()
        dK = abs(t["after_r"]["K1"] / t["before_r"]["K1"] - 1.0)
        print(
            f"[denoiser] {what}, c={c:g}, {len(d.xi)} draws, n1d={n1d} ({t['after_r']['method']}): "
            f"{b:.3f} s -> {f:.3f} s ({b / f:.2f}x); max relative |R difference| {dR:.1e}, K1 {dK:.1e}"
        )
    # depth 3 (Fig. 3 left), the paper's size: before, the compiled JAX grid (the default then) and the NumPy path
    d3 = new.draw_teacher(100 if a.quick else P3_DRAWS, 3, 0)
    Q3 = np.diag([0.55, 0.55, 0.99])
    t = {}
    for who, mod, qs, be in (("before, JAX", old, OQS, "jax"), ("before, NumPy", old, OQS, "numpy")) * 2 + (
        ("after, NumPy", new, QuadratureSettings, "numpy"),
    ) * 2:
        dd = mod.TeacherDraws(d3.xi, d3.U)
        mod.channel_average(Q3, 1.0, mod.TeacherDraws(d3.xi[:8], d3.U[:8]), qs(n1d=8, backend=be))  # compile
        r, s = cpu(lambda mod=mod, qs=qs, be=be, dd=dd: mod.channel_average(Q3, 1.0, dd, qs(n1d=8, backend=be)))
        t.setdefault(who, []).append(s)
        t[who + "_r"] = r
    ref = t["before, NumPy_r"]["R"]
    for who in ("before, JAX", "before, NumPy", "after, NumPy"):
        dR = np.abs(t[who + "_r"]["R"] - ref).max() / np.abs(ref).max()
        print(
            f"[denoiser] depth 3, {len(d3.xi)} draws, 8^4 nodes x 2 signs, {who}: {min(t[who]):.2f} s "
            f"(max relative |R difference| to the NumPy reference {dR:.1e})"
        )
    # alpha_last's operator K at Q = 0 (the posterior covariance; R vanishes there by symmetry)
    t = {}
    for who, mod in (("before", submodule(a.before, "thresholds")), ("after", None)) * 2:
        from smattn.p2.theory.thresholds import initial_operator

        f_op = initial_operator if mod is None else mod.initial_operator
        qs = QuadratureSettings if mod is None else OQS
        k, s = cpu(lambda f_op=f_op, qs=qs: f_op(1.0, d, qs(n1d=32))[0])
        t.setdefault(who, []).append(s)
        t[who + "_K"] = k
    b, f = min(t["before"]), min(t["after"])
    dK = np.abs(t["after_K"] - t["before_K"]).max() / np.abs(t["before_K"]).max()
    print(
        f"[denoiser] A at Q = 0 (alpha_last's K), c=1, {len(d.xi)} draws, n1d=32: {b:.3f} s -> {f:.3f} s "
        f"({b / f:.2f}x); max relative |K difference| {dK:.1e}"
    )


def _thresholds_pieces(T, QS, q2_grid, c, P, last_kw):
    """Run p2_thresholds_c's computation with module T; returns {piece: (result, CPU s)}."""
    quad = QS(n1d=P["n1d"])
    fine = QS(n1d=int(1.5 * P["n1d"]), n_local=24)
    grid = q2_grid(P["pd_q_points"], q_max=P["pd_q_max"])
    out = {}
    last, t = cpu(
        lambda: T.alpha_last(c, quad, n_samples=P["pd_n_k"], seed=P["seed"], n_rep=P["pd_qmc_sets"], **last_kw)
    )
    n4 = last["n_used"] // 4
    _, t_chk = cpu(
        lambda: (
            T.alpha_last(c, quad, n_samples=n4, seed=P["seed"], n_rep=P["pd_qmc_sets"]),
            T.alpha_last(c, fine, n_samples=n4, seed=P["seed"], n_rep=P["pd_qmc_sets"]),
        )
    )
    out["alpha_last"] = (last, t + t_chk)
    for v, check in ((P["pd_v_reg"], fine), (0.0, None)):
        out[f"alpha_first v_reg={v:g}"] = cpu(
            lambda v=v, check=check: T.alpha_first_refined(
                c, quad, q_grid=grid, v_reg=v, n_samples=P["pd_n_first"], n_rep=P["pd_qmc_sets"], seed=P["seed"] + 1,
                last=last, quad_check=check,
            )
        )  # fmt: skip
    out["literal"] = cpu(lambda: T.first_layer_literal(c, n_samples=P["pd_literal_samples"], seed=P["seed"] + 2))
    return out


def bench_thresholds(a):
    from smattn.p2.theory import thresholds as new
    from smattn.p2.theory.overlap_curves import q2_grid
    from smattn.p2.theory.quadrature import QuadratureSettings

    P = scale_params(a.scale)
    if a.quick:
        P.update(pd_n_k=4096, pd_n_first=1024, pd_q_points=10, pd_literal_samples=20000, n1d=16)
    old = submodule(a.before, "thresholds")
    OQS = submodule(a.before, "quadrature").QuadratureSettings
    oq2 = submodule(a.before, "overlap_curves").q2_grid
    tot_b = tot_a = 0.0
    for c in a.c:
        b = _thresholds_pieces(old, OQS, oq2, c, P, {})
        f = _thresholds_pieces(new, QuadratureSettings, q2_grid, c, P, {"se_target": P["pd_last_se_target"]})
        sb, sa = sum(t for _, t in b.values()), sum(t for _, t in f.values())
        tot_b, tot_a = tot_b + sb, tot_a + sa
        print(f"[thresholds] {a.scale} scale, c={c:g}: {sb:.1f} s -> {sa:.1f} s ({sb / sa:.1f}x)")
        for k in b:
            (rb, tb), (ra, ta) = b[k], f[k]
            extra = ""
            if k == "alpha_last":
                extra = f", draws {rb['n_used']} -> {ra['n_used']} (se target {ra['se_target']:g})"
            elif k.startswith("alpha_first"):
                extra = (
                    f", pooled evaluations {rb['n_evaluations']} -> {ra['n_evaluations']}, coarse points "
                    f"{len(rb['coarse']['q2'])} -> {len(ra['coarse']['q2'])}, grid shift "
                    f"{rb['alpha_grid_shift']:+.4f} -> {ra['alpha_grid_shift']:+.4f}"
                )
            se_b, se_a = (r["alpha_se"] if "alpha_se" in r else r["K_se"] / r["K"] ** 2 for r in (rb, ra))
            print(
                f"    {k:24s} {tb:6.1f} s -> {ta:6.1f} s; alpha {rb['alpha']:.5f} +- {se_b:.5f} -> "
                f"{ra['alpha']:.5f} +- {se_a:.5f}{extra}"
            )
    if len(a.c) > 1:
        print(f"[thresholds] {len(a.c)} values of c: {tot_b:.0f} s -> {tot_a:.0f} s ({tot_b / tot_a:.1f}x)")


def bench_hypotheses(a):
    """Every grid point's short run (the function both searches read), the scan's and the bisection's read-off from
    it, whether the exceedance switches on once along the grid, and one short run before vs after."""
    from smattn.p2.theory import phase_diagram_hypotheses as H
    from smattn.p2.theory.quadrature import QuadratureSettings

    P = scale_params(a.scale)
    step = P["pd_hyp_alpha_step"] if a.estimator == "grid" else P["pd_hyp_authors_alpha_step"]
    alphas = np.round(np.arange(step, P["pd_hyp_alpha_max"] + 1e-9, step), 10)
    skips = a.c or (P["pd_hyp_skips"] if a.estimator == "grid" else P["pd_hyp_authors_skips"])
    n, its = (20, 4) if a.quick else (P["pd_hyp_samples"], P["pd_hyp_iterations"])
    quad = QuadratureSettings(n1d=P["gamp_sweep_n1d"])
    kw = dict(n_samples=n, iterations=its, seed=P["seed"], v_reg=P["v_reg"], estimator=a.estimator)
    old = submodule(a.before, "phase_diagram_hypotheses")
    OQS = submodule(a.before, "quadrature").QuadratureSettings
    guess, runs = None, {"scan": 0, "bisect": 0, "guess": 0}
    for c in skips:
        # every grid point (a level no run reaches makes the scan run them all): the function every search reads
        full, t_all = cpu(lambda c=c: H.read_off_threshold(c, alphas, quad, search="scan", **{**kw, "level": 2.0}))
        q11 = np.array(full["q11"])
        above = q11 > P["pd_hyp_level"]
        once = bool(np.all(np.diff(above.astype(int)) >= 0))
        found = {}
        for name, g in (("scan", "scan"), ("bisect", None), ("guess", guess)):
            seen = set()

            def visit(i, seen=seen, above=above):
                seen.add(i)
                return bool(above[i])

            if g == "scan":
                i = next((i for i in range(len(alphas)) if visit(i)), None)
            else:
                gi = None if g is None else int(np.argmin(np.abs(alphas - g)))
                i = H.first_exceedance(visit, len(alphas), gi)
            found[name] = (np.nan if i is None else alphas[i], len(seen))
            runs[name] += len(seen)
        (scan, k_scan), (bis, k_bis), (gue, k_gue) = found["scan"], found["bisect"], found["guess"]
        equal = all(np.isnan(scan) and np.isnan(v) or v == scan for v in (bis, gue))
        print(
            f"[hypotheses] {a.scale} {a.estimator} c={c:g}: scan {scan:.2f} ({k_scan} runs), bisection {bis:.2f} "
            f"({k_bis} runs), bisection from the previous read-off {gue:.2f} ({k_gue} runs), equal: {equal}; "
            f"exceedance switches on once along the grid: {once}; {t_all / len(alphas):.1f} s per run (after)"
        )
        print(f"    final Q11 on the grid: {np.array2string(q11, precision=3, max_line_width=200)}")
        guess = scan if np.isfinite(scan) else guess
    print(f"[hypotheses] short runs over {len(skips)} values of c: {runs}")
    # one short run before vs after (same seed, same numbers)
    am = float(alphas[len(alphas) // 2])
    run = dict(n_samples=n, iterations=its, seed=3, v_reg=P["v_reg"], estimator=a.estimator)
    qb, tb = cpu(lambda: old.short_se_run(am, skips[0], OQS(n1d=P["gamp_sweep_n1d"]), **run))
    qa, ta = cpu(lambda: H.short_se_run(am, skips[0], quad, **run))
    print(
        f"[hypotheses] one {a.estimator} short run at alpha={am:g}: {tb:.1f} s -> {ta:.1f} s ({tb / ta:.1f}x); "
        f"max |Q difference| {np.abs(qa - qb).max():.1e}"
    )


def bench_slopes(a):
    """Why alpha_first's error bar takes its slopes over a wide bracket: the pooled h(q2) near the root at laptop
    sizes (c = 1, v_reg 1e-3, 8 sets of 512 draws), its secants on a 2e-6 grid, and the error bar with the
    slopes over brackets of several widths (the earlier code used the final bracket of its refinement, ~5e-6)."""
    from smattn.p2.theory import thresholds as T
    from smattn.p2.theory.quadrature import QuadratureSettings
    from smattn.p2.theory.state_evolution import draw_teacher_qmc

    quad = QuadratureSettings(n1d=24)
    reps = [draw_teacher_qmc(6 if a.quick else 9, 2, s) for s in np.random.SeedSequence(1).spawn(8)]
    point = lambda q: T.branch_point(q, 1.0, reps, quad, 1e-3)  # noqa: E731
    grid, n = np.linspace(0.9, 0.99, 10), 8 * len(reps[0].xi)
    root = T.alpha_first_refined(1.0, quad, q_grid=grid, v_reg=1e-3, n_samples=n, seed=1)["q2"]
    qs = root + np.arange(-5, 6) * 2e-6
    h = np.array([point(q)["h"] for q in qs])
    print(
        f"[slopes] pooled h on a 2e-6 grid around q2* = {root:.6f}: secants {np.round(np.diff(h) / 2e-6, 1).tolist()}"
    )
    for w in (5e-6, 1e-4, 1e-3, 5e-3):
        lo, hi = point(root - w / 2), point(root + w / 2)
        r = T.linearised_root(lo, hi, lo, hi, len(reps))
        print(
            f"[slopes] bracket width {w:.0e}: h' = {r['slopes'][0]:.1f}, alpha_first {r['alpha']:.5f} "
            f"+- {r['alpha_se']:.5f}"
        )


def bench_project(a):
    """P2 theory rules of this task at paper scale, projected from unit costs measured here (CPU s) and the counts
    of the paper configuration; before: the same units with the earlier commit's code and the earlier counts."""
    from smattn.p2.theory import authors_estimator as AE
    from smattn.p2.theory import state_evolution as SE
    from smattn.p2.theory.phase_diagram_hypotheses import short_se_run
    from smattn.p2.theory.quadrature import QuadratureSettings

    P = scale_params("paper")
    old_se = submodule(a.before, "state_evolution")
    OQS = submodule(a.before, "quadrature").QuadratureSettings
    old_h = submodule(a.before, "phase_diagram_hypotheses")
    n = 256 if a.quick else 2048
    d = SE.draw_teacher_qmc(int(np.log2(n)), 2, 1)
    unit = {}
    for who, mod, qs in (("before", old_se, OQS), ("after", SE, QuadratureSettings)):
        dd = mod.TeacherDraws(d.xi, d.U)
        for name, Q in (("A", np.diag([0.0, 0.7])), ("A*", np.diag([0.0, 0.975])), ("K", np.zeros((2, 2)))):
            f = lambda mod=mod, qs=qs, dd=dd, Q=Q: mod.channel_average(  # noqa: E731
                Q, 1.0, dd, qs(n1d=P["n1d"]), want_k1=True, v_reg=1e-3
            )
            unit[who, name] = min(cpu(f)[1] for _ in range(2)) * 2048 / n
    its, m = (4, 20) if a.quick else (P["pd_hyp_iterations"], P["pd_hyp_samples"])
    for who, mod, qs in (("before", old_h, OQS), ("after", None, QuadratureSettings)):
        run = short_se_run if mod is None else mod.short_se_run
        kw = dict(n_samples=m, iterations=its, seed=3, v_reg=P["v_reg"])
        unit[who, "grid run"] = cpu(lambda run=run, qs=qs, kw=kw: run(0.9, 1.0, qs(n1d=P["gamp_sweep_n1d"]), **kw))[1]
    x2 = np.random.default_rng(0).standard_normal((m, 2, 2))
    x3 = np.random.default_rng(0).standard_normal((20 if a.quick else P["l3_authors_n_samples"], 3, 2))
    for kernel, who in (("direct", "before"), ("fused", "after")):
        s = AE.AuthorsSettings(kernel=kernel)
        for name, Q, x, k in (
            ("authors run", np.diag([0.2, 0.97]), x2, its),
            ("authors L3 iteration", np.diag([0.55, 0.55, 0.996]), x3, 1),
        ):
            f = lambda s=s, Q=Q, x=x: AE.authors_channel_average(Q, 1.0, x, x, np.random.default_rng(1), settings=s)  # noqa: E731
            unit[who, name] = cpu(f)[1] * k
    d3 = SE.draw_teacher(100 if a.quick else P["l3_n_samples"], 3, 0)
    for who, mod, qs, be in (("before", old_se, OQS, "jax"), ("after", SE, QuadratureSettings, "numpy")):
        dd = mod.TeacherDraws(d3.xi, d3.U)
        g = qs(n1d=P["l3_n1d"], backend=be)
        mod.channel_average(np.diag([0.55, 0.55, 0.99]), 1.0, mod.TeacherDraws(d3.xi[:8], d3.U[:8]), g)  # compile
        f = lambda mod=mod, dd=dd, g=g: mod.channel_average(np.diag([0.55, 0.55, 0.99]), 1.0, dd, g, v_reg=1e-3)  # noqa: E731
        unit[who, "depth-3 SE iteration"] = min(cpu(f)[1] for _ in range(2))
    for k, v in sorted(unit.items()):
        print(f"[project] unit {k[1]:22s} {k[0]:6s} {v:8.2f} s")
    # counts: thresholds per c (paper configuration; alpha_last draws: cap before, typical SE-sized after)
    n_skips = 16
    coarse, evals = P["pd_q_points"] - 5, 7  # coarse points before the crossing; pooled evaluations (measured)
    sets = P["pd_n_first"] // 2048  # a pooled evaluation is `sets` units of 2048 draws

    def thresholds(who, k_draws, coarse_pts, check_share):
        u = lambda name: unit[who, name]  # noqa: E731
        first = coarse_pts * 0.7 * u("A") + coarse_pts * 0.3 * u("A*") + evals * sets * u("A*")
        last = k_draws / 2048 * u("K") * (1.0 + 3.25 / 4)
        check = (1.0 + 2.5) * sets * check_share * u("A*")
        return last + 2 * first + check

    th_b = thresholds("before", P["pd_n_k"], P["pd_q_points"], 1.0)
    th_a = thresholds("after", 65536, coarse, 0.25)
    runs_b = (len(P["pd_hyp_skips"]) * 20, len(P["pd_hyp_authors_skips"]) * 20)  # scans: ~20 of 24 grid points
    runs_a = (len(P["pd_hyp_skips"]) * 4, len(P["pd_hyp_authors_skips"]) * 4)  # bisection from a guess: 2-6
    hyp_b = runs_b[0] * unit["before", "grid run"] + runs_b[1] * unit["before", "authors run"]
    hyp_a = runs_a[0] * unit["after", "grid run"] + runs_a[1] * unit["after", "authors run"]
    l3 = len(P["l3_authors_alphas"]) * P["l3_authors_iterations"]
    l3_b, l3_a = (l3 * unit[w, "authors L3 iteration"] for w in ("before", "after"))
    se3 = D3_ITERATIONS * unit["before", "depth-3 SE iteration"], D3_ITERATIONS * unit["after", "depth-3 SE iteration"]
    rows = [
        (f"p2_thresholds_c x {n_skips}", n_skips * th_b, n_skips * th_a),
        ("p2_pd_hypotheses", hyp_b, hyp_a),
        ("p2_l3_authors_estimator", l3_b, l3_a),
        (f"p2_fig3_left's SE sweep ({D3_ITERATIONS} it.)", *se3),
    ]
    for name, b, f in rows:
        print(f"[project] {name:28s} {b / 60:6.1f} -> {f / 60:6.1f} CPU-min ({b / f:.1f}x)")
    tb, ta = sum(r[1] for r in rows), sum(r[2] for r in rows)
    print(f"[project] these rules at paper scale: {tb / 60:.1f} -> {ta / 60:.1f} CPU-min")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["authors", "denoiser", "thresholds", "hypotheses", "slopes", "project"])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--before", default=BEFORE)
    ap.add_argument("--scale", default="paper", choices=["smoke", "laptop", "paper"])
    ap.add_argument("--c", type=float, nargs="*", default=None)
    ap.add_argument("--estimator", default="grid", choices=["grid", "authors"])
    a = ap.parse_args()
    if a.what == "thresholds" and not a.c:
        a.c = [1.0]
    globals()[f"bench_{a.what}"](a)
