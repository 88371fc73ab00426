"""GD training: resumption reproduces an uninterrupted run, checkpoints load with weights_only=True, the best
validation model is kept, the export has the spec's layout."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from smattn.p1.images.tasks import TaskSampler
from smattn.p1.images.tokens import label_vectors, positional_encoding
from smattn.p1.images.training import (
    TrainConfig,
    accuracy,
    model_from_checkpoint,
    paper_train_config,
    train,
)


def _split(n_classes, seed):
    rng = np.random.default_rng(seed)
    tmpl = rng.integers(0, 256, size=(n_classes, 1, 32, 32))
    return np.clip(tmpl + rng.integers(-20, 21, size=(n_classes, 20, 32, 32)), 0, 255).astype(np.uint8)


@pytest.fixture(scope="module")
def setup():
    torch.set_num_threads(1)
    labels, pos = label_vectors(3), positional_encoding()
    sampler = TaskSampler(_split(12, 0), labels, pos)
    val = TaskSampler(_split(6, 1), labels, pos).sample(np.random.default_rng(5), 32)
    cfg = paper_train_config(
        2,
        4,
        width=8,
        qk_dim=4,
        epochs=2,
        tasks_per_epoch=24,
        batch=8,
        lr=1e-3,
        val_every=2,
        n_val=32,
        ckpt_every=2,
        seed=3,
    )
    return cfg, sampler, val


def test_resumed_training_equals_uninterrupted(tmp_path, setup):
    cfg, sampler, val = setup
    assert cfg.total_steps == 6
    full = train(cfg, sampler, val.x, val.y, tmp_path / "a.pt", progress=False)
    part = train(cfg, sampler, val.x, val.y, tmp_path / "b.pt", progress=False, stop_after=3)
    assert not part["done"] and part["step"] == 3
    resumed = train(cfg, sampler, val.x, val.y, tmp_path / "b.pt", progress=False)
    assert resumed["done"] and resumed["step"] == 6
    for k in full["model"]:
        assert torch.equal(full["model"][k], resumed["model"][k]), k
    assert full["history"]["loss"] == resumed["history"]["loss"]
    assert full["history"]["val_step"] == resumed["history"]["val_step"] == [0, 2, 4, 6]
    assert full["best_val_acc"] == resumed["best_val_acc"] == max(full["history"]["val_acc"])
    assert resumed["history"]["session_steps"] == [3, 3]
    # checkpoints load with weights_only=True and rebuild the selected model
    ck = torch.load(tmp_path / "b.pt", weights_only=True)
    m = model_from_checkpoint(ck)
    i = full["history"]["val_step"].index(full["best_step"])
    from smattn.p1.images.training import predict

    assert accuracy(predict(m, val.x), val.y) == full["history"]["val_acc"][i]
    # a finished run is not retrained
    again = train(cfg, sampler, val.x, val.y, tmp_path / "b.pt", progress=False)
    assert again["history"]["loss"] == resumed["history"]["loss"]


@pytest.mark.parametrize("change,match", [({"width": 16}, "checkpoint"), ({"value_init_gain": 2.0}, "value_init_gain")])
def test_checkpoint_of_another_model_is_rejected(tmp_path, setup, change, match):
    cfg, sampler, val = setup
    train(cfg, sampler, val.x, val.y, tmp_path / "c.pt", progress=False, stop_after=1)
    other = TrainConfig(**{**cfg.__dict__, **change})
    with pytest.raises(ValueError, match=match):
        train(other, sampler, val.x, val.y, tmp_path / "c.pt", progress=False)


def test_bad_config_is_named():
    with pytest.raises(ValueError, match="width"):
        paper_train_config(2, 4, width=0)
    with pytest.raises(ValueError, match="tasks_per_epoch"):
        paper_train_config(2, 4, tasks_per_epoch=10, batch=128)


def test_accuracy_counts_zero_as_wrong():
    assert accuracy(np.array([1.0, -2.0, 0.0, 3.0]), np.array([1.0, -1.0, 1.0, -1.0])) == 0.5


def test_value_init_gain_scales_only_the_value_weights():
    from smattn.p1.images.training import build_model

    base = paper_train_config(3, 3, width=8, qk_dim=4, seed=3)
    ref = build_model(base).state_dict()
    assert build_model(base).state_dict().keys() == ref.keys()
    for k, v in build_model(TrainConfig(**{**base.__dict__, "value_init_gain": 1.0})).state_dict().items():
        assert torch.equal(v, ref[k]), k  # gain 1 is exactly the PyTorch-default initialisation
    gained = build_model(TrainConfig(**{**base.__dict__, "value_init_gain": 3**0.5})).state_dict()
    for k, v in gained.items():
        if k.startswith("value."):
            assert torch.allclose(v, ref[k] * 3**0.5), k
        else:
            assert torch.equal(v, ref[k]), k
    with pytest.raises(ValueError, match="value_init_gain"):
        paper_train_config(2, 4, value_init_gain=0.0)
