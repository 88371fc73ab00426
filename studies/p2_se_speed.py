"""Before/after CPU time of the P2 state-evolution jobs' engine calls at paper parameters, in one run.

Question: What did the state-evolution engine changes after 4703fb3 (mean-only SE steps, diagonal-V exponent,
floored node weights, vectorised errors and brute-force reference) save at paper parameters, and did they change the
numbers?
Finding: Depth-3 step 2.01 -> 1.26 CPU-s (1.62x), L = 2 step 1.24x, plug-in and BO errors 3.7-4.0x, brute force
2.55-2.77x; SE numbers equal to the bit, Monte-Carlo ones to 2e-12 relative.
Recorded in: docs/p2_theory.md, Depth 3 ("Cost"); numbers in docs/benchmarks.md, Studies.

    python studies/p2_se_speed.py [--before 4703fb3] [--reps 3] [--cases l3_step l2_step ...] [--quick]

"Before" is the library (src/) of an earlier commit, extracted with ``git archive`` into a temporary folder; every
measurement is a fresh subprocess with PYTHONPATH set to that copy or to this checkout's src, alternating
before/after (A B A B ...) so both see the same machine load. Each subprocess runs one case once to warm up (imports,
caches), then times it in CPU seconds of the process (time.process_time) and prints the case's numbers, which are
compared between the two codes (max abs and relative difference, "bitwise" when identical). Single-threaded: run
it with OMP_NUM_THREADS=1 (and taskset on a shared machine).

Cases (paper values of config.yaml, p2_theory; the jobs that call them):
  l3_step    one depth-3 SE step: channel_average, 2000 draws, 8^4 nodes, Q of alpha 0.5 and 1.75
             (p2_l3_state_evolution: about 680 such steps and 14 for the fixed-point errors)
  l2_step    one L = 2 SE step, 2000 draws, 32^2 nodes, parametrisations A (alpha 0.9) and A* (alpha 1.5)
             (p2_l2_state_evolution, p2_fig5_clamped)
  l2_branch  one point of the phase-II branch: 4000 draws with the first-layer growth K1 (p2_l2_state_evolution)
  plugin3    plug-in error at a depth-3 overlap, 2 x 10^6 samples (p2_l3_state_evolution: 47 calls)
  errors2    BO and plug-in error at an L = 2 overlap, 2 x 10^6 samples each (p2_l2_state_evolution: ~240 calls)
  bf2        brute-force SE update, L = 2: 20 draws x 200000 points (p2_se_crosscheck: 4 x 2000 draws)
  bf3        brute-force SE update, L = 3: 6 draws x 200000 points (p2_se_crosscheck: 16 x 60 draws)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BEFORE = "4703fb3"  # the last commit before these savings
CASES = ("l3_step", "l2_step", "l2_branch", "plugin3", "errors2", "bf2", "bf3")


def _case(name: str, quick: bool):
    """A callable running the case and returning its numbers (a flat list)."""
    from smattn.p2.theory.bruteforce_reference import bruteforce_update
    from smattn.p2.theory.prediction_errors import bo_error, plugin_error
    from smattn.p2.theory.quadrature import QuadratureSettings
    from smattn.p2.theory.state_evolution import channel_average, draw_teacher

    k = 10 if quick else 1  # --quick: sizes divided by about 10
    c, v_reg = 1.0, 1e-3

    def flat(*xs):
        parts = [flat(*x) if isinstance(x, tuple) else np.ravel(np.asarray(x, dtype=np.float64)) for x in xs]
        return np.concatenate(parts).tolist()

    if name == "l3_step":
        d, quad = draw_teacher(2000 // k, 3, 1), QuadratureSettings(n1d=8)
        Qs = (np.diag([0.0, 0.0, 0.6211]), np.diag([0.932, 0.9137, 0.9986]))
        return lambda: flat(*[
            (lambda r: (r["R"], r["R_se"], r["min_ess"]))(channel_average(Q, c, d, quad, v_reg=v_reg)) for Q in Qs
        ])  # fmt: skip
    if name == "l2_step":
        d, quad = draw_teacher(2000 // k, 2, 3), QuadratureSettings(n1d=32)
        Qs = (np.diag([0.05, 0.99]), np.diag([0.95, 0.9989]))
        return lambda: flat(*[
            (lambda r: (r["R"], r["R_se"], r["min_ess"]))(channel_average(Q, c, d, quad, v_reg=v_reg)) for Q in Qs
        ])  # fmt: skip
    if name == "l2_branch":
        d, quad = draw_teacher(4000 // k, 2, 1), QuadratureSettings(n1d=32)
        return lambda: flat(
            *(lambda r: (r["R"], r["R_se"], r["K1"], r["K1_se"]))(
                channel_average(np.diag([0.0, 0.6]), c, d, quad, want_k1=True, v_reg=v_reg)
            )
        )
    if name == "plugin3":
        return lambda: flat(plugin_error(np.diag([0.932, 0.9137, 0.9986]), c, n_samples=2_000_000 // k, seed=5))
    if name == "errors2":
        Q = np.diag([0.8614, 0.9976])
        return lambda: flat(
            bo_error(Q, c, n_samples=2_000_000 // k, seed=7), plugin_error(Q, c, n_samples=2_000_000 // k, seed=7)
        )
    if name in ("bf2", "bf3"):
        L = 2 if name == "bf2" else 3
        Q = np.diag([0.8614, 0.9976]) if L == 2 else np.diag([0.9652, 0.9551, 0.9991])
        n = (20 if L == 2 else 6) // (5 if quick else 1)
        draws = draw_teacher(max(n, 2), L, 11)

        def run():
            u = bruteforce_update(Q, 1.2 if L == 2 else 2.0, c, draws, np.random.default_rng(3), v_reg=v_reg,
                                  n_points=200_000 // k)  # fmt: skip
            return flat(u["R"], u["R_se"], u["Q_update"], u["min_ess"], u["median_ess"])

        return run
    raise ValueError(f"unknown case {name!r}")


def worker(name: str, quick: bool):
    f = _case(name, quick)
    f()  # warm-up: imports, cached grids
    t0 = time.process_time()
    vals = f()
    print(json.dumps({"cpu_s": time.process_time() - t0, "values": vals}))


def measure(src: Path, name: str, quick: bool) -> dict:
    env = dict(os.environ, PYTHONPATH=str(src))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", name] + (["--quick"] if quick else [])
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", default=BEFORE, help="git revision of the 'before' library")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    ap.add_argument("--quick", action="store_true", help="sizes divided by about 10 (a smoke check of the script)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        return worker(a.worker, a.quick)
    with tempfile.TemporaryDirectory(prefix="p2_se_speed_") as tmp:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", a.before, "src"], check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        codes = {"before": Path(tmp) / "src", "after": ROOT / "src"}
        print(f"before = {a.before}, after = working tree; CPU seconds per call, {a.reps} alternating pairs")
        print(f"{'case':10s} {'before (median)':>16s} {'after (median)':>15s} {'paired ratios':>28s}  numbers")
        for name in a.cases:
            t = {"before": [], "after": []}
            vals = {}
            for _ in range(a.reps):
                for who in ("before", "after"):
                    r = measure(codes[who], name, a.quick)
                    t[who].append(r["cpu_s"])
                    vals[who] = np.array(r["values"])
            ratios = [b / f for b, f in zip(t["before"], t["after"], strict=True)]
            diff = np.abs(vals["before"] - vals["after"])
            rel = float(np.max(diff / np.maximum(np.abs(vals["before"]), 1e-300)))
            same = f"max abs {diff.max():.1e}, rel {rel:.1e}"
            if np.array_equal(vals["before"], vals["after"]):
                same = "bitwise"
            print(
                f"{name:10s} {statistics.median(t['before']):16.3f} {statistics.median(t['after']):15.3f} "
                f"{' '.join(f'{x:.2f}' for x in ratios):>22s} (x{statistics.median(ratios):.2f})  {same}"
            )


if __name__ == "__main__":
    main()
