"""Loaders of the P2 authors' published result files (``reference/spoc/``), drawn beside our results."""

from __future__ import annotations

from pathlib import Path

import numpy as np

CSV_FILES = (
    "AMP_2w.csv",
    "BO_2w.csv",
    "BO_2w_smooth.csv",
    "BO_3w.csv",
    "alpha_critical.csv",
    "gen_error_AMP_2w.csv",
    "gen_error_BO_2w.csv",
    "gen_error_BO_2w_one_layer.csv",
    "gen_error_BO_2w_one_layer_smooth.csv",
    "gen_error_BO_2w_smooth.csv",
    "gen_error_BO_3w.csv",
    "gen_error_BO_3w_last_layer.csv",
)
NPY_FILES = (
    "AMP_BO_2w_d1000_alpha1.2_samples1_seed1.npy",
    "2w_e_gen_d1000_alpha1.2_samples1_seed1.npy",
    "C1_random.npy",
    "C2_random.npy",
    "dist_1.npy",
    "dist_2.npy",
)


def read_csv(path: str | Path) -> dict[str, np.ndarray]:
    """A reference CSV as ``{column: float64 array}``."""
    with open(path, encoding="utf-8") as fh:
        header = fh.readline().strip().split(",")
    data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    if data.shape[1] != len(header):
        raise ValueError(f"{path}: {data.shape[1]} columns but header {header}")
    return {name: data[:, i].astype(np.float64) for i, name in enumerate(header)}


def read_npy(path: str | Path) -> np.ndarray:
    return np.load(path, allow_pickle=False)
