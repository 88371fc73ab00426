"""Omniglot images straight from the two zips, and the Vinyals 1028 / 172 / 423 class split.

A class is ``(folder, alphabet, character)`` with folder ``images_background`` or ``images_evaluation``;
inside a split, classes are in lexicographic order of that tuple (P1 spec, Appendix B). Images are returned
inverted as torchmeta stores them: strokes 255, background 0, shape (20, 105, 105) uint8 per class, drawers
in file-name order.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

BACKGROUND, EVALUATION = "images_background", "images_evaluation"
N_DRAWERS, SIDE = 20, 105
N_IMAGES = {BACKGROUND: 19_280, EVALUATION: 13_180}
SPLIT_SIZES = {"train": 1028, "val": 172, "test": 423}

# P1 spec Appendix B: alphabet -> number of characters, per split and folder.
TRAIN_BACKGROUND = {
    "Alphabet_of_the_Magi": 20,
    "Anglo-Saxon_Futhorc": 29,
    "Arcadian": 26,
    "Asomtavruli_(Georgian)": 40,
    "Balinese": 24,
    "Blackfoot_(Canadian_Aboriginal_Syllabics)": 14,
    "Braille": 26,
    "Burmese_(Myanmar)": 34,
    "Cyrillic": 33,
    "Futurama": 26,
    "Grantha": 43,
    "Greek": 24,
    "Gujarati": 48,
    "Inuktitut_(Canadian_Aboriginal_Syllabics)": 16,
    "Japanese_(hiragana)": 52,
    "Japanese_(katakana)": 47,
    "Korean": 40,
    "Latin": 26,
    "Malay_(Jawi_-_Arabic)": 40,
    "N_Ko": 33,
    "Ojibwe_(Canadian_Aboriginal_Syllabics)": 14,
    "Sanskrit": 42,
    "Syriac_(Estrangelo)": 23,
    "Tagalog": 17,
    "Tifinagh": 55,
}
TRAIN_EVALUATION = {
    "Angelic": 20,
    "Atemayar_Qelisayer": 26,
    "Atlantean": 26,
    "Aurek-Besh": 26,
    "Avesta": 26,
    "Ge_ez": 26,
    "Glagolitic": 45,
}
VAL_BACKGROUND = {"Armenian": 41, "Bengali": 46, "Early_Aramaic": 22, "Hebrew": 22, "Mkhedruli_(Georgian)": 41}
TEST_EVALUATION = {
    "Kannada": 41,
    "Keble": 26,
    "Malayalam": 47,
    "Manipuri": 40,
    "Mongolian": 30,
    "Old_Church_Slavonic_(Cyrillic)": 45,
    "Oriya": 46,
    "Sylheti": 28,
    "Syriac_(Serto)": 23,
    "Tengwar": 25,
    "Tibetan": 42,
    "ULOG": 26,
}
GURMUKHI, GURMUKHI_TRAIN_LAST = "Gurmukhi", 41  # characters 01-41 train, 42-45 test

_PNG = re.compile(r"^(images_background|images_evaluation)/([^/]+)/(character\d\d)/(\d{4})_(\d\d)\.png$")

OmniglotClass = tuple[str, str, str]


def list_classes(zip_paths: Mapping[str, str | Path]) -> dict[OmniglotClass, list[str]]:
    """Map every class in the zips to its 20 image member names (sorted).

    ``zip_paths``: ``{"images_background": path, "images_evaluation": path}``.
    """
    classes: dict[OmniglotClass, list[str]] = {}
    for folder, path in zip_paths.items():
        n = 0
        with zipfile.ZipFile(path) as zf:
            for name in zf.namelist():
                m = _PNG.match(name)
                if not m:
                    continue
                if m.group(1) != folder:
                    raise ValueError(f"{path}: member {name} is not under {folder}/")
                classes.setdefault((folder, m.group(2), m.group(3)), []).append(name)
                n += 1
        if n != N_IMAGES[folder]:
            raise ValueError(f"{path}: {n} images, expected {N_IMAGES[folder]} for {folder}")
    for cls, names in classes.items():
        if len(names) != N_DRAWERS:
            raise ValueError(f"class {cls}: {len(names)} drawings, expected {N_DRAWERS}")
        names.sort()
    return classes


def _split_of(cls: OmniglotClass) -> str:
    folder, alphabet, character = cls
    if folder == BACKGROUND:
        if alphabet in TRAIN_BACKGROUND:
            return "train"
        if alphabet in VAL_BACKGROUND:
            return "val"
    else:
        if alphabet in TRAIN_EVALUATION:
            return "train"
        if alphabet in TEST_EVALUATION:
            return "test"
        if alphabet == GURMUKHI:
            return "train" if int(character[len("character") :]) <= GURMUKHI_TRAIN_LAST else "test"
    raise ValueError(f"class {cls} belongs to no split of the Vinyals split")


def vinyals_split(classes: Iterable[OmniglotClass]) -> dict[str, list[OmniglotClass]]:
    """The Vinyals split: ``{"train": [...1028], "val": [...172], "test": [...423]}``, each sorted.

    Raises ValueError if the per-alphabet character counts differ from the spec's Appendix B.
    """
    split: dict[str, list[OmniglotClass]] = {"train": [], "val": [], "test": []}
    for cls in classes:
        split[_split_of(cls)].append(cls)
    for name in split:
        split[name].sort()
        if len(split[name]) != SPLIT_SIZES[name]:
            raise ValueError(f"Vinyals split '{name}': {len(split[name])} classes, expected {SPLIT_SIZES[name]}")
    expected = {
        (BACKGROUND, "train"): TRAIN_BACKGROUND,
        (EVALUATION, "train"): TRAIN_EVALUATION,
        (BACKGROUND, "val"): VAL_BACKGROUND,
        (EVALUATION, "test"): TEST_EVALUATION,
    }
    for (folder, name), table in expected.items():
        for alphabet, count in table.items():
            got = sum(1 for c in split[name] if c[0] == folder and c[1] == alphabet)
            if got != count:
                raise ValueError(f"alphabet {alphabet} in split '{name}': {got} characters, expected {count}")
    return split


def decode_inverted(png_bytes: bytes) -> np.ndarray:
    """One Omniglot PNG as (105, 105) uint8 with strokes 255 and background 0."""
    from PIL import Image

    with Image.open(io.BytesIO(png_bytes)) as im:
        grey = np.asarray(im.convert("L"), dtype=np.uint8)
    if grey.shape != (SIDE, SIDE):
        raise ValueError(f"Omniglot image of shape {grey.shape}, expected {(SIDE, SIDE)}")
    return 255 - grey


def load_images(
    zip_paths: Mapping[str, str | Path],
    classes: list[OmniglotClass],
    members: Mapping[OmniglotClass, list[str]] | None = None,
) -> np.ndarray:
    """Images of ``classes`` as (len(classes), 20, 105, 105) uint8, inverted (strokes 255), drawers in order."""
    members = members if members is not None else list_classes(zip_paths)
    out = np.empty((len(classes), N_DRAWERS, SIDE, SIDE), dtype=np.uint8)
    handles = {folder: zipfile.ZipFile(path) for folder, path in zip_paths.items()}
    try:
        for i, cls in enumerate(classes):
            zf = handles[cls[0]]
            for j, name in enumerate(members[cls]):
                out[i, j] = decode_inverted(zf.read(name))
    finally:
        for zf in handles.values():
            zf.close()
    return out


def load_split(zip_paths: Mapping[str, str | Path]) -> dict[str, tuple[list[OmniglotClass], np.ndarray]]:
    """Every split with its classes and images: ``{split: (classes, images (n, 20, 105, 105) uint8)}``."""
    members = list_classes(zip_paths)
    split = vinyals_split(members)
    return {name: (cls, load_images(zip_paths, cls, members)) for name, cls in split.items()}
