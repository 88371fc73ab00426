"""The GD transformer computed as its sum over attention paths (docs/p1_images.md#training-loop).

The network has no residuals, no MLP and no normalisation, its value chain is linear, every layer's attention reads
the bare input x_0 and the readout reads the mean over tokens. So its output is exactly

    f = sum_{paths h_1..h_L} sum_s0 (w_path . x0_s0) v_path[s0],
    w_path = (prod_l c_l m_{l,h_l}) W_in^T W_V,h_1^(1)T ... W_V,h_L^(L)T w_out          (a D-vector),
    v_path = abar_L,h_L A_{L-1},h_{L-1} ... A_1,h_1       (abar: layer L's attention averaged over its queries),

the decomposition the theory uses. Per sequence it needs the products of x_0 with the stacked weights
[W_Q / sqrt(G); W_K; w_path] (one GEMM, [2 L H G + H^L] columns) and the attention matrices, and no N-wide token
vector at all. Shapes: B sequences of T tokens, H heads per layer, G query/key size, P = H^L paths.

``PathNetwork`` computes it with a hand-written backward that walks the batch in chunks, the input products
included (a chunk's tensors stay in the CPU's cache through the GEMMs, the softmax, the path contraction and their
gradients); ``path_core_autograd`` is the part after the GEMM in plain torch operations (used on GPUs and under
autocast, where chunking buys nothing, and as the reference of the hand-written backward in the tests).
"""

from __future__ import annotations

import torch

#: sequences per chunk of ``PathNetwork``: a chunk's product with the input, [32 x 48, 67] x [67, ~600], runs at about
#: twice the rate of the whole batch's on a Zen 3 core (in cache); 16 and 32 measured alike
CHUNK = 32


def path_readouts(value: torch.Tensor, readout: torch.Tensor) -> torch.Tensor:
    """Effective readout of every attention path, in the width-N space of z^(0).

    value: [L, H, N(out), N(in)] value weights (already carrying any per-head factor); readout: [N] (w_out).
    Returns [H^L, N]: row (h_1..h_L) (h_1 slowest) is W_V,h_1^(1)T ... W_V,h_L^(L)T w_out.
    """
    L, H, N, _ = value.shape
    w = readout.reshape(1, N)  # partial paths (h_l..h_L), lowest layer slowest
    for l in range(L - 1, -1, -1):
        w = torch.einsum("rn,hnm->hrm", w, value[l]).reshape(-1, N)  # new[(h, rho)] = W_V,h^T w[rho]
    return w


def _layout(O: int, L: int, H: int, G: int) -> tuple[int, int]:
    HG = H * G
    P = O - 2 * L * HG
    if P != H**L:
        raise ValueError(f"path core: {O} columns do not hold 2 L H G = {2 * L * HG} logits and H^L = {H**L} paths")
    return HG, P


def _chain_heads(attn: list[torch.Tensor]) -> list[torch.Tensor]:
    """The value chain of one chunk in head-major layout: attn[l] [H, b, T(query), T(key)]; returns V^(l) for
    l = 0..L-1, each [H^(L-l), b, T] (paths (h_l..h_L), h_l slowest): V^(L-1) = abar_L, V^(l)[h] = V^(l+1) A_l[h]."""
    L = len(attn)
    H, b, T, _ = attn[0].shape
    vs = [None] * L
    vs[L - 1] = attn[L - 1].mean(dim=2)
    for l in range(L - 2, -1, -1):
        n = vs[l + 1].shape[0]
        v = torch.matmul(vs[l + 1].transpose(0, 1).unsqueeze(0), attn[l])  # [H, b, n, T]
        vs[l] = v.transpose(1, 2).reshape(H * n, b, T)
    return vs


def path_core_autograd(x: torch.Tensor, pos: torch.Tensor, L: int, H: int, G: int) -> torch.Tensor:
    """f [B] from x [B, T, O] (the products of the bare input with [W_Q / sqrt(G); W_K; w_path] per layer, heads
    in blocks of G) plus pos [T, O] (the same products of the positional table), in plain torch operations."""
    x = x + pos
    B, T, O = x.shape
    HG, P = _layout(O, L, H, G)
    attn = []
    for l in range(L):
        q = x[..., l * HG : (l + 1) * HG].reshape(B, T, H, G).permute(2, 0, 1, 3)  # [H, B, T, G]
        k = x[..., (L + l) * HG : (L + l + 1) * HG].reshape(B, T, H, G).permute(2, 0, 1, 3)
        attn.append(torch.softmax(torch.matmul(q, k.transpose(-1, -2)), dim=-1))
    v = _chain_heads(attn)[0]  # [P, B, T]
    u = x[..., 2 * L * HG :]  # [B, T, P]
    with torch.autocast(x.device.type, enabled=False):  # the sum over paths and tokens in x's precision
        return torch.einsum("btp,pbt->b", u, v.to(u.dtype))


class _Chunks:
    """The chunk walk shared by ``PathNetwork`` and ``PathSquaredError``: per chunk of sequences, the forward (the
    queries and keys of every layer and head from one batched product with the input, [2 L H, b T, G], head-major so
    no transposition follows; the path values u; the attention; the path contraction) and the backward of a given
    d f / d f_chunk, accumulating the weight gradients (batched products). A chunk's tensors are a few MB.

    values: [B, T, K] (no gradient); weight: [O, K]; pos: [T, O], O = 2 L H G + H^L (``_layout``)."""

    def __init__(self, values, weight, pos, L: int, H: int, G: int, chunk: int):
        B, T, K = values.shape
        O = weight.shape[0]
        self.HG, self.P = _layout(O, L, H, G)
        self.L, self.H, self.G, self.chunk, self.O = L, H, G, chunk, O
        self.values = values
        u0, n2 = 2 * L * self.HG, 2 * L * H
        self.u0, self.n2 = u0, n2
        self.w_qk = weight[:u0].view(n2, G, K).transpose(1, 2)  # [2 L H, K, G]
        self.pos_qk = pos[:, :u0].reshape(T, n2, G).transpose(0, 1).unsqueeze(1)  # [2 L H, 1, T, G]
        self.w_u, self.pos_u = weight[u0:], pos[:, u0:]

    def starts(self):
        return range(0, self.values.shape[0], self.chunk)

    def forward(self, b0: int):
        """f [b] of the chunk starting at sequence b0, and what its backward needs."""
        L, H, G, n2 = self.L, self.H, self.G, self.n2
        B, T, K = self.values.shape
        b = min(self.chunk, B - b0)
        vc = self.values[b0 : b0 + b].reshape(b * T, K)
        qk = torch.bmm(vc.expand(n2, b * T, K), self.w_qk).view(n2, b, T, G)
        qk += self.pos_qk
        u = (vc @ self.w_u.t()).view(b, T, self.P) + self.pos_u
        attn = []
        for l in range(L):
            q = qk[l * H : (l + 1) * H].view(H * b, T, G)
            k = qk[(L + l) * H : (L + l + 1) * H].view(H * b, T, G)
            attn.append(torch.softmax(torch.bmm(q, k.transpose(1, 2)), dim=-1).view(H, b, T, T))
        vs = _chain_heads(attn)
        return torch.einsum("btp,pbt->b", u, vs[0]), (qk, u, attn, vs)

    def zero_grads(self):
        """The accumulators of ``backward``: (dw_qk [2 L H, G, K], dw_u [H^L, K], dpos_qk [2 L H, T, G], dpos_u)."""
        _, T, K = self.values.shape
        new = self.values.new_zeros
        return new(self.n2, self.G, K), new(self.O - self.u0, K), new(self.n2, T, self.G), new(T, self.O - self.u0)

    def backward(self, b0: int, saved, g, grads) -> None:
        """Add the chunk's weight gradients for d f / d f_chunk = g [b] to ``grads`` (``zero_grads``)."""
        L, H, G, n2 = self.L, self.H, self.G, self.n2
        dw_qk, dw_u, dpos_qk, dpos_u = grads
        qk, u, attn, vs = saved
        b, T, _ = u.shape
        K = self.values.shape[2]
        vc = self.values[b0 : b0 + b].reshape(b * T, K)
        du = (vs[0] * g.view(1, b, 1)).permute(1, 2, 0)  # [b, T, P]
        dw_u.addmm_(du.reshape(b * T, -1).t(), vc)
        dpos_u += du.sum(dim=0)
        dv = u.permute(2, 0, 1) * g.view(1, b, 1)  # d f / d V^(0): [P, b, T]
        dvs = [None] * L
        for l in range(L - 1):
            n = vs[l + 1].shape[0]
            dvs[l] = dv.view(H, n, b, T).transpose(1, 2)  # [H, b, n, T]
            # V^(l)[h] = V^(l+1) A_l[h]  =>  dV^(l+1) = sum_h dV^(l)[h] A_l[h]^T
            dv = torch.matmul(dvs[l], attn[l].transpose(-1, -2)).sum(dim=0).transpose(0, 1)  # [n, b, T]
        dabar = dv * (1.0 / T)  # abar_L = mean over the T queries of A_L: dA_L[t, s] = dabar[s] / T
        dqk = torch.empty_like(qk)
        da = torch.empty_like(attn[0])  # [H, b, T, T]
        for l in range(L):
            a = attn[l]
            if l == L - 1:
                da_l = dabar.unsqueeze(2).expand_as(a)  # dA[t, s] = dabar[s] for every query t
            else:
                # dA[h] = V^(l+1)^T dV^(l)[h] (rank H^(L-1-l))
                vt = vs[l + 1].permute(1, 2, 0).unsqueeze(0)  # [1, b, T, n]
                da_l = torch.matmul(vt.expand(H, b, T, vt.shape[-1]), dvs[l], out=da)
            # softmax backward, one fused pass: dS = A (dA - sum_s' A[t, s'] dA[t, s'])
            ds = torch._softmax_backward_data(da_l, a, -1, a.dtype)
            dsv = ds.view(H * b, T, T)
            q = qk[l * H : (l + 1) * H].view(H * b, T, G)
            k = qk[(L + l) * H : (L + l + 1) * H].view(H * b, T, G)
            torch.bmm(dsv, k, out=dqk[l * H : (l + 1) * H].view(H * b, T, G))
            torch.bmm(dsv.transpose(1, 2), q, out=dqk[(L + l) * H : (L + l + 1) * H].view(H * b, T, G))
        dw_qk.baddbmm_(dqk.view(n2, b * T, G).transpose(1, 2), vc.expand(n2, b * T, K))
        dpos_qk += dqk.sum(dim=1)

    def gradients(self, grads):
        """(d weight [O, K], d pos [T, O]) from the accumulators."""
        dw_qk, dw_u, dpos_qk, dpos_u = grads
        T, K = self.values.shape[1], self.values.shape[2]
        dweight = torch.cat([dw_qk.view(self.u0, K), dw_u])
        dpos = torch.cat([dpos_qk.transpose(0, 1).reshape(T, self.u0), dpos_u], dim=1)
        return dweight, dpos


class PathNetwork(torch.autograd.Function):
    """f [B] = ``path_core_autograd(values @ weight^T, pos, L, H, G)`` with a hand-written backward, walking the
    batch in chunks of ``chunk`` sequences (``_Chunks``); what the backward needs is kept per chunk (queries and
    keys, attention, u and the value chain).

    values: [B, T, K] (no gradient); weight: [O, K]; pos: [T, O], O = 2 L H G + H^L (``_layout``).
    """

    @staticmethod
    def forward(ctx, values, weight, pos, L: int, H: int, G: int, chunk: int):
        walk = _Chunks(values, weight, pos, L, H, G, chunk)
        f = values.new_empty(values.shape[0])
        saved = []
        for b0 in walk.starts():
            fc, s = walk.forward(b0)
            f[b0 : b0 + fc.shape[0]] = fc
            saved.append(s)
        ctx.walk, ctx.saved = walk, saved
        return f

    @staticmethod
    def backward(ctx, df):
        walk = ctx.walk
        grads = walk.zero_grads()
        for b0, s in zip(walk.starts(), ctx.saved, strict=True):
            walk.backward(b0, s, df[b0 : b0 + walk.chunk], grads)
        return None, *walk.gradients(grads), None, None, None, None


class PathSquaredError(torch.autograd.Function):
    """The mean squared error mean_b (f_b - y_b)^2 [0-dim] of ``PathNetwork``'s f, with its weight gradients computed
    during the forward: each chunk's backward follows its forward at once (d loss / d f_b = 2 (f_b - y_b) / B is
    known as soon as the chunk's f is), while the chunk's tensors are still in cache, and nothing is kept per chunk.
    The backward scales the stored gradients by the loss's incoming gradient.

    values: [B, T, K] (no gradient); weight: [O, K]; pos: [T, O]; y: [B] (no gradient).
    """

    @staticmethod
    def forward(ctx, values, weight, pos, y, L: int, H: int, G: int, chunk: int):
        walk = _Chunks(values, weight, pos, L, H, G, chunk)
        B = values.shape[0]
        grads = walk.zero_grads()
        loss = values.new_zeros(())
        for b0 in walk.starts():
            fc, s = walk.forward(b0)
            r = fc - y[b0 : b0 + fc.shape[0]]
            loss += r.dot(r)
            walk.backward(b0, s, r * (2.0 / B), grads)
        ctx.grads = walk.gradients(grads)
        return loss / B

    @staticmethod
    def backward(ctx, dloss):
        dweight, dpos = ctx.grads
        return None, dweight * dloss, dpos * dloss, None, None, None, None, None


def path_network(
    values: torch.Tensor, weight: torch.Tensor, pos: torch.Tensor, L: int, H: int, G: int, chunk: int = CHUNK
) -> torch.Tensor:
    """f [B] of the path form from the input features values [B, T, K], the stacked weights [O, K] acting on them
    and the positional products pos [T, O]: the chunked ``PathNetwork`` on a CPU (when the features need no
    gradient and no autocast is active), plain torch operations elsewhere."""
    dev = values.device.type
    if dev == "cpu" and not torch.is_autocast_enabled(dev) and not values.requires_grad:
        return PathNetwork.apply(values, weight, pos, int(L), int(H), int(G), int(chunk))
    u0 = 2 * L * H * G
    x_qk = torch.nn.functional.linear(values, weight[:u0])
    # the path readouts' product in the weights' precision even under autocast: its weight gradient sums
    # g v_path x_0 over every token of the batch and overflows float16 at the gradient scaler's first scales
    with torch.autocast(dev, enabled=False):
        x_u = torch.nn.functional.linear(values.to(weight.dtype), weight[u0:])
    return path_core_autograd(torch.cat([x_qk.to(x_u.dtype), x_u], dim=-1), pos, L, H, G)


def path_squared_error(
    values: torch.Tensor,
    weight: torch.Tensor,
    pos: torch.Tensor,
    y: torch.Tensor,
    L: int,
    H: int,
    G: int,
    chunk: int = CHUNK,
) -> torch.Tensor:
    """The mean squared error mean_b (f_b - y_b)^2 [0-dim, float32 or the weights' dtype] of ``path_network``'s f
    against targets y [B]: ``PathSquaredError`` (each chunk's backward right after its forward) where
    ``path_network`` would take ``PathNetwork``, else the plain form's f and the error of it."""
    dev = values.device.type
    if dev == "cpu" and not torch.is_autocast_enabled(dev) and not values.requires_grad and not y.requires_grad:
        return PathSquaredError.apply(values, weight, pos, y.to(values.dtype), int(L), int(H), int(G), int(chunk))
    f = path_network(values, weight, pos, L, H, G, chunk).float()
    return torch.nn.functional.mse_loss(f, y.to(f.dtype))
