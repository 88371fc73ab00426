"""Scale resolution and validation of the config (library level; the workflow-level checks are in
test_workflow.py)."""

import copy

import pytest
import yaml

from smattn.config import SCALES, ConfigError, resolve_group, resolve_params

GROUP_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "d": {"type": "integer", "minimum": 1},
        "lr": {"type": "number", "exclusiveMinimum": 0},
        "alphas": {"type": "array", "items": {"type": "number"}},
        "mask": {"type": "boolean"},
    },
}
RAW = {"d": {"smoke": 10, "laptop": 100, "paper": 1000}, "lr": 0.1, "alphas": [0.5, 1], "mask": False}


def test_per_scale_values_are_picked():
    for scale, d in zip(SCALES, (10, 100, 1000), strict=True):
        res = resolve_group(RAW, GROUP_SCHEMA, "g", scale)
        assert res == {"d": d, "lr": 0.1, "alphas": [0.5, 1], "mask": False}


def test_command_line_strings_are_coerced():
    raw = dict(RAW, d="42", lr="0.5", alphas=["1", "2.5"], mask="true")
    res = resolve_group(raw, GROUP_SCHEMA, "g", "paper")
    assert res == {"d": 42, "lr": 0.5, "alphas": [1.0, 2.5], "mask": True}


@pytest.mark.parametrize(
    "change, fragment",
    [
        ({"d": -3}, "'g.d'"),
        ({"d": 0}, "'g.d'"),
        ({"d": "many"}, "'g.d'"),
        ({"lr": 0}, "'g.lr'"),
        ({"typo": 1}, "'g.typo': unknown parameter"),
        ({"d": {"smoke": 1, "laptop": 2}}, "'g.d': no value for scale 'paper'"),
    ],
)
def test_bad_values_name_the_key(change, fragment):
    raw = dict(RAW, **change)
    with pytest.raises(ConfigError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        for scale in SCALES:
            resolve_group(raw, GROUP_SCHEMA, "g", scale)


def test_missing_key_is_named():
    raw = {k: v for k, v in RAW.items() if k != "lr"}
    with pytest.raises(ConfigError, match="'g.lr': missing"):
        resolve_group(raw, GROUP_SCHEMA, "g", "laptop")


def test_unknown_scale():
    with pytest.raises(ConfigError, match="'scale'"):
        resolve_params({"scale": "huge"}, {"$defs": {}})


def test_repository_config_resolves_at_every_scale(repo):
    config = yaml.safe_load((repo / "config.yaml").read_text())
    schema = yaml.safe_load((repo / "schemas/config.schema.yaml").read_text())
    for scale in SCALES:
        params = resolve_params(config, schema, scale)
        assert set(params) == set(schema["$defs"])
        for group, values in params.items():
            assert set(values) == set(schema["$defs"][group]["properties"]), group
    # every group parameter has a description in the schema
    for group, gschema in schema["$defs"].items():
        for key, spec in gschema["properties"].items():
            assert spec.get("description"), f"$defs/{group}/{key} lacks a description"


@pytest.mark.parametrize(
    "change, fragment",
    [
        ({"lr": float("nan")}, "'g.lr'"),
        ({"lr": float("inf")}, "'g.lr'"),
        ({"lr": "nan"}, "'g.lr'"),  # --config p={lr: nan} arrives as a string
        ({"lr": "-inf"}, "'g.lr'"),
        ({"lr": "1e999"}, "'g.lr'"),  # YAML reads 1e999 (no dot) as a string; float() overflows to inf
        ({"alphas": [0.5, float("nan")]}, r"'g.alphas\[1\]'"),
        ({"alphas": "[1.0, .inf]"}, r"'g.alphas\[1\]'"),
        ({"lr": {"smoke": 0.1, "laptop": float("nan"), "paper": 0.1}}, "'g.lr'"),
    ],
)
def test_non_finite_numbers_are_rejected(change, fragment):
    raw = dict(RAW, **change)
    with pytest.raises(ConfigError, match=fragment + ".*finite"):
        for scale in SCALES:
            resolve_group(raw, GROUP_SCHEMA, "g", scale)


def test_non_finite_in_repository_config_file_is_rejected(repo):
    """``.nan`` and ``1.0e999`` written in config.yaml itself (parsed by YAML to float nan / inf)."""
    config = yaml.safe_load((repo / "config.yaml").read_text())
    schema = yaml.safe_load((repo / "schemas/config.schema.yaml").read_text())
    for key, text in (("v_reg", ".nan"), ("skip_c", "1.0e999")):
        bad = copy.deepcopy(config)
        bad["p2_theory"][key] = yaml.safe_load(f"x: {text}")["x"]
        with pytest.raises(ConfigError, match=f"'p2_theory.{key}'.*finite"):
            resolve_params(bad, schema)


@pytest.mark.parametrize("value, expected", [(2.0, 2), ("2.0", 2), ("1e3", 1000), (7, 7), ("7", 7)])
def test_whole_floats_become_integers(value, expected):
    res = resolve_group(dict(RAW, d=value), GROUP_SCHEMA, "g", "laptop")
    assert res["d"] == expected and type(res["d"]) is int


@pytest.mark.parametrize("value", [2.5, "2.5", "1e-3"])
def test_fractional_integers_are_rejected(value):
    with pytest.raises(ConfigError, match="'g.d'.*integer"):
        resolve_group(dict(RAW, d=value), GROUP_SCHEMA, "g", "laptop")


def test_integer_list_items_become_integers():
    schema = {"type": "object", "properties": {"w": {"type": "array", "items": {"type": "integer"}}}}
    assert resolve_group({"w": [10.0, "30"]}, schema, "g", "smoke") == {"w": [10, 30]}
    with pytest.raises(ConfigError, match=r"'g.w\[1\]'.*integer"):
        resolve_group({"w": [10, 30.5]}, schema, "g", "smoke")


def _repo_config_and_schema(repo):
    return (
        yaml.safe_load((repo / "config.yaml").read_text()),
        yaml.safe_load((repo / "schemas/config.schema.yaml").read_text()),
    )


@pytest.mark.parametrize(
    "group, key, value",
    [
        ("p2_dynamics", "sgd_d", 1e10),
        ("p2_dynamics", "sgd_batch_size", 1e9),
        ("p1_pruning", "theory_P", 1e5),
        ("p1_images", "gd_qk_dim", 1000),
        ("p2_theory", "l3_n1d", 100),
        ("p2_dynamics", "sgd_seed", 2**40),
    ],
)
def test_absurd_sizes_are_rejected(repo, group, key, value):
    config, schema = _repo_config_and_schema(repo)
    config[group][key] = value
    with pytest.raises(ConfigError, match=f"'{group}.{key}'.*maximum"):
        resolve_params(config, schema)


def test_every_integer_parameter_has_a_maximum_with_its_reason(repo):
    _, schema = _repo_config_and_schema(repo)
    for group, gschema in schema["$defs"].items():
        for key, spec in gschema["properties"].items():
            types = spec["type"] if isinstance(spec["type"], list) else [spec["type"]]
            if "integer" in types:
                assert "maximum" in spec, f"{group}.{key} has no maximum"
                assert f"at most {spec['maximum']}:" in spec["description"], f"{group}.{key}: bound without reason"


@pytest.mark.parametrize(
    "changes, keys",
    [
        ({("p1_hmc", "sampled_widths"): [10, 20]}, ["p1_hmc.sampled_widths", "p1_hmc.widths"]),
        ({("p1_images", "sampled_widths"): [7]}, ["p1_images.sampled_widths", "p1_images.widths"]),
        ({("p2_dynamics", "sgd_test_every"): 10**5}, ["p2_dynamics.sgd_test_every", "p2_dynamics.sgd_epochs"]),
        ({("p2_dynamics", "sgd_batch_size"): 10**5}, ["p2_dynamics.sgd_batch_size", "p2_dynamics.sgd_alpha"]),
        ({("p1_images", "n_train_pool"): 100}, ["p1_images.n_train_pool", "p1_images.P"]),
        ({("p1_images", "n_test_pool"): 50}, ["p1_images.n_test_pool", "p1_images.n_test_omniglot"]),
        ({("p1_images", "alignment_pcs"): 1000}, ["p1_images.alignment_pcs", "p1_images.P"]),
        ({("p1_pruning", "theory_P"): 1000}, ["p1_pruning.theory_P", "p1_images.P"]),
        ({("p1_pruning", "theory_P_h8"): 700}, ["p1_pruning.theory_P_h8", "p1_images.P"]),
        ({("p2_dynamics", "sgd_d"): 4000}, ["p2_dynamics.sgd_d", "p2_dynamics.sgd_runs"]),  # ~20 GB of data
    ],
)
def test_cross_key_checks_name_every_key(repo, changes, keys):
    config, schema = _repo_config_and_schema(repo)
    for (group, key), value in changes.items():
        config[group][key] = value
    with pytest.raises(ConfigError) as err:
        resolve_params(config, schema)
    for k in keys:
        assert f"'{k}'" in str(err.value), str(err.value)
