"""Benchmark: a training step of the image task's GD transformer, before and after a change of the library.

For each laptop-scale model (L2H4, L3H3, L2H8: the settings of the job ``p1_images_train`` as this checkout's
Snakefile builds them at laptop scale, ``smattn.scriptio.job_from_workflow``, given to both libraries) two libraries
are timed: this checkout's ``src`` (after) and ``--before-src`` (the ``src`` folder of another checkout, e.g.
``git worktree add /tmp/base <commit>``). Every measurement is a process of its own with the
job's one thread (``p1_images_train`` runs with threads=1), importing only the library under test; the two alternate
in order over ``--repeats`` rounds. A process times ``--steps`` Adam steps (forward, backward, update) on fixed random
batches after two warm-up steps and reports the median ms per step. Printed: per run the median, per model the medians
of both and the paired ratio after / before per round with its median.

The same processes also evaluate, in float64 at the model's initial weights, the output on a fixed batch and the
gradient of the squared output: the printed largest relative difference between the two libraries says whether the
change kept the network's function (differences at the level of float64 rounding, ~1e-15, when it did).
``--precision`` times another training precision than the job's (both libraries); the job's ``auto`` is resolved
for this machine's CPU (``smattn.p1.images.training.resolve_precision``).

    PYTHONPATH=src .venv/bin/python benchmarks/p1_images_train_speed.py --before-src /tmp/base/src --repeats 3
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def child(a) -> None:
    """One measurement: runs in a process whose sys.path starts with the library under test."""
    import time

    import numpy as np
    import torch

    from smattn.p1.images.training import TrainConfig, TrainStep, build_model, make_optimizer

    torch.set_num_threads(1)
    overrides = {"precision": a.precision} if a.precision else {}
    cfg = TrainConfig.from_params(json.loads(Path(a.params).read_text()), **overrides)
    dev = torch.device("cpu")
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(cfg.batch, 48, 192, generator=gen)
    y = torch.randn(cfg.batch, generator=gen)

    # the network's function at the initial weights, in float64
    m64 = build_model(cfg).double()
    x64 = x[:16].double()
    f = m64(x64)
    f.pow(2).sum().backward()
    grads = {n: p.grad.numpy() for n, p in m64.named_parameters()}
    np.savez(a.out + ".npz", f=f.detach().numpy(), **grads)

    model = build_model(cfg)
    model.train()
    step = TrainStep(model, make_optimizer(model, cfg, dev), cfg, dev)
    for _ in range(2):
        step(x, y)
    times = []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        loss = step(x, y)
        times.append(time.perf_counter() - t0)
    if not torch.isfinite(loss):
        raise FloatingPointError("non-finite loss")
    Path(a.out).write_text(json.dumps({"ms_per_step": 1e3 * statistics.median(times), "precision": cfg.precision}))


def job_params(model: str, path: str) -> None:
    """The job's params (laptop scale) as JSON at ``path``."""
    from smattn.scriptio import job_from_workflow

    params = vars(job_from_workflow("p1_images_train", {"model": model}, ["scale=laptop"], REPO / "Snakefile").params)
    if params["precision"] == "auto":  # resolved here, as the job resolves it, so both libraries train alike
        import torch

        from smattn.p1.images.training import resolve_precision

        params["precision"] = resolve_precision("auto", torch.device("cpu"))
    Path(path).write_text(json.dumps(params))


def run(src: Path, params: str, steps: int, out: str, precision: str | None) -> dict:
    code = (
        f"import sys; sys.path.insert(0, {str(src)!r}); sys.path.insert(0, {str(REPO / 'benchmarks')!r}); "
        "import p1_images_train_speed as b; b.child(b.parse().parse_args(sys.argv[1:]))"
    )
    cmd = [sys.executable, "-c", code, "--child", "--params", params, "--steps", str(steps), "--out", out]
    cmd += ["--precision", precision] if precision else []
    subprocess.run(cmd, check=True, cwd=REPO)
    return json.loads(Path(out).read_text())


def parse() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before-src", type=Path, help="the library before the change (default: this checkout's)")
    ap.add_argument("--models", default="L2H4,L3H3,L2H8")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--precision", help="train at this precision instead of the job's (fp32, bf16, fp16)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--params", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    return ap


def main() -> None:
    import numpy as np

    a = parse().parse_args()
    if a.child:
        child(a)
        return
    after_src = REPO / "src"
    before_src = (a.before_src or after_src).resolve()
    print(f"before: {before_src}\nafter:  {after_src}\none thread per process, {a.steps} timed steps per run")
    with tempfile.TemporaryDirectory() as tmp:
        for model in a.models.split(","):
            params = f"{tmp}/{model}.json"
            job_params(model, params)
            runs = {"before": [], "after": []}
            for r in range(a.repeats):
                for label, src in (("before", before_src), ("after", after_src)):
                    out = f"{tmp}/{model}_{label}_{r}"
                    res = run(src, params, a.steps, out, a.precision)
                    runs[label].append(res["ms_per_step"])
                    print(
                        f"  {model} round {r} {label}: {res['ms_per_step']:.1f} ms/step ({res['precision']})",
                        flush=True,
                    )
            ref, new = np.load(f"{tmp}/{model}_before_0.npz"), np.load(f"{tmp}/{model}_after_0.npz")
            rel = max(float(np.max(np.abs(new[k] - ref[k])) / max(np.max(np.abs(ref[k])), 1e-300)) for k in ref.files)
            ratios = [b / a_ for a_, b in zip(runs["before"], runs["after"], strict=True)]
            print(
                f"{model}: before {statistics.median(runs['before']):.1f} ms/step, after "
                f"{statistics.median(runs['after']):.1f} ms/step; paired after/before per round "
                f"{', '.join(f'{x:.3f}' for x in ratios)} (median {statistics.median(ratios):.3f}); float64 output and "
                f"gradients at the initial weights: largest relative difference {rel:.1e}",
                flush=True,
            )


if __name__ == "__main__":
    main()
