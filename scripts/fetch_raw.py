"""Rule fetch_raw: obtain one raw data file and verify it (see smattn.data.fetch)."""

import os

from smattn.config import data_mirror
from smattn.data.fetch import fetch
from smattn.scriptio import run


def main(io):
    fetch(io.params.relpath, io.params.data_dir, data_mirror(io.config, os.environ))


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
