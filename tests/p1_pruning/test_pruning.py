"""Head scores and pruning (P1 spec §2.6, §6)."""

import numpy as np
import pytest
import torch

from smattn.p1.head_score import head_scores
from smattn.p1.images.model import AttentionPathsTransformer
from smattn.p1.images.pruning import (
    ascending,
    cumulative_sets,
    diagonal_scores,
    head_label,
    params_removed_fraction,
    pruned_accuracies,
)


def _predict(model, x):
    with torch.no_grad():
        return model(torch.as_tensor(x, dtype=torch.float32)).numpy()


def test_union_score_on_hand_made_U():
    # L = 2, H = (2, 2): paths (0,0)=0, (0,1)=1, (1,0)=2, (1,1)=3
    U = np.array([[4.0, -1.0, 0.0, 0.5], [-1.0, 2.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.5, 0.0, 0.0, 3.0]])
    s = head_scores(U, (2, 2))
    # layer 1 head 0: rows/cols {0,1}: |4|+|-1|+|-1|+|2| + (0.5 twice, row 0/col 3 and row 3/col 0) = 9
    # layer 1 head 1: rows/cols {2,3}: 1 + 3 + 0.5 + 0.5 = 5
    # layer 2 head 0: paths {0,2}: 4 + 1 + |-1|*2 + 0.5*2 = 8; layer 2 head 1: paths {1,3}: 2 + 3 + 2 + 1 = 8
    raw = {(1, 0): 9.0, (1, 1): 5.0, (2, 0): 8.0, (2, 1): 8.0}
    assert s == pytest.approx({k: v / 9.0 for k, v in raw.items()})
    assert ascending(s) == [(1, 1), (2, 0), (2, 1), (1, 0)]
    d = diagonal_scores(U, (2, 2))
    # diagonal 4, 2, 1, 3: layer 1 -> 6, 4; layer 2 -> 5, 5
    assert d == pytest.approx({(1, 0): 1.0, (1, 1): 4 / 6, (2, 0): 5 / 6, (2, 1): 5 / 6})
    assert head_label((2, 0)) == "2.1"


def test_cumulative_sets_keep_one_head_per_layer():
    order = [(1, 0), (1, 1), (1, 2), (2, 0), (2, 1)]
    sets = cumulative_sets(order, (3, 2))
    assert sets == [[], [(1, 0)], [(1, 0), (1, 1)], [(1, 0), (1, 1), (2, 0)]]


@pytest.fixture
def data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 12, 16, generator=g).numpy()
    y = np.where(np.arange(64) % 2 == 0, 1.0, -1.0)
    return x, y


def test_pruning_nothing_reproduces_the_unpruned_network(data):
    torch.manual_seed(1)
    model = AttentionPathsTransformer(2, 3, 8, 4, token_dim=16).eval()
    x, y = data
    base = _predict(model, x)
    acc = pruned_accuracies(model, {"s": (x, y)}, [], _predict)
    assert acc["s"] == float(np.mean(np.sign(base) == y))
    np.testing.assert_array_equal(_predict(model, x), base)  # the mask is restored afterwards


def test_all_but_one_head_equals_the_single_head_network(data):
    torch.manual_seed(2)
    big = AttentionPathsTransformer(1, 3, 8, 4, token_dim=16).eval()
    small = AttentionPathsTransformer(1, 1, 8, 4, token_dim=16).eval()
    keep, G, N = 2, 4, 8
    with torch.no_grad():
        small.input_proj.weight.copy_(big.input_proj.weight)
        small.readout.weight.copy_(big.readout.weight)
        small.query[0].weight.copy_(big.query[0].weight[keep * G : (keep + 1) * G])
        small.key[0].weight.copy_(big.key[0].weight[keep * G : (keep + 1) * G])
        small.value[0].weight.copy_(big.value[0].weight[keep * N : (keep + 1) * N])
    x, _ = data
    big.set_pruned_heads({0: [0, 1]})
    np.testing.assert_allclose(_predict(big, x), _predict(small, x), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="every head"):
        big.set_pruned_heads({0: [0, 1, 2]})


def test_params_removed_fraction():
    model = AttentionPathsTransformer(2, 4, 512, 128, token_dim=192)
    assert model.n_trainable() == 2_589_184  # spec §5.3
    assert params_removed_fraction(model, [(1, 1), (1, 3)]) == pytest.approx(2 * 311_296 / 2_589_184)


def test_path_contributions_give_every_pruned_network(data):
    from smattn.p1.images.pruning import (
        accuracies_from_paths,
        path_contributions,
        path_weights,
    )

    torch.manual_seed(3)
    model = AttentionPathsTransformer(2, 3, 8, 4, token_dim=16).eval()
    x, y = data
    contrib = path_contributions(model, x, batch=16)
    assert contrib.shape == (64, 9)
    for pruned in ([], [(1, 0)], [(1, 0), (2, 2)], [(1, 1), (1, 2), (2, 0)]):
        model.set_pruned_heads({l - 1: [h for ll, h in pruned if ll == l] for l in (1, 2)})
        f = _predict(model, x)
        model.set_pruned_heads(None)
        np.testing.assert_allclose(contrib @ path_weights((3, 3), pruned), f, rtol=1e-4, atol=1e-6)
        assert accuracies_from_paths({"s": (contrib, y)}, (3, 3), pruned)["s"] == pytest.approx(
            float(np.mean(np.sign(f) == y))
        )


def test_evaluate_pruning_matches_forward_passes_of_the_pruned_network(data):
    from smattn.p1.images.pruning import drops_points, evaluate_pruning

    torch.manual_seed(4)
    model = AttentionPathsTransformer(2, 3, 8, 4, token_dim=16).eval()
    x, y = data
    sets = {"omniglot": (x[:32], y[:32]), "b": (x[32:], y[32:])}
    A = np.random.default_rng(0).standard_normal((9, 9))
    U = np.eye(9) + 0.3 * A @ A.T
    ev = evaluate_pruning(model, sets, U, (3, 3), _predict, n_random_orders=5, random_seed=1)
    assert ev.order == ascending(head_scores(U, (3, 3)))
    assert ev.steps == cumulative_sets(ev.order, (3, 3)) and len(ev.theory) == len(ev.steps) == 5
    assert ev.random["omniglot"].shape == (5, 5)
    for h in ev.order:  # one tie may flip between the path sum (float64) and the float32 forward pass
        fwd = pruned_accuracies(model, sets, [h], _predict)
        assert all(abs(ev.single[h][s] - fwd[s]) <= 1.5 / 32 for s in sets)
    for pruned, acc in zip(ev.steps, ev.theory):
        fwd = pruned_accuracies(model, sets, pruned, _predict)
        assert all(abs(acc[s] - fwd[s]) <= 1.5 / 32 for s in sets)
    gain = ev.gain_over_random("theory")
    assert gain["b"] == pytest.approx(np.mean([ev.theory[k]["b"] - ev.random["b"][:, k].mean() for k in range(1, 5)]))
    r = ev.as_json()
    assert r["cumulative"]["random_orders"] == 5 and r["order"][0] == head_label(ev.order[0])
    assert drops_points(r) == pytest.approx([100 * ev.drop_single(h) for h in ev.order])
    with pytest.raises(ValueError, match="does not belong"):
        evaluate_pruning(model, sets, np.eye(4), (2, 2), _predict, 1, 0)
