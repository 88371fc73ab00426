"""Sequences x_0 in factored form: patch values, the label of each token, and the two fixed tables
(docs/p1_images.md#training-loop).

A patch token is a grey patch replicated to three channels (channel fastest) and LayerNormed, which keeps the
replication, so token t of a sequence is

    x_0[t, 3 j + c] = v_t[j] + labels[lab(t), 3 j + c] + positions[t, 3 j + c]      (j < 64, c < 3),

with v_t the 64 values of the patch and lab(t) the label vector of t's image (e_0 / e_1 for the contexts, e_2 for
the query). A product W x_0 (W: [O, 192]) is then (W summed over the three replicas) v_t, a 64-wide product, plus
two small tables W labels^T and W positions^T. ``TokenFeatures.values`` holds per token the 64 patch values followed
by the one-hot code of lab(t) (67 numbers), so one GEMM with [W R, W labels^T] gives both of the first two terms,
and its backward gives the gradient of both.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from smattn.p1.images.tokens import CHANNELS, TOKEN_DIM, TOKENS_PER_IMAGE

#: number of label vectors (e_0, e_1, e_2)
N_LABELS = 3
#: numbers per token in ``TokenFeatures.values``
FEATURE_DIM = TOKEN_DIM // CHANNELS + N_LABELS


@dataclass
class TokenFeatures:
    """A batch of sequences in factored form (module docstring).

    values: [B, T, 67] (64 patch values, then the one-hot label code); labels: [3, 192]; positions: [T, 192]; all
    float tensors of one device and dtype. ``x0()`` rebuilds the sequences [B, T, 192].
    """

    values: torch.Tensor
    labels: torch.Tensor
    positions: torch.Tensor

    def __post_init__(self):
        v = self.values
        if v.dim() != 3 or v.shape[-1] != FEATURE_DIM or tuple(self.positions.shape) != (v.shape[1], TOKEN_DIM):
            raise ValueError(
                f"TokenFeatures: expected values [B, T, {FEATURE_DIM}] and positions [T, {TOKEN_DIM}], got "
                f"{tuple(v.shape)} and {tuple(self.positions.shape)}"
            )
        if tuple(self.labels.shape) != (N_LABELS, TOKEN_DIM):
            raise ValueError(
                f"TokenFeatures: expected labels [{N_LABELS}, {TOKEN_DIM}], got {tuple(self.labels.shape)}"
            )

    def __len__(self) -> int:
        return int(self.values.shape[0])

    def x0(self) -> torch.Tensor:
        """The sequences x_0 [B, T, 192] these features stand for."""
        patch = self.values[..., : TOKEN_DIM // CHANNELS].repeat_interleave(CHANNELS, dim=-1)
        return patch + self.values[..., TOKEN_DIM // CHANNELS :] @ self.labels + self.positions

    def weights(self, weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """For a weight W [O, 192] acting on x_0: (the weight acting on ``values``, [O, 67]: W summed over the three
        replicas, then W labels^T; the positional products positions W^T, [T, O]). So x_0 W^T = values (first)^T +
        second, up to rounding."""
        O = weight.shape[0]
        folded = torch.cat([weight.view(O, TOKEN_DIM // CHANNELS, CHANNELS).sum(-1), weight @ self.labels.T], dim=1)
        return folded, self.positions @ weight.T


def patch_values(tokens: np.ndarray) -> np.ndarray:
    """The 64 patch values of each token: tokens [..., 192] (channel-replicated) -> [..., 64]. Raises ValueError
    when the three replicas of a value are not equal (tokens that are not of ``smattn.p1.images.tokens``)."""
    t = np.asarray(tokens)
    r = t.reshape(*t.shape[:-1], TOKEN_DIM // CHANNELS, CHANNELS)
    if not all(np.array_equal(r[..., c], r[..., 0], equal_nan=True) for c in (1, 2)):
        raise ValueError("patch_values: the token table is not replicated over three channels (channel fastest)")
    return np.ascontiguousarray(r[..., 0])


def assemble_features(values, image, label, labels, positions, out=None) -> TokenFeatures:
    """``TokenFeatures`` of a batch from a table of patch values: values [n_images, 16, 64] (``patch_values``),
    image, label: [B, 3] int tensors (image and label-vector ids of slots A, B, query); labels [3, 192], positions
    [48, 192]. ``out``: optional [B, 48, 67] tensor to fill in place (the training loop reuses one)."""
    B = image.shape[0]
    n = TOKEN_DIM // CHANNELS
    if out is None:
        out = values.new_empty(B, 3 * TOKENS_PER_IMAGE, FEATURE_DIM)
    slots = out.view(B, 3, TOKENS_PER_IMAGE, FEATURE_DIM)
    slots[..., :n] = values.index_select(0, image.reshape(-1)).view(B, 3, TOKENS_PER_IMAGE, n)
    slots[..., n:] = torch.nn.functional.one_hot(label, N_LABELS).to(out.dtype).view(B, 3, 1, N_LABELS)
    return TokenFeatures(out, labels, positions)
