"""Shared plotting helpers of the P2 theory figures (style of the authors' figures, spec §10)."""
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


def json_safe(obj):
    """Recursively turn numpy values into JSON types, NaN/inf into None (JSON has no NaN)."""
    import math

    import numpy as np

    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return json_safe(obj.tolist())
    if isinstance(obj, (np.bool_, bool)):
        return bool(obj)
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj) if math.isfinite(obj) else None
    return obj


def nan_array(values):
    """List with None -> float array with NaN."""
    import numpy as np

    return np.array([np.nan if v is None else v for v in values], dtype=float)
