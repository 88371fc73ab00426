"""Rule fetch_raw: obtain one raw data file and verify it (see smattn.data.fetch)."""

from smattn.data.fetch import fetch
from smattn.scriptio import run


def main(io):
    fetch(io.params.relpath, io.params.data_dir, io.params.mirror)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
