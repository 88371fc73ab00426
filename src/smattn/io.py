"""Atomic output helpers: every file is written under a temporary name in its folder, then renamed.

A crash or an exception therefore never leaves a half-written output behind under its final name.
"""

from __future__ import annotations

import contextlib
import csv
import json
import math
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success rename it to ``path``, on error delete it."""
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp_path, 0o666 & ~umask)  # mkstemp creates 0600; outputs get the usual permissions
    try:
        yield tmp_path
        os.replace(tmp_path, final)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


def write_text(path: str | os.PathLike, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json(path: str | os.PathLike, obj) -> None:
    """Write ``obj`` as indented JSON (NaN/inf are rejected: they are not valid JSON)."""
    text = json.dumps(obj, indent=2, sort_keys=False, allow_nan=False, default=_json_default)
    write_text(path, text + "\n")


def _json_default(o):
    try:
        import numpy as np

        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
    except ImportError:  # pragma: no cover
        pass
    raise TypeError(f"object of type {type(o).__name__} is not JSON serialisable")


def json_safe(obj):
    """Recursively turn numpy values into JSON types and NaN/inf into None (JSON has no NaN)."""
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


def read_json(path: str | os.PathLike):
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def write_metrics(path: str | os.PathLike, metrics: Mapping[str, float]) -> None:
    """Write a flat ``{id: number}`` metrics file for the ledger.

    Raises ValueError naming the offending id if a value is not a finite real number.
    """
    clean: dict[str, float] = {}
    for key, value in metrics.items():
        if not isinstance(key, str) or not key:
            raise ValueError(f"metric id must be a non-empty string, got {key!r}")
        try:
            v = float(value)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"metric {key!r}: value {value!r} is not a number") from exc
        if not math.isfinite(v):
            raise ValueError(f"metric {key!r}: value {v} is not finite")
        clean[key] = v
    write_json(path, clean)


def write_csv(path: str | os.PathLike, header: Sequence[str], rows: Iterable[Sequence]) -> None:
    """Write a CSV file with a header row."""
    with atomic_path(path) as tmp:
        with open(tmp, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(list(header))
            for row in rows:
                w.writerow(list(row))


#: The one plotting style of every figure of both papers (that of the P2 authors' figures: serif, 9 pt text and
#: titles, 7 pt legends); a figure's own sizes (fontsize=...) still win.
FIGURE_STYLE = {"font.family": "serif", "font.size": 9, "axes.titlesize": 9, "legend.fontsize": 7}


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend with ``FIGURE_STYLE`` applied: what every figure script draws with
    (before it makes its figures; the style is set in the process's rcParams)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update(FIGURE_STYLE)
    return plt


def save_figure(fig, png_path: str | os.PathLike, pdf_path: str | os.PathLike | None = None, dpi: int = 150) -> None:
    """Save a matplotlib figure as PNG at ``png_path`` and as PDF at ``pdf_path`` (default: beside the PNG, same
    stem), atomically.

    A rerun writes the same bytes (with the same matplotlib): the PDF is written without a creation date, which
    matplotlib would otherwise take from the clock (or ``SOURCE_DATE_EPOCH``); its Creator and Producer name the
    matplotlib version. The PNG has no date to begin with (its one text chunk is Software, the version)."""
    png = Path(png_path)
    if png.suffix != ".png":
        raise ValueError(f"figure path must end in .png, got {png}")
    pdf = png.with_suffix(".pdf") if pdf_path is None else Path(pdf_path)
    if pdf.suffix != ".pdf":
        raise ValueError(f"figure path must end in .pdf, got {pdf}")
    for target, fmt, metadata in ((png, "png", None), (pdf, "pdf", {"CreationDate": None})):
        with atomic_path(target) as tmp:
            fig.savefig(tmp, format=fmt, dpi=dpi, bbox_inches="tight", metadata=metadata)


def fmt_id(x: float) -> str:
    """Number as it appears inside a metric id: Python ``format(x, "g")``."""
    return format(x, "g")


def write_npz(path: str | os.PathLike, **arrays) -> None:
    """Write ``arrays`` (name -> array-like) to an uncompressed ``.npz`` file atomically."""
    import numpy as np

    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.savez(fh, **arrays)
