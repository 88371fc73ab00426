"""Benchmarks of the P2 theory engine.  Prints measured figures; same-process ratios where asked.

    python benchmarks/p2_theory_bench.py denoiser      # one g_out vs adaptive scipy dblquad of the same integral
    python benchmarks/p2_theory_bench.py gamp          # GAMP d=1000, alpha=1.2, 34 iterations (target < 60 s)
    python benchmarks/p2_theory_bench.py se_curve      # L=2 SE curve over 48 alphas (target < 2 min)
    python benchmarks/p2_theory_bench.py phase_diagram # 16-point phase diagram (target < 5 min)
    python benchmarks/p2_theory_bench.py depth3        # depth-3 SE curve (target < 15 min)
    python benchmarks/p2_theory_bench.py depth3_grid   # one depth-3 channel average, paper size: NumPy vs JAX (CPU)
    python benchmarks/p2_theory_bench.py authors3      # the authors' depth-3 estimator recomputed: one SE iteration
    python benchmarks/p2_theory_bench.py threshold_precision  # alpha_last at c = 1: SE vs time, plain MC vs QMC
Options: --quick (smaller sizes, for a smoke check of the benchmark itself).
"""

import argparse
import time

import numpy as np

from smattn.p2.theory.quadrature import QuadratureSettings


def bench_denoiser(quick):
    from smattn.p2.theory.adaptive_reference import adaptive_posterior_mean
    from smattn.p2.theory.attention_link import link_logits
    from smattn.p2.theory.channel_denoiser import g_out

    c = 1.0
    rng = np.random.default_rng(0)
    Q = np.diag([0.3, 0.5])
    V = np.eye(2) - Q
    Zt = rng.standard_normal((2, 2))
    om = np.sqrt(Q) @ (np.sqrt(Q) @ Zt + np.sqrt(V) @ rng.standard_normal((2, 2)))
    ell = link_logits(Zt, c)
    P = np.linalg.inv(V)
    t0 = time.perf_counter()
    mean_ref = adaptive_posterior_mean(ell, om, V, c, half_width=8.0)  # scipy's default tolerances
    t_ref = time.perf_counter() - t0
    g_ref = P @ (mean_ref - om)
    reps = 20 if quick else 200
    g_out(ell[None], om[None], V, c)
    t0 = time.perf_counter()
    for _ in range(reps):
        g, dg, _ = g_out(ell[None], om[None], V, c)
    t_one = (time.perf_counter() - t0) / reps
    n = 2000
    Zs = rng.standard_normal((n, 2, 2))
    oms = 0.5 * Zs + 0.3 * rng.standard_normal((n, 2, 2))
    t0 = time.perf_counter()
    g_out(link_logits(Zs, c), oms, V, c)
    t_batch = (time.perf_counter() - t0) / n
    print(f"[denoiser] adaptive dblquad (scipy defaults, 5 integrals x 2 signs, g_out only): {t_ref:.3f} s")
    print(
        f"[denoiser] ours, one sample, g_out + analytic Jacobian (48^2 GH grid): {1e3 * t_one:.2f} ms "
        f"-> speed-up {t_ref / t_one:.0f}x"
    )
    print(f"[denoiser] ours, per sample in a batch of {n}: {1e3 * t_batch:.3f} ms -> speed-up {t_ref / t_batch:.0f}x")
    print(f"[denoiser] max |g_out(ours) - g_out(dblquad)| = {np.abs(g[0] - g_ref).max():.2e}")


def bench_gamp(quick):
    from smattn.p2.theory.gamp import run_gamp

    d, iters = (300, 10) if quick else (1000, 34)
    t0 = time.perf_counter()
    r = run_gamp(d, 1.2, iters, seed=1, quad=QuadratureSettings(n1d=24))
    t = time.perf_counter() - t0
    print(
        f"[gamp] d={d}, alpha=1.2, {iters} iterations (n1d=24): {t:.1f} s ({t / iters:.2f} s/iteration); final |M11|="
        f"{abs(r.M[-1, 0, 0]):.3f} |M22|={abs(r.M[-1, 1, 1]):.3f} test error {r.test_error[-1]:.4f}"
    )


def bench_se_curve(quick):
    from smattn.p2.theory.overlap_curves import l2_overlap_curve, q2_grid

    alphas = np.linspace(0, 1.6, 12 if quick else 48)
    t0 = time.perf_counter()
    r = l2_overlap_curve(
        alphas,
        1.0,
        q_grid=q2_grid(10 if quick else 18),
        n_k=1000 if quick else 4000,
        n_curve=300 if quick else 1000,
        n_se=200 if quick else 500,
        v_reg=1e-3,
        quad=QuadratureSettings(n1d=24),
        tol=1e-4,
    )
    t = time.perf_counter() - t0
    print("  SE iterations per point:", r["iterations"][r["how"] == 2].astype(int).tolist())
    print(
        f"[se_curve] L=2 SE curve over {len(alphas)} alphas: {t:.1f} s; alpha_last={r['alpha_last']:.4f} "
        f"alpha_first={r['alpha_first']:.4f}; SE points {int(np.sum(r['how'] == 2))}, all converged: "
        f"{bool(np.all(r['converged']))}"
    )


def bench_phase_diagram(quick):
    from smattn.p2.theory.overlap_curves import q2_grid
    from smattn.p2.theory.thresholds import alpha_first, alpha_last, phase_two_curve

    cs = [4.0, 3.5, 3.0, 2.5, 2.0, 1.5, 1.25, 1.0, 0.875, 0.75, 0.625, 0.5625, 0.5, 0.1, 0.01, 0.0001]
    if quick:
        cs = cs[:3]
    t0 = time.perf_counter()
    for c in cs:
        last = alpha_last(c, QuadratureSettings(n1d=24), n_samples=3000)
        cur = phase_two_curve(q2_grid(14, q_max=0.9995), c, QuadratureSettings(n1d=24), n_samples=600)
        first = alpha_first(cur, last["alpha"], last["K"][0, 0])
        print(f"  c={c:g}: alpha_last={last['alpha']:.4f} alpha_first={first['alpha']:.4f}")
    t = time.perf_counter() - t0
    print(f"[phase_diagram] {len(cs)} skip strengths: {t:.1f} s")


def bench_depth3(quick):
    from smattn.p2.theory.overlap_curves import se_sweep

    # the paper's 16 alphas at the laptop resolution (10^4 Gauss-Hermite nodes, 400 teacher samples)
    alphas = (
        [0.5, 2.0]
        if quick
        else [0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1.0, 1.125, 1.25, 1.375, 1.5, 1.75, 2.0, 2.5, 3.0]
    )
    n1d, n = (8, 100) if quick else (10, 400)
    t0 = time.perf_counter()
    r = se_sweep(alphas, 1.0, 3, QuadratureSettings(n1d=n1d), n_samples=n, damping=0.6, max_iter=100, v_reg=1e-3)
    t = time.perf_counter() - t0
    print(
        f"[depth3] L=3 SE over {len(alphas)} alphas ({n1d}^4 GH grid, {n} samples): {t:.1f} s; "
        f"iterations {r['iterations'].astype(int).tolist()}; converged {r['converged'].tolist()}"
    )
    print("  Q diag:", np.round([np.diag(Q) for Q in r["Q"]], 4).tolist())


def bench_depth3_grid(quick):
    """One SE channel average at the paper's depth-3 settings (8^4 nodes, 2000 teacher draws), in the same process
    with the NumPy path (the default) and the compiled JAX grid (compilation excluded: one warm-up call each);
    CPU seconds of the process, which a shared machine disturbs less than wall time."""
    from smattn.p2.theory.state_evolution import channel_average, draw_teacher

    n = 200 if quick else 2000
    d = draw_teacher(n, 3, 0)
    Q = np.diag([0.55, 0.55, 0.99])
    out = {}
    for backend in ("numpy", "jax"):
        quad = QuadratureSettings(n1d=8, backend=backend)
        channel_average(Q, 1.0, draw_teacher(8, 3, 1), quad, v_reg=1e-3)  # compile
        t0 = time.process_time()
        out[backend] = (channel_average(Q, 1.0, d, quad, v_reg=1e-3), time.process_time() - t0)
    (r_np, t_np), (r_jx, t_jx) = out["numpy"], out["jax"]
    print(
        f"[depth3_grid] {n} draws, 8^4 nodes x 2 signs, CPU: NumPy {t_np:.2f} s, JAX {t_jx:.2f} s "
        f"(NumPy {t_jx / t_np:.2f}x faster); "
        f"max |R difference| {np.abs(r_np['R'] - r_jx['R']).max():.1e}"
    )


def bench_authors3(quick):
    from smattn.p2.theory.authors_estimator import authors_channel_average
    from smattn.p2.theory.quadrature import QuadratureSettings as QS
    from smattn.p2.theory.state_evolution import channel_average, draw_teacher

    n = 20 if quick else 200
    Q = np.diag([0.55, 0.55, 0.996])
    d = draw_teacher(n, 3, 0)
    t0 = time.perf_counter()
    a = authors_channel_average(Q, 1.0, d.xi, d.U, np.random.default_rng(1))
    t_a = time.perf_counter() - t0
    t0 = time.perf_counter()
    g = channel_average(Q, 1.0, d, QS(n1d=10), v_reg=1e-3)
    t_g = time.perf_counter() - t0
    print(
        f"[authors3] authors' estimator (2 x 10^4 box points) on {n} samples: {t_a:.1f} s "
        f"({1e3 * t_a / n:.1f} ms/sample), R11={a['R'][0, 0]:.3f}, floor active in {a['floor_fraction']:.0%}"
    )
    print(f"[authors3] our 10^4-node grid on the same samples: {t_g:.1f} s, R11={g['R'][0, 0]:.3f}")


def bench_threshold_precision(quick):
    """Cost per digit of alpha_last at c = 1: standard error against wall time for plain Monte Carlo (per-draw
    error) and randomised quasi-Monte Carlo (8 scrambled Sobol' sets, spread of the sets), same total draws."""
    from smattn.p2.theory.thresholds import alpha_last

    quad = QuadratureSettings(n1d=24)
    sizes = [2048, 8192] if quick else [4096, 16384, 65536]
    for n in sizes:
        for sampling in ("mc", "qmc"):
            t0 = time.perf_counter()
            r = alpha_last(1.0, quad, n_samples=n, seed=1, sampling=sampling)
            t = time.perf_counter() - t0
            # SE scales like N^-1/2 (MC) and about N^-0.9 (QMC, measured); projected for SE = 0.001 with N^-1/2
            print(
                f"[threshold_precision] {sampling:3s} N={r['n_used']:6d}: alpha_last={r['alpha']:.5f} "
                f"se={r['alpha_se']:.5f} in {t:.1f} s; MC-rate projection to se=0.001: "
                f"{t * (r['alpha_se'] / 1e-3) ** 2:.0f} s"
            )


BENCHMARKS = ["denoiser", "gamp", "se_curve", "phase_diagram", "depth3", "depth3_grid", "authors3"]

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "what",
        choices=BENCHMARKS + ["threshold_precision", "all"],
    )
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    todo = ["denoiser", "gamp", "se_curve", "phase_diagram", "depth3", "authors3"] if a.what == "all" else [a.what]
    for w in todo:
        globals()[f"bench_{w}"](a.quick)
