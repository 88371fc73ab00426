"""Export of a GD model to the theory (spec §5.4) and the theory grid with temperature selection (spec §5.5-5.6),
end to end on a tiny synthetic image store."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from smattn.device import jax_setup

jax_setup(x64=True)

from smattn.p1.images.export import export_for_theory, gd_accuracies  # noqa: E402
from smattn.p1.images.model import AttentionPathsTransformer  # noqa: E402
from smattn.p1.images.theory_grid import (
    attentioned_sets,
    gp_line,
    run_grid,  # noqa: E402
    select_temperature,
    set_accuracies,
)


def _store():
    rng = np.random.default_rng(0)

    def split(n):
        tmpl = rng.integers(0, 256, size=(n, 1, 32, 32))
        return np.clip(tmpl + rng.integers(-30, 31, size=(n, 20, 32, 32)), 0, 255).astype(np.uint8)

    s = {"train_images": split(10), "val_images": split(4), "test_images": split(6)}
    for name in ("mnist", "fashion"):
        for tag, n in (("train", 60), ("test", 30)):
            for c in (0, 1):
                s[f"{name}_{tag}_{c}"] = rng.integers(0, 256, size=(n, 32, 32), dtype=np.uint8)
    return s


@pytest.fixture(scope="module")
def exported():
    torch.manual_seed(0)
    m = AttentionPathsTransformer(2, 2, 8, 4)
    ex = export_for_theory(m, _store(), seed=42, P=20, n_test=20, n_train_pool=64, n_test_pool=64)
    return m, ex


def test_export_layout(exported):
    m, ex = exported
    assert ex["x_train"].shape == (20, 48, 192) and ex["x_train"].dtype == np.float32
    assert list(ex["y_train"]) == [1.0] * 10 + [-1.0] * 10  # first P/2 with y = +1, then P/2 with y = -1
    for s in ("omniglot", "mnist", "fashion"):
        assert ex[f"x_{s}"].shape == (20, 48, 192)
        assert list(ex[f"y_{s}"]) == [1.0] * 10 + [-1.0] * 10
    # MNIST "first 10 with y=+1" are test images 0..9 of class 1: their query tokens differ, their contexts are the
    # training images 30..39 of each class (after the 30 class-0 test images)
    assert ex["WQ"].shape == ex["WK"].shape == (2, 2, 4, 192)
    assert np.array_equal(ex["WQ"][1, 1], m.query[1].weight.detach().numpy()[4:8])
    assert ex["WV"].shape == (2, 2, 8, 8) and ex["W_in"].shape == (8, 192) and ex["w_out"].shape == (8,)
    U = ex["U_gd"]
    assert U.shape == (4, 4) and np.allclose(U, U.T) and np.linalg.eigvalsh(U).min() > -1e-10
    assert list(ex["heads"]) == [2, 2]


def test_export_rejects_small_pools():
    m = AttentionPathsTransformer(2, 2, 8, 4)
    with pytest.raises(ValueError, match="pools"):
        export_for_theory(m, _store(), seed=1, P=100, n_test=20, n_train_pool=64, n_test_pool=64)


def test_gd_accuracies_sets(exported):
    m, _ = exported
    acc = gd_accuracies(m, _store(), 42, 50)
    assert set(acc) == {"omniglot", "mnist", "fashion"}
    assert acc["omniglot"]["n"] == 50 and acc["mnist"]["n"] == 60 and acc["fashion"]["n"] == 60
    assert all(0 <= v["acc"] <= 1 for v in acc.values())


def test_theory_grid_selection_and_gp(exported):
    _, ex = exported
    xi = attentioned_sets(ex)
    assert xi["train"].shape == (20, 4, 192) and xi["fashion"].shape == (20, 4, 192)
    widths, temps = [5.0, 500.0], [0.25, 1.0]
    recs = run_grid(ex, xi, widths, temps)
    assert [(r["N"], r["T"]) for r in recs] == [(5.0, 0.25), (5.0, 1.0), (500.0, 0.25), (500.0, 1.0)]
    assert all(r["summary"]["converged"] and r["summary"]["g_max"] < 1e-5 for r in recs)
    # warm start reaches the same minimiser as a GP start
    cold = run_grid(ex, xi, [5.0], [0.25], warm_start=False)[0]
    assert np.allclose(cold["U"], recs[0]["U"], atol=1e-4)
    assert np.isclose(cold["summary"]["action"], recs[0]["summary"]["action"], rtol=1e-9)
    sel = select_temperature(recs, widths, temps)
    for N in widths:
        cands = [r for r in recs if r["N"] == N]
        best = max(r["acc"]["omniglot"] for r in cands)
        first = next(r for r in cands if r["acc"]["omniglot"] == best)  # ties keep the first T of the grid
        assert sel[N] is first
    gp = gp_line(ex, xi, [0.1, 0.5])
    assert gp["T"] in (0.1, 0.5)
    assert gp["acc"] == set_accuracies(np.eye(4), xi, ex, gp["T"])
