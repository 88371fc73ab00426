"""Shared plotting helpers of the P2 figures (colours and style of the authors' figures); imports matplotlib
with the Agg backend, so only plotting scripts import it."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

BLUE, RED, DBLUE, DRED, GREEN = "#457B9D", "#E63946", "#2C5675", "#A72833", "#6A994E"


def setup():
    plt.rcParams.update({"font.family": "serif", "font.size": 9, "axes.titlesize": 9, "legend.fontsize": 7})
    return plt


def long_rows(series, x, y, err=None):
    """Rows (series, x, y, err) of a long-format figure CSV."""
    err = [float("nan")] * len(x) if err is None else err
    return [(series, float(a), float(b), float(e)) for a, b, e in zip(x, y, err)]


def nan_array(values):
    """List with None -> float array with NaN."""
    import numpy as np

    return np.array([np.nan if v is None else v for v in values], dtype=float)
