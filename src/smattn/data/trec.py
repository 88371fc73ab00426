"""Parser of the raw Li & Roth TREC question-classification files (``train_5500.label``, ``TREC_10.label``).

Each line is ``COARSE:fine text``. As in the Hugging Face ``trec`` loading script, the file's single
non-ASCII byte (0xF0 in "sister\\xF0city") is replaced by a space, the line is stripped, decoded and split at
its first space.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

COARSE_LABELS = ("ABBR", "ENTY", "DESC", "HUM", "LOC", "NUM")  # class index order of the HF dataset


@dataclass(frozen=True)
class Question:
    coarse: str
    fine: str
    text: str

    @property
    def coarse_index(self) -> int:
        return COARSE_LABELS.index(self.coarse)


def load_trec(path: str | Path) -> list[Question]:
    """All questions of one file, in file order."""
    out: list[Question] = []
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            line = raw.replace(b"\xf0", b" ").strip().decode("ascii")
            if not line:
                continue
            label, sep, text = line.partition(" ")
            coarse, colon, fine = label.partition(":")
            if not sep or not colon or coarse not in COARSE_LABELS:
                raise ValueError(f"{path}:{lineno}: not a 'COARSE:fine text' line: {line[:60]!r}")
            out.append(Question(coarse, fine, text))
    return out
