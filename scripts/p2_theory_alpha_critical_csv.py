"""P2 Fig. 1 right: metrics of the authors' alpha_critical.csv itself (each column's scatter over c, the last-layer
column minus the bound 1/6 derived here), for the claims rows that set our thresholds against it."""

from smattn.data.spoc import read_csv
from smattn.io import write_metrics
from smattn.p2.theory.critical_csv import csv_metrics
from smattn.scriptio import run


def main(io):
    ref = read_csv(io.input.ref)
    m = csv_metrics(ref["skip"], ref["alpha1"], ref["alpha2"])
    for k, v in m.items():
        print(f"{k} = {v:.6g}", flush=True)
    write_metrics(io.output.metrics, m)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
