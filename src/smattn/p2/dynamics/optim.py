"""AdamW variants for the TREC experiment (P2 Fig. 3 right; see docs/p2_dynamics.md, "TREC").

Two update rules differ in where epsilon enters (step ``t`` counted from 1, gradient ``g``, moments ``m``, ``v``,
``b1``, ``b2``, learning rate ``lr``, weight decay ``wd``; every operation elementwise):

``torch`` (:class:`torch.optim.AdamW`): decay first, epsilon added to the bias-corrected root::

    p <- p (1 - lr wd)
    m <- b1 m + (1 - b1) g;   v <- b2 v + (1 - b2) g^2
    p <- p - lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)

``transformers`` (the ``AdamW`` class of the ``transformers`` library, which the authors' notebook imports, with
``correct_bias=True``): the bias corrections folded into the step size, epsilon added to the *uncorrected* root,
decoupled decay applied after the moment step with the updated weights::

    m <- b1 m + (1 - b1) g;   v <- b2 v + (1 - b2) g^2
    p <- p - lr sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps)
    p <- p - lr wd p

Written in the bias-corrected form, the second rule uses an effective epsilon ``eps / sqrt(1 - b2^t)``: about 32 eps
at the first step with b2 = 0.999, falling to eps over a few thousand steps. It therefore damps gradients smaller
than ~3e-5 during the first steps much more than the first rule does.
"""

from __future__ import annotations

import math

import torch

__all__ = [
    "OPTIMIZERS",
    "TransformersAdamW",
    "FusedTransformersAdamW",
    "FusedAdamWStepper",
    "make_adamw",
    "make_stepper",
]

OPTIMIZERS = ("torch_adamw", "transformers_adamw")


def _check_hyperparameters(name: str, lr: float, betas, eps: float, weight_decay: float) -> None:
    """The same bounds for both variants: lr > 0, betas in [0, 1), eps > 0, weight_decay >= 0."""
    if not lr > 0:
        raise ValueError(f"{name}: lr must be > 0, got {lr}")
    if not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
        raise ValueError(f"{name}: betas must lie in [0, 1), got {betas}")
    if not eps > 0:
        raise ValueError(f"{name}: eps must be > 0, got {eps}")
    if not weight_decay >= 0:
        raise ValueError(f"{name}: weight_decay must be >= 0, got {weight_decay}")


class TransformersAdamW(torch.optim.Optimizer):
    """AdamW with the ``transformers`` placement of epsilon and of the weight decay (module docstring).

    Dense gradients only. State per parameter: ``step`` (int), ``exp_avg`` and ``exp_avg_sq`` (parameter shape).
    """

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-6,
        weight_decay: float = 0.0,
    ):
        _check_hyperparameters("TransformersAdamW", lr, betas, eps, weight_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            b1, b2 = group["betas"]
            lr, eps, wd = group["lr"], group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad
                if g.is_sparse:
                    raise RuntimeError("TransformersAdamW does not support sparse gradients")
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                t = state["step"]
                m, v = state["exp_avg"], state["exp_avg_sq"]
                m.mul_(b1).add_(g, alpha=1.0 - b1)
                v.mul_(b2).addcmul_(g, g, value=1.0 - b2)
                denom = v.sqrt().add_(eps)
                step_size = lr * math.sqrt(1.0 - b2**t) / (1.0 - b1**t)
                p.addcdiv_(m, denom, value=-step_size)
                if wd > 0:
                    p.add_(p, alpha=-lr * wd)
        return loss


class FusedTransformersAdamW(torch.optim.AdamW):
    """The update rule of :class:`TransformersAdamW` computed with torch's fused AdamW kernel (several times faster).

    It uses the identity of the module docstring: the ``transformers`` step equals torch's bias-corrected step with
    epsilon ``eps / sqrt(1 - b2^t)``; the weight decay is applied after the kernel as ``p <- p (1 - lr wd)``. The
    step count ``t`` is kept per parameter group, so every parameter of a group must have a gradient at every
    step (true for the TREC model, whose embedding gradient is dense); a missing gradient raises.
    """

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-6,
        weight_decay: float = 0.0,
    ):
        _check_hyperparameters("FusedTransformersAdamW", lr, betas, eps, weight_decay)
        super().__init__(params, lr=lr, betas=tuple(betas), eps=eps, weight_decay=0.0, fused=True)
        for group in self.param_groups:
            group["base_eps"], group["decoupled_wd"], group["group_step"] = eps, weight_decay, 0

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            if any(p.grad is None for p in group["params"]):
                raise RuntimeError("FusedTransformersAdamW: every parameter needs a gradient at every step")
            group["group_step"] += 1
            group["eps"] = group["base_eps"] / math.sqrt(1.0 - group["betas"][1] ** group["group_step"])
        loss = super().step(closure)
        for group in self.param_groups:
            if group["decoupled_wd"] > 0:
                torch._foreach_mul_(group["params"], 1.0 - group["lr"] * group["decoupled_wd"])
        return loss


def make_adamw(params, variant: str, lr: float, betas: tuple[float, float], eps: float, weight_decay: float):
    """The AdamW ``variant`` (one of :data:`OPTIMIZERS`) over ``params``.

    Both use torch's fused kernel (several times faster on a CPU for the dense 30522 x 128 embedding) when this
    torch build offers it: ``torch_adamw`` directly, ``transformers_adamw`` through :class:`FusedTransformersAdamW`
    (equal to :class:`TransformersAdamW` up to float rounding).
    """
    params = list(params)
    kw = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay)
    if variant == "transformers_adamw":
        try:
            return FusedTransformersAdamW(params, **kw)
        except (RuntimeError, TypeError, ValueError):  # pragma: no cover - builds without the fused kernel
            return TransformersAdamW(params, **kw)
    if variant != "torch_adamw":
        raise ValueError(f"make_adamw: unknown optimiser {variant!r}; expected one of {OPTIMIZERS}")
    try:
        return torch.optim.AdamW(params, fused=True, **kw)
    except (RuntimeError, TypeError, ValueError):  # pragma: no cover - builds without the fused kernel
        return torch.optim.AdamW(params, **kw)


class FusedAdamWStepper:
    """Either AdamW variant as one call of torch's fused AdamW kernel per step, without the ``torch.optim`` machinery.

    The same kernel with the same arguments and state as :func:`make_adamw`'s optimisers (moments ``zeros_like``
    the parameter, a float32 step counter per parameter, for ``transformers_adamw`` the epsilon
    ``eps / sqrt(1 - b2^t)`` and the decay after the kernel), hence the same parameters to the bit; what it saves is
    the per-step Python work of ``torch.optim`` (grouping, state look-ups), which is a sizeable part of a step of
    the small TREC model. Every parameter needs a gradient at every step. ``zero_grad()`` sets the gradients to None.
    """

    def __init__(self, params, variant: str, lr: float, betas, eps: float, weight_decay: float):
        if variant not in OPTIMIZERS:
            raise ValueError(f"FusedAdamWStepper: unknown optimiser {variant!r}; expected one of {OPTIMIZERS}")
        _check_hyperparameters("FusedAdamWStepper", lr, betas, eps, weight_decay)
        self.params = list(params)
        self.variant = variant
        self.lr, self.beta1, self.beta2 = float(lr), float(betas[0]), float(betas[1])
        self.eps, self.weight_decay = float(eps), float(weight_decay)
        self.exp_avgs = [torch.zeros_like(p, memory_format=torch.preserve_format) for p in self.params]
        self.exp_avg_sqs = [torch.zeros_like(p, memory_format=torch.preserve_format) for p in self.params]
        self.state_steps = [torch.zeros((), dtype=torch.float32, device=p.device) for p in self.params]
        self.t = 0

    @torch.no_grad()
    def step(self) -> None:
        grads = [p.grad for p in self.params]
        if any(g is None for g in grads):
            raise RuntimeError("FusedAdamWStepper: every parameter needs a gradient at every step")
        self.t += 1
        transformers = self.variant == "transformers_adamw"
        eps = self.eps / math.sqrt(1.0 - self.beta2**self.t) if transformers else self.eps
        torch._foreach_add_(self.state_steps, 1)
        torch._fused_adamw_(
            self.params,
            grads,
            self.exp_avgs,
            self.exp_avg_sqs,
            [],
            self.state_steps,
            amsgrad=False,
            lr=self.lr,
            beta1=self.beta1,
            beta2=self.beta2,
            weight_decay=0.0 if transformers else self.weight_decay,
            eps=eps,
            maximize=False,
            grad_scale=None,
            found_inf=None,
        )
        if transformers and self.weight_decay > 0:
            torch._foreach_mul_(self.params, 1.0 - self.lr * self.weight_decay)

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None


def make_stepper(params, variant: str, lr: float, betas: tuple[float, float], eps: float, weight_decay: float):
    """:class:`FusedAdamWStepper` where this torch build has the fused CPU kernel, else :func:`make_adamw`'s
    optimiser (the same update; both have ``step()`` and ``zero_grad()``)."""
    params = list(params)
    if hasattr(torch, "_fused_adamw_") and all(p.device.type == "cpu" and p.dtype == torch.float32 for p in params):
        return FusedAdamWStepper(params, variant, lr, betas, eps, weight_decay)
    return make_adamw(params, variant, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
