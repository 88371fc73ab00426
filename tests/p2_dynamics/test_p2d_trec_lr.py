"""The learning-rate comparison at the notebook's init (smattn.p2.dynamics.trec_metrics.lr_*, scripts/
p2_dynamics_trec_lr.py): bounds on re-referenced similarities against similarities computed from Gram matrices,
the quantities and the verdict against hand-computed values, and the script on constructed runs."""

import json
import runpy
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from smattn.p2.dynamics import trec_metrics as tm
from smattn.scriptio import ScriptIO

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "p2_dynamics_trec_lr.py"


def _cos_sim(G, R):
    """Similarity tr(G R) / (|G| |R|) of each Gram in G (steps, h, h) to R (h, h), computed directly."""
    return np.einsum("tij,ji->t", G, R) / (np.linalg.norm(G, axis=(1, 2)) * np.linalg.norm(R))


def test_rereferenced_bounds_hand_computed():
    S = np.cos([0.5, 0.2, 0.0])  # angles 0.5, 0.2, 0 to the last step's Gram
    lo, hi = tm.rereferenced_bounds(S, 2)  # b = 0.2
    np.testing.assert_allclose(lo, np.cos([0.7, 0.4, 0.2]))
    np.testing.assert_allclose(hi, np.cos([0.3, 0.0, 0.2]))
    lo, hi = tm.rereferenced_bounds(S, 3)  # the last step itself: exact
    np.testing.assert_array_equal(lo, S)
    np.testing.assert_array_equal(hi, S)
    with pytest.raises(ValueError, match="ref_step"):
        tm.rereferenced_bounds(S, 4)


def test_bounds_contain_the_similarity_to_the_reference_step():
    rng = np.random.default_rng(0)
    runs, steps, h, k, r = 3, 60, 6, 8, 45
    S_final = np.empty((runs, 2, steps))
    S_ref = np.empty((runs, 2, steps))
    for i in range(runs):
        for layer in range(2):
            W = np.cumsum(rng.normal(size=(steps, h, k)) * 0.3, axis=0) + rng.normal(size=(1, h, k))
            G = W @ W.transpose(0, 2, 1)
            S_final[i, layer], S_ref[i, layer] = _cos_sim(G, G[-1]), _cos_sim(G, G[r - 1])
    lo, hi = tm.rereferenced_bounds(S_final, r)
    assert (lo <= S_ref + 1e-12).all() and (S_ref <= hi + 1e-12).all()
    assert (hi - lo).max() > 0.01  # the bounds are not trivially tight here
    exact = tm.lr_fit_quantities(S_ref[:, 0], S_ref[:, 1], 30)
    for q, (b_lo, b_hi) in tm.lr_fit_bounds(S_final[:, 0], S_final[:, 1], 30, r).items():
        assert (b_lo <= exact[q] + 1e-12).all() and (exact[q] <= b_hi + 1e-12).all(), q


def test_lr_fit_quantities_hand_computed():
    t = np.arange(1, 51)
    S1 = np.stack([t / 50, t / 100])
    S2 = np.stack([np.where(t <= 40, 0.1 + 0.001 * t, 0.9), np.full(50, 0.2)])
    q = tm.lr_fit_quantities(S1, S2, epoch_step=45)
    np.testing.assert_allclose(q["s1_step20"], [0.4, 0.2])
    np.testing.assert_allclose(q["s1_epoch1"], [0.9, 0.45])
    np.testing.assert_allclose(q["s2_epoch1"], [0.9, 0.2])
    np.testing.assert_allclose(q["s2_change40"], [0.039, 0.0])
    with pytest.raises(ValueError, match="steps"):
        tm.lr_fit_quantities(S1[:, :39], S2[:, :39], epoch_step=20)


def test_lr_fit_verdict_hand_computed():
    ours = {"a": np.array([1.0, 2.0, 3.0]), "b": np.array([0.0, 0.0, 0.3])}
    pub_a = np.array([5.0, 5.0, 5.0, 5.0])  # se 0: c = se_ours = 1/sqrt(3) = 0.577; 2 + 3 c = 3.73 < 5
    pub_b = (np.array([0.5, 0.7]), np.array([0.9, 1.1]))  # lo mean 0.6 (se 0.1), hi mean 1.0 (se 0.1)
    res = tm.lr_fit_verdict(ours, {"a": (pub_a, pub_a), "b": pub_b})
    assert res["a"] == pytest.approx(2.0) and res["a_se"] == pytest.approx(1 / np.sqrt(3))
    assert not res["a_fits"]
    # b: mean 0.1, se 0.1; c = hypot(0.1, 0.1) = 0.1414; 0.6 - 3 c = 0.176 > 0.1: does not fit
    assert res["b_pub_lo"] == pytest.approx(0.6) and res["b_pub_se"] == pytest.approx(0.1)
    assert not res["b_fits"] and not res["fits"]
    res = tm.lr_fit_verdict({"a": ours["a"]}, {"a": (pub_a - 1.3, pub_a - 1.3)})  # 2 + 3 c = 3.73 >= 3.7
    assert res["a_fits"] and res["fits"]
    with pytest.raises(ValueError, match="2 runs"):
        tm.lr_fit_verdict({"a": np.array([1.0])}, {"a": (pub_a, pub_a)})


def _write(path, S1, S2, lr, full_steps, spe=273):
    np.savez(
        path,
        similarity=np.stack([S1, S2], axis=1),
        lr=lr,
        init=0.1,
        optimizer="transformers_adamw",
        full_steps=full_steps,
        steps_per_epoch=spe,
    )
    return str(path)


def test_lr_comparison_on_constructed_runs(raw_data, tmp_path):
    ref = raw_data / "reference" / "spoc"
    P1, P2 = np.load(ref / "dist_1.npy"), np.load(ref / "dist_2.npy")
    runs = [
        # the published runs themselves as whole trainings: every quantity equal, they fit
        _write(tmp_path / "a.npz", P1, P2, 0.03, P1.shape[-1]),
        # layer 1 already settled at step 20 and layer 2 moving early: they do not
        _write(tmp_path / "b.npz", np.clip(P1 + 0.3, 0, 1), np.clip(P2 + np.linspace(0, 1, 10920), 0, 1), 1e-3, 10920),
    ]
    out = SimpleNamespace(table=tmp_path / "t.csv", markdown=tmp_path / "t.md", metrics=tmp_path / "m.json")
    io = ScriptIO(
        input=SimpleNamespace(runs=runs, ref_s1=str(ref / "dist_1.npy"), ref_s2=str(ref / "dist_2.npy")),
        output=out,
        params=SimpleNamespace(),
    )
    runpy.run_path(str(SCRIPT))["main"](io)
    m = json.loads(out.metrics.read_text())
    assert m["p2.trec_lr.fits[lr=0.03]"] == 1 and m["p2.trec_lr.fits[lr=0.001]"] == 0
    assert m["p2.trec_lr.n_lrs"] == 2 and m["p2.trec_lr.n_fit"] == 1 and m["p2.trec_lr.ref_step"] == 10920
    assert m["p2.trec_lr.s1_step20[lr=0.03]"] == pytest.approx(P1[:, 19].mean())
    assert m["p2.trec_lr.published.s1_step20"] == pytest.approx(P1[:, 19].mean())
    assert m["p2.trec_lr.published.s1_step20_sd"] == pytest.approx(P1[:, 19].std(ddof=1))
    assert m["p2.trec_lr.published.s2_change40"] == pytest.approx(np.abs(P2[:, :40] - P2[:, :1]).max(-1).mean())
    assert "| 0.03 |" in out.markdown.read_text()
