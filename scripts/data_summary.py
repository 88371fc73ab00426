"""Rule data_summary: load every raw data set and record its counts."""

from pathlib import Path

from smattn.data.summary import summarise
from smattn.io import write_json
from smattn.scriptio import run


def main(io):
    summary = summarise(
        {"images_background": io.input.omniglot_background, "images_evaluation": io.input.omniglot_evaluation},
        Path(io.input.mnist[0]).parent,
        Path(io.input.fashion[0]).parent,
        io.input.trec_train,
        io.input.trec_test,
        io.input.vocab,
        list(io.input.spoc),
    )
    write_json(io.output.summary, summary)
    print(summary)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
