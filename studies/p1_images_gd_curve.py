"""Study: learning curves of the GD transformer at laptop scale (validation accuracy against steps and CPU time),
to choose ``gd_width`` / ``gd_max_steps`` / ``gd_lr`` of the laptop scale. Runs ``smattn.p1.images.training.train``
itself (the workflow's loop) on the Omniglot store, one configuration per ``--config`` (layers,heads,width,qk,lr).

Question: Which width, query/key size, learning rate, batch, precision, value-init gain and schedule train the
laptop scale's GD networks best within a CPU budget?
Finding: Batch 512 at lr 2e-3, bf16, value-init gain sqrt(3), constant rate: L2H4 validation 0.594 (1500 steps of
128, the first setting) -> 0.762 (2000 steps of 512, 459 s, one thread); L3H3 trains better at 1e-3 (0.721), hence
gd_lr_l3; accuracy is far from converged within the budget, so a decaying schedule ends lower than a constant rate.
These are the laptop values of config.yaml's p1_images section.
Recorded in: docs/p1_images.md, Deviations ("Laptop training settings from learning curves": every curve in a
table).

    PYTHONPATH=src .venv/bin/python studies/p1_images_gd_curve.py --store results/p1_images/images32.npz \
        --steps 3000 --val-every 250 --config 2,4,64,32,1e-3 [--config 2,4,128,32,1e-3 ...] [--threads 1]

Prints, per configuration, the validation accuracy (fixed set of --n-val tasks, the laptop's 2048 by default) at
every --val-every steps with the elapsed seconds, and the best one.
"""

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from smattn.p1.images.datasets import load_store
from smattn.p1.images.export import sequence_context, validation_tasks
from smattn.p1.images.tasks import TaskSampler
from smattn.p1.images.training import LR_SCHEDULES, PRECISIONS, paper_train_config, train


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", default="results/p1_images/images32.npz")
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--val-every", type=int, default=250)
    ap.add_argument("--n-val", type=int, default=2048)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--value-init-gain", type=float, default=1.0)
    ap.add_argument("--precision", default="fp32", choices=PRECISIONS)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--epochs", type=int, default=1, help="epochs of 527878 tasks (caps the steps)")
    ap.add_argument("--schedule", default="constant", choices=LR_SCHEDULES)
    ap.add_argument("--warmup", type=int, default=0, help="warm-up steps of warmup_cosine")
    ap.add_argument("--min-lr", type=float, default=0.0, help="last learning rate of warmup_cosine")
    ap.add_argument("--config", action="append", required=True, help="layers,heads,width,qk_dim,lr")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    store = load_store(a.store)
    labels, pos = sequence_context(42)
    sampler = TaskSampler(store["train_images"], labels, pos)
    val = validation_tasks(store, 42, a.n_val)
    for spec in a.config:
        L, H, N, G, lr = spec.split(",")
        cfg = paper_train_config(
            int(L),
            int(H),
            width=int(N),
            qk_dim=int(G),
            epochs=a.epochs,
            batch=a.batch,
            lr=float(lr),
            val_every=a.val_every,
            n_val=a.n_val,
            sync_every=a.val_every,
            seed=42,
            max_steps=a.steps,
            value_init_gain=a.value_init_gain,
            precision=a.precision,
            lr_schedule=a.schedule,
            warmup_steps=a.warmup,
            min_lr=a.min_lr,
        )
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            ck = train(cfg, sampler, val, Path(tmp) / "state.pt", progress=False)
            secs = time.perf_counter() - t0
        h = ck["history"]
        wall = np.asarray(h["wall_s"])
        points = [
            f"{s}:{acc:.3f}@{wall[s - 1] if s else 0:.0f}s" for s, acc in zip(h["val_step"], h["val_acc"], strict=True)
        ]
        print(
            f"L{L}H{H} N={N} G={G} lr={lr} {a.precision} batch {a.batch} gain {a.value_init_gain:.3f} "
            f"{a.schedule} (warm-up {a.warmup}, min lr {a.min_lr:g}) ({secs:.0f} s, {a.threads} thread(s)): best val "
            f"{ck['best_val_acc']:.4f} at step {ck['best_step']}; step:acc@time " + " ".join(points),
            flush=True,
        )


if __name__ == "__main__":
    main()
