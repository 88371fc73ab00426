"""Work models (smattn.costs.work) against independent counts: torch's FLOP counter, the paper's number of steps."""

from __future__ import annotations

import pytest

from smattn import costs


@pytest.mark.parametrize("L, H, N, G, B", [(2, 4, 64, 32, 4), (2, 4, 512, 128, 3), (3, 3, 24, 8, 2)])
@pytest.mark.parametrize("features", [False, True])
def test_forward_flops_equal_torchs_flop_counter(L, H, N, G, B, features):
    """The analytic FLOP count of one forward pass equals what torch.utils.flop_counter counts on the real model,
    on sequences x_0 and on their TokenFeatures."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from smattn.p1.images.features import TokenFeatures
    from smattn.p1.images.model import AttentionPathsTransformer

    model = AttentionPathsTransformer(L, H, N, G)
    T, D = costs.PAPER_TOKENS, costs.TOKEN_DIM
    x = torch.randn(B, T, D)
    if features:
        x = TokenFeatures(torch.randn(B, T, D // 3 + 3), torch.randn(3, D), torch.randn(T, D))
    with FlopCounterMode(display=False) as fc, torch.no_grad():
        model(x)
    assert costs.forward_flops(L, H, N, G, B, features=features) == fc.get_total_flops()


def test_training_steps_of_the_paper():
    """10 epochs of 527,878 tasks in batches of 128: 41,240 Adam steps (the paper's run), as TrainConfig counts."""
    from smattn.p1.images.training import paper_train_config

    p = {
        "p1_images": {
            "gd_epochs": 10,
            "gd_tasks_per_epoch": 527878,
            "gd_batch": 128,
            "gd_max_steps": None,
            "gd_width": 512,
            "gd_qk_dim": 128,
            "gd_qk_dim_h8": 64,
        }
    }
    assert costs.train_steps(p, "L2H4") == 41240
    cfg = paper_train_config(2, 4, width=512, qk_dim=128, batch=128, lr=3e-4, precision="fp32", compile=False)
    assert cfg.total_steps == 41240
    assert costs.train_steps({"p1_images": {**p["p1_images"], "gd_max_steps": 2000}}, "L2H4") == 2000
