"""Head scores from the order parameter (docs/p1_theory.md#predictor-and-alignment), used to rank heads for
pruning.

For head h of layer l, ``s_{l,h}`` is the sum of |U_{pi pi'}| over all entries where at least one of pi, pi' passes
through that head; the scores are divided by their maximum. U: [H_tot, H_tot] with paths row-major over
(h_1, ..., h_L).
"""

from __future__ import annotations

import numpy as np


def head_scores(U: np.ndarray, heads: tuple) -> dict:
    """Normalised scores {(layer, head): score} with 1-based layer and 0-based head indices."""
    U = np.abs(np.asarray(U, dtype=np.float64))
    heads = tuple(int(h) for h in heads)
    n = int(np.prod(heads))
    if U.shape != (n, n):
        raise ValueError(f"U must be [{n}, {n}] for heads {heads}, got {U.shape}")
    idx = np.array(np.unravel_index(np.arange(n), heads)).T  # [n, L]: head of every layer for each path
    raw = {}
    for l, H in enumerate(heads):
        for h in range(H):
            m = idx[:, l] == h
            mask = m[:, None] | m[None, :]
            raw[(l + 1, h)] = float(U[mask].sum())
    top = max(raw.values())
    if top <= 0:
        raise ValueError("U is zero: head scores undefined")
    return {k: v / top for k, v in raw.items()}
