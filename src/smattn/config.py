"""Scale resolution and validation of the workflow configuration (independent of Snakemake).

A group section of ``config.yaml`` maps each parameter either to a plain value (all scales) or to a mapping
``{smoke: .., laptop: .., paper: ..}``. ``resolve_params`` picks the active scale's values, coerces strings
given on the command line (``--config`` parses nested values as strings) to the schema's types, and checks
every scale against the group's leaf schema ``$defs/<group>`` and the constraints between keys. Non-finite numbers
are rejected and whole floats given for integer keys become ints. Errors name the key(s).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

SCALES = ("smoke", "laptop", "paper")


class ConfigError(ValueError):
    """A configuration error; the message names the offending key."""


def load_schema(path: str | Path) -> dict:
    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def group_names(schema: Mapping) -> list[str]:
    return list(schema.get("$defs", {}).keys())


def _is_per_scale(value: Any) -> bool:
    return isinstance(value, Mapping) and len(value) > 0 and all(k in SCALES for k in value)


def _coerce(value: Any, spec: Mapping, key: str) -> Any:
    """Convert command-line strings to the type the schema asks for (other values pass unchanged)."""
    types = spec.get("type")
    if isinstance(types, str):
        types = [types]
    types = types or []
    if isinstance(value, str):
        if "string" in types:
            return value
        if value.lower() in ("null", "none", "~") and "null" in types:
            return None
        if "integer" in types:
            try:
                return int(value)
            except ValueError:
                try:
                    as_float = float(value)
                except ValueError:
                    as_float = None
                if as_float is not None:
                    return _whole(as_float, key)
        if "number" in types:
            try:
                return float(value)
            except ValueError:
                pass
        if "boolean" in types and value.lower() in ("true", "false"):
            return value.lower() == "true"
        if "array" in types or "object" in types:
            try:
                parsed = yaml.safe_load(value)
            except yaml.YAMLError as exc:
                raise ConfigError(f"config key '{key}': cannot parse {value!r}: {exc}") from exc
            return _coerce(parsed, spec, key)
        return value
    if isinstance(value, list) and "items" in spec:
        return [_coerce(v, spec["items"], f"{key}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, bool) is False and isinstance(value, int) and "number" in types and "integer" not in types:
        return float(value)
    if isinstance(value, float) and "integer" in types and "number" not in types:
        return _whole(value, key)
    return value


def _whole(value: float, key: str) -> int | float:
    """An integer key given as a float (``2.0``, ``1e3``): its int, or ConfigError naming the key if not whole.

    JSON Schema counts 2.0 as an integer, but the rules and the library expect Python ints. Non-finite values
    pass through unchanged for the finiteness check to name.
    """
    if not math.isfinite(value):
        return value
    if not value.is_integer():
        raise ConfigError(f"config key '{key}': expected an integer, got {value!r}")
    return int(value)


def _check_finite(value: Any, key: str) -> None:
    """Reject NaN and infinities (also inside lists): JSON Schema bounds compare False with NaN and so let it pass."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"config key '{key}': {value!r} is not a finite number")
    if isinstance(value, list):
        for i, v in enumerate(value):
            _check_finite(v, f"{key}[{i}]")


def resolve_group(raw: Mapping | None, group_schema: Mapping, group: str, scale: str) -> dict:
    """Resolve one group's parameters for ``scale``; raise ConfigError naming the key on any problem."""
    import jsonschema

    if scale not in SCALES:
        raise ConfigError(f"config key 'scale': unknown scale {scale!r}; choose one of {', '.join(SCALES)}")
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"config key '{group}': expected a mapping of parameters, got {type(raw).__name__}")
    props = group_schema.get("properties", {})
    unknown = [k for k in raw if k not in props]
    if unknown:
        raise ConfigError(
            f"config key '{group}.{unknown[0]}': unknown parameter (known: {', '.join(sorted(props)) or 'none'})"
        )
    resolved: dict[str, Any] = {}
    for key, value in raw.items():
        full = f"{group}.{key}"
        if _is_per_scale(value):
            if scale not in value:
                raise ConfigError(f"config key '{full}': no value for scale '{scale}'")
            value = value[scale]
        resolved[key] = _coerce(value, props[key], full)
        _check_finite(resolved[key], full)
    missing = [k for k in props if k not in resolved]
    if missing:
        raise ConfigError(f"config key '{group}.{missing[0]}': missing (scale '{scale}')")
    validator = jsonschema.Draft202012Validator(group_schema)
    errors = sorted(validator.iter_errors(resolved), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        path = ".".join(str(p) for p in err.absolute_path)
        where = f"{group}.{path}" if path else group
        raise ConfigError(f"config key '{where}' (scale '{scale}'): {err.message}")
    return resolved


SGD_DATA_LIMIT_BYTES = 8 * 2**30  # the paper's SGD setting holds 0.25 GB of data; 30x that is surely a typo


def _cross_key_errors(params: Mapping[str, Mapping]) -> list[str]:
    """Constraints between keys (also across groups) of one scale's resolved parameters; each message names them.

    Only groups present in ``params`` are checked, so a schema without some group skips its checks.
    """
    errors: list[str] = []

    def has(group: str, *keys: str) -> bool:
        return group in params and all(k in params[group] for k in keys)

    for group in ("p1_hmc", "p1_images"):
        if has(group, "sampled_widths", "widths"):
            widths = {float(w) for w in params[group]["widths"]}
            extra = [w for w in params[group]["sampled_widths"] if float(w) not in widths]
            if extra:
                errors.append(f"'{group}.sampled_widths' {extra} not among the theory widths '{group}.widths'")
    if has("p2_theory", "l3_authors_tail", "l3_authors_iterations"):
        g = params["p2_theory"]
        if g["l3_authors_tail"] > g["l3_authors_iterations"]:
            errors.append(
                f"'p2_theory.l3_authors_tail' ({g['l3_authors_tail']}) exceeds "
                f"'p2_theory.l3_authors_iterations' ({g['l3_authors_iterations']})"
            )
    if has("p2_dynamics", "sgd_test_every", "sgd_epochs"):
        g = params["p2_dynamics"]
        if g["sgd_test_every"] > g["sgd_epochs"]:
            errors.append(
                f"'p2_dynamics.sgd_test_every' ({g['sgd_test_every']}) exceeds "
                f"'p2_dynamics.sgd_epochs' ({g['sgd_epochs']})"
            )
    if has("p2_dynamics", "sgd_batch_size", "sgd_alpha", "sgd_d", "sgd_runs", "sgd_dtype"):
        g = params["p2_dynamics"]
        n_train = math.floor(g["sgd_alpha"] * g["sgd_d"] + 1e-9)
        if g["sgd_batch_size"] > n_train:
            errors.append(
                f"'p2_dynamics.sgd_batch_size' ({g['sgd_batch_size']}) exceeds the n = floor("
                f"'p2_dynamics.sgd_alpha' x 'p2_dynamics.sgd_d') = {n_train} training samples"
            )
        nbytes = g["sgd_runs"] * n_train * 2 * g["sgd_d"] * (4 if g["sgd_dtype"] == "float32" else 8)
        if nbytes > SGD_DATA_LIMIT_BYTES:
            errors.append(
                f"SGD data of 'p2_dynamics.sgd_runs' x floor('p2_dynamics.sgd_alpha' x 'p2_dynamics.sgd_d') x 2 x "
                f"'p2_dynamics.sgd_d' numbers in 'p2_dynamics.sgd_dtype' take {nbytes / 2**30:.1f} GiB, "
                f"more than the sanity limit {SGD_DATA_LIMIT_BYTES / 2**30:.0f} GiB"
            )
    if has("p1_images", "P", "n_train_pool", "n_test_omniglot", "n_test_pool", "alignment_pcs"):
        g = params["p1_images"]
        for pool, size in (("n_train_pool", "P"), ("n_test_pool", "n_test_omniglot")):
            if g[pool] < g[size]:
                errors.append(
                    f"'p1_images.{pool}' ({g[pool]}) is smaller than 'p1_images.{size}' ({g[size]}): "
                    "the balanced set is picked from the pool"
                )
        if g["alignment_pcs"] > g["P"]:
            errors.append(
                f"'p1_images.alignment_pcs' ({g['alignment_pcs']}) exceeds the P x P kernel's "
                f"'p1_images.P' ({g['P']}) principal components"
            )
    if has("p1_images", "network_seeds", "gd_seed", "widths"):
        g = params["p1_images"]
        if g["gd_seed"] in g["network_seeds"]:
            errors.append(
                f"'p1_images.network_seeds' {g['network_seeds']} contains 'p1_images.gd_seed' ({g['gd_seed']}): "
                "the main networks already train from it, and the seed study needs networks of other seeds"
            )
        if 10 not in {float(w) for w in g["widths"]}:
            errors.append(f"'p1_images.widths' {g['widths']} lacks N = 10, the width of the claims and the seed study")
    if has("p1_pruning", "theory_P", "theory_P_h8") and has("p1_images", "P"):
        for key in ("theory_P", "theory_P_h8"):
            if params["p1_pruning"][key] > params["p1_images"]["P"]:
                errors.append(
                    f"'p1_pruning.{key}' ({params['p1_pruning'][key]}) exceeds the exported training "
                    f"sequences 'p1_images.P' ({params['p1_images']['P']})"
                )
    return errors


def resolve_params(config: Mapping, schema: Mapping, scale: str | None = None) -> dict[str, dict]:
    """Resolved parameters of every group for the active scale, after checking all three scales.

    Args:
        config: the whole workflow config (after Snakemake's top-level validation).
        schema: the loaded JSON schema (with ``$defs/<group>``).
        scale: overrides ``config['scale']``.
    Returns:
        ``{group: {param: value}}`` for the active scale.
    """
    active = scale or config.get("scale", "laptop")
    if active not in SCALES:
        raise ConfigError(f"config key 'scale': unknown scale {active!r}; choose one of {', '.join(SCALES)}")
    out: dict[str, dict] = {}
    for s in SCALES:  # a bad value at any scale is reported now, not when that scale is first used
        resolved = {g: resolve_group(config.get(g), schema["$defs"][g], g, s) for g in group_names(schema)}
        errors = _cross_key_errors(resolved)
        if errors:
            raise ConfigError(f"config (scale '{s}'): " + "; ".join(errors))
        if s == active:
            out = resolved
    return out


def data_mirror(config: Mapping, environ: Mapping[str, str]) -> str | None:
    """The mirror folder: config ``data_mirror`` (config.yaml or ``--config data_mirror=...``) when set, else the
    environment variable SMATTN_DATA_MIRROR, else None. An explicit setting beats an ambient one."""
    return config.get("data_mirror") or environ.get("SMATTN_DATA_MIRROR") or None
