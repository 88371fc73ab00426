"""Validated settings dataclasses: field types and bounds are declared once, on the fields themselves.

A settings class derives from :class:`Settings` and declares its fields with :func:`setting` (bounds) or plainly::

    @dataclass(frozen=True, kw_only=True)
    class RunConfig(Settings):
        epochs: int = setting(ge=1)
        lr: float = setting(gt=0)
        dtype: str = setting(choices=("float32", "float64"))

Construction checks every field against its annotated type (``int`` rejects bools and floats; ``float`` accepts
ints and must be finite; ``X | None`` also accepts None; ``tuple[int, ...]`` checks every item) and its bounds,
and raises ValueError naming ``Class.field``. The workflow's values (and their defaults) live in ``config.yaml``;
:func:`scale_params` reads one group of it at one scale for tests and benchmarks. A rule's script builds its settings
with one call, ``RunConfig.from_params(snakemake.params)`` (:meth:`Settings.from_params`), instead of copying every
field by hand.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from pathlib import Path
from typing import Any

__all__ = ["Settings", "setting", "validate_settings", "scale_params"]

_MISSING = dataclasses.MISSING


def setting(*, default=_MISSING, gt=None, ge=None, lt=None, le=None, choices=None, length=None):
    """A dataclass field with bounds in its metadata: gt/ge/lt/le on numbers, choices, length of a tuple."""
    meta = {
        k: v
        for k, v in (("gt", gt), ("ge", ge), ("lt", lt), ("le", le), ("choices", choices), ("length", length))
        if v is not None
    }
    if default is _MISSING:
        return dataclasses.field(metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def _is_int(v) -> bool:
    import numpy as np

    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _is_real(v) -> bool:
    import numpy as np

    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and math.isfinite(v)


def _type_ok(value, tp) -> tuple[bool, str]:
    """Whether value matches the annotation tp, and tp in words."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        parts = [_type_ok(value, a) for a in typing.get_args(tp)]
        return any(ok for ok, _ in parts), " or ".join(w for _, w in parts)
    if tp is type(None):
        return value is None, "None"
    if tp is bool:
        return isinstance(value, bool), "a bool"
    if tp is int:
        return _is_int(value), "an integer"
    if tp is float:
        return _is_real(value), "a finite number"
    if tp is str:
        return isinstance(value, str), "a string"
    if origin is tuple or tp is tuple:
        args = typing.get_args(tp)
        if not isinstance(value, tuple):
            return False, "a tuple"
        if len(args) == 2 and args[1] is Ellipsis:
            ok = all(_type_ok(v, args[0])[0] for v in value)
            return ok, f"a tuple of {_type_ok(None, args[0])[1].removeprefix('a ').removeprefix('an ')}s"
        return True, "a tuple"
    return isinstance(value, tp), f"a {getattr(tp, '__name__', tp)}"


def validate_settings(obj) -> None:
    """Check every field of the dataclass instance obj against its type and declared bounds.

    Raises ValueError ``"<Class>.<field> must be ..., got <value>"`` at the first offending field.
    """
    cls = type(obj)
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        where = f"{cls.__name__}.{f.name}"
        ok, words = _type_ok(value, hints[f.name])
        if not ok:
            raise ValueError(f"{where} must be {words}, got {value!r}")
        if value is None:
            continue
        md = f.metadata
        if "choices" in md and value not in md["choices"]:
            raise ValueError(f"{where} must be one of {tuple(md['choices'])}, got {value!r}")
        if "length" in md and len(value) != md["length"]:
            raise ValueError(f"{where} must hold {md['length']} items, got {value!r}")
        for key, test, words in (
            ("gt", lambda v, b: v > b, ">"),
            ("ge", lambda v, b: v >= b, ">="),
            ("lt", lambda v, b: v < b, "<"),
            ("le", lambda v, b: v <= b, "<="),
        ):
            if key in md and not test(value, md[key]):
                raise ValueError(f"{where} must be {words} {md[key]:g}, got {value!r}")


class Settings:
    """Base of validated settings dataclasses: ``__post_init__`` runs :func:`validate_settings`.

    A subclass with cross-field checks overrides ``__post_init__`` and calls ``super().__post_init__()`` first.
    """

    def __post_init__(self):
        validate_settings(self)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_params(cls, params, prefix: str = "", **overrides):
        """An instance whose every field ``f`` is read from ``params`` under the name ``prefix + f`` (a mapping, or
        a namespace such as a script's ``io.params``), then ``overrides`` (field names).

        A field absent from ``params`` takes its default (a field without default must be present: ValueError
        naming it); names in ``params`` that are not fields are ignored (a rule passes paths and switches too).
        Values are converted to the field's type where that loses nothing (an integral float to ``int``, an int
        to ``float``, a list to a tuple); anything else is left for the validation to reject.
        """
        hints = typing.get_type_hints(cls)
        if not isinstance(params, typing.Mapping):
            params = vars(params)
        kwargs, missing = {}, []
        for f in dataclasses.fields(cls):
            if f.name in overrides:
                kwargs[f.name] = overrides.pop(f.name)
                continue
            key = prefix + f.name
            if key in params:
                kwargs[f.name] = _coerce(params[key], hints[f.name])
            elif f.default is _MISSING and f.default_factory is _MISSING:
                missing.append(key)
        if overrides:
            raise ValueError(f"{cls.__name__}.from_params: no field named {sorted(overrides)}")
        if missing:
            raise ValueError(f"{cls.__name__}.from_params: parameters {missing} are missing")
        return cls(**kwargs)


def _coerce(value, tp):
    """value converted to the annotation tp where nothing is lost (see ``Settings.from_params``)."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None:
            return None
        for a in typing.get_args(tp):
            if a is not type(None):
                converted = _coerce(value, a)
                if _type_ok(converted, a)[0]:
                    return converted
        return value
    if tp is int and _is_real(value) and not _is_int(value) and float(value).is_integer():
        return int(value)
    if tp is int and _is_int(value):
        return int(value)
    if tp is float and _is_real(value):
        return float(value)
    if (origin is tuple or tp is tuple) and isinstance(value, list):
        return tuple(value)
    return value


def scale_params(group: str, scale: str = "paper", config_path: str | Path | None = None) -> dict[str, Any]:
    """Resolved parameters of one group of the repository's ``config.yaml`` at one scale (validated by its schema).

    For tests and benchmarks that need the workflow's values outside Snakemake; the workflow itself resolves them
    in ``rules/common.smk``.
    """
    import yaml

    from smattn.config import load_schema, resolve_group

    root = Path(__file__).resolve().parents[2]
    path = Path(config_path) if config_path is not None else root / "config.yaml"
    with open(path, encoding="utf-8") as fh:
        config = yaml.safe_load(fh)
    schema = load_schema(root / "schemas" / "config.schema.yaml")
    return resolve_group(config.get(group), schema["$defs"][group], group, scale)
