"""Trapped GAMP runs of the authors' form rerun with the authors' integrator
(docs/p2_dynamics.md#the-authors-integrator).

API: trapped_rerun(d, alpha, n_iter, seeds, ...) -> dict with one row per seed (final overlaps with our
Gauss-Hermite integrator and, for the seeds whose first layer stayed trapped, with the authors' box integrator on the
same teacher, data and start) and the counts and per-iteration costs.
"""

from __future__ import annotations

import time

import numpy as np

from .box_channel import AUTHORS_BOX, BoxRule
from .gamp import run_gamp
from .gamp_metrics import LEARNED_MIN, authors_metric

__all__ = ["trapped_rerun"]


def _final(res):
    C = authors_metric(res.M[-1], res.Q[-1])
    return dict(C1=float(C[0]), C2=float(C[1]), M11=float(res.M[-1, 0, 0]), Q11=float(res.Q[-1, 0, 0]))


def trapped_rerun(
    d: int,
    alpha: float,
    n_iter: int,
    seeds,
    *,
    damping: float = 0.8,
    onsager: str = "latest",
    box: BoxRule = AUTHORS_BOX,
    box_jacobian: str = "analytic",
    learned_min: float = LEARNED_MIN,
    log=print,
) -> dict:
    """Run GAMP with our integrator for every seed; rerun the trapped ones (final |M11|/sqrt(Q11) < learned_min)
    with the authors' box integrator (same seed: same teacher, data, test set and start).

    Returns rows (list of dicts: seed, C1/C2/M11/Q11 of ours, trapped, and *_box for trapped seeds, learned_box),
    runs, trapped, learned_of_trapped (floats), iter_s_gauss_hermite, iter_s_authors_box (wall seconds per
    iteration, mean over the runs of each integrator; NaN when none ran).
    """
    rows, t_gh, t_box = [], [], []
    for seed in seeds:
        seed = int(seed)
        t0 = time.perf_counter()
        res = run_gamp(d, alpha, n_iter, seed=seed, damping=damping, onsager=onsager)
        t_gh.append((time.perf_counter() - t0) / n_iter)
        row = dict(seed=seed, **_final(res))
        row["trapped"] = row["C1"] < learned_min
        log(f"[gamp_box] seed {seed}: ours C1 = {row['C1']:.4f}, C2 = {row['C2']:.4f} ({t_gh[-1]:.2f} s/iteration)")
        if row["trapped"]:
            t0 = time.perf_counter()
            rb = run_gamp(
                d,
                alpha,
                n_iter,
                seed=seed,
                damping=damping,
                onsager=onsager,
                integrator="authors_box",
                box=box,
                box_jacobian=box_jacobian,
            )
            t_box.append((time.perf_counter() - t0) / n_iter)
            fb = _final(rb)
            row.update({f"{k}_box": v for k, v in fb.items()})
            row["learned_box"] = fb["C1"] >= learned_min
            log(
                f"[gamp_box] seed {seed}: authors' box C1 = {fb['C1']:.4f}, C2 = {fb['C2']:.4f} "
                f"({t_box[-1]:.2f} s/iteration)"
            )
        rows.append(row)
    trapped = [r for r in rows if r["trapped"]]
    return dict(
        rows=rows,
        runs=float(len(rows)),
        trapped=float(len(trapped)),
        learned_of_trapped=float(sum(r["learned_box"] for r in trapped)),
        iter_s_gauss_hermite=float(np.mean(t_gh)) if t_gh else float("nan"),
        iter_s_authors_box=float(np.mean(t_box)) if t_box else float("nan"),
    )
