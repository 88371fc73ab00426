"""Task alignment and uniformity of a kernel over the training examples, with their uncertainties
(docs/p1_theory.md#kernel-statistics-fig-5b).

All kernels are symmetric ``[P, P]`` matrices over the P training examples, labels ``y`` are ``[P]`` (entries +-1);
every statistic is dimensionless and computed in float64.

* Centred kernel-target alignment (Cortes, Mohri & Rostamizadeh 2012; the centred form of Cristianini et al. 2001)
  ``A(K, y) = <H K H, H y y^T H>_F / (||H K H||_F ||H y y^T H||_F) = (y_c^T K y_c) / (||H K H||_F ||y_c||^2)`` with
  ``H = 1 - 1 1^T / P`` and ``y_c = H y``: 1 for ``K = y y^T`` (plus any constant), 0 for a kernel orthogonal to the
  labels, and in [0, 1] for a positive semi-definite K.
* Uniformity: the coefficient of variation ``sd / |mean|`` of the off-diagonal entries ``K_ij`` (i != j). It is
  invariant to the kernel's overall scale, so kernels of different magnitude compare; a uniform kernel (all
  off-diagonal entries equal) has 0, sharp excursions between pairs of examples make it large.
* "Random with respect to the task": the permutation null of A, the labels shuffled over the examples (the class
  sizes kept). Its mean and standard deviation give the excess ``A - E_null A`` in units of the null's spread, and
  the two-sided permutation p-value ``(1 + #{|A_perm - E| >= |A - E|}) / (n_perm + 1)``.
* Uncertainty over the examples: the delete-one jackknife (Quenouille-Tukey), each example removed with its row
  and column, ``se^2 = (P - 1)/P sum_i (t_(i) - mean_i t_(i))^2``. The workflow has one task draw (one training
  set, the authors' seed), so the spread is taken over its examples; the bootstrap is not used because a resampled
  example repeated k times puts its diagonal entry K_ii into off-diagonal positions, biasing both statistics. The
  differences between two kernels are jackknifed jointly (paired: the same examples left out).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def _square(K: np.ndarray, name: str = "K") -> np.ndarray:
    K = np.asarray(K, dtype=np.float64)
    if K.ndim != 2 or K.shape[0] != K.shape[1] or K.shape[0] < 3:
        raise ValueError(f"{name} must be a square [P, P] matrix with P >= 3, got shape {K.shape}")
    if not np.all(np.isfinite(K)):
        raise ValueError(f"{name} has non-finite entries")
    return (K + K.T) / 2


def _labels(y: np.ndarray, P: int) -> np.ndarray:
    y = np.asarray(y, dtype=np.float64)
    if y.shape != (P,):
        raise ValueError(f"labels must have shape [{P}], got {y.shape}")
    if np.ptp(y) == 0:
        raise ValueError("labels are all equal: the centred target is zero")
    return y


def _centred(K: np.ndarray) -> np.ndarray:
    """H K H, H = 1 - 1 1^T / P: K [P, P] with its row, column and grand means removed."""
    return K - K.mean(0, keepdims=True) - K.mean(1, keepdims=True) + K.mean()


def centred_alignment(K: np.ndarray, y: np.ndarray) -> float:
    """Centred kernel-target alignment of K [P, P] with the labels y [P] (dimensionless, in [-1, 1])."""
    K = _square(K)
    y = _labels(y, K.shape[0])
    Kc = _centred(K)
    yc = y - y.mean()
    norm = np.linalg.norm(Kc)
    if norm == 0:
        raise ValueError("the centred kernel is zero (a constant kernel has no alignment)")
    return float(yc @ Kc @ yc / (norm * (yc @ yc)))


def offdiag_cv(K: np.ndarray) -> float:
    """Coefficient of variation sd / |mean| of the off-diagonal entries of K [P, P] (dimensionless, >= 0)."""
    K = _square(K)
    off = K[~np.eye(K.shape[0], dtype=bool)]
    mean = off.mean()
    if mean == 0:
        raise ValueError("the off-diagonal entries have mean 0: the coefficient of variation is undefined")
    return float(off.std() / abs(mean))


def permutation_null(K: np.ndarray, y: np.ndarray, n_perm: int, seed: int) -> dict[str, float]:
    """Alignment of K [P, P] with y [P] against its null under ``n_perm`` label shuffles (NumPy generator ``seed``).

    Returns ``alignment``, the null's ``null_mean`` and ``null_sd``, ``excess = alignment - null_mean``, ``z =
    excess / null_sd`` and the two-sided permutation ``p`` (distance from the null mean), all dimensionless.
    """
    if n_perm < 2:
        raise ValueError(f"n_perm must be at least 2, got {n_perm}")
    K = _square(K)
    y = _labels(y, K.shape[0])
    a = centred_alignment(K, y)
    Kc = _centred(K)
    yc = y - y.mean()
    scale = np.linalg.norm(Kc) * (yc @ yc)  # both invariant under a permutation of y
    rng = np.random.default_rng(seed)
    Y = rng.permuted(np.broadcast_to(yc, (n_perm, yc.size)), axis=1)
    null = np.sum((Y @ Kc) * Y, axis=1) / scale  # y_k^T Kc y_k for every shuffle, as one matrix product
    mean, sd = float(null.mean()), float(null.std(ddof=1))
    p = (1 + int(np.sum(np.abs(null - mean) >= abs(a - mean)))) / (n_perm + 1)
    return {"alignment": a, "null_mean": mean, "null_sd": sd, "excess": a - mean, "z": (a - mean) / sd, "p": p}


def jackknife(stat: Callable[[np.ndarray], float], P: int) -> tuple[float, float]:
    """Statistic on all P examples and its delete-one jackknife standard error.

    ``stat(idx)`` evaluates the statistic on the examples ``idx`` (an index array into the P examples).
    """
    if P < 3:
        raise ValueError(f"need at least 3 examples, got {P}")
    full = float(stat(np.arange(P)))
    loo = np.array([stat(np.delete(np.arange(P), i)) for i in range(P)], dtype=np.float64)
    se = float(np.sqrt((P - 1) / P * np.sum((loo - loo.mean()) ** 2)))
    return full, se


def _paired_jackknife(
    stat: Callable[[np.ndarray], float], K: np.ndarray, K_ref: np.ndarray | None
) -> tuple[float, float]:
    """stat(K) or the paired difference stat(K) - stat(K_ref) over the examples, with its jackknife standard error;
    ``stat`` takes a [p, p] sub-kernel and the index array of its examples."""
    K = _square(K)
    R = None if K_ref is None else _square(K_ref, "K_ref")
    if R is not None and R.shape != K.shape:
        raise ValueError(f"K_ref {R.shape} and K {K.shape} differ in shape")

    def on(idx):
        s = np.ix_(idx, idx)
        v = stat(K[s], idx)
        return v if R is None else v - stat(R[s], idx)

    return jackknife(on, K.shape[0])


def alignment_with_se(K: np.ndarray, y: np.ndarray, K_ref: np.ndarray | None = None) -> tuple[float, float]:
    """A(K, y), or the paired difference A(K, y) - A(K_ref, y), with its jackknife standard error over examples."""
    y = _labels(y, np.shape(K)[0])
    return _paired_jackknife(lambda sub, idx: centred_alignment(sub, y[idx]), K, K_ref)


def cv_with_se(K: np.ndarray, K_ref: np.ndarray | None = None) -> tuple[float, float]:
    """offdiag_cv(K), or the paired difference cv(K) - cv(K_ref), with its jackknife standard error over examples."""
    return _paired_jackknife(lambda sub, idx: offdiag_cv(sub), K, K_ref)


def kernel_statistics(
    kernels: dict[str, np.ndarray],
    y: np.ndarray,
    alignment_gaps: list[tuple[str, str]],
    cv_gaps: list[tuple[str, str]],
    n_perm: int,
    seed: int,
) -> dict[str, float]:
    """The statistics of named kernels ``{name: K [P, P]}`` on labels y [P], as a flat ``{id: number}`` (ids
    without a prefix; all dimensionless):

    * per kernel: ``alignment[kernel=k]`` and ``alignment_se[...]`` (jackknife), the permutation null's
      ``alignment_null_mean``, ``alignment_null_sd``, ``alignment_excess``, ``alignment_z``, ``alignment_p``
      (two-sided), and ``cv[kernel=k]`` with ``cv_se``;
    * per pair ``(a, b)`` of ``alignment_gaps``: ``alignment_gap[a-b]`` = A(a) - A(b) with its paired
      ``alignment_gap_se[a-b]``; per pair of ``cv_gaps``: ``cv_gap[a-b]`` = cv(a) - cv(b) and ``cv_gap_se[a-b]``;
    * ``permutations``: n_perm.

    Every kernel's null uses the same label shuffles (generator ``seed``).
    """
    out: dict[str, float] = {"permutations": float(n_perm)}
    for name, K in kernels.items():
        tag = f"[kernel={name}]"
        a, se = alignment_with_se(K, y)
        null = permutation_null(K, y, n_perm, seed)
        cv, cv_se = cv_with_se(K)
        out |= {f"alignment{tag}": a, f"alignment_se{tag}": se, f"cv{tag}": cv, f"cv_se{tag}": cv_se}
        out |= {f"alignment_{k}{tag}": null[k] for k in ("null_mean", "null_sd", "excess", "z", "p")}
    for a, b in alignment_gaps:
        gap, se = alignment_with_se(kernels[a], y, kernels[b])
        out |= {f"alignment_gap[{a}-{b}]": gap, f"alignment_gap_se[{a}-{b}]": se}
    for a, b in cv_gaps:
        gap, se = cv_with_se(kernels[a], kernels[b])
        out |= {f"cv_gap[{a}-{b}]": gap, f"cv_gap_se[{a}-{b}]": se}
    return out
