"""Panels shared by several P1 figures."""

from __future__ import annotations

import numpy as np


def alignment_bars(ax, overlap_gp: np.ndarray, overlap_rn: np.ndarray, rn_label: str) -> np.ndarray:
    """Figs 2d and 3d: overlap of the k-th principal component of the training kernel with the labels, GP kernel
    (U = 1) beside the renormalised kernel. overlap_*: [k_max]. Returns the PC ranks [k_max] (1-based)."""
    from matplotlib.ticker import MaxNLocator

    k = np.arange(1, len(overlap_gp) + 1)
    ax.bar(k - 0.2, overlap_gp, 0.4, color="tab:orange", label="GP")
    ax.bar(k + 0.2, overlap_rn, 0.4, color="tab:blue", label=rn_label)
    ax.set_xlabel("principal component rank k")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlim(0.3, len(k) + 0.7)
    ax.set_ylabel("|PC . y| / sqrt(P)")
    ax.legend(fontsize=8)
    return k
