"""AdamW variants of the TREC experiment: the transformers rule on a hand-computed example, the fused variant."""

import numpy as np
import pytest
import torch

from smattn.p2.dynamics.optim import (
    FusedAdamWStepper,
    FusedTransformersAdamW,
    TransformersAdamW,
    make_adamw,
    make_stepper,
)

torch.set_num_threads(1)


def test_transformers_adamw_two_steps_by_hand():
    # p0 = 1, gradients 0.5 then -0.25; lr 0.1, betas (0.9, 0.999), eps 1e-3, weight decay 0.1. By hand:
    # t=1: m = 0.05, v = 2.5e-4, step size 0.1 sqrt(1 - 0.999) / (1 - 0.9) = 0.0316228,
    #      p = 1 - 0.0316228 * 0.05 / (sqrt(2.5e-4) + 1e-3) = 0.9059483, then p (1 - 0.01) = 0.8968889;
    # t=2: m = 0.02, v = 3.1225e-4, step size 0.1 sqrt(1 - 0.999^2) / (1 - 0.81) = 0.0235317,
    #      p = 0.8968889 - 0.0235317 * 0.02 / (sqrt(3.1225e-4) + 1e-3) = 0.8716817, then * 0.99 = 0.8629648.
    p = torch.nn.Parameter(torch.tensor([1.0], dtype=torch.float64))
    opt = TransformersAdamW([p], lr=0.1, betas=(0.9, 0.999), eps=1e-3, weight_decay=0.1)
    for g, expected in ((0.5, 0.8968889), (-0.25, 0.8629648)):
        p.grad = torch.tensor([g], dtype=torch.float64)
        opt.step()
        assert float(p.detach()) == pytest.approx(expected, abs=5e-8)
    st = opt.state[p]
    assert (
        st["step"] == 2
        and float(st["exp_avg"]) == pytest.approx(0.02)
        and float(st["exp_avg_sq"]) == pytest.approx(3.1225e-4)
    )
    # torch's AdamW (decay first, eps on the corrected root) gives another number on the same example
    q = torch.nn.Parameter(torch.tensor([1.0], dtype=torch.float64))
    topt = torch.optim.AdamW([q], lr=0.1, betas=(0.9, 0.999), eps=1e-3, weight_decay=0.1)
    for g in (0.5, -0.25):
        q.grad = torch.tensor([g], dtype=torch.float64)
        topt.step()
    assert abs(float(q.detach()) - float(p.detach())) > 1e-3


def test_variants_agree_when_eps_is_negligible_and_differ_for_small_gradients():
    rng = np.random.default_rng(0)
    grads = [torch.as_tensor(rng.standard_normal(50)) for _ in range(4)]

    def run(variant, scale):
        p = torch.nn.Parameter(torch.zeros(50, dtype=torch.float64))
        opt = make_adamw([p], variant, lr=1e-2, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0)
        for g in grads:
            p.grad = g * scale
            opt.step()
        return p.detach().clone()

    # gradients of order 1 >> eps: the same steps up to ~lr * 32 eps / |g| (each weight moves ~4e-2 here)
    torch.testing.assert_close(run("torch_adamw", 1.0), run("transformers_adamw", 1.0), rtol=0, atol=2e-5)
    # gradients of order 1e-6: transformers' effective eps (32 eps at the first step) damps them far more
    small_t, small_h = run("torch_adamw", 1e-6).abs().mean(), run("transformers_adamw", 1e-6).abs().mean()
    assert float(small_h) < 0.2 * float(small_t)


@pytest.mark.parametrize("wd", [0.0, 0.3])
def test_fused_transformers_adamw_equals_the_reference(wd):
    rng = np.random.default_rng(1)
    p_ref = torch.nn.Parameter(torch.as_tensor(rng.standard_normal((7, 3)), dtype=torch.float32))
    p_fast = torch.nn.Parameter(p_ref.detach().clone())
    b_ref = torch.nn.Parameter(torch.zeros(3))
    b_fast = torch.nn.Parameter(torch.zeros(3))
    kw = dict(lr=3e-2, betas=(0.8, 0.99), eps=1e-4, weight_decay=wd)
    ref = TransformersAdamW([p_ref, b_ref], **kw)
    fast = FusedTransformersAdamW([p_fast, b_fast], **kw)
    for _ in range(6):
        g = torch.as_tensor(rng.standard_normal((7, 3)) * 1e-3, dtype=torch.float32)
        gb = torch.as_tensor(rng.standard_normal(3) * 1e-4, dtype=torch.float32)
        p_ref.grad, p_fast.grad, b_ref.grad, b_fast.grad = g, g.clone(), gb, gb.clone()
        ref.step()
        fast.step()
    torch.testing.assert_close(p_fast, p_ref, rtol=2e-5, atol=1e-7)
    torch.testing.assert_close(b_fast, b_ref, rtol=2e-5, atol=1e-7)
    b_fast.grad = None
    with pytest.raises(RuntimeError, match="needs a gradient"):
        fast.step()


def test_make_adamw_rejects_unknown_variant():
    with pytest.raises(ValueError, match="unknown optimiser"):
        make_adamw([torch.nn.Parameter(torch.zeros(1))], "sgd", 1e-3, (0.9, 0.999), 1e-6, 0.0)
    with pytest.raises(ValueError, match="eps"):
        TransformersAdamW([torch.nn.Parameter(torch.zeros(1))], eps=0.0)


def _reference_transformers_adamw(p, grads, lr, b1, b2, eps, wd):
    """transformers' AdamW (correct_bias=True) written out from that class's update, in NumPy float64:
    m <- b1 m + (1-b1) g; v <- b2 v + (1-b2) g^2; p <- p - lr sqrt(1-b2^t)/(1-b1^t) m/(sqrt(v)+eps);
    then p <- p - lr wd p."""
    p, m, v = p.copy(), np.zeros_like(p), np.zeros_like(p)
    for t, g in enumerate(grads, start=1):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        p = p - lr * np.sqrt(1 - b2**t) / (1 - b1**t) * m / (np.sqrt(v) + eps)
        p = p - lr * wd * p
    return p


def _reference_torch_adamw(p, grads, lr, b1, b2, eps, wd):
    """torch.optim.AdamW's documented algorithm (amsgrad off), in NumPy float64: p <- p (1 - lr wd); moments as
    above; p <- p - lr m_hat / (sqrt(v_hat) + eps) with m_hat = m/(1-b1^t), v_hat = v/(1-b2^t)."""
    p, m, v = p.copy(), np.zeros_like(p), np.zeros_like(p)
    for t, g in enumerate(grads, start=1):
        p = p * (1 - lr * wd)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        p = p - lr * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps)
    return p


@pytest.mark.parametrize("variant", ["transformers_adamw", "torch_adamw"])
@pytest.mark.parametrize("wd", [0.0, 0.3])
def test_make_adamw_follows_the_written_out_update(variant, wd):
    """Both rules of make_adamw and of FusedAdamWStepper (the fused kernels the TREC runs use) against the update
    written out above, over 60 steps with gradients from 1e-8 to 1 (where eps matters and where it does not) and an
    entry whose gradient is always 0 (an embedding row never seen: it must not move). Mutations caught: eps added to
    the bias-corrected root in the transformers rule (fails at gradients below ~1e-5), the decay applied before the
    step, the bias correction dropped, the fused variant's effective eps not following the step count."""
    rng = np.random.default_rng(7)
    shape = (40,)
    scales = 10.0 ** rng.uniform(-8, 0, shape)
    scales[0] = 0.0
    grads = [rng.standard_normal(shape) * scales for _ in range(60)]
    p0 = rng.standard_normal(shape)
    kw = dict(lr=0.05, b1=0.9, b2=0.999, eps=1e-6, wd=wd)
    reference = {"transformers_adamw": _reference_transformers_adamw, "torch_adamw": _reference_torch_adamw}[variant]
    expected = reference(p0, grads, **kw)
    for make in (make_adamw, FusedAdamWStepper):
        p = torch.nn.Parameter(torch.tensor(p0, dtype=torch.float64))
        opt = make([p], variant, lr=kw["lr"], betas=(kw["b1"], kw["b2"]), eps=kw["eps"], weight_decay=wd)
        for g in grads:
            p.grad = torch.tensor(g, dtype=torch.float64)
            opt.step()
        np.testing.assert_allclose(p.detach().numpy(), expected, rtol=1e-10, atol=1e-13)
        if wd == 0.0:
            assert float(p.detach()[0]) == p0[0]
    # the two rules differ where eps matters: the smallest gradients
    other = {"transformers_adamw": _reference_torch_adamw, "torch_adamw": _reference_transformers_adamw}[variant]
    small = scales < 1e-6
    assert np.abs(other(p0, grads, **kw) - expected)[small].max() > 1e-3


@pytest.mark.parametrize("variant", ["transformers_adamw", "torch_adamw"])
@pytest.mark.parametrize("wd", [0.0, 0.3])
def test_stepper_equals_the_torch_optimiser_to_the_bit(variant, wd):
    """The TREC loop's stepper (the fused kernel called directly) against make_adamw's torch.optim optimiser, float32
    as in the runs, over 40 steps of gradients from 1e-9 to 1 on two parameters: equal to the bit, so that the
    trajectories of the runs do not change. Mutations caught: the transformers epsilon not following the step count
    (or computed from a float32 step), the decay inside the kernel for the transformers rule, a moment not kept."""
    rng = np.random.default_rng(3)
    shapes = [(33, 5), (6,)]
    p0 = [torch.as_tensor(rng.standard_normal(s), dtype=torch.float32) for s in shapes]
    ref = [torch.nn.Parameter(p.clone()) for p in p0]
    new = [torch.nn.Parameter(p.clone()) for p in p0]
    kw = dict(lr=1e-2, betas=(0.9, 0.999), eps=1e-6, weight_decay=wd)
    opt_ref = make_adamw(ref, variant, **kw)
    opt_new = make_stepper(new, variant, **kw)
    assert isinstance(opt_new, FusedAdamWStepper)
    for _ in range(40):
        for a, b, s in zip(ref, new, shapes, strict=True):
            g = torch.as_tensor(rng.standard_normal(s) * 10.0 ** rng.uniform(-9, 0, s), dtype=torch.float32)
            a.grad, b.grad = g, g.clone()
        opt_ref.step()
        opt_new.step()
        opt_new.zero_grad()
        assert all(p.grad is None for p in new)
    for a, b in zip(ref, new, strict=True):
        assert torch.equal(a, b)
    with pytest.raises(RuntimeError, match="needs a gradient"):
        opt_new.step()
    with pytest.raises(ValueError, match="unknown optimiser"):
        FusedAdamWStepper(new, "sgd", **kw)
