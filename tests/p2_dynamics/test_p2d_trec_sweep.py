"""The sequential-learning sweep's summary (scripts/p2_dynamics_trec_sweep.py) on constructed runs: the table and
metrics say which configuration holds, which does not and which is undecided, and the published runs hold."""

import json
import runpy
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from smattn.scriptio import ScriptIO

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "p2_dynamics_trec_sweep.py"


def _rise(steps, start, tau, width=0.3):
    t = np.arange(1, steps + 1)
    f = 1.0 / (1.0 + np.exp(-(np.log(t) - np.log(tau)) / width))
    return start + (1.0 - start) * (f - f[0]) / (f[-1] - f[0])


def _write(path, S1, S2, init, opt, full_steps):
    np.savez(path, similarity=np.stack([S1, S2], axis=1), init=init, optimizer=opt, full_steps=full_steps)
    return str(path)


def _summary_io(raw_data, tmp_path, runs):
    """The summary script's inputs, outputs and params (calibrated configuration: init 3e-4, transformers' AdamW)."""
    ref = raw_data / "reference" / "spoc"
    return ScriptIO(
        input=SimpleNamespace(runs=runs, ref_s1=str(ref / "dist_1.npy"), ref_s2=str(ref / "dist_2.npy")),
        output=SimpleNamespace(table=tmp_path / "t.csv", markdown=tmp_path / "t.md", metrics=tmp_path / "m.json"),
        params=SimpleNamespace(calibrated_init=3e-4, calibrated_opt="transformers_adamw"),
    )


def test_sweep_summary_on_constructed_runs(raw_data, tmp_path):
    n, taus = 800, (15, 20, 25)
    S1 = np.stack([_rise(n, 0.14, t) for t in taus])
    late = np.stack([_rise(n, 0.13, 6 * t, width=0.25) for t in taus])
    drift = np.cos(0.3 * (1 - np.arange(1, n + 1) / n))[None].repeat(3, 0)  # still turning at the end
    runs = [
        _write(tmp_path / "a.npz", S1, late, 3e-4, "transformers_adamw", 10920),
        _write(tmp_path / "b.npz", S1, np.stack([_rise(n, 0.13, t) for t in taus]), 1e-2, "torch_adamw", 10920),
        _write(tmp_path / "c.npz", S1, drift, 0.1, "transformers_adamw", 10920),
        # the same curves as whole trainings: decided; layer 2 has done 9 +- 1 % of its rise: inconclusive
        _write(tmp_path / "d.npz", S1, drift, 0.1, "torch_adamw", n),
    ]
    io = _summary_io(raw_data, tmp_path, runs)
    out = io.output
    runpy.run_path(str(SCRIPT))["main"](io)
    m = json.loads(out.metrics.read_text())
    assert m["p2.trec_sweep.outcome[init=0.0003,opt=transformers_adamw]"] == 1
    assert m["p2.trec_sweep.outcome[init=0.01,opt=torch_adamw]"] == -1
    assert m["p2.trec_sweep.decided[init=0.1,opt=transformers_adamw]"] == 0
    assert "p2.trec_sweep.phi[init=0.1,opt=transformers_adamw]" not in m
    assert m["p2.trec_sweep.decided[init=0.1,opt=torch_adamw]"] == 1  # whole trainings need not settle
    assert m["p2.trec_sweep.outcome[init=0.1,opt=torch_adamw]"] == 0
    counts = [m[f"p2.trec_sweep.n_{k}"] for k in ("configs", "decided", "holds", "not_hold", "inconclusive")]
    assert counts == [4, 3, 1, 1, 1] and m["p2.trec_sweep.n_undecided"] == 1
    # the one configuration that holds is the calibrated one: it is not counted as the sweep's evidence
    assert m["p2.trec_sweep.n_uncalibrated"] == 3 and m["p2.trec_sweep.n_holds_uncalibrated"] == 0
    assert m["p2.trec_sweep.published.outcome"] == 1 and m["p2.trec_sweep.published.phi"] < 1e-3
    md = out.markdown.read_text()
    assert md.count("| holds |") == 2 and md.count("| undecided |") == 1  # ours and the published runs
    assert len(out.table.read_text().splitlines()) == 1 + 4 + 1


def test_sweep_run_takes_whole_main_runs_as_its_own(raw_data, tmp_path):
    """The sweep configuration equal to the main runs' reuses their records when its runs are whole trainings: the
    result equals training them again, to the bit; shorter sweep runs train (the main runs are not cut)."""
    from smattn.settings import scale_params

    scripts = SCRIPT.parent
    trec = {k: v for k, v in scale_params("p2_dynamics", "smoke").items() if k.startswith("trec_")}
    trec = {k: v for k, v in trec.items() if not k.startswith("trec_sweep_")} | {"trec_epochs": 1}
    trec["trec_max_questions"] = 80  # 4 steps per epoch
    inputs = dict(
        train=str(raw_data / "trec" / "train_5500.label"), vocab=str(raw_data / "bert-base-uncased" / "vocab.txt")
    )
    main = runpy.run_path(str(scripts / "p2_dynamics_trec.py"))["main"]
    runs = []
    for rep in range(2):
        runs.append(str(tmp_path / f"rep{rep}.npz"))
        main(
            ScriptIO(
                input=SimpleNamespace(**inputs),
                output=SimpleNamespace(run=runs[-1]),
                params=SimpleNamespace(trec=trec),
                wildcards=SimpleNamespace(rep=str(rep)),
            )
        )
    sweep = runpy.run_path(str(scripts / "p2_dynamics_trec_sweep_run.py"))["main"]
    cfg = dict(init=trec["trec_attn_init_std"], opt=trec["trec_optimizer"])
    out = {}
    for name, given, steps in (("reused", runs, 4), ("trained", [], 4), ("short", runs, 3)):
        out[name] = tmp_path / f"{name}.npz"
        sweep(
            ScriptIO(
                input=SimpleNamespace(**inputs, main_runs=given),
                output=SimpleNamespace(runs=str(out[name])),
                params=SimpleNamespace(trec=trec, **cfg, steps=steps, reps=2),
            )
        )
    reused, trained, short = (np.load(out[k]) for k in ("reused", "trained", "short"))
    for k in ("similarity", "train_loss"):
        np.testing.assert_array_equal(reused[k], trained[k])
    assert int(reused["full_steps"]) == 4 and int(reused["steps_per_epoch"]) == 4
    # taken, not trained again: the main runs' own training times
    np.testing.assert_array_equal(reused["wall_s"], [float(np.load(r)["wall_s"]) for r in runs])
    assert short["similarity"].shape == (2, 2, 3)
    np.testing.assert_array_equal(short["train_loss"], trained["train_loss"][:, :3])


def test_sweep_summary_needs_the_calibrated_configuration(raw_data, tmp_path):
    n = 200
    S = np.stack([_rise(n, 0.14, 20)])
    runs = [_write(tmp_path / "a.npz", S, S, 1e-2, "torch_adamw", 10920)]
    io = _summary_io(raw_data, tmp_path, runs)
    out = io.output
    with pytest.raises(ValueError, match="calibrated configuration"):
        runpy.run_path(str(SCRIPT))["main"](io)
    assert not out.metrics.exists()
