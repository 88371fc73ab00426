"""Numbers that decide P1's claims about accuracies and order parameters, each with its standard error
(docs/p1_theory.md#claims).

* Accuracy differences of two predictors on the same test items (:func:`smattn.p1.predictor.paired_accuracy_gap`).
* Sampled vs theory: the sampled mean predictor's accuracy minus the theory's on the same test items, with the
  paired test-set error and the sampled accuracy's Monte-Carlo error combined (:func:`sampled_minus_theory`); the
  sampled order parameter's largest deviation from the theory's in units of the theory's largest entry (the colour
  scale of the paper's heatmaps), with the Monte-Carlo error of that entry (:func:`order_parameter_deviation`).
* The order parameter's distance from its GP value, the identity (:func:`distance_from_identity`), and the
  correlation of two paths in U (:func:`path_correlation`).
"""

from __future__ import annotations

import numpy as np

from .predictor import accuracy, accuracy_mcse, paired_accuracy_gap


def sampled_minus_theory(f_sampled, f_sampled_mcse, f_theory, y) -> tuple[float, float]:
    """(accuracy of the sampled mean predictor minus that of the theory, its standard error) on one test set.

    f_sampled, f_sampled_mcse, f_theory, y: [n]. The error combines the paired test-set error of the difference
    (items where the two predictors disagree) and the Monte-Carlo error of the sampled accuracy. The paired term is
    computed from the observed disagreements, which already include items flipped by Monte-Carlo noise, so the sum
    errs on the large side."""
    d, se_pair = paired_accuracy_gap(f_sampled, f_theory, y)
    se_mc = accuracy_mcse(f_sampled, f_sampled_mcse, y)
    return d, float(np.hypot(se_pair, se_mc))


def order_parameter_deviation(U_sampled, U_mcse, U_theory) -> tuple[float, float]:
    """(max |U_sampled - U_theory| / max |U_theory|, its standard error) over the distinct entries of [H, H].

    The standard error is the Monte-Carlo error of the entry that attains the maximum, in the same units."""
    Us, se, Ut = (np.asarray(a, dtype=np.float64) for a in (U_sampled, U_mcse, U_theory))
    if not Us.shape == se.shape == Ut.shape or Us.ndim != 2 or Us.shape[0] != Us.shape[1]:
        raise ValueError(f"U_sampled, U_mcse, U_theory must be square of one shape: {Us.shape}, {se.shape}, {Ut.shape}")
    scale = np.abs(Ut).max()
    iu = np.triu_indices(Ut.shape[0])
    dev = np.abs(Us - Ut)[iu]
    k = int(np.argmax(dev))
    return float(dev[k] / scale), float(se[iu][k] / scale)


def distance_from_identity(U) -> float:
    """||U - 1||_F / ||1||_F of an [H, H] order parameter (0 at the GP point)."""
    U = np.asarray(U, dtype=np.float64)
    eye = np.eye(U.shape[0])
    return float(np.linalg.norm(U - eye) / np.linalg.norm(eye))


def path_correlation(U, i: int, j: int) -> float:
    """U_ij / sqrt(U_ii U_jj): the correlation of paths i and j in the order parameter (U positive definite)."""
    U = np.asarray(U, dtype=np.float64)
    if U[i, i] <= 0 or U[j, j] <= 0:
        raise ValueError(f"U[{i},{i}] and U[{j},{j}] must be positive, got {U[i, i]}, {U[j, j]}")
    return float(U[i, j] / np.sqrt(U[i, i] * U[j, j]))


def accuracy_gaps(preds: dict, y, pairs: dict) -> dict[str, tuple[float, float]]:
    """{name: (accuracy(a) - accuracy(b), paired standard error)} for ``pairs`` {name: (key a, key b)} of ``preds``
    {key: mean predictor [n]} on labels y [n]."""
    out = {}
    for name, (a, b) in pairs.items():
        accuracy(preds[a], y), accuracy(preds[b], y)
        out[name] = paired_accuracy_gap(preds[a], preds[b], y)
    return out


def sampled_record_metrics(record: dict, theory: dict, predictions: dict) -> dict[str, float]:
    """Sampled vs theory numbers of one sampling record (a sampling rule's JSON: N, acc, acc_mcse, f_mean, f_mcse,
    U_mean, U_sem) given the theory rule's JSON (runs with N and U) and predictions (its NPZ as a dict: widths,
    f_test_theory [widths, n], y_test [n]): {acc_sampled, acc_sampled_mcse, acc_sampled_minus_theory(_se),
    U_sampled_deviation(_se)}."""
    N = float(record["N"])
    widths = [float(w) for w in predictions["widths"]]
    if N not in widths:
        raise ValueError(f"sampled width N = {N:g} is not a theory width {widths}")
    f_th = predictions["f_test_theory"][widths.index(N)]
    U_th = next(r["U"] for r in theory["runs"] if float(r["N"]) == N)
    d, d_se = sampled_minus_theory(record["f_mean"], record["f_mcse"], f_th, predictions["y_test"])
    dev, dev_se = order_parameter_deviation(record["U_mean"], record["U_sem"], U_th)
    return {
        "acc_sampled": float(record["acc"]),
        "acc_sampled_mcse": float(record["acc_mcse"]),
        "acc_sampled_minus_theory": d,
        "acc_sampled_minus_theory_se": d_se,
        "U_sampled_deviation": dev,
        "U_sampled_deviation_se": dev_se,
    }
