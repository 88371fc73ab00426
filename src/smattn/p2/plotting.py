"""Shared plotting helpers of the P2 figures (colours of the authors' figures); importing it sets up matplotlib
(Agg backend, the figures' one style: smattn.io.pyplot), so only plotting scripts import it."""

from smattn.io import pyplot

plt = pyplot()  # styled on import: some scripts draw with this plt without calling setup()

BLUE, RED, DBLUE, DRED, GREEN = "#457B9D", "#E63946", "#2C5675", "#A72833", "#6A994E"


def setup():
    """matplotlib.pyplot with the figures' one style (smattn.io.pyplot, the same for both papers)."""
    return pyplot()


def long_rows(series, x, y, err=None):
    """Rows (series, x, y, err) of a long-format figure CSV."""
    err = [float("nan")] * len(x) if err is None else err
    return [(series, float(a), float(b), float(e)) for a, b, e in zip(x, y, err, strict=True)]


def nan_array(values):
    """List with None -> float array with NaN."""
    import numpy as np

    return np.array([np.nan if v is None else v for v in values], dtype=float)


NOT_CONVERGED_LABEL = "not converged"


def mark_unconverged(ax, x, y, converged, *, label: bool = True) -> int:
    """Hollow red circles over the points (x, y) whose state evolution did not converge; returns their number.

    x, y, converged: (m,) arrays.  The legend entry "not converged" is added once per axes (label=True) and only
    when such a point exists, so a figure without it is unchanged.
    """
    import numpy as np

    bad = ~np.asarray(converged, dtype=bool)
    if not bad.any():
        return 0
    taken = NOT_CONVERGED_LABEL in ax.get_legend_handles_labels()[1]
    ax.plot(
        np.asarray(x, dtype=float)[bad],
        np.asarray(y, dtype=float)[bad],
        "o",
        mfc="none",
        mec="red",
        mew=1.2,
        ms=7,
        zorder=10,
        label=NOT_CONVERGED_LABEL if label and not taken else None,
    )
    return int(bad.sum())
