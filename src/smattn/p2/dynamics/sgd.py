"""Plain SGD on the two-layer tied-attention target (P2 Fig. 2 right; spec §6.1).

Target and student are the L=2, T=2, r=1 deep attention network of spec §1.3 with skip strength ``c``:
for one sequence ``X`` (2 x d) and layer vectors ``v1, v2`` (d,), the indices are ``u = X v1 / sqrt(d)`` and
``w = X v2 / sqrt(d)`` (both shape (2,)), ``A = softmax_row(u u^T) + c I``, ``a = A w`` and the output is the
row-stochastic 2 x 2 matrix ``softmax_row(a a^T)``; it is carried by its two free entries ``(y01, y10)``.

Loss per mini-batch B: ``(1/d) sum_{mu in B} ||yhat_mu - y_mu||_F^2 = (2/d) sum_mu [(dy01)^2 + (dy10)^2]``.
Update (plain SGD, coupled L2): ``v <- v - lr * (grad + weight_decay * v)``; each batch is used for
``steps_per_batch`` consecutive steps, batches in a fixed order every epoch (no shuffling).

All independent runs share the teacher and the student initialisation and differ only in their data; they
are executed together as one batched program (leading run axis ``R``) inside ``jax.lax.scan``. The gradient
is the closed form of :func:`index_gradients` (checked against ``jax.grad`` in the tests).

Recorded after every batch visit: ``m_k = v_k . w*_k / d`` and ``q_k = |v_k|^2 / d`` (k = 1, 2), from which the
authors' metric ``C_k = m_k / sqrt(q_k)`` follows (not divided by the teacher norm; see
:func:`smattn.p2.trajectories.layer_cosines`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

from smattn.settings import Settings, scale_params, setting

__all__ = [
    "SGDConfig",
    "paper_sgd_config",
    "teacher_weights",
    "student_init",
    "attention_pair",
    "index_gradients",
    "batch_loss_and_grad",
    "make_dataset",
    "train_sgd",
]


@dataclass(frozen=True, kw_only=True)
class SGDConfig(Settings):
    """Parameters of the SGD experiment; the workflow's values are the ``sgd_*`` keys of config.yaml
    (:func:`paper_sgd_config` builds the paper scale). Fields without a config key keep the paper's values here."""

    d: int = setting(ge=1)
    alpha: float = setting(gt=0)
    n_runs: int = setting(ge=1)
    epochs: int = setting(ge=1)
    batch_size: int = setting(ge=1)
    steps_per_batch: int = setting(ge=1)
    lr: float = setting(gt=0)
    weight_decay_times_d: float = setting(ge=0)  # coupled L2 strength is weight_decay_times_d / d
    test_every: int = setting(ge=1)  # epochs between test-error evaluations
    seed: int  # data seed; run r uses an independent stream derived from (seed, r)
    dtype: str = setting(choices=("float32", "float64"))
    chunk_epochs: int = setting(ge=1)  # epochs per compiled call (progress reporting granularity)
    skip: float = setting(default=1.0, ge=0)
    n_test: int = setting(default=2000, ge=1)
    teacher_seeds: tuple[int, ...] = setting(default=(10, 20), length=2)
    student_seeds: tuple[int, ...] = setting(default=(42, 62), length=2)
    student_scale: float = setting(default=0.9, ge=0)

    def __post_init__(self):
        super().__post_init__()
        if self.n_train < 1:
            raise ValueError(f"SGDConfig: n = floor(alpha * d) = {self.n_train} must be >= 1")

    @property
    def n_train(self) -> int:
        return int(math.floor(self.alpha * self.d + 1e-9))

    @property
    def n_batches(self) -> int:
        """Batch visits per epoch (the last batch may be smaller)."""
        return -(-self.n_train // self.batch_size)

    @property
    def weight_decay(self) -> float:
        return self.weight_decay_times_d / self.d

    def as_dict(self) -> dict:
        out = asdict(self)
        out["teacher_seeds"] = list(self.teacher_seeds)
        out["student_seeds"] = list(self.student_seeds)
        out.update(n_train=self.n_train, n_batches=self.n_batches, weight_decay=self.weight_decay)
        return out


def paper_sgd_config(**overrides) -> SGDConfig:
    """SGDConfig with the paper-scale ``sgd_*`` values of config.yaml, then ``overrides`` (field names)."""
    p = scale_params("p2_dynamics", "paper")
    names = {"runs": "n_runs"}
    kw = {names.get(k[4:], k[4:]): v for k, v in p.items() if k.startswith("sgd_") and k != "sgd_epoch_axis"}
    return SGDConfig(**{**kw, **overrides})


# ----------------------------------------------------------------------------------------------------------
# fixed teacher and student initialisation (NumPy legacy generator, as in the authors' experiment)


def teacher_weights(d: int, seeds=(10, 20)) -> np.ndarray:
    """Teacher layers, shape (2, d): row k is legacy ``randn(d)`` after ``np.random.seed(seeds[k])``, float32."""
    rows = []
    for s in seeds:
        rng = np.random.RandomState(int(s))
        rows.append(rng.randn(d, 1).astype(np.float32)[:, 0])
    return np.stack(rows)


def student_init(d: int, seeds=(42, 62), scale: float = 0.9) -> np.ndarray:
    """Student initialisation, shape (2, d): ``scale * randn(d)`` after ``np.random.seed(seeds[k])``, float32."""
    rows = []
    for s in seeds:
        rng = np.random.RandomState(int(s))
        rows.append((scale * rng.randn(d, 1)).astype(np.float32)[:, 0])
    return np.stack(rows)


# ----------------------------------------------------------------------------------------------------------
# the network on its indices, and the closed-form gradient


def attention_pair(u, w, skip: float):
    """Free entries of the output of the two-layer attention network.

    u, w: arrays (..., 2): first- and last-layer indices of the two tokens. Returns ``(y01, y10)``, each (...,),
    the off-diagonal entries of ``softmax_row(a a^T)`` with ``a = (softmax_row(u u^T) + skip I) w``.
    Also returns the intermediates ``(p, q, a)`` used by :func:`index_gradients`.
    """
    import jax.numpy as jnp
    from jax.nn import sigmoid

    u1, u2 = u[..., 0], u[..., 1]
    w1, w2 = w[..., 0], w[..., 1]
    p = sigmoid(-u1 * (u1 - u2))  # first-layer attention of token 1 on token 2
    q = sigmoid(-u2 * (u2 - u1))  # of token 2 on token 1
    a1 = (1.0 + skip) * w1 + p * (w2 - w1)
    a2 = (1.0 + skip) * w2 + q * (w1 - w2)
    y01 = sigmoid(-a1 * (a1 - a2))
    y10 = sigmoid(-a2 * (a2 - a1))
    return (y01, y10), (p, q, jnp.stack([a1, a2], axis=-1))


def index_gradients(u, w, target01, target10, skip: float):
    """Per-sequence squared Frobenius error and its gradient with respect to the indices.

    u, w: (..., 2); target01, target10: (...,). Returns ``(err, g_u, g_w)`` with ``err`` (...,) equal to
    ``||yhat - y||_F^2 = 2[(y01 - t01)^2 + (y10 - t10)^2]`` and ``g_u = d err / d u``, ``g_w = d err / d w``,
    both (..., 2).
    """
    import jax.numpy as jnp

    (y01, y10), (p, q, a) = attention_pair(u, w, skip)
    a1, a2 = a[..., 0], a[..., 1]
    u1, u2 = u[..., 0], u[..., 1]
    w1, w2 = w[..., 0], w[..., 1]
    e01 = y01 - target01
    e10 = y10 - target10
    err = 2.0 * (e01 * e01 + e10 * e10)
    # d err / d logit of each sigmoid
    h01 = 4.0 * e01 * y01 * (1.0 - y01)  # logit01 = -a1 (a1 - a2)
    h10 = 4.0 * e10 * y10 * (1.0 - y10)  # logit10 = -a2 (a2 - a1)
    g_a1 = h01 * (a2 - 2.0 * a1) + h10 * a2
    g_a2 = h01 * a1 + h10 * (a1 - 2.0 * a2)
    # a1 = (1+c) w1 + p (w2 - w1); a2 = (1+c) w2 + q (w1 - w2)
    c1 = 1.0 + skip
    g_w1 = g_a1 * (c1 - p) + g_a2 * q
    g_w2 = g_a1 * p + g_a2 * (c1 - q)
    g_p = g_a1 * (w2 - w1)
    g_q = g_a2 * (w1 - w2)
    dp = p * (1.0 - p)  # p = sigmoid(-u1 (u1 - u2))
    dq = q * (1.0 - q)  # q = sigmoid(-u2 (u2 - u1))
    g_u1 = g_p * dp * (u2 - 2.0 * u1) + g_q * dq * u2
    g_u2 = g_p * dp * u1 + g_q * dq * (u1 - 2.0 * u2)
    return err, jnp.stack([g_u1, g_u2], axis=-1), jnp.stack([g_w1, g_w2], axis=-1)


def batch_loss_and_grad(V, X, T, mask, skip: float):
    """Mini-batch loss ``(1/d) sum_mu mask_mu ||yhat_mu - y_mu||_F^2`` and its gradient in V.

    V: (R, 2, d) student layers of R runs; X: (R, B, 2, d) sequences (tokens as rows); T: (R, B, 2) target
    entries (y01, y10); mask: (B,) 1 for real samples, 0 for padding. Returns loss (R,), grad (R, 2, d).
    """
    import jax.numpy as jnp

    d = X.shape[-1]
    scale = 1.0 / math.sqrt(d)
    Z = jnp.einsum("rbtd,rkd->rbkt", X, V) * scale  # (R, B, 2 layers, 2 tokens)
    err, g_u, g_w = index_gradients(Z[:, :, 0], Z[:, :, 1], T[..., 0], T[..., 1], skip)
    loss = jnp.einsum("rb,b->r", err, mask) / d
    G = jnp.stack([g_u, g_w], axis=2) * (mask[None, :, None, None] * (scale / d))  # (R, B, 2, 2)
    grad = jnp.einsum("rbkt,rbtd->rkd", G, X)
    return loss, grad


def _targets(W, X, skip: float):
    """Teacher outputs (y01, y10) for sequences X (..., 2, d) and teacher W (2, d): shape (..., 2)."""
    import jax.numpy as jnp

    d = X.shape[-1]
    Z = jnp.einsum("...td,kd->...kt", X, W) / math.sqrt(d)
    (y01, y10), _ = attention_pair(Z[..., 0, :], Z[..., 1, :], skip)
    return jnp.stack([y01, y10], axis=-1)


def make_dataset(key, W, n: int, batch_size: int, skip: float, dtype):
    """Gaussian sequences and teacher targets arranged in fixed batches.

    W: (2, d) teacher. Returns ``X`` (n_batches, B, 2, d), ``T`` (n_batches, B, 2), ``mask`` (n_batches, B);
    the last batch is zero-padded when ``batch_size`` does not divide ``n`` (mask 0 on the padding).
    """
    import jax
    import jax.numpy as jnp

    d = W.shape[1]
    nb = -(-n // batch_size)
    X = jax.random.normal(key, (n, 2, d), dtype=dtype)
    T = _targets(W.astype(dtype), X, skip)
    pad = nb * batch_size - n
    mask = jnp.concatenate([jnp.ones(n, dtype), jnp.zeros(pad, dtype)])
    X = jnp.concatenate([X, jnp.zeros((pad, 2, d), dtype)]).reshape(nb, batch_size, 2, d)
    T = jnp.concatenate([T, jnp.full((pad, 2), 0.5, dtype)]).reshape(nb, batch_size, 2)
    return X, T, mask.reshape(nb, batch_size)


def _run_keys(seed: int, n_runs: int):
    import jax

    base = jax.random.PRNGKey(int(seed))
    keys = [jax.random.fold_in(base, r) for r in range(n_runs)]
    return [jax.random.split(k, 2) for k in keys]  # (train key, test key) per run


def _make_epoch_chunk(n_epochs: int, steps_per_batch: int, lr: float, wd: float, skip: float, W):
    """Compiled function running ``n_epochs`` epochs: (V, X, T, mask) -> (V, records, batch losses)."""
    import jax
    import jax.numpy as jnp

    Wc = jnp.asarray(W)

    def visit(V, batch):
        Xb, Tb, mb = batch  # (R, B, 2, d), (R, B, 2), (B,)
        loss0 = None
        for s in range(steps_per_batch):
            loss, grad = batch_loss_and_grad(V, Xb, Tb, mb, skip)
            if s == 0:
                loss0 = loss
            V = V - lr * (grad + wd * V)
        d = V.shape[-1]
        m = jnp.einsum("rkd,kd->rk", V, Wc.astype(V.dtype)) / d
        q = jnp.einsum("rkd,rkd->rk", V, V) / d
        return V, (jnp.stack([m, q], axis=-1), loss0)  # (R, 2 layers, [m, q]), (R,)

    def epoch(V, data):
        X, T, mask = data
        return jax.lax.scan(visit, V, (X, T, mask))

    @jax.jit
    def chunk(V, X, T, mask):
        def body(V, _):
            return epoch(V, (X, T, mask))

        V, (rec, losses) = jax.lax.scan(body, V, None, length=n_epochs)
        return V, rec, losses  # rec (E, nb, R, 2, 2), losses (E, nb, R)

    return chunk


def train_sgd(cfg: SGDConfig, progress: Callable[[str], None] | None = print, data_override=None) -> dict:
    """Run ``cfg.n_runs`` independent SGD runs together; return the recorded trajectories.

    Returns a dict of NumPy arrays:
      ``m``, ``q``: (R, epochs * n_batches, 2) overlaps after every batch visit (last axis = layer 1, 2);
      ``m0``, ``q0``: (2,) at initialisation; ``train_loss``: (R, epochs) mean per-sample squared error
      ``||yhat - y||_F^2`` over the epoch (evaluated at the first step of each batch visit);
      ``test_epochs``: (K,), ``test_error``: (R, K) mean ``||yhat - y||_F^2`` on ``n_test`` fresh sequences;
      ``V``: (R, 2, d) final students; ``W``: (2, d) teacher; ``wall_s``: training wall time.
    ``data_override``, if given, is a list of (X, T, mask) per run (for tests).
    """
    import jax
    import jax.numpy as jnp

    if not isinstance(cfg, SGDConfig):
        raise TypeError(f"train_sgd expects an SGDConfig, got {type(cfg).__name__}")
    dtype = jnp.float32 if cfg.dtype == "float32" else jnp.float64
    if dtype == jnp.float64 and not jax.config.jax_enable_x64:
        raise RuntimeError("SGDConfig.dtype='float64' needs jax_enable_x64 (call smattn.device.jax_setup(x64=True))")
    d, R = cfg.d, cfg.n_runs
    W = jnp.asarray(teacher_weights(d, cfg.teacher_seeds), dtype)
    V0 = jnp.asarray(student_init(d, cfg.student_seeds, cfg.student_scale), dtype)

    if data_override is None:
        keys = _run_keys(cfg.seed, R)
        data = [make_dataset(k[0], W, cfg.n_train, cfg.batch_size, cfg.skip, dtype) for k in keys]
        tests = [make_dataset(k[1], W, cfg.n_test, cfg.n_test, cfg.skip, dtype) for k in keys]
    else:
        if len(data_override) != R:
            raise ValueError(f"data_override holds {len(data_override)} runs, cfg.n_runs is {R}")
        data = data_override
        tests = None
    X = jnp.stack([x for x, _, _ in data], axis=1)  # (nb, R, B, 2, d)
    T = jnp.stack([t for _, t, _ in data], axis=1)  # (nb, R, B, 2)
    mask = data[0][2]  # (nb, B), the same layout for every run
    if X.shape[0] != cfg.n_batches or X.shape[2] != cfg.batch_size:
        raise ValueError(f"data has {X.shape[0]} batches of {X.shape[2]}, expected {cfg.n_batches} of {cfg.batch_size}")
    if tests is not None:
        Xt = jnp.stack([x[0] for x, _, _ in tests])  # (R, n_test, 2, d)
        Tt = jnp.stack([t[0] for _, t, _ in tests])

    @jax.jit
    def test_error(V):
        Z = jnp.einsum("rbtd,rkd->rbkt", Xt, V) / math.sqrt(d)
        err, _, _ = index_gradients(Z[:, :, 0], Z[:, :, 1], Tt[..., 0], Tt[..., 1], cfg.skip)
        return err.mean(axis=1)

    V = jnp.broadcast_to(V0, (R, 2, d))
    recs, losses, test_ep, test_err = [], [], [], []
    done = 0
    chunks: dict[int, Callable] = {}
    t0 = time.perf_counter()
    if tests is not None:
        test_ep.append(0)
        test_err.append(np.asarray(test_error(V)))
    while done < cfg.epochs:
        n_ep = min(cfg.chunk_epochs, cfg.epochs - done)
        if n_ep not in chunks:
            chunks[n_ep] = _make_epoch_chunk(n_ep, cfg.steps_per_batch, cfg.lr, cfg.weight_decay, cfg.skip, W)
        V, rec, loss = chunks[n_ep](V, X, T, mask)
        rec = np.asarray(rec)
        if not np.all(np.isfinite(rec)):
            raise FloatingPointError(f"SGD diverged (non-finite overlaps) within epochs {done + 1}..{done + n_ep}")
        recs.append(rec)
        losses.append(np.asarray(loss))
        done += n_ep
        if tests is not None and (done % cfg.test_every == 0 or done == cfg.epochs):
            test_ep.append(done)
            test_err.append(np.asarray(test_error(V)))
        if progress is not None:
            C = rec[-1, -1, :, :, 0] / np.sqrt(rec[-1, -1, :, :, 1])
            progress(
                f"[sgd] epoch {done}/{cfg.epochs}  {time.perf_counter() - t0:.1f} s  "
                f"mean |C1|={np.abs(C[:, 0]).mean():.3f} |C2|={np.abs(C[:, 1]).mean():.3f}"
            )
    wall = time.perf_counter() - t0
    rec = np.concatenate(recs)  # (epochs, nb, R, 2, 2)
    rec = rec.reshape(-1, R, 2, 2).transpose(1, 0, 2, 3)  # (R, records, layer, [m, q])
    loss = np.concatenate(losses)  # (epochs, nb, R)
    W_np = np.asarray(W, np.float64)
    V0_np = np.asarray(V0, np.float64)
    out = {
        "m": rec[..., 0].astype(np.float64),
        "q": rec[..., 1].astype(np.float64),
        "m0": (V0_np * W_np).sum(1) / d,
        "q0": (V0_np * V0_np).sum(1) / d,
        "train_loss": (loss.sum(axis=1) * d / cfg.n_train).T.astype(np.float64),
        "V": np.asarray(V, np.float64),
        "W": W_np,
        "wall_s": wall,
    }
    if tests is not None:
        out["test_epochs"] = np.asarray(test_ep, np.float64)
        out["test_error"] = np.stack(test_err, axis=1).astype(np.float64)
    return out
