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

import functools
import os
import shutil

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


def _chunk_forward(vc, w_qk, pos_qk, w_u, pos_u, L: int, H: int, G: int):
    """f [b] of one chunk of b sequences from its input features vc [b T, K], and what its backward needs.

    The queries and keys of every layer and head come from one batched product with the input, [2 L H, b T, G],
    head-major so no transposition follows; then the path values u, the attention and the path contraction.
    w_qk [2 L H, K, G], pos_qk [2 L H, 1, T, G], w_u [H^L, K], pos_u [T, H^L] (``_Chunks``)."""
    n2, T = 2 * L * H, pos_qk.shape[2]
    bT, K = vc.shape
    b = bT // T
    qk = torch.bmm(vc.expand(n2, bT, K), w_qk).view(n2, b, T, G) + pos_qk
    u = (vc @ w_u.t()).view(b, T, -1) + pos_u
    attn = []
    for l in range(L):
        q = qk[l * H : (l + 1) * H].view(H * b, T, G)
        k = qk[(L + l) * H : (L + l + 1) * H].view(H * b, T, G)
        attn.append(torch.softmax(torch.bmm(q, k.transpose(1, 2)), dim=-1).view(H, b, T, T))
    vs = _chain_heads(attn)
    return torch.einsum("btp,pbt->b", u, vs[0]), (qk, u, attn, vs)


def _chunk_backward(vc, saved, g, L: int, H: int, G: int):
    """The weight gradients of one chunk for d f / d f_chunk = g [b]: (dw_qk [2 L H, G, K], dw_u [H^L, K],
    dpos_qk [2 L H, T, G], dpos_u [T, H^L]); vc and ``saved`` as ``_chunk_forward`` took and returned them."""
    qk, u, attn, vs = saved
    b, T, _ = u.shape
    n2 = 2 * L * H
    du = (vs[0] * g.view(1, b, 1)).permute(1, 2, 0)  # [b, T, P]
    dw_u = du.reshape(b * T, -1).t() @ vc
    dpos_u = du.sum(dim=0)
    dv = u.permute(2, 0, 1) * g.view(1, b, 1)  # d f / d V^(0): [P, b, T]
    dvs = [None] * L
    for l in range(L - 1):
        n = vs[l + 1].shape[0]
        dvs[l] = dv.view(H, n, b, T).transpose(1, 2)  # [H, b, n, T]
        # V^(l)[h] = V^(l+1) A_l[h]  =>  dV^(l+1) = sum_h dV^(l)[h] A_l[h]^T
        dv = torch.matmul(dvs[l], attn[l].transpose(-1, -2)).sum(dim=0).transpose(0, 1)  # [n, b, T]
    dabar = dv * (1.0 / T)  # abar_L = mean over the T queries of A_L: dA_L[t, s] = dabar[s] / T
    dq, dk = [], []
    for l in range(L):
        a = attn[l]
        if l == L - 1:
            da = dabar.unsqueeze(2).expand_as(a)  # dA[t, s] = dabar[s] for every query t
        else:
            # dA[h] = V^(l+1)^T dV^(l)[h] (rank H^(L-1-l))
            vt = vs[l + 1].permute(1, 2, 0).unsqueeze(0)  # [1, b, T, n]
            da = torch.matmul(vt.expand(H, b, T, vt.shape[-1]), dvs[l])
        # softmax backward, one fused pass: dS = A (dA - sum_s' A[t, s'] dA[t, s'])
        ds = torch._softmax_backward_data(da, a, -1, a.dtype).view(H * b, T, T)
        q = qk[l * H : (l + 1) * H].view(H * b, T, G)
        k = qk[(L + l) * H : (L + l + 1) * H].view(H * b, T, G)
        dq.append(torch.bmm(ds, k).view(H, b * T, G))
        dk.append(torch.bmm(ds.transpose(1, 2), q).view(H, b * T, G))
    dqk = torch.cat(dq + dk)  # [2 L H, b T, G]
    dw_qk = torch.bmm(dqk.transpose(1, 2), vc.expand(n2, b * T, vc.shape[1]))
    return dw_qk, dw_u, dqk.view(n2, b, T, G).sum(dim=1), dpos_u


def chunk_squared_error(vc, yc, w_qk, pos_qk, w_u, pos_u, scale: float, L: int, H: int, G: int):
    """One chunk of ``PathSquaredError``: the sum of squared errors sum_b (f_b - y_b)^2 of sequences vc [b T, K]
    against yc [b], and the chunk's weight gradients (``_chunk_backward``) of ``scale`` times that sum. A pure
    function of tensors, so ``torch.compile`` can fuse it (``compiled_chunk_squared_error``)."""
    f, saved = _chunk_forward(vc, w_qk, pos_qk, w_u, pos_u, L, H, G)
    r = f - yc
    return (r.dot(r), *_chunk_backward(vc, saved, r * (2.0 * scale), L, H, G))


def cpp_compiler() -> str:
    """The C++ compiler TorchInductor's CPU backend will call ($CXX, else the first of c++, g++, clang++ on the PATH);
    ValueError naming the remedy when there is none."""
    for name in (os.environ.get("CXX"), "c++", "g++", "clang++"):
        if name and shutil.which(name):
            return shutil.which(name)
    raise ValueError(
        "gd_compile: true compiles the training loss into C++ kernels on a CPU, and no C++ compiler was found "
        "($CXX, c++, g++, clang++): install one (e.g. g++, or conda's cxx-compiler), or set p1_images.gd_compile: "
        "false (the same network up to float32 rounding, 15-25 % slower steps)"
    )


@functools.cache
def compiled_chunk_squared_error():
    """``chunk_squared_error`` compiled by TorchInductor (one C++ kernel per run of elementwise operations and
    reductions around the products; needs a C++ compiler at run time, ``cpp_compiler``), with static shapes: one
    compilation per model and chunk size, kept in Inductor's on-disk cache for the next process."""
    cpp_compiler()
    return torch.compile(chunk_squared_error, dynamic=False)


class _Chunks:
    """The chunk walk shared by ``PathNetwork`` and ``PathSquaredError``: the weights in the layouts of
    ``_chunk_forward`` and the sum of the chunks' gradients. A chunk's tensors are a few MB.

    values: [B, T, K] (no gradient); weight: [O, K]; pos: [T, O], O = 2 L H G + H^L (``_layout``)."""

    def __init__(self, values, weight, pos, L: int, H: int, G: int, chunk: int):
        B, T, K = values.shape
        O = weight.shape[0]
        HG, _ = _layout(O, L, H, G)
        self.L, self.H, self.G, self.chunk, self.O = L, H, G, chunk, O
        self.values = values
        u0, n2 = 2 * L * HG, 2 * L * H
        self.u0, self.n2 = u0, n2
        self.w_qk = weight[:u0].view(n2, G, K).transpose(1, 2)  # [2 L H, K, G]
        self.pos_qk = pos[:, :u0].reshape(T, n2, G).transpose(0, 1).unsqueeze(1)  # [2 L H, 1, T, G]
        self.w_u, self.pos_u = weight[u0:], pos[:, u0:]

    def starts(self):
        return range(0, self.values.shape[0], self.chunk)

    def values_at(self, b0: int):
        """The input features [b T, K] of the chunk starting at sequence b0."""
        return self.values[b0 : b0 + self.chunk].reshape(-1, self.values.shape[2])

    def weights(self) -> tuple:
        """(w_qk, pos_qk, w_u, pos_u), the weight arguments of ``_chunk_forward``."""
        return self.w_qk, self.pos_qk, self.w_u, self.pos_u

    def forward(self, b0: int):
        """f [b] of the chunk starting at sequence b0, and what its backward needs."""
        return _chunk_forward(self.values_at(b0), *self.weights(), self.L, self.H, self.G)

    def zero_grads(self):
        """The accumulators of ``add``: (dw_qk [2 L H, G, K], dw_u [H^L, K], dpos_qk [2 L H, T, G], dpos_u)."""
        _, T, K = self.values.shape
        new = self.values.new_zeros
        return new(self.n2, self.G, K), new(self.O - self.u0, K), new(self.n2, T, self.G), new(T, self.O - self.u0)

    @staticmethod
    def add(grads, chunk_grads) -> None:
        """Add one chunk's gradients (as ``_chunk_backward`` returns them) to the accumulators ``grads``."""
        for acc, g in zip(grads, chunk_grads, strict=True):
            acc += g

    def backward(self, b0: int, saved, g, grads) -> None:
        """Add the chunk's weight gradients for d f / d f_chunk = g [b] to ``grads`` (``zero_grads``)."""
        self.add(grads, _chunk_backward(self.values_at(b0), saved, g, self.L, self.H, self.G))

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
    The backward scales the stored gradients by the loss's incoming gradient. ``compiled``: each chunk by
    ``compiled_chunk_squared_error`` (the same operations, fused; float rounding may differ), else eagerly.

    values: [B, T, K] (no gradient); weight: [O, K]; pos: [T, O]; y: [B] (no gradient).
    """

    @staticmethod
    def forward(ctx, values, weight, pos, y, L: int, H: int, G: int, chunk: int, compiled: bool = False):
        walk = _Chunks(values, weight, pos, L, H, G, chunk)
        B = values.shape[0]
        fn = compiled_chunk_squared_error() if compiled else chunk_squared_error
        grads = walk.zero_grads()
        loss = values.new_zeros(())
        for b0 in walk.starts():
            sse, *chunk_grads = fn(walk.values_at(b0), y[b0 : b0 + chunk], *walk.weights(), 1.0 / B, L, H, G)
            loss += sse
            walk.add(grads, chunk_grads)
        ctx.grads = walk.gradients(grads)
        return loss / B

    @staticmethod
    def backward(ctx, dloss):
        dweight, dpos = ctx.grads
        return None, dweight * dloss, dpos * dloss, None, None, None, None, None, None


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
    compiled: bool = False,
) -> torch.Tensor:
    """The mean squared error mean_b (f_b - y_b)^2 [0-dim, float32 or the weights' dtype] of ``path_network``'s f
    against targets y [B]: ``PathSquaredError`` (each chunk's backward right after its forward; ``compiled``: its
    chunks compiled) where ``path_network`` would take ``PathNetwork``, else the plain form's f and the error of it
    (``compiled`` unused: compile the caller instead)."""
    dev = values.device.type
    if dev == "cpu" and not torch.is_autocast_enabled(dev) and not values.requires_grad and not y.requires_grad:
        args = (int(L), int(H), int(G), int(chunk), bool(compiled))
        return PathSquaredError.apply(values, weight, pos, y.to(values.dtype), *args)
    f = path_network(values, weight, pos, L, H, G, chunk).float()
    return torch.nn.functional.mse_loss(f, y.to(f.dtype))
