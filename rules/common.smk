# Shared definitions for every rule file: resolved parameters of the active scale, raw-data paths, and the
# lists of figures and metrics files that the final rules collect.

import os
import re
from pathlib import Path

from smattn.config import ConfigError, load_schema, resolve_params
from smattn.data.registry import RAW_FILES

SCHEMA = load_schema(workflow.source_path("../schemas/config.schema.yaml"))
SCALE = config["scale"]
try:
    PARAMS = resolve_params(config, SCHEMA)
except ConfigError as _err:
    raise WorkflowError(f"Invalid configuration: {_err}")

DATA_DIR = config["data_dir"]

ALL_FIGURES = []  # figure PNGs (the PDF and the data CSV lie beside each)
ALL_METRICS = []  # flat {id: number} JSON files merged into results/metrics.json

# Figure-group rule files, included by the Snakefile when present (each reads like its paper's figure list).
GROUP_RULE_FILES = [
    f
    for f in (
        "rules/p2_theory.smk",
        "rules/p2_dynamics.smk",
        "rules/p1_hmc.smk",
        "rules/p1_images.smk",
        "rules/p1_pruning.smk",
    )
    if Path(workflow.basedir, f).exists()
]


# group_params("p2_theory"): resolved parameters of a group at the active scale (a dict).
group_params = PARAMS.__getitem__
# raw("mnist/t10k-labels-idx1-ubyte.gz"): path of a verified raw data file (obtained by rule fetch_raw).
raw = lambda relpath: f"{DATA_DIR}/{relpath}"
