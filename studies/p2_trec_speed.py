"""Study: CPU time of the TREC jobs (P2 Fig. 3 right) at an earlier commit and now, in one run.

Question: What did the TREC training changes after 4703fb3 (one embedding-gradient table, fused AdamW called
directly, subnormals flushed in the optimiser step, no validation in the sweep) save, and did they change the
records?
Finding: Sweep run 12.36 -> 10.48 CPU-s (1.21x), main run 7.61 -> 5.48 (1.35x), whole 10,920-step runs 1.19x and
1.28x; records equal to the bit.
Recorded in: docs/p2_dynamics.md, TREC transformer; numbers in docs/benchmarks.md, Studies.

    PYTHONPATH=src .venv/bin/python studies/p2_trec_speed.py [--base 4703fb3] [--rounds 3] [--steps 1000]
        [--epochs 2] [--opt transformers_adamw] [--init 3e-4]

Runs the two training scripts as the workflow runs them (``scripts/p2_dynamics_trec_sweep_run.py``: one sweep run of
``--steps`` optimiser steps; ``scripts/p2_dynamics_trec.py``: repetition 0 of a ``--epochs``-epoch training; every
other parameter at paper scale) from a copy of the ``--base`` revision (``git archive`` of src, scripts, config.yaml,
schemas, run with its own PYTHONPATH) and from this checkout, one subprocess each, alternating old and new
(A B B A ...), ``--rounds`` times, each pinned to one thread. Prints per job the median CPU seconds (user + system of
the subprocess, imports and data loading included), the median training-loop seconds the job itself records, the
medians of the paired old / new ratios, and the largest difference between the old and new outputs (similarity
S_l(t), training loss, validation accuracy), which the unchanged computation makes 0. ``--steps 10920`` makes the
sweep run a whole paper-scale training (40 epochs), where the late steps meet the subnormal moments that the
training flushes (smattn.p2.dynamics.trec.flushed_denormals).

Data: the mirror in SMATTN_DATA_MIRROR (default ../shared/data).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _base_tree(rev: str, dest: Path) -> Path:
    tar = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "src", "scripts", "config.yaml", "schemas"],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=tar, check=True)
    return dest


def _params() -> dict:
    sys.path.insert(0, str(ROOT / "src"))
    from smattn.settings import scale_params

    p = scale_params("p2_dynamics", "paper")
    return {k: v for k, v in p.items() if k.startswith("trec_") and not k.startswith("trec_sweep_")}


def _run(tree: Path, script: str, args: list[str]) -> float:
    """CPU seconds (user + system) of one script run from ``tree``."""
    env = dict(os.environ, PYTHONPATH=str(tree / "src"))
    env.update({k: "1" for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")})
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [sys.executable, str(tree / "scripts" / script), *args],
        cwd=tree,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", default="4703fb3", help="git revision of the old code")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=1000, help="optimiser steps of the sweep run")
    ap.add_argument("--epochs", type=int, default=2, help="epochs of the main run (273 steps each)")
    ap.add_argument("--opt", default="transformers_adamw")
    ap.add_argument("--init", default="3e-4")
    ap.add_argument("--data", default=os.environ.get("SMATTN_DATA_MIRROR", str(ROOT.parent / "shared" / "data")))
    args = ap.parse_args()
    data = Path(args.data)
    inputs = [
        "--input",
        f"train={data / 'trec' / 'train_5500.label'}",
        f"vocab={data / 'bert-base-uncased' / 'vocab.txt'}",
    ]
    trec = _params()
    jobs = {
        "p2_trec_sweep_run": (
            "p2_dynamics_trec_sweep_run.py",
            ["--params", json.dumps({"trec": trec, "steps": args.steps, "reps": 1})],
            ["--wildcards", f"init={args.init}", f"opt={args.opt}"],
            "runs",
        ),
        "p2_trec_run": (
            "p2_dynamics_trec.py",
            ["--params", json.dumps({"trec": {**trec, "trec_epochs": args.epochs}})],
            ["--wildcards", "rep=0"],
            "run",
        ),
    }
    with tempfile.TemporaryDirectory(prefix="p2_trec_speed_") as tmp:
        tmp = Path(tmp)
        (tmp / "old").mkdir()
        trees = {"old": _base_tree(args.base, tmp / "old"), "new": ROOT}
        cpu = {(j, v): [] for j in jobs for v in trees}
        loop = {(j, v): [] for j in jobs for v in trees}
        outputs = {}
        for r in range(args.rounds):
            order = ("old", "new") if r % 2 == 0 else ("new", "old")
            for job, (script, params, wildcards, name) in jobs.items():
                for v in order:
                    out = tmp / f"{job}_{v}_{r}" / "out.npz"
                    out.parent.mkdir()
                    cmd = [*inputs, "--output", f"{name}={out}", *params, *wildcards, "--threads", "1"]
                    cpu[job, v].append(_run(trees[v], script, cmd))
                    with np.load(out) as z:
                        loop[job, v].append(float(np.sum(z["wall_s"])))
                        outputs[job, v] = {
                            k: z[k].copy() for k in ("similarity", "train_loss", "val_accuracy") if k in z
                        }
        print(
            f"TREC jobs, old = {args.base}, new = this checkout; {args.rounds} rounds alternating, 1 thread; "
            f"sweep run: 1 rep x {args.steps} steps ({args.opt}, init {args.init}); main run: {args.epochs} epochs"
        )
        for job in jobs:
            ratios = [a / b for a, b in zip(cpu[job, "old"], cpu[job, "new"], strict=True)]
            loop_ratios = [a / b for a, b in zip(loop[job, "old"], loop[job, "new"], strict=True)]
            diffs = []
            for k, a in outputs[job, "old"].items():
                b = outputs[job, "new"][k]
                d = np.nanmax(np.abs(a - b)) if a.shape == b.shape else float("inf")
                diffs.append(f"{k} {d:.3g}")
            print(
                f"{job}: CPU s old {statistics.median(cpu[job, 'old']):.2f},"
                f" new {statistics.median(cpu[job, 'new']):.2f}"
                f" (median paired ratio {statistics.median(ratios):.2f}, range {min(ratios):.2f}-{max(ratios):.2f});"
                f" training loop s old {statistics.median(loop[job, 'old']):.2f},"
                f" new {statistics.median(loop[job, 'new']):.2f} (median paired ratio"
                f" {statistics.median(loop_ratios):.2f}); max |old - new|: {', '.join(diffs)}"
            )


if __name__ == "__main__":
    main()
