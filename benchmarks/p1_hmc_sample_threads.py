"""Benchmark: the p1_hmc_sample job on one thread (chains one after another) against two (chains spread over two XLA
host devices), wall and CPU time of the whole job, paired by round.

Each run is the rule's own script run standalone (``scripts/p1_hmc_sample.py --rule p1_hmc_sample``) in a subprocess
with the thread variables Snakemake sets for a job of that many threads (OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, ...);
CPU time is the child's user + system time. The two settings draw different chains (the draws are those of the
host-device and BLAS thread counts), so the script also prints the sampled accuracy and the smallest ESS of each.
Run:
    .venv/bin/python benchmarks/p1_hmc_sample_threads.py [--variant all] [--N 10] [--rounds 1] [--scale laptop]
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
THREAD_VARS = ("OMP_NUM_THREADS", "GOTO_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def run_job(variant: str, N: int, threads: int, scale: str, out: Path) -> dict:
    env = os.environ.copy()
    env.update({k: str(threads) for k in THREAD_VARS})
    cmd = [
        sys.executable, str(ROOT / "scripts" / "p1_hmc_sample.py"), "--rule", "p1_hmc_sample",
        "--wildcards", f"variant={variant}", f"N={N}", "--output", f"samples={out}", "--threads", str(threads),
        "--config", f"scale={scale}",
    ]  # fmt: skip
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    rec = json.loads(out.read_text())
    return {"wall": wall, "cpu": cpu, "acc": rec["acc"], "acc_mcse": rec["acc_mcse"], "ess": rec["ess_U_min"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--variant", default="all")
    ap.add_argument("--N", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--scale", default="laptop")
    a = ap.parse_args()
    settings = {"before (2 threads, parallel chains)": 2, "after (1 thread, sequential chains)": 1}
    runs = {k: [] for k in settings}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            for name, threads in settings.items():
                res = run_job(a.variant, a.N, threads, a.scale, Path(tmp) / f"s{threads}.json")
                runs[name].append(res)
                print(
                    f"round {r + 1} {name}: wall {res['wall']:.1f} s, CPU {res['cpu']:.1f} s; sampled acc "
                    f"{res['acc']:.3f} +- {res['acc_mcse']:.3f}, ESS(U) min {res['ess']:.0f}",
                    flush=True,
                )
    (_, bv), (_, fv) = runs.items()
    for key in ("wall", "cpu"):
        ratios = [y[key] / x[key] for x, y in zip(bv, fv, strict=True)]
        print(
            f"{key}: before {statistics.median(x[key] for x in bv):.1f} s -> after "
            f"{statistics.median(y[key] for y in fv):.1f} s, after / before (paired median) "
            f"{statistics.median(ratios):.3f}"
        )


if __name__ == "__main__":
    main()
