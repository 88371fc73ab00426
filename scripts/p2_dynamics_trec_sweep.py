"""P2 Fig. 3 right, sequential-learning sweep: the criterion of smattn.p2.dynamics.trec_metrics (layer 1 learned
before layer 2, layer 2 flat until layer 1 is learned) per configuration (attention init std x AdamW variant), and
over the sweep; the authors' published runs (dist_1.npy, dist_2.npy) through the same code.

Outputs: ``table`` (CSV, one row per configuration plus the published runs), ``markdown`` (the same table) and
``metrics``:
* per configuration ``p2.trec_sweep.{half1,half2,learned1,gap,phi}[init=..,opt=..]`` with ``_se`` siblings (means
  and standard errors over runs, steps counted from 1; only where decided), ``outcome`` (1 holds, 0 inconclusive
  or undecided, -1 does not hold) and ``decided`` (1 / 0) for every configuration;
* the counts ``p2.trec_sweep.n_{configs,decided,holds,not_hold,inconclusive,undecided}``, and
  ``n_holds_uncalibrated`` of ``n_uncalibrated``: the configurations other than the one calibrated on the published
  curves (params ``calibrated_init``, ``calibrated_opt``);
* ``p2.trec_sweep.published.*`` for the authors' runs.
"""

import numpy as np

from smattn.scriptio import run

OUTCOME_CODE = {"holds": 1, "inconclusive": 0, "undecided": 0, "does not hold": -1}
QUANTITIES = ("half1", "half2", "learned1", "gap", "phi")


def main(io):
    from smattn.data.spoc import read_npy
    from smattn.io import fmt_id, write_csv, write_metrics, write_text
    from smattn.p2.dynamics import trec_metrics as tm

    rows, metrics = [], {}
    for path in io.input.runs:
        z = np.load(path)
        S = z["similarity"]  # (runs, 2, steps)
        full = S.shape[-1] == int(z["full_steps"])  # the whole training of the experiment: the paper's own S
        res = tm.sequential_verdict(tm.sequential_per_run(S[:, 0], S[:, 1], full_length=full))
        init, opt = float(z["init"]), str(z["optimizer"])
        res.update(label=f"init={fmt_id(init)},opt={opt}", init=init, optimizer=opt, steps=S.shape[-1])
        rows.append(res)
        metrics[f"p2.trec_sweep.outcome[{res['label']}]"] = OUTCOME_CODE[res["outcome"]]
        metrics[f"p2.trec_sweep.decided[{res['label']}]"] = float(res["outcome"] != "undecided")
        if res["outcome"] != "undecided":
            for q in QUANTITIES:
                metrics[f"p2.trec_sweep.{q}[{res['label']}]"] = res[q]
                metrics[f"p2.trec_sweep.{q}_se[{res['label']}]"] = res[f"{q}_se"]
    outcomes = [r["outcome"] for r in rows]
    calibrated = [
        r["init"] == float(io.params.calibrated_init) and r["optimizer"] == str(io.params.calibrated_opt) for r in rows
    ]
    if sum(calibrated) != 1:
        raise ValueError(
            f"the calibrated configuration (init {io.params.calibrated_init}, {io.params.calibrated_opt}) must be one "
            f"of the sweep's configurations exactly once, found {sum(calibrated)}"
        )
    # the configurations the calibration did not choose: the sweep's evidence
    metrics["p2.trec_sweep.n_uncalibrated"] = len(rows) - 1
    metrics["p2.trec_sweep.n_holds_uncalibrated"] = sum(
        o == "holds" for o, cal in zip(outcomes, calibrated, strict=True) if not cal
    )
    metrics["p2.trec_sweep.n_configs"] = len(rows)
    metrics["p2.trec_sweep.n_decided"] = sum(o != "undecided" for o in outcomes)
    metrics["p2.trec_sweep.n_holds"] = outcomes.count("holds")
    metrics["p2.trec_sweep.n_not_hold"] = outcomes.count("does not hold")
    metrics["p2.trec_sweep.n_inconclusive"] = outcomes.count("inconclusive")
    metrics["p2.trec_sweep.n_undecided"] = outcomes.count("undecided")

    P1, P2 = read_npy(io.input.ref_s1), read_npy(io.input.ref_s2)
    ref = tm.sequential_verdict(tm.sequential_per_run(P1, P2, full_length=True))
    ref.update(label="published (authors' arrays)", init=float("nan"), optimizer="", steps=P1.shape[-1])
    for q in QUANTITIES:
        metrics[f"p2.trec_sweep.published.{q}"] = ref[q]
        metrics[f"p2.trec_sweep.published.{q}_se"] = ref[f"{q}_se"]
    metrics["p2.trec_sweep.published.outcome"] = OUTCOME_CODE.get(ref["outcome"], 0)

    header = ["configuration", "init_std", "optimizer", "steps", "runs", "decidable_runs"]
    header += [c for q in QUANTITIES for c in (q, f"{q}_se")] + ["outcome"]
    table = [
        [r["label"], r["init"], r["optimizer"], r["steps"], r["runs"], r["decidable_runs"]]
        + [r[c] for q in QUANTITIES for c in (q, f"{q}_se")]
        + [r["outcome"]]
        for r in [*rows, ref]
    ]
    write_csv(io.output.table, header, table)

    def pm(r, q, fmt):
        return "–" if not np.isfinite(r[q]) else f"{r[q]:{fmt}} ± {r[f'{q}_se']:{fmt}}"

    K, flat = tm.SEQUENTIAL["k_sigma"], tm.SEQUENTIAL["flat_fraction"]
    lines = [
        "| init std | AdamW | steps | runs (decidable) | half-rise layer 1 | half-rise layer 2 | layer 1 learned "
        "| layer-2 rise done then (phi) | outcome |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in [*rows, ref]:
        init = "published" if not np.isfinite(r["init"]) else fmt_id(r["init"])
        lines.append(
            f"| {init} | {r['optimizer']} | {r['steps']} | {r['runs']} ({r['decidable_runs']}) "
            f"| {pm(r, 'half1', '.1f')} | {pm(r, 'half2', '.1f')} | {pm(r, 'learned1', '.1f')} "
            f"| {pm(r, 'phi', '.3g')} | {r['outcome']} |"
        )
    lines += [
        "",
        f"Steps counted from 1, means ± standard errors over runs. Holds: half-rise gap (layer 2 minus layer 1) > "
        f"{K:g} se above 0 and phi + {K:g} se < {flat:g}; does not hold: gap + {K:g} se < 0 or phi - {K:g} se > "
        f"{flat:g}; undecided: a run shorter than the whole training whose layers have not settled by its end "
        "(docs/p2_dynamics.md).",
    ]
    write_text(io.output.markdown, "\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)
    write_metrics(io.output.metrics, metrics)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
