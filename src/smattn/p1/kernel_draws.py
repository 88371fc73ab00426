"""Task alignment of the same-path kernels of P1 Fig. 5b over independent draws of what the paper leaves random.

Fig. 5b shows, for one network, that the good path's kernel is aligned with the task and the adversarial paths' are
not. The heads of model ``all`` (docs/p1_theory.md#hmc-task) are the good and a random head in layer 1 and the
uniform and a random head in layer 2; the paper fixes none of its random draws. Here each draw ``k`` takes a fresh
training set (``generate_hmc`` with its own seed, sigma_perp of the variant) and a fresh layer-2 random head
(``random_head`` with its own seed), keeps the layer-1 heads, and computes every same-path kernel
C_pp [P, P] = H_tot xi_p . xi_p and its alignment z with the labels against the label-permutation null
(``kernel_alignment.permutation_null``: z = (A - null mean) / null sd, dimensionless).

So the spread of z over draws says whether one network's z (the workflow's, from the authors' seeds) is typical of
the architecture. ``shuffle_labels`` replaces the labels by a permutation drawn independently of the inputs: z is
then a draw of the null itself (mean 0, standard deviation 1 over draws), the calibration of the whole computation.
"""

from __future__ import annotations

import numpy as np

from . import hmc_task as H
from .attention import attentioned_inputs_from_heads
from .kernel_alignment import permutation_null
from .kernels import same_path_kernels

__all__ = ["draw_seeds", "alignment_over_draws"]


def draw_seeds(n_draws: int, seed: int) -> np.ndarray:
    """[n_draws, 2] integer seeds (training set, layer-2 random head) from one seed, each below 2**31."""
    if n_draws < 1:
        raise ValueError(f"n_draws must be >= 1, got {n_draws}")
    state = np.random.SeedSequence(int(seed)).generate_state(2 * n_draws, dtype=np.uint32)
    return (state % np.uint32(2**31 - 1)).astype(np.int64).reshape(n_draws, 2)


def alignment_over_draws(
    n_draws: int,
    seed: int,
    *,
    n_train: int,
    n_perm: int,
    variant: str = "all",
    seeds: np.ndarray | None = None,
    shuffle_labels: bool = False,
) -> dict:
    """z of each same-path kernel over draws of the training set and the layer-2 random head.

    ``seeds`` [n, 2] overrides ``draw_seeds(n_draws, seed)`` (e.g. the authors' (SEED_TRAIN, SEED_L2_RANDOM) as one
    row). Returns ``paths`` (names), ``seeds`` [n, 2], ``z``, ``excess`` and ``alignment`` [n, H_tot].
    """
    spec = H.VARIANTS[variant]
    if "random" not in spec["layer2"]:
        raise ValueError(f"variant {variant!r} has no random layer-2 head to draw")
    seeds = draw_seeds(n_draws, seed) if seeds is None else np.asarray(seeds, dtype=np.int64)
    base = H.head_matrices(variant)
    i_rand = spec["layer2"].index("random")
    rng = np.random.default_rng([int(seed), 1])
    z, excess, align = [], [], []
    for k, (s_train, s_head) in enumerate(seeds):
        data = H.generate_hmc(int(n_train), int(s_train), sigma_perp=spec["sigma_perp"])
        layer2 = base[1].copy()
        layer2[i_rand] = H.random_head(int(s_head), 1.0)
        xi = attentioned_inputs_from_heads(data.x, [{"W": base[0]}, {"W": layer2}], "last")
        kernels = same_path_kernels(xi)
        y = rng.permutation(data.y) if shuffle_labels else data.y
        stats = [permutation_null(K, y, int(n_perm), int(seed) + 7919 * k) for K in kernels]
        z.append([s["z"] for s in stats])
        excess.append([s["excess"] for s in stats])
        align.append([s["alignment"] for s in stats])
    return {
        "paths": list(spec["paths"]),
        "seeds": seeds,
        "z": np.asarray(z),
        "excess": np.asarray(excess),
        "alignment": np.asarray(align),
    }
