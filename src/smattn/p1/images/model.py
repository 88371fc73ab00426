"""The gradient-descent transformer of the image task (docs/p1_images.md#gd-transformer).

Input x_0: [B, T, D] (T = 48, D = 192), already holding positions and label vectors.

* input projection z^(0) = x_0 W_in^T, W_in: [N, D] (no bias, no 1/sqrt(D));
* layer l = 1..L: attention from the bare input x_0: A_h[s, t] = softmax_s((W_K,h x_s) . (W_Q,h x_t) / sqrt(G))
  (key s, query t), z^(l)_t = c_l sum_h m_{l,h} W_V,h sum_s z^(l-1)_s A_h[s, t] with W_V,h: [N, N],
  c_l = (number of kept heads)^(-1/2) (= H^(-1/2) unpruned) and m_{l,h} in {0, 1} the head mask (pruning);
* mean pooling over the T tokens of z^(L), readout f = w_out . mean_t z^(L)_t (no bias).

No residuals, no MLP, no normalisation inside the network. Query/key/value are stored stacked per layer:
``query[l].weight``: [H G, D] (rows h G .. (h+1) G - 1 belong to head h), ``value[l].weight``: [H N, N].

Layer-1 value fold (exact): z^(0) = x_0 W_in^T enters the network only through W_V,h^(1) z^(0), so the forward may
compute (W_V^(1) W_in) x_0 instead, a [H N, D] weight product once per call and a D-wide (instead of N-wide) product per
token; it skips the input projection altogether. Same parameters, same gradients up to rounding. It pays when
N > D (H - 1) / H (paper: N = 512 > 144); ``fold_input`` = None chooses it by that FLOP count (see ``fold_pays``).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def fold_pays(n_heads: int, width: int, token_dim: int, n_tokens: int) -> bool:
    """Whether the layer-1 value fold needs fewer multiply-adds than the plain path for ``n_tokens`` = B T tokens.

    Plain: n_tokens (D N + H N^2) (input projection + value product); fold: H N^2 D (weight product, once per call)
    + n_tokens H N D.
    """
    H, N, D = int(n_heads), int(width), int(token_dim)
    return H * N * N * D + n_tokens * H * N * D < n_tokens * (D * N + H * N * N)


class AttentionPathsTransformer(nn.Module):
    """Sum-of-heads attention network with fixed-input attention.

    Arguments: n_layers L, n_heads H (same in every layer), width N, qk_dim G, token_dim D.
    Shapes: forward(x0 [B, T, D]) -> [B]; attention(x0) -> list of L tensors [B, H, T(key), T(query)].
    """

    def __init__(self, n_layers: int, n_heads: int, width: int, qk_dim: int, token_dim: int = 192):
        super().__init__()
        #: layer-1 value fold: True / False, or None = when it saves FLOPs (``fold_pays``); never changes the parameters
        self.fold_input: bool | None = None
        for name, v in (
            ("n_layers", n_layers),
            ("n_heads", n_heads),
            ("width", width),
            ("qk_dim", qk_dim),
            ("token_dim", token_dim),
        ):
            if int(v) < 1:
                raise ValueError(f"AttentionPathsTransformer: {name} must be >= 1, got {v}")
        self.n_layers, self.n_heads, self.width, self.qk_dim, self.token_dim = (
            int(n_layers),
            int(n_heads),
            int(width),
            int(qk_dim),
            int(token_dim),
        )
        self.input_proj = nn.Linear(token_dim, width, bias=False)
        self.query = nn.ModuleList(nn.Linear(token_dim, n_heads * qk_dim, bias=False) for _ in range(n_layers))
        self.key = nn.ModuleList(nn.Linear(token_dim, n_heads * qk_dim, bias=False) for _ in range(n_layers))
        self.value = nn.ModuleList(nn.Linear(width, n_heads * width, bias=False) for _ in range(n_layers))
        self.readout = nn.Linear(width, 1, bias=False)
        # head mask for pruning: not part of the checkpoint (a trained model is always saved unpruned)
        self.register_buffer("head_mask", torch.ones(n_layers, n_heads), persistent=False)

    # -- configuration ------------------------------------------------------------------------------------------
    def hparams(self) -> dict:
        return {
            "n_layers": self.n_layers,
            "n_heads": self.n_heads,
            "width": self.width,
            "qk_dim": self.qk_dim,
            "token_dim": self.token_dim,
        }

    def set_pruned_heads(self, pruned: dict[int, list[int]] | None) -> None:
        """Zero the outputs of the given heads ({layer: [heads]}, 0-based) and rescale the head sum of that layer
        by (H - |pruned|)^(-1/2). ``None`` or ``{}`` restores the unpruned network."""
        mask = torch.ones(self.n_layers, self.n_heads, dtype=self.head_mask.dtype)
        for layer, heads in (pruned or {}).items():
            if not 0 <= int(layer) < self.n_layers:
                raise ValueError(f"set_pruned_heads: layer {layer} out of range 0..{self.n_layers - 1}")
            for h in heads:
                if not 0 <= int(h) < self.n_heads:
                    raise ValueError(f"set_pruned_heads: head {h} out of range 0..{self.n_heads - 1}")
                mask[int(layer), int(h)] = 0.0
            if mask[int(layer)].sum() == 0:
                raise ValueError(f"set_pruned_heads: cannot prune every head of layer {layer}")
        self.head_mask = mask.to(self.head_mask.device)

    # -- forward ------------------------------------------------------------------------------------------------
    def _value_weight(self, l: int) -> torch.Tensor:
        """W_V of layer l with each head's rows times m_{l,h} c_l (head mask, 1/sqrt(kept heads)): [H N, N]."""
        H, N = self.n_heads, self.width
        factor = self.head_mask[l] * self.head_mask[l].sum().rsqrt()
        return (self.value[l].weight.view(H, N, N) * factor.view(H, 1, 1)).view(H * N, N)

    def _x0_products(self, x0: torch.Tensor, fold: bool | None) -> tuple[list, torch.Tensor | None]:
        """Everything that reads the bare input, as one product with x0 (one cast of x0 under autocast): per layer
        the pair (queries already divided by sqrt(G), keys), each [B, T, H, G]; then with ``fold`` True the layer-1
        values (c_1 m_1 W_V^(1) W_in) x_0, [B, T, H N], with False z^(0) = W_in x_0, [B, T, N], with None nothing
        (the attention alone). The pieces are cut with ``unbind`` (its backward is one stack; a slice per piece
        would add a zero-filled full-size gradient each)."""
        B, T, _ = x0.shape
        L, H, G = self.n_layers, self.n_heads, self.qk_dim
        weights = [self.query[l].weight / math.sqrt(G) for l in range(L)] + [self.key[l].weight for l in range(L)]
        if fold is not None:
            weights.append(self._value_weight(0) @ self.input_proj.weight if fold else self.input_proj.weight)
        out = F.linear(x0, torch.cat(weights))
        n_qk = 2 * L * H * G
        qk, first = (out, None) if fold is None else out.split([n_qk, out.shape[-1] - n_qk], dim=-1)
        q, k = (t.unbind(2) for t in qk.reshape(B, T, 2, L, H, G).unbind(2))
        return list(zip(q, k, strict=True)), first

    @staticmethod
    def _attention_tq(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        """Attention of one layer from q, k [B, T, H, G], laid out [B, H, T(query), T(key)]: rows (over keys) sum
        to 1. The softmax runs over the last, contiguous axis; ``attention`` returns the transpose."""
        q, k = q.transpose(1, 2), k.transpose(1, 2)  # [B, H, T, G]
        return torch.softmax(torch.matmul(q, k.transpose(-1, -2)), dim=-1)

    def attention(self, x0: torch.Tensor) -> list[torch.Tensor]:
        """Attention matrices of every layer, [B, H, T(key), T(query)], columns (over keys) summing to 1."""
        qk, _ = self._x0_products(x0, fold=None)
        return [self._attention_tq(q, k).transpose(2, 3) for q, k in qk]

    def forward(self, x0: torch.Tensor) -> torch.Tensor:
        if x0.dim() != 3 or x0.shape[-1] != self.token_dim:
            raise ValueError(f"AttentionPathsTransformer: expected x0 [B, T, {self.token_dim}], got {tuple(x0.shape)}")
        B, T, _ = x0.shape
        H, N = self.n_heads, self.width
        fold = self.fold_input if self.fold_input is not None else fold_pays(H, N, self.token_dim, B * T)
        qk, first = self._x0_products(x0, fold)
        z = None if fold else first  # z^(0): [B, T, N]
        for l in range(self.n_layers):
            # c_l m_{l,h} W_V,h z_s for every head: [B, T(key), H, N]
            v = first if l == 0 and fold else F.linear(z, self._value_weight(l))
            a = self._attention_tq(*qk[l])  # [B, H, T(query), T(key)]
            z = torch.einsum("bhts,bshm->btm", a, v.view(B, T, H, N))  # [B, T(query), N]
        return self.readout(z.mean(dim=1)).squeeze(-1)

    # -- exports ------------------------------------------------------------------------------------------------
    def qk_weights(self) -> tuple[torch.Tensor, torch.Tensor]:
        """W_Q, W_K per layer and head: each [L, H, G, D]."""
        L, H, G, D = self.n_layers, self.n_heads, self.qk_dim, self.token_dim
        wq = torch.stack([self.query[l].weight.view(H, G, D) for l in range(L)])
        wk = torch.stack([self.key[l].weight.view(H, G, D) for l in range(L)])
        return wq, wk

    def value_weights(self) -> torch.Tensor:
        """W_V per layer and head: [L, H, N(out), N(in)]."""
        H, N = self.n_heads, self.width
        return torch.stack([self.value[l].weight.view(H, N, N) for l in range(self.n_layers)])

    def n_trainable(self) -> int:
        return sum(p.numel() for p in self.parameters() if p.requires_grad)


def gd_order_parameter(value: torch.Tensor, readout: torch.Tensor) -> torch.Tensor:
    """Empirical order parameter of a GD network, no normalisation (P1 Fig. 3c "gradient descent";
    docs/p1_images.md#export).

    value: [L, H, N, N] (W_V per layer/head, [out, in]); readout: [N] (w_out).
    Effective weights w_(h_1..h_L) = W_V,h_1^(1)T ... W_V,h_L^(L)T w_out in R^N, paths flattened with h_1 slowest.
    Returns U_GD = W W^T: [H^L, H^L].
    """
    L, H, N, _ = value.shape
    w = readout.reshape(1, N)  # partial paths (h_l..h_L), lowest layer slowest
    for l in range(L - 1, -1, -1):
        # new[(h, rho)] = W_V,h^(l)T w[rho]  = w[rho] @ W_V,h
        w = torch.einsum("rn,hnm->hrm", w, value[l]).reshape(-1, N)
    return w @ w.T
