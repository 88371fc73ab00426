"""Study: what a smaller or shorter-trained pruning network (L2H8 by default) does to the pruning verdicts, and
what it costs. Runs the workflow's own scripts for one model through their ``--rule`` entry (training, export, the
theory's U, the pruning evaluation), with the training parameters overridden, into a scratch directory, then prints
the CPU seconds of each step and the quantities the model's pruning claims judge (claims/p1_pruning.yaml), with
their verdicts at the given scale.

Question: What does a smaller or shorter-trained pruning network (L2H8 by default) do to the pruning verdicts of
claims/p1_pruning.yaml, and what does it save?
Finding: None recorded: no run of this script is cited in the docs (the laptop settings of L2H8 come from the
learning curves, studies/p1_images_gd_curve.py). Rerun it for the setting in question.
Recorded in: docs/benchmarks.md, Studies.

    PYTHONPATH=src .venv/bin/python studies/p1_pruning_size.py --store results/p1_images/images32.npz \\
        --out /tmp/l2h8_w32 --set width=32 --set max_steps=1000 [--model L2H8] [--scale laptop]

``--set key=value`` overrides a parameter of the rule ``p1_images_train`` (value parsed as JSON: width, qk_dim,
max_steps, batch, lr, ...). ``--reuse DIR``: take model.pt / train.json from DIR (e.g. a workflow run's
results/p1_images/L2H8) instead of training, to score an existing network the same way.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def child_cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_script(script: str, rule: str, model: str, scale: str, params: dict, inputs: dict, outputs: dict) -> float:
    """Run scripts/<script> as the job of ``rule`` for ``model`` at ``scale`` (its log beside its first output);
    returns its CPU seconds."""
    log = Path(next(iter(outputs.values()))).with_suffix(".log")
    cmd = [sys.executable, str(ROOT / "scripts" / script), "--rule", rule, "--wildcards", f"model={model}"]
    cmd += ["--config", f"scale={scale}", "--log", str(log)]
    if params:
        cmd += ["--params", json.dumps(params)]
    for flag, entries in (("--input", inputs), ("--output", outputs)):
        if entries:
            cmd += [flag, *[f"{k}={v}" for k, v in entries.items()]]
    # one BLAS / OpenMP thread, as Snakemake sets for a one-thread job: left at the default, NumPy's BLAS spins two
    # threads per process on a loaded 2-core machine and multiplies the CPU seconds of the theory several times
    env = {**os.environ, **{k: "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}}
    before = child_cpu_seconds()
    subprocess.run(cmd, check=True, cwd=ROOT, env=env)
    return child_cpu_seconds() - before


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", default="results/p1_images/images32.npz")
    ap.add_argument("--out", required=True, help="scratch directory")
    ap.add_argument("--model", default="L2H8")
    ap.add_argument("--scale", default="laptop")
    ap.add_argument("--set", action="append", default=[], help="key=value (JSON) override of p1_images_train params")
    ap.add_argument("--reuse", default=None, help="directory holding an already trained model.pt and train.json")
    a = ap.parse_args()
    out = Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    store = str(Path(a.store).resolve())
    overrides = {k: json.loads(v) for k, v in (s.split("=", 1) for s in a.set)}
    cpu = {}
    src = Path(a.reuse).resolve() if a.reuse else out
    if not a.reuse:
        cpu["train"] = run_script(
            "p1_images_train.py",
            "p1_images_train",
            a.model,
            a.scale,
            {**overrides, "state_dir": str(out), "reuse_finished": False},
            {"store": store},
            {"model": out / "model.pt", "summary": out / "train.json"},
        )
    cpu["export"] = run_script(
        "p1_images_export.py",
        "p1_images_export",
        a.model,
        a.scale,
        {},
        {"model": src / "model.pt", "train_summary": src / "train.json", "store": store},
        {"export": out / "export.npz", "gd_eval": out / "gd_eval.json", "metrics": out / "gd_metrics.json"},
    )
    cpu["theory_U"] = run_script(
        "p1_pruning_theory.py",
        "p1_pruning_theory_U",
        a.model,
        a.scale,
        {},
        {"export": out / "export.npz"},
        {"U": out / "theory_U.npz", "summary": out / "theory_U.json"},
    )
    cpu["evaluate"] = run_script(
        "p1_pruning_evaluate.py",
        "p1_pruning_evaluate",
        a.model,
        a.scale,
        {},
        {"model": src / "model.pt", "store": store, "U": out / "theory_U.npz"},
        {"result": out / "pruning.json", "metrics": out / "pruning_metrics.json"},
    )
    sys.path.insert(0, str(ROOT / "src"))
    from smattn.ledger import evaluate_claims, load_claims

    metrics = {}
    for name in ("gd_metrics.json", "pruning_metrics.json"):
        metrics.update(json.loads((out / name).read_text()))
    train = json.loads((src / "train.json").read_text())
    claims = [c for c in load_claims([ROOT / "claims" / "p1_pruning.yaml"]) if f"model={a.model}]" in json.dumps(c)]
    best = f"best validation {train['best_val_acc']:.4f} at step {train['best_step']}"
    print(f"\n{a.model} {json.dumps(overrides)}: {best}")
    print("CPU seconds: " + ", ".join(f"{k} {v:.0f}" for k, v in cpu.items()) + f"; total {sum(cpu.values()):.0f}")
    for r in evaluate_claims(claims, metrics, scale=a.scale):
        print(f"  {r['status']:8s} {r['ours']:40s} {r['tolerance']:40s} {r['claim'][:90]}")
    for key in sorted(metrics):  # the numbers behind the claims: k <= 4 heads on Omniglot and Fashion-MNIST
        cumulative = any(f"[set={s}][k={k}]" in key for s in ("omniglot", "fashion") for k in range(5))
        if cumulative and ("drop_c" in key or "acc_cumulative" in key) or "score_drop" in key:
            print(f"  {key} = {metrics[key]:.4f}")


if __name__ == "__main__":
    main()
