"""The gradient-descent transformer of the image task (docs/p1_images.md#gd-transformer).

Input x_0: [B, T, D] (T = 48, D = 192), already holding positions and label vectors.

* input projection z^(0) = x_0 W_in^T, W_in: [N, D] (no bias, no 1/sqrt(D));
* layer l = 1..L: attention from the bare input x_0: A_h[s, t] = softmax_s((W_K,h x_s) . (W_Q,h x_t) / sqrt(G))
  (key s, query t), z^(l)_t = c_l sum_h m_{l,h} W_V,h sum_s z^(l-1)_s A_h[s, t] with W_V,h: [N, N],
  c_l = (number of kept heads)^(-1/2) (= H^(-1/2) unpruned) and m_{l,h} in {0, 1} the head mask (pruning);
* mean pooling over the T tokens of z^(L), readout f = w_out . mean_t z^(L)_t (no bias).

No residuals, no MLP, no normalisation inside the network. Query/key/value are stored stacked per layer:
``query[l].weight``: [H G, D] (rows h G .. (h+1) G - 1 belong to head h), ``value[l].weight``: [H N, N].

``forward`` computes the network as its sum over attention paths (``smattn.p1.images.path_form``; exact: the same
function, checked in float64 against ``forward_layers``, the layer-by-layer definition above), on sequences x_0 or on
their factored form ``TokenFeatures`` (``smattn.p1.images.features``), which the training loop uses.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from smattn.p1.images.features import TokenFeatures
from smattn.p1.images.path_form import path_network, path_readouts, path_squared_error


class AttentionPathsTransformer(nn.Module):
    """Sum-of-heads attention network with fixed-input attention.

    Arguments: n_layers L, n_heads H (same in every layer), width N, qk_dim G, token_dim D.
    Shapes: forward(x0 [B, T, D] or TokenFeatures of B sequences) -> [B];
    attention(x0) -> list of L tensors [B, H, T(key), T(query)].
    """

    def __init__(self, n_layers: int, n_heads: int, width: int, qk_dim: int, token_dim: int = 192):
        super().__init__()
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
    def value_weight(self, l: int) -> torch.Tensor:
        """W_V of layer l with each head's rows times m_{l,h} c_l (head mask, 1/sqrt(kept heads)): [H N, N]."""
        H, N = self.n_heads, self.width
        factor = self.head_mask[l] * self.head_mask[l].sum().rsqrt()
        return (self.value[l].weight.view(H, N, N) * factor.view(H, 1, 1)).view(H * N, N)

    def path_input_weights(self) -> torch.Tensor:
        """The weights whose products with x_0 the path form needs, stacked: [W_Q^(1..L) / sqrt(G); W_K^(1..L);
        w_path] ([2 L H G + H^L, D], heads in blocks of G rows). w_path = path readouts of the masked, rescaled value
        weights times W_in (``smattn.p1.images.path_form``), so it carries c_l m_{l,h}."""
        L, H, N, G = self.n_layers, self.n_heads, self.width, self.qk_dim
        value = torch.stack([self.value_weight(l).view(H, N, N) for l in range(L)])
        w_path = path_readouts(value, self.readout.weight[0]) @ self.input_proj.weight
        queries = [self.query[l].weight / math.sqrt(G) for l in range(L)]
        return torch.cat(queries + [self.key[l].weight for l in range(L)] + [w_path])

    def attention(self, x0: torch.Tensor) -> list[torch.Tensor]:
        """Attention matrices of every layer, [B, H, T(key), T(query)], columns (over keys) summing to 1."""
        B, T, _ = x0.shape
        H, G = self.n_heads, self.qk_dim
        out = []
        for l in range(self.n_layers):
            q = F.linear(x0, self.query[l].weight / math.sqrt(G)).view(B, T, H, G).transpose(1, 2)
            k = F.linear(x0, self.key[l].weight).view(B, T, H, G).transpose(1, 2)
            out.append(torch.softmax(torch.matmul(q, k.transpose(-1, -2)), dim=-1).transpose(2, 3))
        return out

    def _path_inputs(self, x0: torch.Tensor | TokenFeatures):
        """(values, stacked weights, positional products) of ``path_network`` for x0 or its ``TokenFeatures``."""
        feats = isinstance(x0, TokenFeatures)
        if not feats and (x0.dim() != 3 or x0.shape[-1] != self.token_dim):
            raise ValueError(f"AttentionPathsTransformer: expected x0 [B, T, {self.token_dim}], got {tuple(x0.shape)}")
        values = x0.values if feats else x0
        # the weights' products (path readouts, the fold onto the features) in the parameters' precision even under
        # autocast: their gradients sum over every token of the batch, which overflows float16
        with torch.autocast(values.device.type, enabled=False):
            w = self.path_input_weights()
            w, pos = x0.weights(w) if feats else (w, w.new_zeros(x0.shape[1], w.shape[0]))
        return values, w, pos

    def forward(self, x0: torch.Tensor | TokenFeatures) -> torch.Tensor:
        """Outputs f [B] of sequences x0 [B, T, D] or of their ``TokenFeatures``, as the sum over attention paths."""
        return path_network(*self._path_inputs(x0), self.n_layers, self.n_heads, self.qk_dim)

    def squared_error(self, x0: torch.Tensor | TokenFeatures, y: torch.Tensor, compiled: bool = False) -> torch.Tensor:
        """The training loss mean_b (f_b - y_b)^2 [0-dim] for targets y [B]: ``forward``'s f, with (on a CPU) each
        chunk of sequences differentiated right after its forward, compiled when ``compiled``
        (``path_squared_error``)."""
        L, H, G = self.n_layers, self.n_heads, self.qk_dim
        return path_squared_error(*self._path_inputs(x0), y, L, H, G, compiled=compiled)

    def forward_layers(self, x0: torch.Tensor) -> torch.Tensor:
        """The layer-by-layer definition (module docstring): z^(0) = x0 W_in^T, then each layer's head sum of N-wide
        value vectors, then the mean readout. The reference of ``forward`` (same function, other order of sums)."""
        B, T, _ = x0.shape
        H, N = self.n_heads, self.width
        z = F.linear(x0, self.input_proj.weight)  # [B, T, N]
        for l, a in enumerate(self.attention(x0)):  # a: [B, H, T(key), T(query)]
            v = F.linear(z, self.value_weight(l)).view(B, T, H, N)
            z = torch.einsum("bhst,bshm->btm", a, v)
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
    w = path_readouts(value, readout)
    return w @ w.T
