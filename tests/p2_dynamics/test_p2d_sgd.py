"""SGD on the two-layer attention target: closed-form gradient, batching, fixed teacher/student, metrics."""

import math

import numpy as np
import pytest

from smattn.device import jax_setup

jax_setup(x64=True)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from smattn.p2 import trajectories  # noqa: E402
from smattn.p2.dynamics import sgd  # noqa: E402


def _reference_output(x_seq, v, skip):
    """Independent forward: explicit 2x2 row-softmax matrices, P2 Eq. 2 (X^(1) = (cI + S1) X, f = S2)."""
    d = x_seq.shape[-1]
    h1 = x_seq @ v[0] / jnp.sqrt(d)  # (2,)
    S1 = jax.nn.softmax(jnp.outer(h1, h1), axis=-1)
    X1 = (skip * jnp.eye(2) + S1) @ x_seq
    h2 = X1 @ v[1] / jnp.sqrt(d)
    return jax.nn.softmax(jnp.outer(h2, h2), axis=-1)


def _reference_loss(V, X, Y, mask, skip):
    d = X.shape[-1]
    out = jax.vmap(lambda x: _reference_output(x, V, skip))(X)
    return jnp.sum(mask[:, None, None] * (out - Y) ** 2) / d


def _random_problem(seed=0, B=7, d=13, skip=1.0):
    rng = np.random.default_rng(seed)
    X = jnp.asarray(rng.standard_normal((B, 2, d)))
    Wt = jnp.asarray(rng.standard_normal((2, d)))
    V = jnp.asarray(rng.standard_normal((2, d)) * 1.3)
    Y = jax.vmap(lambda x: _reference_output(x, Wt, skip))(X)
    mask = jnp.asarray(np.r_[np.ones(B - 2), np.zeros(2)])
    return X, Wt, V, Y, mask


@pytest.mark.parametrize("skip", [1.0, 0.3])
def test_forward_matches_explicit_softmax(skip):
    X, Wt, V, Y, _ = _random_problem(skip=skip)
    d = X.shape[-1]
    Z = jnp.einsum("btd,kd->bkt", X, V) / math.sqrt(d)
    (y01, y10), _ = sgd.attention_pair(Z[:, 0], Z[:, 1], skip)
    ref = jax.vmap(lambda x: _reference_output(x, V, skip))(X)
    np.testing.assert_allclose(y01, ref[:, 0, 1], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(y10, ref[:, 1, 0], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ref.sum(-1), 1.0, atol=1e-14)  # row-stochastic


@pytest.mark.parametrize("skip", [1.0, 0.3])
def test_index_gradients_match_autodiff(skip):
    rng = np.random.default_rng(3)
    u = jnp.asarray(rng.standard_normal((50, 2)) * 1.5)
    w = jnp.asarray(rng.standard_normal((50, 2)) * 1.5)
    t01 = jnp.asarray(rng.uniform(0.05, 0.95, 50))
    t10 = jnp.asarray(rng.uniform(0.05, 0.95, 50))

    def err_sum(u, w):
        (y01, y10), _ = sgd.attention_pair(u, w, skip)
        return jnp.sum(2 * (y01 - t01) ** 2 + 2 * (y10 - t10) ** 2)

    err, g_u, g_w = sgd.index_gradients(u, w, t01, t10, skip)
    au, aw = jax.grad(err_sum, argnums=(0, 1))(u, w)
    assert float(err.sum()) == pytest.approx(float(err_sum(u, w)), rel=1e-13)
    np.testing.assert_allclose(g_u, au, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(g_w, aw, rtol=1e-10, atol=1e-13)


def test_batch_gradient_matches_autodiff_and_finite_differences():
    skip = 1.0
    X, Wt, V, Y, mask = _random_problem(seed=5)
    T = jnp.stack([Y[:, 0, 1], Y[:, 1, 0]], axis=-1)
    T = T + 0.05  # move the targets away from the teacher so the gradient is not ~0
    Yshift = jnp.stack([jnp.stack([1 - T[:, 0], T[:, 0]], -1), jnp.stack([T[:, 1], 1 - T[:, 1]], -1)], axis=1)
    loss, grad = sgd.batch_loss_and_grad(V[None], X[None], T[None], mask, skip)
    ref_loss = _reference_loss(V, X, Yshift, mask, skip)
    ref_grad = jax.grad(_reference_loss)(V, X, Yshift, mask, skip)
    assert float(loss[0]) == pytest.approx(float(ref_loss), rel=1e-12)
    np.testing.assert_allclose(grad[0], ref_grad, rtol=1e-9, atol=1e-13)
    # central finite differences along a few coordinates
    h = 1e-6
    for k, i in [(0, 0), (0, 5), (1, 3), (1, 12)]:
        e = jnp.zeros_like(V).at[k, i].set(h)
        fd = (_reference_loss(V + e, X, Yshift, mask, skip) - _reference_loss(V - e, X, Yshift, mask, skip)) / (2 * h)
        assert float(grad[0, k, i]) == pytest.approx(float(fd), rel=1e-5, abs=1e-9)
    # masked (padding) samples contribute nothing
    X2 = X.at[-1].set(X[-1] * 7.0)
    _, grad2 = sgd.batch_loss_and_grad(V[None], X2[None], T[None], mask, skip)
    np.testing.assert_allclose(grad2, grad, rtol=1e-12, atol=1e-15)


def test_fixed_teacher_and_student_are_the_authors_draws():
    """Overlaps of the authors' seeded teacher and student draws at d = 500 (docs/p2_dynamics.md#sgd): regression
    pins of numbers this code produced; the independent check that the draws are the authors' is
    test_first_visit_and_plateau_match_the_published_traces (their runs' first record)."""
    W = sgd.teacher_weights(500).astype(np.float64)
    V0 = sgd.student_init(500).astype(np.float64)
    d = 500
    assert (W[0] @ W[0]) / d == pytest.approx(0.8950, abs=1e-4)
    assert (W[1] @ W[1]) / d == pytest.approx(0.9567, abs=1e-4)
    assert (W[0] @ W[1]) / d == pytest.approx(0.0594, abs=1e-4)
    q0 = (V0 * V0).sum(1) / d
    np.testing.assert_allclose(q0, [0.778, 0.706], atol=1e-3)
    C0 = trajectories.layer_cosines((V0 * W).sum(1) / d, q0)
    np.testing.assert_allclose(C0, [0.008, -0.011], atol=1e-3)


def _tiny_cfg(**kw):
    base = dict(
        d=24,
        alpha=3.0,
        n_runs=3,
        epochs=3,
        batch_size=16,
        steps_per_batch=3,
        lr=2.0,
        weight_decay_times_d=0.07,
        n_test=20,
        test_every=1,
        seed=11,
        dtype="float64",
        chunk_epochs=2,
    )
    base.update(kw)
    return sgd.SGDConfig(**base)


def test_vectorised_runs_equal_independent_single_runs():
    cfg = _tiny_cfg()
    assert cfg.n_train == 72 and cfg.n_batches == 5  # last batch padded (8 real samples)
    W = jnp.asarray(sgd.teacher_weights(cfg.d), jnp.float64)
    keys = jax.random.split(jax.random.PRNGKey(4), cfg.n_runs)
    data = [sgd.make_dataset(k, W, cfg.n_train, cfg.batch_size, cfg.skip, jnp.float64) for k in keys]
    batched = sgd.train_sgd(cfg, progress=None, data_override=data)
    assert batched["m"].shape == (3, cfg.epochs * cfg.n_batches, 2)
    for r in range(cfg.n_runs):
        single = sgd.train_sgd(_tiny_cfg(n_runs=1), progress=None, data_override=[data[r]])
        np.testing.assert_allclose(batched["m"][r], single["m"][0], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(batched["q"][r], single["q"][0], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(batched["V"][r], single["V"][0], rtol=1e-12, atol=1e-14)
    # the runs differ (different data) and chunking does not change the trajectory
    assert not np.allclose(batched["m"][0], batched["m"][1])
    one_chunk = sgd.train_sgd(_tiny_cfg(chunk_epochs=3), progress=None, data_override=data)
    np.testing.assert_allclose(one_chunk["m"], batched["m"], rtol=1e-12, atol=1e-14)


def test_one_visit_equals_sgd_steps_on_the_autodiff_gradient():
    """One batch visit of train_sgd equals steps_per_batch plain SGD steps with coupled L2 decay taken on the
    gradient that jax.grad gives for the loss of an independently written forward (explicit 2 x 2 softmax
    matrices, P2 Eq. 2). Mutations caught: decoupled instead of coupled decay, a mean instead of a sum over the
    batch, a missing 1/d, one step per visit instead of three."""
    cfg = _tiny_cfg(n_runs=1, epochs=1, alpha=16 / 24, batch_size=16)  # a single batch
    W = jnp.asarray(sgd.teacher_weights(cfg.d), jnp.float64)
    X, T, mask = sgd.make_dataset(jax.random.PRNGKey(0), W, cfg.n_train, cfg.batch_size, cfg.skip, jnp.float64)
    out = sgd.train_sgd(cfg, progress=None, data_override=[(X, T, mask)])
    Y = jax.vmap(lambda x: _reference_output(x, W, cfg.skip))(X[0])  # the teacher's full 2 x 2 outputs
    grad = jax.grad(_reference_loss)
    V = jnp.asarray(sgd.student_init(cfg.d), jnp.float64)
    V0 = V
    for _ in range(3):  # the paper's three steps per batch visit
        V = V - cfg.lr * (grad(V, X[0], Y, mask[0], cfg.skip) + cfg.weight_decay * V)
    assert float(jnp.abs(V - V0).max()) > 1e-3  # the steps move the student
    np.testing.assert_allclose(out["V"][0], V, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(out["m"][0, 0], (np.asarray(V) * np.asarray(W)).sum(1) / cfg.d, rtol=1e-10)
    np.testing.assert_allclose(out["q"][0, 0], (np.asarray(V) ** 2).sum(1) / cfg.d, rtol=1e-10)


def test_training_decreases_loss_and_test_error():
    cfg = _tiny_cfg(d=40, alpha=10.0, n_runs=2, epochs=6, lr=5.0, chunk_epochs=3, test_every=3, n_test=200)
    out = sgd.train_sgd(cfg, progress=None)
    assert out["train_loss"].shape == (2, 6)
    assert np.all(out["train_loss"][:, -1] < out["train_loss"][:, 0])
    assert out["test_epochs"].tolist() == [0, 3, 6]
    assert np.all(out["test_error"][:, -1] < out["test_error"][:, 0])


def test_metrics_on_known_arrays():
    C = np.array([[0.0, -0.1, -0.3, -0.6, -0.8], [0.1, 0.2, 0.5, 0.9, 1.0]])
    S = trajectories.sign_corrected(C)
    np.testing.assert_allclose(S[0], [0.0, 0.1, 0.3, 0.6, 0.8])
    np.testing.assert_array_equal(trajectories.first_crossing(S, 0.5), [3, 2])
    with pytest.raises(ValueError, match="final value"):
        trajectories.first_crossing(C, 0.5)
    S = np.array([0.6, 0.62, 0.75, 0.81, 1.0])  # half of the rise 0.6 -> 1.0 is 0.8
    assert int(trajectories.first_crossing(S, 0.5, from_start=True)) == 3
    assert int(trajectories.first_crossing(S, 0.5)) == 0
    with pytest.raises(ValueError, match="exceed its first|exceed the first"):
        trajectories.first_crossing(np.array([1.0, 0.5, 0.9]), 0.5, from_start=True)
    np.testing.assert_allclose(trajectories.layer_cosines([0.5], [0.25]), [1.0])
    np.testing.assert_allclose(trajectories.layer_cosines([0.5], [0.25], teacher_sq_norm=4.0), [0.5])
    with pytest.raises(ValueError, match="q must be"):
        trajectories.layer_cosines([0.5], [0.0])


@pytest.mark.parametrize(
    "kw,msg",
    [
        ({"d": 0}, "d must"),
        ({"lr": -1.0}, "lr must"),
        ({"dtype": "float16"}, "dtype"),
        ({"alpha": 0.0001}, "alpha must|n = floor"),
    ],
)
def test_bad_config_is_rejected(kw, msg):
    with pytest.raises(ValueError, match=msg):
        _tiny_cfg(**kw)


def test_metrics_reproduce_the_published_trace_crossings(raw_data):
    """The mean of the published sign-corrected traces reaches 50% of its plateau at records 82 (C_2)
    and 1442 (C_1); final C_2 0.9756-0.9761 per run. Regression pins of this code's reading of the traces; the
    crossing itself is checked on hand-made arrays in test_metrics_on_known_arrays."""
    ref = raw_data / "reference" / "spoc"
    C1 = trajectories.sign_corrected(np.load(ref / "C1_random.npy"))
    C2 = trajectories.sign_corrected(np.load(ref / "C2_random.npy"))
    assert int(trajectories.first_crossing(C2.mean(0), 0.5)) == 82
    assert int(trajectories.first_crossing(C1.mean(0), 0.5)) == 1442
    assert np.all((C2[:, -1] > 0.9755) & (C2[:, -1] < 0.9762))


@pytest.fixture(scope="module")
def paper_size_runs(raw_data):
    """(Its tests share an xdist group: one worker builds it, 12 s.) 4 of our SGD runs at the paper's sizes (d = 500,
    alpha = 15, lr 15, batch 200 x 3 steps, float32 like the authors) for 10 epochs, and the authors' 8 published runs:
    C (layer, run, record) of each, and the teacher norm |w_2|/sqrt(d)."""
    ref = raw_data / "reference" / "spoc"
    published = np.stack([np.load(ref / "C1_random.npy"), np.load(ref / "C2_random.npy")])
    cfg = sgd.paper_sgd_config(n_runs=4, epochs=10, chunk_epochs=10, test_every=10, dtype="float32")
    out = sgd.train_sgd(cfg, progress=None)
    ours = trajectories.layer_cosines(out["m"], out["q"]).transpose(2, 0, 1)
    return ours, published, float(np.sqrt((out["W"][1] ** 2).sum() / cfg.d))


def _within_3_se(ours, theirs):
    """|mean difference| <= 3 combined standard errors (run-to-run spread of each side)."""
    se = np.hypot(ours.std(ddof=1) / np.sqrt(len(ours)), theirs.std(ddof=1) / np.sqrt(len(theirs)))
    assert abs(ours.mean() - theirs.mean()) <= 3.0 * se, (ours.mean(), theirs.mean(), se)


@pytest.mark.published
@pytest.mark.xdist_group("paper_size_runs")
def test_first_record_matches_the_published_traces(paper_size_runs):
    """After the first batch visit, C_1 and C_2 (signed) equal the authors' (C1_random.npy, C2_random.npy) within 3
    combined standard errors: both start from the same seeded teacher and student, so this checks the draws and
    the first steps (another seed moves C by ~1/sqrt(d) = 0.045, about 100 standard errors). Mutations caught:
    teacher seeds swapped; student seed 43 instead of 42."""
    ours, published, _ = paper_size_runs
    for layer in range(2):
        _within_3_se(ours[layer, :, 0], published[layer, :, 0])


@pytest.mark.published
@pytest.mark.xdist_group("paper_size_runs")
def test_plateau_matches_the_published_traces(paper_size_runs):
    """After 10 epochs the sign-corrected C_2 has reached the authors' plateau at the same record (3 combined
    standard errors, run-to-run spread of our 4 and their 8 runs) and obeys the Cauchy-Schwarz bound
    C_2 = v.w/(|v| sqrt(d)) <= |w_2|/sqrt(d) (the n -> infinity plateau, 0.978). Mutations caught: C = m/q
    instead of m/sqrt(q); two steps per batch visit instead of three; teacher seeds swapped."""
    ours, published, bound = paper_size_runs
    last = ours.shape[-1] - 1  # record 379: 10 epochs of 38 visits
    C2 = trajectories.sign_corrected(ours[1])[:, last]
    _within_3_se(C2, trajectories.sign_corrected(published[1])[:, last])
    assert np.all(C2 <= bound) and bound == pytest.approx(0.978, abs=1e-3)


@pytest.mark.published
@pytest.mark.xdist_group("paper_size_runs")
def test_last_layer_learning_speed_matches_the_published_traces(paper_size_runs):
    """The speed of learning: the true epoch at which a run's sign-corrected C_2 first reaches half its value after
    10 epochs (record 379; the published C_2 has plateaued there, test_plateau_matches_the_published_traces) equals
    the authors' (C2_random.npy read to the same record, 8 runs) within 3 combined standard errors (run-to-run
    spread of our 4 and their 8 runs). Same seeded teacher and student, same learning rate, batches and steps per
    visit; only the Gaussian inputs differ. The tolerance resolves a doubled half-way time (3 se below the
    published mean), which the two tests above do not see.
    Mutation checked: sgd_lr 7.5 instead of 15 in config.yaml (the config paper_sgd_config reads) fails it: our
    half-way times 4.53, 4.66, 4.21, 3.71 true epochs (mean 4.28) against the authors' 2.32, 5.7 combined standard
    errors apart; the first-record and plateau tests pass with that mutation. At lr 15 ours are 2.79, 1.95, 2.18,
    1.68 (mean 2.15, 0.5 combined standard errors from the authors')."""
    ours, published, _ = paper_size_runs
    last = ours.shape[-1] - 1
    per_epoch = 38  # batch visits per epoch, ours and the authors' (7500 samples in batches of 200)
    half_ours = (trajectories.first_crossing(trajectories.sign_corrected(ours[1]), 0.5) + 1) / per_epoch
    theirs = trajectories.sign_corrected(published[1])[:, : last + 1]
    half_theirs = (trajectories.first_crossing(theirs, 0.5) + 1) / per_epoch
    se = np.hypot(half_ours.std(ddof=1) / np.sqrt(len(half_ours)), half_theirs.std(ddof=1) / np.sqrt(len(half_theirs)))
    assert 3.0 * se < half_theirs.mean()  # resolution: a halved learning rate (doubled time) lies outside
    _within_3_se(half_ours, half_theirs)
