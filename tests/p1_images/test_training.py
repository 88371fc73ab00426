"""GD training: resumption reproduces an uninterrupted run, checkpoints load with weights_only=True, the best
validation model is kept, the export has the documented layout."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from smattn.p1.images.tasks import TaskSampler
from smattn.p1.images.tokens import label_vectors, positional_encoding
from smattn.p1.images.training import (
    TrainConfig,
    accuracy,
    learning_rate,
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
    val = TaskSampler(_split(6, 1), labels, pos).task_set(np.random.default_rng(5), 32)
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
        sync_every=2,
        ckpt_minutes=0.0,
        seed=3,
        precision="fp32",
        compile=False,
    )
    return cfg, sampler, val


def test_resumed_training_equals_uninterrupted(tmp_path, setup):
    cfg, sampler, val = setup
    assert cfg.total_steps == 6
    full = train(cfg, sampler, val, tmp_path / "a.pt", progress=False)
    part = train(cfg, sampler, val, tmp_path / "b.pt", progress=False, stop_after=3)
    assert not part["done"] and part["step"] == 3
    resumed = train(cfg, sampler, val, tmp_path / "b.pt", progress=False)
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

    assert accuracy(predict(m, val.x()), val.y) == full["history"]["val_acc"][i]
    # a finished run is returned as it is only when asked
    again = train(cfg, sampler, val, tmp_path / "b.pt", progress=False, reuse_finished=True)
    assert again["history"]["loss"] == resumed["history"]["loss"]
    assert again["history"]["session_steps"] == [3, 3, 0]


def test_checkpoints_follow_wall_time_and_do_not_change_the_state_key(tmp_path, setup, monkeypatch):
    """A checkpoint is written at the first sync point after ``ckpt_minutes`` of wall time, and at the end; the
    cadence settings leave the trained model and the state key unchanged (mutation: checkpointing at every sync
    regardless of the clock writes 3 intermediate checkpoints where 1 is expected below)."""
    import dataclasses

    from smattn.p1.images import training

    cfg, sampler, val = setup
    written = []
    real_save = training.save_checkpoint
    monkeypatch.setattr(training, "save_checkpoint", lambda ck, path: (written.append(ck["step"]), real_save(ck, path)))
    clock = iter(range(0, 10_000, 40))  # each read of the clock advances it by 40 s
    monkeypatch.setattr(training.time, "monotonic", lambda: float(next(clock)))
    # syncs at steps 2, 4, 6 read the clock at 40, 80, 120 s after the start (0 s): with 1.1 minutes between
    # checkpoints only the sync at step 4 (80 s) qualifies; the next would need 146 s; the end writes one more
    slow = dataclasses.replace(cfg, ckpt_minutes=1.1)
    done = training.train(slow, sampler, val, tmp_path / "s.pt", progress=False)
    assert written == [4, 6] and done["done"]
    written.clear()
    every = dataclasses.replace(cfg, ckpt_minutes=0.0, sync_every=3)
    other = training.train(every, sampler, val, tmp_path / "e.pt", progress=False)
    assert written == [3, 6, 6]  # every sync point, then the end
    for k in done["model"]:
        assert torch.equal(done["model"][k], other["model"][k]), k
    assert training.state_key(slow, "abc", "1") == training.state_key(every, "abc", "1")
    assert training.state_key(slow, "abc", "1") != training.state_key(dataclasses.replace(slow, seed=4), "abc", "1")


def test_warmup_cosine_schedule_shape():
    cfg = paper_train_config(
        2, 4, lr=2e-3, max_steps=1000, lr_schedule="warmup_cosine", warmup_steps=100, min_lr=1e-5, batch=128
    )
    lrs = np.array([learning_rate(cfg, s) for s in range(cfg.total_steps)])
    assert lrs[0] == pytest.approx(2e-3 / 100) and lrs[99] == pytest.approx(2e-3)
    assert np.all(np.diff(lrs[:100]) > 0)  # linear rise
    assert lrs[100] == pytest.approx(2e-3) and lrs[-1] == pytest.approx(1e-5)
    assert np.all(np.diff(lrs[100:]) < 0)  # half cosine down
    mid = 100 + (999 - 100) / 2  # half way down the cosine: the mean of lr and min_lr
    assert learning_rate(cfg, int(mid)) == pytest.approx(0.5 * (2e-3 + 1e-5), rel=1e-2)
    const = paper_train_config(2, 4, lr=3e-4, max_steps=1000)
    assert const.lr_schedule == "constant"
    assert {learning_rate(const, s) for s in (0, 10, 999)} == {3e-4}


def test_bad_schedule_is_named():
    with pytest.raises(ValueError, match="warmup_steps"):
        paper_train_config(2, 4, max_steps=100, lr_schedule="warmup_cosine", warmup_steps=100)
    with pytest.raises(ValueError, match="min_lr"):
        paper_train_config(2, 4, lr=1e-4, lr_schedule="warmup_cosine", min_lr=1e-3)
    with pytest.raises(ValueError, match="lr_schedule"):
        paper_train_config(2, 4, lr_schedule="step")


def test_scheduled_training_resumes_exactly(tmp_path, setup):
    cfg, sampler, val = setup
    cfg = TrainConfig(**{**cfg.__dict__, "lr_schedule": "warmup_cosine", "warmup_steps": 2, "min_lr": 1e-5})
    full = train(cfg, sampler, val, tmp_path / "s.pt", progress=False)
    train(cfg, sampler, val, tmp_path / "t.pt", progress=False, stop_after=3)
    resumed = train(cfg, sampler, val, tmp_path / "t.pt", progress=False)
    for k in full["model"]:
        assert torch.equal(full["model"][k], resumed["model"][k]), k
    # the schedule changes the trajectory
    constant = TrainConfig(**{**cfg.__dict__, "lr_schedule": "constant"})
    plain = train(constant, sampler, val, tmp_path / "u.pt", progress=False)
    assert plain["history"]["loss"][1:] != full["history"]["loss"][1:]


@pytest.mark.parametrize(
    "change,match",
    [
        ({"width": 16}, "checkpoint"),
        ({"value_init_gain": 2.0}, "value_init_gain"),
        ({"lr_schedule": "warmup_cosine", "warmup_steps": 1}, "schedule"),
    ],
)
def test_checkpoint_of_another_model_is_rejected(tmp_path, setup, change, match):
    cfg, sampler, val = setup
    train(cfg, sampler, val, tmp_path / "c.pt", progress=False, stop_after=1)
    other = TrainConfig(**{**cfg.__dict__, **change})
    with pytest.raises(ValueError, match=match):
        train(other, sampler, val, tmp_path / "c.pt", progress=False)


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


def test_finished_state_is_not_reused_unless_asked(tmp_path, setup):
    cfg, sampler, val = setup
    first = train(cfg, sampler, val, tmp_path / "d.pt", progress=False)
    assert first["done"] and first["history"]["session_steps"] == [6]
    again = train(cfg, sampler, val, tmp_path / "d.pt", progress=False)  # trained again from step 0
    assert again["history"]["session_steps"] == [6] and again["history"]["step"] == list(range(6))
    assert again["history"]["loss"] == first["history"]["loss"]  # deterministic


def test_new_loop_reproduces_the_original_loop_bit_for_bit(tmp_path, setup):
    """The device-side task stream, the deferred loss read and the shared step give the very weights and losses of
    the original loop (tasks drawn on the host per batch, their TokenFeatures built there, loss read every step) at
    fp32, with the same loss function (its equality with the MSE of ``forward`` is tested in float64 elsewhere)."""
    from smattn.p1.images.features import assemble_features, patch_values
    from smattn.p1.images.training import build_model

    cfg, sampler, val = setup
    values = torch.from_numpy(patch_values(sampler.tokens))
    labels, positions = torch.from_numpy(sampler.labels), torch.from_numpy(sampler.positions)
    new = train(cfg, sampler, val, tmp_path / "e.pt", progress=False)
    model = build_model(cfg)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, betas=(0.9, 0.999), weight_decay=cfg.weight_decay)
    model.train()
    losses = []
    for s in range(cfg.total_steps):
        d = sampler.draw(np.random.default_rng([cfg.seed, s]), cfg.batch)
        image, label = torch.from_numpy(d.image_index(sampler.n_drawings)), torch.from_numpy(d.label_index())
        x = assemble_features(values, image, label, labels, positions)
        opt.zero_grad(set_to_none=True)
        loss = model.squared_error(x, torch.from_numpy(d.targets()))  # = MSELoss of model(x) (test_model.py)
        loss.backward()
        opt.step()
        losses.append(float(loss.item()))
    assert new["history"]["loss"] == losses
    for k, v in model.state_dict().items():
        assert torch.equal(new["model"][k], v), k


def test_state_key_covers_settings_data_and_version(setup):
    from smattn.p1.images.training import state_key

    cfg = setup[0]
    k = state_key(cfg, "aa", "0.1.0")
    assert k == state_key(TrainConfig(**cfg.__dict__), "aa", "0.1.0") and len(k) == 12
    assert (
        len(
            {
                k,
                state_key(cfg, "ab", "0.1.0"),
                state_key(cfg, "aa", "0.1.1"),
                state_key(TrainConfig(**{**cfg.__dict__, "lr": 2e-3}), "aa", "0.1.0"),
                state_key(TrainConfig(**{**cfg.__dict__, "precision": "fp16"}), "aa", "0.1.0"),
            }
        )
        == 5
    )


def test_failed_checkpoint_write_leaves_no_temporary_file(tmp_path, setup, monkeypatch):
    from smattn.p1.images import training

    cfg, sampler, val = setup
    train(cfg, sampler, val, tmp_path / "f.pt", progress=False, stop_after=2)
    before = (tmp_path / "f.pt").read_bytes()

    def broken_save(obj, f):
        Path(f).write_bytes(b"half a checkpoint")
        raise OSError("disk full")

    monkeypatch.setattr(training.torch, "save", broken_save)
    with pytest.raises(OSError, match="disk full"):
        train(cfg, sampler, val, tmp_path / "f.pt", progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.pt"]
    assert (tmp_path / "f.pt").read_bytes() == before


def test_non_finite_loss_stops_with_the_checkpoint_untouched(tmp_path, setup):
    cfg, sampler, val = setup
    train(cfg, sampler, val, tmp_path / "g.pt", progress=False, stop_after=2)
    before = (tmp_path / "g.pt").read_bytes()
    labels, pos = label_vectors(3), positional_encoding()
    poisoned = TaskSampler(_split(12, 0), labels, pos)
    poisoned.tokens[:] = np.nan
    with pytest.raises(FloatingPointError, match="at step 2"):
        train(cfg, poisoned, val, tmp_path / "g.pt", progress=False)
    assert (tmp_path / "g.pt").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.pt"]


@pytest.mark.parametrize("precision", ["tf32", "bf16", "fp16"])
def test_precisions_train_and_resume(tmp_path, setup, precision):
    cfg, sampler, val = setup
    cfg = TrainConfig(**{**cfg.__dict__, "precision": precision})
    full = train(cfg, sampler, val, tmp_path / "h.pt", progress=False)
    assert full["done"] and all(np.isfinite(full["history"]["loss"]))
    if precision == "tf32":  # no TF32 on a CPU: exactly fp32
        ref = train(
            TrainConfig(**{**cfg.__dict__, "precision": "fp32"}), sampler, val, tmp_path / "i.pt", progress=False
        )
        assert ref["history"]["loss"] == full["history"]["loss"]
    if precision == "fp16":
        assert full["scaler"]["scale"] > 0  # the gradient scaler is active and checkpointed
    train(cfg, sampler, val, tmp_path / "j.pt", progress=False, stop_after=3)
    resumed = train(cfg, sampler, val, tmp_path / "j.pt", progress=False)
    assert resumed["history"]["loss"] == full["history"]["loss"]
    with pytest.raises(ValueError, match="precision"):
        paper_train_config(2, 4, precision="fp8")


@pytest.fixture(scope="module")
def learning_setup(setup):
    """Tasks over 12 synthetic classes (a template per class plus pixel noise, see ``_split``) and a fixed set of
    256 held-out task draws of the same classes; a small L2H4 network, batch 32, lr 3e-3, 60 steps."""
    cfg, sampler, _ = setup
    fixed = sampler.task_set(np.random.default_rng(5), 256)
    change = dict(width=16, qk_dim=8, tasks_per_epoch=100_000, batch=32, lr=3e-3, max_steps=60, n_val=256)
    return TrainConfig(**{**cfg.__dict__, **change, "val_every": 60, "sync_every": 20}), sampler, fixed


def test_short_training_beats_chance(tmp_path, learning_setup):
    """60 Adam steps take the network from chance to well above it on a fixed task set: the accuracy must exceed
    chance by 5 binomial standard errors of 256 tasks (0.5 + 5 * 0.031 = 0.656). Fails when the optimiser does not
    step (e.g. ``scaler.step`` skipped) or the loss does not reach the weights."""
    cfg, sampler, fixed = learning_setup
    ck = train(cfg, sampler, fixed, tmp_path / "l.pt", progress=False)
    assert ck["history"]["val_step"] == [0, 60]
    start, end = ck["history"]["val_acc"]
    margin = 0.5 + 5 * np.sqrt(0.25 / len(fixed))
    assert abs(start - 0.5) < 5 * np.sqrt(0.25 / len(fixed))  # untrained: chance
    assert end > margin, f"accuracy {end:.3f} after {cfg.total_steps} steps, needs > {margin:.3f}"
    assert np.mean(ck["history"]["loss"][-10:]) < 0.5 * np.mean(ck["history"]["loss"][:10])


@pytest.mark.parametrize("precision,rtol", [("bf16", 0.02), ("fp16", 0.002)])
def test_reduced_precision_losses_follow_fp32(tmp_path, learning_setup, precision, rtol):
    """The first 20 losses of a bf16 / fp16 run equal the fp32 run's to the format's precision (unit roundoff
    2^-8 = 0.4 % for bf16, 2^-11 = 0.05 % for fp16, a few roundoffs accumulated over the steps), and differ from them
    somewhere (the autocast is active)."""
    cfg, sampler, fixed = learning_setup
    cfg = TrainConfig(**{**cfg.__dict__, "max_steps": 20, "val_every": 20})
    ref = np.array(train(cfg, sampler, fixed, tmp_path / "r.pt", progress=False)["history"]["loss"])
    low = TrainConfig(**{**cfg.__dict__, "precision": precision})
    got = np.array(train(low, sampler, fixed, tmp_path / "p.pt", progress=False)["history"]["loss"])
    assert len(got) == len(ref) == 20
    np.testing.assert_allclose(got, ref, rtol=rtol)
    assert np.any(got != ref)


def test_from_params_reads_every_field_once():
    """``Settings.from_params`` builds the same config as the fields written out by hand, from a rule's namespace of
    parameters with extra entries, converting integral floats; a missing required field and an unknown override are
    named."""
    from types import SimpleNamespace

    fields = dict(
        n_layers=2,
        n_heads=4,
        width=64,
        qk_dim=32,
        epochs=2,
        tasks_per_epoch=527878,
        batch=512,
        lr=2e-3,
        weight_decay=5e-5,
        val_every=250,
        n_val=2048,
        sync_every=100,
        seed=42,
        max_steps=2000,
        value_init_gain=3**0.5,
        precision="bf16",
        compile=False,
        lr_schedule="constant",
        warmup_steps=0,
        min_lr=0.0,
    )
    by_hand = TrainConfig(**fields)
    params = SimpleNamespace(**{**fields, "epochs": 2.0, "lr": 0.002, "state_dir": "x", "reuse_finished": False})
    assert TrainConfig.from_params(params) == by_hand
    assert TrainConfig.from_params({**fields, "max_steps": None}).max_steps is None
    assert TrainConfig.from_params({f"gd_{k}": v for k, v in fields.items()}, prefix="gd_") == by_hand
    assert TrainConfig.from_params(fields, batch=128).batch == 128
    with pytest.raises(ValueError, match="width"):
        TrainConfig.from_params({k: v for k, v in fields.items() if k != "width"})
    with pytest.raises(ValueError, match="epochs"):
        TrainConfig.from_params({**fields, "epochs": 2.5})  # not integral: left to the validation, which names it
    with pytest.raises(ValueError, match="no field"):
        TrainConfig.from_params(fields, widht=3)
    defaults = {k: v for k, v in fields.items() if k not in ("value_init_gain", "lr_schedule", "warmup_steps")}
    cfg = TrainConfig.from_params(defaults)
    assert (cfg.value_init_gain, cfg.lr_schedule, cfg.warmup_steps) == (1.0, "constant", 0)


def _cpuinfo_flags() -> set[str] | None:
    """The x86 CPU flags the Linux kernel reports (None without /proc/cpuinfo or its ``flags`` line: not x86 Linux)."""
    path = Path("/proc/cpuinfo")
    if not path.exists():
        return None
    for line in path.read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return None


def test_auto_precision_is_bf16_exactly_where_the_cpu_has_bfloat16_instructions(monkeypatch):
    """``auto`` resolves to bf16 on a CPU with AVX512-BF16 or AMX and to fp32 otherwise: checked against the kernel's
    own CPU flags (an independent reading of the hardware) and, for both answers, with torch's probes replaced."""
    from smattn.p1.images.training import native_bf16, resolve_precision

    cpu = torch.device("cpu")
    flags = _cpuinfo_flags()
    if flags is not None:  # x86 Linux
        expected = bool(flags & {"avx512_bf16", "amx_tile", "amx_bf16"})
        assert native_bf16(cpu) is expected
        assert resolve_precision("auto", cpu) == ("bf16" if expected else "fp32")
    for avx512_bf16, amx, want in ((True, False, "bf16"), (False, True, "bf16"), (False, False, "fp32")):
        monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda v=avx512_bf16: v)
        monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda v=amx: v)
        assert resolve_precision("auto", cpu) == want
    assert native_bf16(torch.device("meta")) is False
    for fixed in ("fp32", "tf32", "bf16", "fp16"):  # a fixed precision is kept whatever the hardware
        assert resolve_precision(fixed, cpu) == fixed
    with pytest.raises(ValueError, match="precision"):
        resolve_precision("bf8", cpu)
