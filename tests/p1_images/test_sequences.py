"""Images -> tokens -> sequences (P1 spec §5.1-5.2): shapes, LayerNorm, positions, labels, splits, OOD sets."""

from __future__ import annotations

import numpy as np
import pytest

from smattn.p1.images import tokens as tk
from smattn.p1.images.tasks import TaskSampler, balanced_subset, ood_sequences


def test_patchify_order_and_channels():
    img = np.arange(32 * 32, dtype=np.float32).reshape(32, 32)
    p = tk.patchify(img)
    assert p.shape == (16, 192)
    # token 1 = grid row 0, grid column 1: pixels rows 0-7, columns 8-15; channel fastest (3 identical copies)
    assert np.array_equal(p[1, :3], [img[0, 8]] * 3)
    assert np.array_equal(p[1, 3:6], [img[0, 9]] * 3)
    assert p[1, 3 * 8] == img[1, 8]  # second row inside the patch
    assert p[4, 0] == img[8, 0]  # token 4 = grid row 1, column 0
    assert np.array_equal(p.reshape(16, 64, 3)[..., 0], p.reshape(16, 64, 3)[..., 2])


def test_layer_norm_is_per_patch_without_affine():
    rng = np.random.default_rng(0)
    t = rng.normal(3.0, 2.0, size=(5, 16, 192))
    n = tk.patch_layer_norm(t)
    assert np.allclose(n.mean(-1), 0, atol=1e-5)
    assert np.allclose(n.var(-1), 1 / (1 + 1e-5 / t.var(-1)), atol=1e-4)


def test_inversion_flips_the_normalised_patch():
    """Inverting the image flips the sign of every LayerNormed (non-constant) patch: the inversion matters."""
    rng = np.random.default_rng(1)
    img = rng.random((1, 105, 105)) > 0.8
    a = tk.image_tokens(tk.resize_uint8(img, invert=False), "omniglot")
    b = tk.image_tokens(tk.resize_uint8(img, invert=True), "omniglot")
    # equal up to the uint8 rounding of PIL's resize (amplified in low-contrast patches)
    assert np.corrcoef(a.ravel(), b.ravel())[0, 1] < -0.99


def test_resize_matches_pil_bilinear_and_rejects_bad_input():
    from PIL import Image

    rng = np.random.default_rng(2)
    img = rng.integers(0, 256, size=(2, 28, 28), dtype=np.uint8)
    out = tk.resize_uint8(img, invert=False)
    ref = np.asarray(Image.fromarray(img[1]).resize((32, 32), Image.BILINEAR))
    assert out.shape == (2, 32, 32) and out.dtype == np.uint8 and np.array_equal(out[1], ref)
    with pytest.raises(ValueError, match="shape"):
        tk.resize_uint8(img[0], invert=False)
    with pytest.raises(ValueError, match="dtype"):
        tk.resize_uint8(img.astype(np.float32), invert=False)


def test_positional_encoding_standardised():
    pe = tk.positional_encoding()
    assert pe.shape == (48, 192)
    assert abs(pe.mean()) < 1e-6 and abs(pe.std(ddof=1) - 1) < 1e-5
    raw = np.sin(5 * 10000.0 ** (-4 / 192))  # PE[5, 4] before standardisation
    p = np.arange(48)[:, None]
    f = 10000.0 ** (-np.arange(0, 192, 2) / 192)
    table = np.zeros((48, 192))
    table[:, 0::2], table[:, 1::2] = np.sin(p * f), np.cos(p * f)
    assert np.isclose(pe[5, 4], (raw - table.mean()) / (table.std(ddof=1) + 1e-6), atol=1e-6)


def _fake_split(n_classes, seed):
    """Classes whose drawings are noisy copies of a class template, so a class is recognisable."""
    rng = np.random.default_rng(seed)
    tmpl = rng.integers(0, 256, size=(n_classes, 1, 32, 32))
    noise = rng.integers(-20, 21, size=(n_classes, 20, 32, 32))
    return np.clip(tmpl + noise, 0, 255).astype(np.uint8)


def test_task_sampler_shapes_labels_and_balance():
    labels, pos = tk.label_vectors(42), tk.positional_encoding()
    imgs = _fake_split(30, 0)
    s = TaskSampler(imgs, labels, pos)
    b = s.sample(np.random.default_rng(0), 4000)
    assert b.x.shape == (4000, 48, 192) and b.x.dtype == np.float32
    assert set(np.unique(b.y)) == {-1.0, 1.0}
    assert abs(b.y.mean()) < 0.05  # labels balanced
    assert np.all(b.classes[:, 0] != b.classes[:, 1])
    assert b.classes.min() >= 0 and b.classes.max() < 30
    # the label vector added to each image: subtracting positions and label leaves a LayerNormed patch (mean 0)
    x0 = b.x - pos[None]
    for i in range(5):
        qtok = x0[i, 32:] - labels[2]
        assert np.allclose(qtok.mean(-1), 0, atol=1e-4)
        a_is_0 = np.allclose((x0[i, :16] - labels[0]).mean(-1), 0, atol=1e-4)
        a_is_1 = np.allclose((x0[i, :16] - labels[1]).mean(-1), 0, atol=1e-4)
        assert a_is_0 != a_is_1
        # the query is a drawing of the class whose context carries label 1 iff y = +1
        ctx_label_of_query_class = (0 if a_is_0 else 1) if b.query_class[i] == 0 else (1 if a_is_0 else 0)
        assert b.y[i] == (1.0 if ctx_label_of_query_class == 1 else -1.0)
    # deterministic given the generator
    b2 = s.sample(np.random.default_rng(0), 4000)
    assert np.array_equal(b.x, b2.x)


def test_task_sampler_rejects_bad_input():
    labels, pos = tk.label_vectors(0), tk.positional_encoding()
    with pytest.raises(ValueError, match="classes, drawings"):
        TaskSampler(np.zeros((3, 20, 28, 28), np.uint8), labels, pos)
    with pytest.raises(ValueError, match="at least 2 classes"):
        TaskSampler(np.zeros((1, 20, 32, 32), np.uint8), labels, pos)


def test_ood_sequences_layout():
    labels, pos = tk.label_vectors(7), tk.positional_encoding()
    rng = np.random.default_rng(3)
    tr = {c: rng.integers(0, 256, size=(50, 32, 32), dtype=np.uint8) for c in (0, 1)}
    te = {
        0: rng.integers(0, 256, size=(7, 32, 32), dtype=np.uint8),
        1: rng.integers(0, 256, size=(9, 32, 32), dtype=np.uint8),
    }
    x, y = ood_sequences(tr, te, "mnist", labels, pos)
    assert x.shape == (16, 48, 192)
    assert np.array_equal(y, np.r_[-np.ones(7), np.ones(9)])
    # sequence 8 = test image 1 of class 1, with training images 8 of class 0 (label e0) and of class 1 (label e1)
    exp = tk.image_tokens(np.stack([tr[0][8], tr[1][8], te[1][1]]), "mnist")
    assert np.allclose(x[8, :16], exp[0] + labels[0] + pos[:16], atol=1e-5)
    assert np.allclose(x[8, 16:32], exp[1] + labels[1] + pos[16:32], atol=1e-5)
    assert np.allclose(x[8, 32:], exp[2] + labels[2] + pos[32:], atol=1e-5)
    with pytest.raises(ValueError, match="training images"):
        ood_sequences({0: tr[0][:3], 1: tr[1][:3]}, te, "mnist", labels, pos)


def test_balanced_subset():
    y = np.array([1, -1, -1, 1, 1, -1, 1])
    assert list(balanced_subset(y, 4)) == [0, 3, 1, 2]
    with pytest.raises(ValueError, match="per label"):
        balanced_subset(y, 10)


def test_omniglot_split_has_no_test_class_in_training(raw_data, omniglot_zips):
    """The real Vinyals split from the raw zips: sizes 1028/172/423, disjoint, and sequences of the right shape."""
    from smattn.data import omniglot

    members = omniglot.list_classes(omniglot_zips)
    split = omniglot.vinyals_split(members)
    train, val, test = (set(split[k]) for k in ("train", "val", "test"))
    assert (len(train), len(val), len(test)) == (1028, 172, 423)
    assert not (train & test) and not (train & val) and not (val & test)
    # a few test classes end to end: zip -> inverted 105x105 -> 32x32 -> sequences
    imgs = omniglot.load_images(omniglot_zips, split["test"][:3], members)
    small = tk.resize_uint8(imgs.reshape(-1, 105, 105), invert=False).reshape(3, 20, 32, 32)
    assert small.mean() < 128  # inverted: mostly dark background
    b = TaskSampler(small, tk.label_vectors(42), tk.positional_encoding()).sample(np.random.default_rng(0), 8)
    assert b.x.shape == (8, 48, 192) and np.isfinite(b.x).all()
