"""Attention matrices, attention paths and attentioned inputs of P1's deep multi-head attention model (spec §1).

Array layout used throughout ``smattn.p1`` (token-first, unlike the spec's ``D x T`` stacking):

* bare inputs ``x``: ``[B, T, D]`` (B sequences, T tokens, token dimension D);
* attention matrices of one layer: ``[B, H, T, T]``, **key first**: ``A[b, h, s, t]`` is the weight of key ``s`` for
  query ``t``; the softmax normalises over ``s`` (every column sums to one);
* readout attention vectors of the last layer: ``[B, H_L, T]``;
* path attention vectors ``abar``: ``[B, H_tot, T]`` with paths flattened row-major over ``(h_1, ..., h_L)``
  (``h_1`` slowest), e.g. for L = 2 the flat index is ``h1 * H2 + h2``;
* attentioned inputs ``xi``: ``[B, H_tot, D]`` with ``xi[b, pi] = sigma0 / sqrt(D * H_tot) * sum_s abar[b, pi, s] x[b, s]``.

Two attention styles: the product-matrix ("W") style of the HMC task, ``e_st = x_s^T W x_t`` with ``W`` of shape
``[H, D, D]`` (key on the left), and the query/key ("QK") style of the image task,
``e_st = (W_K x_s) . (W_Q x_t) / sqrt(G)`` with ``W_Q, W_K`` of shape ``[H, G, D]``. Attention is always computed
from the bare input ``x`` (never from hidden representations). Everything here is NumPy float64.
"""

from __future__ import annotations

import numpy as np

READOUTS = ("last", "first", "mean")


def _check_x(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 3:
        raise ValueError(f"inputs x must have shape [B, T, D], got shape {x.shape}")
    return x


def _softmax_keys(logits: np.ndarray) -> np.ndarray:
    """Softmax over the key axis (axis -2) of ``[..., T_key, T_query]`` logits, numerically stable."""
    m = logits.max(axis=-2, keepdims=True)
    e = np.exp(logits - m)
    return e / e.sum(axis=-2, keepdims=True)


def attention_w(x: np.ndarray, W: np.ndarray) -> np.ndarray:
    """W-style attention. x: [B, T, D]; W: [H, D, D] (key index first). Returns A: [B, H, T, T] (key, query)."""
    x = _check_x(x)
    W = np.asarray(W, dtype=np.float64)
    if W.ndim != 3 or W.shape[1:] != (x.shape[2], x.shape[2]):
        raise ValueError(f"W must have shape [H, D, D] with D={x.shape[2]}, got {W.shape}")
    # e[b,h,s,t] = x[b,s,:] W[h] x[b,t,:]
    xw = np.einsum("bsd,hde->bhse", x, W)
    logits = np.einsum("bhse,bte->bhst", xw, x)
    return _softmax_keys(logits)


def attention_qk(x: np.ndarray, WQ: np.ndarray, WK: np.ndarray) -> np.ndarray:
    """QK-style attention. x: [B, T, D]; WQ, WK: [H, G, D]. Returns A: [B, H, T, T] (key, query), scale 1/sqrt(G)."""
    x = _check_x(x)
    WQ = np.asarray(WQ, dtype=np.float64)
    WK = np.asarray(WK, dtype=np.float64)
    if WQ.shape != WK.shape or WQ.ndim != 3 or WQ.shape[2] != x.shape[2]:
        raise ValueError(f"WQ, WK must both have shape [H, G, D={x.shape[2]}], got {WQ.shape} and {WK.shape}")
    q = np.einsum("hgd,btd->bhtg", WQ, x)
    k = np.einsum("hgd,bsd->bhsg", WK, x)
    logits = np.einsum("bhsg,bhtg->bhst", k, q) / np.sqrt(WQ.shape[1])
    return _softmax_keys(logits)


def readout_vector(A_last: np.ndarray, readout: str) -> np.ndarray:
    """Readout attention vector of the last layer. A_last: [B, H_L, T, T] -> [B, H_L, T].

    ``readout`` is ``"last"`` (query = last token), ``"first"`` (query = token 0) or ``"mean"`` (average over
    queries, identical to mean-pooling the last layer's token outputs).
    """
    if readout == "last":
        return A_last[..., :, -1]
    if readout == "first":
        return A_last[..., :, 0]
    if readout == "mean":
        return A_last.mean(axis=-1)
    raise ValueError(f"readout must be one of {READOUTS}, got {readout!r}")


def path_attention(attn: list[np.ndarray], readout: str) -> np.ndarray:
    """Path attention vectors. attn: list of L arrays [B, H_l, T, T] (layer 1 first). Returns [B, H_tot, T].

    Built from the top layer down: ``abar_(h_l, rho)(s) = sum_t A^(l)_{h_l}(s, t) abar_rho(t)``, flattening
    ``(h_l, rho)`` with ``h_l`` slow, so the final path index is row-major over ``(h_1, ..., h_L)``.
    """
    if not attn:
        raise ValueError("need at least one attention layer")
    abar = readout_vector(np.asarray(attn[-1], dtype=np.float64), readout)  # [B, H_L, T]
    for A in reversed(attn[:-1]):
        A = np.asarray(A, dtype=np.float64)
        if A.ndim != 4 or A.shape[0] != abar.shape[0] or A.shape[2:] != (abar.shape[2],) * 2:
            raise ValueError(f"attention matrices must be [B, H, T, T] with matching B, T; got {A.shape}")
        new = np.einsum("bhst,brt->bhrs", A, abar)  # [B, H_l, H_rest, T]
        abar = new.reshape(A.shape[0], -1, A.shape[2])
    return abar


def attentioned_inputs(x: np.ndarray, abar: np.ndarray, sigma0: float = 1.0) -> np.ndarray:
    """Attentioned inputs xi = sigma0/sqrt(D H_tot) sum_s abar(s) x_s. x: [B, T, D], abar: [B, H_tot, T] -> [B, H_tot, D]."""
    x = _check_x(x)
    if abar.shape[0] != x.shape[0] or abar.shape[2] != x.shape[1]:
        raise ValueError(f"abar {abar.shape} does not match x {x.shape}")
    B, Htot, _ = abar.shape
    D = x.shape[2]
    return sigma0 / np.sqrt(D * Htot) * np.einsum("bps,bsd->bpd", abar, x)


def layer_attention(x: np.ndarray, heads: list[dict]) -> list[np.ndarray]:
    """Attention matrices of every layer from a head specification.

    heads: one dict per layer, either ``{"W": [H, D, D]}`` (W style) or ``{"WQ": [H, G, D], "WK": [H, G, D]}``
    (QK style). Returns a list of L arrays [B, H_l, T, T].
    """
    out = []
    for l, spec in enumerate(heads):
        if "W" in spec:
            out.append(attention_w(x, spec["W"]))
        elif "WQ" in spec and "WK" in spec:
            out.append(attention_qk(x, spec["WQ"], spec["WK"]))
        else:
            raise ValueError(f"layer {l + 1}: head spec needs 'W' or both 'WQ' and 'WK', got keys {sorted(spec)}")
    return out


def attentioned_inputs_from_heads(
    x: np.ndarray, heads: list[dict], readout: str, sigma0: float = 1.0, chunk: int = 256
) -> np.ndarray:
    """Convenience: xi [B, H_tot, D] from bare inputs [B, T, D] and per-layer heads, computed in chunks of ``chunk``."""
    x = _check_x(x)
    parts = []
    for i in range(0, x.shape[0], chunk):
        xc = x[i : i + chunk]
        abar = path_attention(layer_attention(xc, heads), readout)
        parts.append(attentioned_inputs(xc, abar, sigma0))
    return np.concatenate(parts, axis=0)
