"""The seed study: how much of an image-task gain over the GP limit belongs to the architecture, and how much to the
one network that was trained (docs/p1_images.md#network-seeds).

A network is an architecture trained from one seed (``smattn.p1.images.networks``); the theory runs on its heads
(``theory_grid``), whose ``theory.npz`` holds the mean predictions ``f_<set>`` [widths, temperatures, tasks] of the
theory and ``gp_f_<set>`` [gp temperatures, tasks] of the GP line, with the labels ``y_<set>`` [tasks].

* :func:`gain_authors_rule`: the theory-minus-GP accuracy at one width with both lines at the temperature that is
  best on the Omniglot test set they are reported on (the authors' rule), and its paired standard error over the test
  tasks.
* :func:`gain_held_out`: the same with each temperature chosen on a held-out half: the Omniglot test tasks are split
  by position into two halves (even, odd; the balanced sets keep both labels in each); a task of the half h of any
  test set is predicted at the temperatures best on the other Omniglot half (two-fold cross-fitting, so no task's
  prediction uses a temperature chosen on it).
* :func:`spread_over_networks`: over the networks of one architecture, Cochran's Q test of whether the networks
  differ by more than their test-task errors, the between-network standard deviation that the excess implies
  (DerSimonian-Laird), and the random-effects mean gain with its standard error (each network weighted by its test
  error plus the between-network variance: the error of the architecture's gain, not of one network's).
* :func:`signs_over_networks`: Fig. 3c over the networks: each network's agreement of the signs of U between the
  theory and its GD estimate, standardised against the relabelling null (``uncertainty.sign_agreement_null``), and
  Stouffer's combination of the networks' standardised agreements, the architecture's test.
* :func:`power` and :func:`min_detectable_effect`: what one network's row can see: a one-sided test at ``k_sigma``
  standard errors detects a true gain ``effect`` with probability Phi(effect / se - k_sigma), so the effect it detects
  at 80 % power is (k_sigma + z_0.8) se.

Accuracies and gains are fractions of the test tasks (0.01 = one point).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from smattn.p1.images.uncertainty import NullSummary, paired_difference, select_first_best, sign_agreement_null


def _correct(f: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.sign(f) == y


def _width_index(th: Mapping, N: float) -> int:
    widths = [float(w) for w in th["widths"]]
    if float(N) not in widths:
        raise ValueError(f"width N = {N} is not among the theory's widths {widths}")
    return widths.index(float(N))


def theory_U(th: Mapping, N: float) -> np.ndarray:
    """The theory's order parameter U [H_tot, H_tot] at width N and its selected temperature (``U_selected``), the
    matrix Fig. 3c draws."""
    return np.asarray(th["U_selected"][_width_index(th, N)])


def gain_authors_rule(th: Mapping, test_set: str, N: float) -> tuple[float, float]:
    """(gain, se) at width N on ``test_set``: theory at its selected temperature ``T_selected`` minus the GP line at
    ``gp_T_selected`` (both chosen on the Omniglot test set), paired over the tasks."""
    i = _width_index(th, N)
    j = list(np.asarray(th["temperatures"], float)).index(float(th["T_selected"][i]))
    jg = list(np.asarray(th["gp_temperatures"], float)).index(float(th["gp_T_selected"]))
    y = np.asarray(th[f"y_{test_set}"])
    return paired_difference(_correct(th[f"f_{test_set}"][i, j], y), _correct(th[f"gp_f_{test_set}"][jg], y))


def held_out_temperatures(th: Mapping, N: float) -> tuple[np.ndarray, np.ndarray]:
    """Indices (theory [2], GP [2]) of the temperature best on each Omniglot half (half h: tasks at positions
    = h mod 2), first of the grid on a tie (the authors' rule)."""
    i = _width_index(th, N)
    y = np.asarray(th["y_omniglot"])
    half = np.arange(y.size) % 2
    c_th = _correct(np.asarray(th["f_omniglot"][i]), y)  # [T, n]
    c_gp = _correct(np.asarray(th["gp_f_omniglot"]), y)  # [T_gp, n]
    jt = np.array([select_first_best(c_th[:, half == h].mean(axis=1)) for h in (0, 1)])
    jg = np.array([select_first_best(c_gp[:, half == h].mean(axis=1)) for h in (0, 1)])
    return jt, jg


def gain_held_out(th: Mapping, test_set: str, N: float) -> tuple[float, float]:
    """(gain, se) at width N on ``test_set`` with the temperatures of :func:`held_out_temperatures`, cross-fitted:
    a task at position t of the set is predicted at the temperatures chosen on the Omniglot half (t + 1) mod 2."""
    i = _width_index(th, N)
    jt, jg = held_out_temperatures(th, N)
    y = np.asarray(th[f"y_{test_set}"])
    other = 1 - np.arange(y.size) % 2  # the half whose temperatures predict each task
    f_th = np.asarray(th[f"f_{test_set}"][i])[jt[other], np.arange(y.size)]
    f_gp = np.asarray(th[f"gp_f_{test_set}"])[jg[other], np.arange(y.size)]
    return paired_difference(_correct(f_th, y), _correct(f_gp, y))


@dataclass(frozen=True)
class NetworkSpread:
    """The gains of k networks of one architecture (:func:`spread_over_networks`).

    q: Cochran's Q = sum w (g - g_w)^2 with w = 1 / se_i^2 and g_w the w-weighted mean; q_p: P(chi2_{k-1} >= q),
    small when the networks differ by more than their test-task errors; network_sd: tau = sqrt(max(0, (q - (k - 1))
    / (sum w - sum w^2 / sum w))), the between-network sd that the excess implies (DerSimonian-Laird); mean and se:
    the random-effects mean sum w* g / sum w* and its standard error 1 / sqrt(sum w*), w* = 1 / (se_i^2 + tau^2);
    sd: the plain sd of the k gains (ddof 1); k: the number of networks."""

    mean: float
    se: float
    sd: float
    q: float
    q_p: float
    network_sd: float
    k: int


def spread_over_networks(gains: Sequence[float], ses: Sequence[float]) -> NetworkSpread:
    """Spread of the gains [k] of k >= 2 networks, each with its test-task standard error ses [k] (> 0)."""
    g, s = np.asarray(gains, np.float64), np.asarray(ses, np.float64)
    if g.ndim != 1 or g.shape != s.shape or g.size < 2:
        raise ValueError(
            f"spread_over_networks: need gains and ses of the same k >= 2 networks, got {g.shape}, {s.shape}"
        )
    if not (np.all(np.isfinite(g)) and np.all(np.isfinite(s)) and np.all(s > 0)):
        raise ValueError("spread_over_networks: gains must be finite and standard errors finite and > 0")
    k = g.size
    w = 1.0 / s**2
    q = float(np.sum(w * (g - np.sum(w * g) / np.sum(w)) ** 2))
    tau2 = max(0.0, (q - (k - 1)) / (np.sum(w) - np.sum(w**2) / np.sum(w)))
    w_re = 1.0 / (s**2 + tau2)
    mean = float(np.sum(w_re * g) / np.sum(w_re))
    return NetworkSpread(
        mean, float(1 / np.sqrt(np.sum(w_re))), float(g.std(ddof=1)), q, float(stats.chi2.sf(q, k - 1)),
        float(np.sqrt(tau2)), k,
    )  # fmt: skip


def power(effect: float, se: float, k_sigma: float) -> float:
    """Probability that the one-sided test 'estimate > k_sigma x se' passes when the true gain is ``effect`` and the
    estimate is normal with standard error ``se``."""
    if not se > 0:
        raise ValueError(f"power: the standard error must be > 0, got {se}")
    return float(stats.norm.cdf(effect / se - k_sigma))


def min_detectable_effect(se: float, k_sigma: float, target_power: float = 0.8) -> float:
    """The true gain that the one-sided test at ``k_sigma`` standard errors detects with ``target_power``."""
    if not se > 0 or not 0 < target_power < 1:
        raise ValueError(f"min_detectable_effect: need se > 0 and 0 < power < 1, got {se}, {target_power}")
    return float((k_sigma + stats.norm.ppf(target_power)) * se)


@dataclass(frozen=True)
class SignsOverNetworks:
    """The sign agreement of k networks (:func:`signs_over_networks`).

    nulls: each network's agreement against its relabelling null [k]; z: each network's standardised agreement
    (observed - null mean) / null sd [k], about N(0, 1) where the signs agree by chance (0 where the null has no
    spread: every relabelling agrees alike, so the network holds no evidence); combined_z: Stouffer's
    sum z / sqrt(k), N(0, 1) where every network's do; combined_p: its one-sided P(N(0, 1) >= combined_z)."""

    nulls: tuple[NullSummary, ...]
    z: tuple[float, ...]
    combined_z: float
    combined_p: float


def signs_over_networks(pairs: Sequence[tuple[np.ndarray, np.ndarray]], n_permutations: int, seed) -> SignsOverNetworks:
    """Sign agreement of U between the theory and the GD network for each of k >= 2 networks: pairs [k] of
    (U_theory [H, H], U_gd [H, H]); each null from ``n_permutations`` relabellings drawn with the same ``seed`` (so
    the main network's numbers are those of the Fig. 3c rule)."""
    if len(pairs) < 2:
        raise ValueError(f"signs_over_networks: need >= 2 networks, got {len(pairs)}")
    nulls = tuple(sign_agreement_null(a, b, n_permutations, seed) for a, b in pairs)
    # a null without spread (every relabelling agrees alike, e.g. all of one matrix's entries of one sign: a smoke-scale
    # theory) holds no evidence: z = 0
    z = tuple((n.observed - n.null_mean) / n.null_sd if n.null_sd > 0 else 0.0 for n in nulls)
    combined = float(np.sum(z) / np.sqrt(len(z)))
    return SignsOverNetworks(nulls, z, combined, float(stats.norm.sf(combined)))
