"""The Bayesian theory on the heads of a GD-trained network (docs/p1_images.md#theory-grid).

* ``attentioned_sets``: attentioned inputs xi [n, H_tot, D] of the exported sequences, computed with the exported
  query/key weights (QK style, average-pooling readout), float64.
* ``run_grid``: the action minimised for every (N, T) of the grid (all widths N, unit variances) with the fast
  image-task minimiser; mean-predictor accuracies on every test set.
* ``select_temperature``: per N, the T with the best **Omniglot test** accuracy (the authors' selection, on the same
  test set that is reported; strict improvement, ties keep the first T of the grid); OOD accuracies at that T.
* ``gp_line``: U = 1 with its own T search over a (smaller) grid, same selection rule.
* ``sampling_inputs``: what NUTS samples at one width (the sampler's inputs, the selected T).
* ``random_export``: random arrays of an export's layout, for the tiny modes of tests and benchmarks.
"""

from __future__ import annotations

import time

import numpy as np

from smattn.p1.action import Architecture
from smattn.p1.attention import attentioned_inputs_from_heads
from smattn.p1.kernels import PathGram
from smattn.p1.minimise import ActionProblem
from smattn.p1.predictor import accuracy, predictor
from smattn.progress import progress as progress_lines

TEST_SETS = ("omniglot", "mnist", "fashion")


def heads_from_export(export: dict) -> list[dict]:
    """Per-layer QK head specs [{"WQ": [H, G, D], "WK": [H, G, D]}] (float64) from an export dict."""
    WQ, WK = np.asarray(export["WQ"], np.float64), np.asarray(export["WK"], np.float64)
    if WQ.shape != WK.shape or WQ.ndim != 4:
        raise ValueError(f"export WQ/WK must both be [L, H, G, D], got {WQ.shape} and {WK.shape}")
    return [{"WQ": WQ[l], "WK": WK[l]} for l in range(WQ.shape[0])]


def attentioned_sets(export: dict, chunk: int = 100) -> dict[str, np.ndarray]:
    """xi of the training set and of every test set: {"train": [P, H_tot, D], "omniglot": ..., ...} (float64)."""
    heads = heads_from_export(export)
    out = {
        "train": attentioned_inputs_from_heads(np.asarray(export["x_train"], np.float64), heads, "mean", chunk=chunk)
    }
    for s in TEST_SETS:
        out[s] = attentioned_inputs_from_heads(np.asarray(export[f"x_{s}"], np.float64), heads, "mean", chunk=chunk)
    return out


def sampling_inputs(export: dict, widths, T_selected, N: int) -> tuple:
    """The NUTS inputs at width N: (xb [P, H_tot, D], y [P], xt [n_test, H_tot, D], architecture, T).

    ``xb`` / ``xt`` are the un-normalised path-attended inputs sum_s abar(s) x_s (sigma_0 = 1) of the training set and
    of every test set concatenated in ``TEST_SETS`` order; the architecture has the export's heads at equal width N;
    T is the temperature the theory selected at N (``widths`` and ``T_selected`` of theory.npz), and a width the
    theory did not compute is refused."""
    widths = [int(w) for w in widths]
    if int(N) not in widths:
        raise ValueError(f"sampled width N={N} is not among the theory widths {widths}")
    T = float(T_selected[widths.index(int(N))])
    heads = tuple(int(h) for h in export["heads"])
    xi = attentioned_sets(export)
    scale = np.sqrt(np.asarray(export["x_train"]).shape[2] * xi["train"].shape[1])
    xt = np.concatenate([xi[s] for s in TEST_SETS]) * scale
    y = np.asarray(export["y_train"], np.float64)
    return xi["train"] * scale, y, xt, Architecture.equal_width(heads, int(N)), T


def random_export(heads=(2, 2), P: int = 20, n_test: int = 10, G: int = 4, seed: int = 0) -> dict[str, np.ndarray]:
    """The arrays of an export that the theory and the sampler read (``x_*`` [n, 48, 192] float32, balanced ``y_*``,
    ``WQ`` / ``WK`` [L, H, G, 192], ``heads``), filled with random numbers: the code path at toy size, for the tiny
    modes of tests and benchmarks (docs/p1_images.md#export has the real layout)."""
    rng = np.random.default_rng(seed)
    L, H = len(heads), int(heads[0])
    out = {"heads": np.array(heads)}
    for s, n in (("train", P), *((s, n_test) for s in TEST_SETS)):
        out[f"x_{s}"] = rng.standard_normal((n, 48, 192)).astype(np.float32)
        out[f"y_{s}"] = np.repeat([1.0, -1.0], [n - n // 2, n // 2]).astype(np.float32)
    out["WQ"], out["WK"] = (0.1 * rng.standard_normal((L, H, G, 192)).astype(np.float32) for _ in range(2))
    return out


def set_predictions(U: np.ndarray, xi: dict, export: dict, temperature: float) -> dict[str, np.ndarray]:
    """Mean predictor [n_s] on every test set at order parameter U [H_tot, H_tot] and temperature T."""
    y = np.asarray(export["y_train"], np.float64)
    return {s: predictor(U, xi["train"], y, xi[s], temperature) for s in TEST_SETS}


def accuracies(f: dict[str, np.ndarray], export: dict) -> dict[str, float]:
    """Accuracy on every test set of the mean predictions ``f`` {set: [n_s]}."""
    return {s: accuracy(f[s], np.asarray(export[f"y_{s}"], np.float64)) for s in TEST_SETS}


def set_accuracies(U: np.ndarray, xi: dict, export: dict, temperature: float) -> dict[str, float]:
    """Mean-predictor accuracy on every test set at order parameter U [H_tot, H_tot] and temperature T."""
    return accuracies(set_predictions(U, xi, export, temperature), export)


def run_grid(
    export: dict,
    xi: dict,
    widths,
    temperatures,
    tol: float = 1e-5,
    max_steps: int = 3000,
    warm_start: bool = True,
    progress=None,
) -> list[dict]:
    """Minimise the action on every (N, T); returns one record per run (grid order: widths outer, T inner).

    Minimiser: :func:`smattn.p1.minimise_bfgs.minimise_action_bfgs` (closed-form energy gradient, BFGS on
    Cholesky factors, the reference's stopping rule g_max < tol). ``warm_start``: for each N the temperatures are
    visited from the highest down; the first starts at the GP point (as in the reference), every other one starts
    from the previous temperature's minimiser and inverse-Hessian estimate (the minimiser is the same, it is reached
    in fewer steps). Record: N, T, U [H_tot, H_tot], summary (steps, g_max, converged, action, entropy, energy, u,
    min_eig_U, seconds, method), f {set: mean predictor [n_s]}, acc {set: accuracy}, init ("gp" or "warm").
    Raises if a run does not converge. ``progress``: optional callback called with every record; the grid also
    reports progress lines (``smattn.progress``).
    """
    from smattn.p1.minimise_bfgs import minimise_action_bfgs

    heads = tuple(int(h) for h in np.asarray(export["heads"]))
    y = np.asarray(export["y_train"], np.float64)
    gram = PathGram(xi["train"])
    by_key = {}
    bar = progress_lines(desc="theory grid (N, T)", total=len(widths) * len(temperatures), unit="run")
    for N in widths:
        init, hinv = None, None
        for T in sorted((float(t) for t in temperatures), reverse=True):
            t0 = time.perf_counter()
            prob = ActionProblem(Architecture.equal_width(heads, float(N)), gram, y, float(T))
            res, H = minimise_action_bfgs(prob, tol=tol, max_steps=max_steps, init=init, hinv=hinv, return_hinv=True)
            if not res.converged:
                raise RuntimeError(
                    f"theory run N={N}, T={T} did not converge: g_max={res.g_max:.3g} after "
                    f"{res.steps} steps (tol {tol})"
                )
            f = set_predictions(res.U, xi, export, float(T))
            rec = {
                "N": float(N),
                "T": float(T),
                "U": res.U,
                "summary": res.summary(),
                "f": f,
                "acc": accuracies(f, export),
                "seconds": time.perf_counter() - t0,
                "init": "gp" if init is None else "warm",
            }
            by_key[(float(N), float(T))] = rec
            bar.update(1)
            bar.set_postfix(N=f"{float(N):g}", T=f"{float(T):g}", steps=res.steps, refresh=False)
            if progress:
                progress(rec)
            if warm_start:
                init, hinv = res.Us, H
    bar.close()
    return [by_key[(float(N), float(T))] for N in widths for T in temperatures]


def select_temperature(records: list[dict], widths, temperatures) -> dict[float, dict]:
    """{N: record at the T with the best Omniglot test accuracy (strict improvement, first T of the grid wins)}."""
    out = {}
    for N in widths:
        best = None
        for T in temperatures:
            rec = next((r for r in records if r["N"] == float(N) and r["T"] == float(T)), None)
            if rec is None:
                raise KeyError(f"select_temperature: no run for N={N}, T={T}")
            if best is None or rec["acc"]["omniglot"] > best["acc"]["omniglot"]:
                best = rec
        out[float(N)] = best
    return out


def gp_line(export: dict, xi: dict, temperatures) -> dict:
    """GP (U = 1): accuracies at every T of ``temperatures`` and the selected one (same rule as the theory).

    Returns {"T": selected T, "acc": {set: acc}, "scan": [{"T": T, "f": {set: mean predictor}, "acc": {...}}, ...]}.
    """
    Htot = xi["train"].shape[1]
    scan = []
    for T in temperatures:
        f = set_predictions(np.eye(Htot), xi, export, float(T))
        scan.append({"T": float(T), "f": f, "acc": accuracies(f, export)})
    best = scan[0]
    for s in scan[1:]:
        if s["acc"]["omniglot"] > best["acc"]["omniglot"]:
            best = s
    return {"T": best["T"], "acc": best["acc"], "scan": scan}
