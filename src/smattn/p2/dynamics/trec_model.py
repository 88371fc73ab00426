"""The two-layer tied-attention text classifier of the TREC experiment (P2 Fig. 3 right;
docs/p2_dynamics.md#trec-transformer).

Token ids (B, N) -> embedding E (B, N, k) with k = 128, then two attention layers, each
``H = X W_l^T + b_l`` (W_l: (h, k), h = 64), ``S = softmax_row(H H^T / sqrt(h))`` (B, N, N), ``X <- S X``
(tied query = key, value = identity, no skip, no normalisation, no MLP), mean pooling over positions and a
linear readout k -> n_classes. By default (as in the authors' runs) padding positions are attended and pooled;
with ``use_attention_mask=True`` padding keys are excluded from every softmax and from the pooling.

Compact embedding (``kept_ids``): a token id that never occurs in the data gets a zero gradient at every step, so
AdamW (zero moments, no weight decay on the outputs) never moves its row and the row never reaches the output. The
model can therefore keep only the rows of the ids that occur (8,489 of 30,522 for TREC with [PAD]); their initial
values are the same rows of the full ``vocab_size x k`` draw, so the trajectory of every other parameter equals that
of the full model (tested). Ids outside ``kept_ids`` raise an index error.

Initialisation (seeded through a ``torch.Generator``): embedding N(0, 1); attention weights N(0, attn_init_std^2)
(the config key ``trec_attn_init_std``; the authors' notebook has 0.1, their published curves need a far smaller
value, see docs/p2_dynamics.md), biases 0; readout weight and bias U(-1/sqrt(k), 1/sqrt(k)) (PyTorch's default for
``nn.Linear``).
"""

from __future__ import annotations

import math

import torch
from torch import nn

__all__ = ["TiedAttentionClassifier"]


class TiedAttentionClassifier(nn.Module):
    def __init__(
        self,
        *,
        attn_init_std: float,
        vocab_size: int = 30522,
        embed_dim: int = 128,
        hidden_dim: int = 64,
        n_classes: int = 6,
        n_layers: int = 2,
        use_attention_mask: bool = False,
        generator: torch.Generator | None = None,
        kept_ids=None,
    ):
        super().__init__()
        if not attn_init_std > 0:
            raise ValueError(f"TiedAttentionClassifier: attn_init_std must be > 0, got {attn_init_std!r}")
        for name, v in (
            ("vocab_size", vocab_size),
            ("embed_dim", embed_dim),
            ("hidden_dim", hidden_dim),
            ("n_classes", n_classes),
            ("n_layers", n_layers),
        ):
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"TiedAttentionClassifier: {name} must be a positive integer, got {v!r}")
        self.use_attention_mask = bool(use_attention_mask)
        rows = None
        if kept_ids is not None:
            rows = torch.as_tensor(kept_ids, dtype=torch.int64).unique()  # sorted
            if rows.numel() == 0 or int(rows[0]) < 0 or int(rows[-1]) >= vocab_size:
                raise ValueError(f"TiedAttentionClassifier: kept_ids must be non-empty ids in [0, {vocab_size})")
        # id -> embedding row (-1: id not kept); the identity when every id is kept
        row_of = torch.arange(vocab_size) if rows is None else torch.full((vocab_size,), -1, dtype=torch.int64)
        if rows is not None:
            row_of[rows] = torch.arange(rows.numel())
        self.register_buffer("row_of", row_of, persistent=False)
        self.embedding = nn.Embedding(vocab_size if rows is None else rows.numel(), embed_dim)
        self.attention = nn.ModuleList([nn.Linear(embed_dim, hidden_dim) for _ in range(n_layers)])
        self.readout = nn.Linear(embed_dim, n_classes)
        with torch.no_grad():
            full = torch.empty(vocab_size, embed_dim).normal_(0.0, 1.0, generator=generator)
            self.embedding.weight.copy_(full if rows is None else full[rows])
            for lin in self.attention:
                lin.weight.normal_(0.0, attn_init_std, generator=generator)
                lin.bias.zero_()
            bound = 1.0 / math.sqrt(embed_dim)
            self.readout.weight.uniform_(-bound, bound, generator=generator)
            self.readout.bias.uniform_(-bound, bound, generator=generator)

    def attention_weights(self) -> list[torch.Tensor]:
        """The projection weights W_l, each (hidden_dim, embed_dim)."""
        return [lin.weight for lin in self.attention]

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """input_ids (B, N) int64, attention_mask (B, N) 0/1 (used only if ``use_attention_mask``) -> logits (B, C)."""
        if input_ids.ndim != 2:
            raise ValueError(f"input_ids must have shape (batch, length), got {tuple(input_ids.shape)}")
        return self.forward_embedded(self.embedding(self.row_of[input_ids]), input_ids, attention_mask)

    def forward_embedded(
        self, x: torch.Tensor, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The network after the embedding: x (B, N, k) the embedded ``input_ids`` (B, N) -> logits (B, C).

        The training loop embeds a batch itself (a leaf ``x`` whose gradient it adds to the embedding's rows), so
        that the embedding's gradient need not be a fresh dense table every step."""
        mask = None
        if self.use_attention_mask:
            if attention_mask is None:
                raise ValueError("use_attention_mask=True needs an attention_mask")
            if attention_mask.shape != input_ids.shape:
                raise ValueError(
                    f"attention_mask shape {tuple(attention_mask.shape)} != input_ids shape {tuple(input_ids.shape)}"
                )
            mask = attention_mask.to(torch.bool)
        for lin in self.attention:
            h = lin(x)  # (B, N, h)
            scores = h @ h.transpose(1, 2) / math.sqrt(h.shape[-1])  # (B, N, N)
            if mask is not None:
                scores = scores.masked_fill(~mask[:, None, :], float("-inf"))
            x = torch.softmax(scores, dim=-1) @ x
        if mask is None:
            pooled = x.mean(dim=1)
        else:
            m = mask.to(x.dtype)[..., None]
            pooled = (x * m).sum(dim=1) / m.sum(dim=1).clamp_min(1.0)
        return self.readout(pooled)
