"""CPU time of the P2 phase-diagram and GAMP jobs, one checkout against another, and the change of their outputs.

Question: What did compiling the L = 2 moments and the authors' box sums with JAX and writing GAMP's projections as
matrix products (after 4703fb3) save on the P2 phase-diagram and GAMP jobs at paper scale, and did the outputs
change?
Finding: 1.3-2.6x less CPU per job (p2_thresholds_c 75.5 -> 36.2 CPU-s, p2_gamp_alpha 86.2 -> 37.8); thresholds,
stability, growth and read-offs within 4e-13, GAMP M within 2e-9 (7e-5 in p2_gamp_run, amplified by the run's own
instability).
Recorded in: docs/p2_theory.md, "Evaluation: NumPy and compiled kernels"; numbers in docs/benchmarks.md, Studies.

    python studies/p2_thresholds_speed.py --old /path/to/old/checkout [--jobs thresholds,gamp_alpha,...]
        [--reps 2] [--scale paper] [--data $SMATTN_DATA_MIRROR] [--slice]

Each job is the workflow's script (scripts/<...>.py) run in its own process with the rule's parameters at --scale
(built by this checkout's Snakefile, given to both as explicit --params), once with the old checkout's src/ and
scripts/ (--old, e.g. a copy of an earlier commit: ``git archive <commit> src scripts | tar -x -C DIR``) and once
with this one's, alternating old, new, old, new, ... (--reps pairs). Prints per job the CPU seconds (user + system
of the child, start-up included) of every run, their medians, the paired ratios old / new and their median, and the
largest change of any number in the outputs between the old and the new run of the first pair, next to the standard
errors the outputs state (thresholds: alpha_last_se, alpha_first_se, ...; GAMP: the spread of the runs). --slice
runs the phase-diagram read-off job (pd_hypotheses) at c = 1 only (its paper run reads off 9 + 5 skip strengths,
about ten CPU-minutes per run). The numbers are the CPU's and the machine's load at the time; set the thread
variables (OMP_NUM_THREADS=1, XLA_FLAGS=...) as the workflow's jobs get them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


# job name -> (script, rule, wildcards, outputs of the run)
JOBS = {
    "thresholds": ("p2_theory_thresholds.py", "p2_thresholds_c", {"c": "1"}, {"json": "out.json"}),
    "thresholds_c0.1": ("p2_theory_thresholds.py", "p2_thresholds_c", {"c": "0.1"}, {"json": "out.json"}),
    "gamp_alpha": ("p2_theory_gamp.py", "p2_gamp_alpha", {"alpha": "1.2"}, {"npz": "out.npz"}),
    "pd_hypotheses": ("p2_theory_pd_hypotheses.py", "p2_pd_hypotheses", {}, {"json": "out.json"}),
    "first_layer_stability": (
        "p2_theory_first_layer_stability.py",
        "p2_first_layer_stability",
        {},
        {"json": "out.json"},
    ),
    "gamp_run": ("p2_dynamics_gamp.py", "p2_gamp_run", {"run": "0"}, {"run": "out.npz"}),
    "gamp_growth": ("p2_dynamics_gamp_growth.py", "p2_gamp_growth", {}, {"csv": "out.csv", "metrics": "m.json"}),
}


def _job(name: str, scale: str, data: str, sliced: bool):
    """(script, params, wildcards, inputs, outputs) of job ``name``: the params as this checkout's Snakefile builds
    them at ``scale`` (smattn.scriptio.job_from_workflow), given to both checkouts; raw inputs from the data mirror."""
    from smattn.scriptio import job_from_workflow

    script, rule, wildcards, outputs = JOBS[name]
    params = vars(job_from_workflow(rule, wildcards, [f"scale={scale}"], ROOT / "Snakefile").params)
    if sliced and rule == "p2_pd_hypotheses":
        params = {**params, "skips": [1.0], "authors_skips": [1.0]}
    spoc = Path(data) / "reference" / "spoc"
    inputs = (
        {"ref_critical": spoc / "alpha_critical.csv", "ref_bo": spoc / "BO_2w.csv"}
        if name == "first_layer_stability"
        else {}
    )
    return script, params, wildcards, inputs, outputs


def _run(checkout: Path, job, workdir: Path) -> float:
    """CPU seconds (user + system) of one run of the job's script from `checkout`; outputs go to workdir."""
    script, params, wildcards, inputs, outputs = job
    cmd = [sys.executable, str(checkout / "scripts" / script), "--params", json.dumps(params)]
    # one flag per kind, followed by all its NAME=VALUE pairs (the harness's nargs="*" keeps the last flag only)
    for flag, pairs in (("--wildcards", wildcards), ("--input", inputs)):
        cmd += [flag, *(f"{k}={v}" for k, v in pairs.items())] if pairs else []
    cmd += ["--output", *(f"{k}={workdir / v}" for k, v in outputs.items())]
    env = {**os.environ, "PYTHONPATH": str(checkout / "src")}
    with open(workdir / "log.txt", "w") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=checkout)
        _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise RuntimeError(f"{script} failed ({status}); log: {workdir / 'log.txt'}")
    return usage.ru_utime + usage.ru_stime


def _leaves(obj, prefix=""):
    """Numeric leaves of a JSON-like object as {path: float array}."""
    if isinstance(obj, dict):
        return {k: v for key, val in obj.items() for k, v in _leaves(val, f"{prefix}{key}.").items()}
    if isinstance(obj, list) and obj and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in obj):
        return {prefix[:-1]: np.asarray(obj, dtype=float)}
    if isinstance(obj, list):
        return {k: v for i, val in enumerate(obj) for k, v in _leaves(val, f"{prefix}{i}.").items()}
    if isinstance(obj, (int, float)) and not isinstance(obj, bool):
        return {prefix[:-1]: np.asarray(float(obj))}
    return {}


def _numbers(path: Path) -> dict:
    if path.suffix == ".json":
        return _leaves(json.loads(path.read_text()))
    if path.suffix == ".npz":
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k].astype(float) for k in z.files if z[k].dtype.kind in "fiu"}
    if path.suffix == ".csv":
        a = np.genfromtxt(path, delimiter=",", names=True)
        return {k: np.asarray(a[k], dtype=float) for k in a.dtype.names}
    return {}


SKIP = ("time_s", "wall_s", "time")  # run times, not results


def _compare(old_dir: Path, new_dir: Path, outputs: dict) -> None:
    for name in outputs.values():
        a, b = _numbers(old_dir / name), _numbers(new_dir / name)
        worst, rows = 0.0, []
        for k in sorted(set(a) & set(b)):
            if any(k.endswith(s) or k.startswith(s) for s in SKIP) or a[k].shape != b[k].shape:
                continue
            d = np.abs(a[k] - b[k])
            same_nan = np.isnan(a[k]) & np.isnan(b[k])
            if np.any(np.isnan(d) & ~same_nan):
                rows.append((np.inf, k, "nan in one run only"))
                continue
            dmax = float(np.max(np.where(same_nan, 0.0, d), initial=0.0))
            scale = float(np.max(np.abs(a[k]), initial=0.0))
            se = a.get(k + "_se")
            note = f"|diff| / se = {dmax / float(np.max(se)):.1e}" if se is not None and np.max(se) > 0 else ""
            rows.append((dmax, k, f"rel {dmax / scale:.1e} {note}" if scale > 0 else note))
            worst = max(worst, dmax)
        missing = sorted(set(a) ^ set(b))
        print(f"  {name}: {len(rows)} numeric entries compared, max |old - new| = {worst:.3e}")
        for dmax, k, note in sorted(rows, reverse=True)[:6]:
            print(f"    {k}: {dmax:.3e} {note}")
        for k in ("alpha_last", "alpha_first", "alpha_first_noiseless", "alpha_first_literal", "alpha"):
            if k in a and k + "_se" in a and k in b:
                print(f"    {k}: old {float(a[k]):.6f} new {float(b[k]):.6f} (stated se {float(a[k + '_se']):.6f})")
        if "M" in a and a["M"].ndim >= 3 and "M" in b:
            spread = np.std(a["M"][..., -1, :, :], axis=0, ddof=1) if a["M"].ndim == 4 else None
            d = np.max(np.abs(a["M"] - b["M"]))
            msg = f", spread of the runs' final M {np.max(spread):.3e}" if spread is not None else ""
            print(f"    M (all runs, iterations): max |old - new| = {d:.3e}{msg}")
        if missing:
            print(f"    entries in one output only: {missing[:8]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", type=Path, required=True, help="checkout (src/, scripts/) of the code to compare with")
    ap.add_argument("--jobs", default="thresholds,gamp_alpha,gamp_run")
    ap.add_argument("--reps", type=int, default=2, help="old/new pairs per job")
    ap.add_argument("--scale", default="paper")
    ap.add_argument("--data", default=os.environ.get("SMATTN_DATA_MIRROR", str(ROOT / "data")))
    ap.add_argument("--slice", action="store_true", help="pd_hypotheses at c = 1 only")
    ns = ap.parse_args()
    print(f"scale {ns.scale}; old {ns.old}; new {ROOT}; {ns.reps} old/new pairs per job, alternating")
    with tempfile.TemporaryDirectory(prefix="p2_speed_") as tmp:
        for name in ns.jobs.split(","):
            job = _job(name, ns.scale, ns.data, ns.slice)
            times = {"old": [], "new": []}
            for r in range(ns.reps):
                for which, checkout in (("old", ns.old.resolve()), ("new", ROOT)):
                    wd = Path(tmp) / name / f"{which}{r}"
                    wd.mkdir(parents=True)
                    times[which].append(_run(checkout, job, wd))
                    print(f"  {name} {which} run {r}: {times[which][-1]:.1f} CPU-s", flush=True)
            ratios = [o / n for o, n in zip(times["old"], times["new"], strict=True)]
            mo, mn = statistics.median(times["old"]), statistics.median(times["new"])
            print(
                f"{name}: old {mo:.1f} CPU-s -> new {mn:.1f} CPU-s (medians); paired ratios old/new "
                f"{', '.join(f'{x:.2f}' for x in ratios)}, median {statistics.median(ratios):.2f}",
                flush=True,
            )
            _compare(Path(tmp) / name / "old0", Path(tmp) / name / "new0", job[4])


if __name__ == "__main__":
    main()
