"""The GD transformer (docs/p1_images.md#gd-transformer): parameter count, literal forward, pruning, U_GD, link to
the theory."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from smattn.p1.images.model import AttentionPathsTransformer, gd_order_parameter


def _model(L=2, H=3, N=6, G=4, D=10, seed=0):
    torch.manual_seed(seed)
    return AttentionPathsTransformer(L, H, N, G, token_dim=D).double()


def test_parameter_count_matches_the_paper():
    assert AttentionPathsTransformer(2, 4, 512, 128).n_trainable() == 2_589_184
    assert AttentionPathsTransformer(2, 8, 512, 64).n_trainable() == 4_686_336


def _literal_forward(m, x):
    """Loop-by-loop forward of docs/p1_images.md#gd-transformer (for one sequence x [T, D])."""
    H, N, G = m.n_heads, m.width, m.qk_dim
    z = x @ m.input_proj.weight.T  # [T, N]
    for l in range(m.n_layers):
        Wq = m.query[l].weight.view(H, G, -1)
        Wk = m.key[l].weight.view(H, G, -1)
        Wv = m.value[l].weight.view(H, N, N)
        new = torch.zeros_like(z)
        for h in range(H):
            e = (x @ Wk[h].T) @ (x @ Wq[h].T).T / math.sqrt(G)  # e[s, t]: key s, query t
            A = torch.softmax(e, dim=0)
            new += (Wv[h] @ (z.T @ A)).T * m.head_mask[l, h]
        z = new / math.sqrt(float(m.head_mask[l].sum()))
    return m.readout.weight[0] @ z.mean(0)


def test_forward_equals_literal_definition_and_attention_columns_sum_to_one():
    m = _model(L=3)
    x = torch.randn(4, 7, 10, dtype=torch.float64)
    f = m(x)
    for b in range(4):
        assert torch.allclose(f[b], _literal_forward(m, x[b]), atol=1e-12)
    for A in m.attention(x):
        assert A.shape == (4, 3, 7, 7)
        assert torch.allclose(A.sum(dim=2), torch.ones(4, 3, 7, dtype=torch.float64))
    with pytest.raises(ValueError, match="expected x0"):
        m(torch.randn(4, 7, 9, dtype=torch.float64))


def test_pruning_nothing_and_all_but_one_head():
    m = _model(L=2, H=3)
    x = torch.randn(5, 7, 10, dtype=torch.float64)
    f0 = m(x)
    m.set_pruned_heads({})
    assert torch.equal(m(x), f0)
    # prune heads 0 and 2 of layer 0: equals the network whose layer 0 has head 1 only (factor 1/sqrt(1))
    m.set_pruned_heads({0: [0, 2]})
    fp = m(x)
    single = AttentionPathsTransformer(2, 3, 6, 4, token_dim=10).double()
    single.load_state_dict(m.state_dict())
    with torch.no_grad():
        single.value[0].weight.view(3, 6, 6)[[0, 2]] = 0.0
        single.value[0].weight.mul_(math.sqrt(3.0))  # undo the 1/sqrt(3) of the unpruned layer
    assert torch.allclose(fp, single(x), atol=1e-12)
    for h in range(3):
        assert torch.allclose(_literal_forward(m, x[h]), fp[h], atol=1e-12)
    with pytest.raises(ValueError, match="every head"):
        m.set_pruned_heads({1: [0, 1, 2]})
    with pytest.raises(ValueError, match="out of range"):
        m.set_pruned_heads({0: [3]})


def test_gd_order_parameter_definition():
    m = _model(L=2, H=3)
    wv = m.value_weights().detach()
    w_out = m.readout.weight[0].detach()
    U = gd_order_parameter(wv, w_out)
    assert U.shape == (9, 9)
    for h1 in range(3):
        for h2 in range(3):
            w = wv[0, h1].T @ wv[1, h2].T @ w_out
            for g1 in range(3):
                for g2 in range(3):
                    v = wv[0, g1].T @ wv[1, g2].T @ w_out
                    assert torch.isclose(U[h1 * 3 + h2, g1 * 3 + g2], w @ v, atol=1e-12)


def test_gd_network_is_the_bayesian_network_with_rescaled_weights():
    """With V0 = sqrt(D) W_in, V_l = sqrt(N) W_V, a = sqrt(N) w_out the theory's network
    (docs/p1_theory.md#network-and-attention-paths, mean-pooling readout, attention from the exported W_Q/W_K)
    computes exactly the GD network: the export conventions match."""
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    from smattn.p1.attention import attentioned_inputs_from_heads, layer_attention
    from smattn.p1.network import forward_layers, forward_paths

    m = _model(L=2, H=3, N=6, G=4, D=10)
    x = torch.randn(4, 7, 10, dtype=torch.float64)
    f_gd = m(x).detach().numpy()
    wq, wk = (w.detach().numpy() for w in m.qk_weights())
    heads = [{"WQ": wq[l], "WK": wk[l]} for l in range(2)]
    D, H, N = 10, 3, 6
    weights = {
        "V0": jnp.asarray(m.input_proj.weight.detach().numpy() * math.sqrt(D)),
        "a": jnp.asarray(m.readout.weight[0].detach().numpy() * math.sqrt(N)),
    }
    wv = m.value_weights().detach().numpy()
    for l in range(2):
        weights[f"V{l + 1}"] = jnp.asarray(wv[l] * math.sqrt(N))
    attn = layer_attention(x.numpy(), heads)
    f_bayes = np.asarray(forward_layers(weights, jnp.asarray(x.numpy()), [jnp.asarray(a) for a in attn], "mean"))
    assert np.allclose(f_bayes, f_gd, atol=1e-10)
    xi = attentioned_inputs_from_heads(x.numpy(), heads, "mean")  # sigma0/sqrt(D H_tot) sum_s abar x_s
    xbar = xi * math.sqrt(D * H * H)
    assert np.allclose(np.asarray(forward_paths(weights, jnp.asarray(xbar))), f_gd, atol=1e-10)


def _token_features(B, dtype, seed=1):
    """Random TokenFeatures of B laptop-size sequences (64 patch values, a one-hot label code per slot)."""
    from smattn.p1.images.features import TokenFeatures

    g = torch.Generator().manual_seed(seed)
    patch = torch.randn(B, 48, 64, generator=g, dtype=dtype)
    la = torch.randint(0, 2, (B,), generator=g)
    label = torch.stack([la, 1 - la, torch.full_like(la, 2)], 1)
    code = torch.nn.functional.one_hot(label, 3).to(dtype).view(B, 3, 1, 3).expand(B, 3, 16, 3).reshape(B, 48, 3)
    labels = torch.randn(3, 192, generator=g, dtype=dtype)
    return TokenFeatures(torch.cat([patch, code], -1), labels, torch.randn(48, 192, generator=g, dtype=dtype))


@pytest.mark.parametrize("L, H, G", [(2, 4, 32), (3, 3, 32), (2, 8, 16)])
@pytest.mark.parametrize("pruned", [{}, {0: [1]}, {0: [0, 2], 1: [1]}])
def test_path_form_equals_layer_by_layer_network_with_its_gradients(L, H, G, pruned):
    """The path form (``forward``, on sequences and on their factored TokenFeatures) against the layer-by-layer
    definition (``forward_layers``, N-wide token vectors, no path sums), in float64 at the laptop models' sizes and
    with the head masks pruning uses: outputs and the gradient of every parameter equal to float64 rounding."""
    torch.manual_seed(0)
    m = AttentionPathsTransformer(L, H, 64, G).double()
    m.set_pruned_heads(pruned)
    feats = _token_features(40, torch.float64)  # 40: more than one chunk of the CPU path, the last one partial
    x0 = feats.x0()
    y = torch.sign(torch.randn(40, dtype=torch.float64))

    def run(fn):
        m.zero_grad(set_to_none=True)
        f = fn()
        ((f - y) ** 2).mean().backward()
        return f.detach(), {k: p.grad.detach().clone() for k, p in m.named_parameters()}

    f_ref, g_ref = run(lambda: m.forward_layers(x0))
    for inp in (x0, feats):
        f, g = run(lambda inp=inp: m(inp))
        assert torch.allclose(f, f_ref, rtol=1e-12, atol=1e-12 * f_ref.abs().max())
        for k, gr in g_ref.items():
            assert gr.abs().max() > 0, k
            assert torch.allclose(g[k], gr, rtol=1e-11, atol=1e-11 * gr.abs().max()), k
        # the training loss with each chunk differentiated right after its forward (scaled: its backward must
        # carry the incoming gradient)
        m.zero_grad(set_to_none=True)
        loss = m.squared_error(inp, y)
        (2.5 * loss).backward()
        assert torch.allclose(loss, ((f_ref - y) ** 2).mean(), rtol=1e-12)
        for k, gr in g_ref.items():
            assert torch.allclose(m.get_parameter(k).grad / 2.5, gr, rtol=1e-11, atol=1e-11 * gr.abs().max()), k


@pytest.mark.parametrize("L, H, G, K", [(2, 3, 2, 5), (3, 2, 2, 4), (1, 3, 1, 3)])
def test_path_network_backward_against_finite_differences(L, H, G, K):
    """The hand-written backward of the chunked CPU path (chunks of 2 sequences over 5), alone and inside the squared
    error, against torch's numerical Jacobian (gradcheck), and its forward against the plain torch operations."""
    from smattn.p1.images.path_form import PathNetwork, PathSquaredError, path_core_autograd

    torch.manual_seed(0)
    O = 2 * L * H * G + H**L
    v = torch.randn(5, 7, K, dtype=torch.float64)
    w = torch.randn(O, K, dtype=torch.float64, requires_grad=True)
    pos = torch.randn(7, O, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: PathNetwork.apply(v, a, b, L, H, G, 2), (w, pos))
    f = PathNetwork.apply(v, w, pos, L, H, G, 2)
    assert torch.allclose(f, path_core_autograd(v @ w.T, pos, L, H, G), atol=1e-12)
    y = torch.randn(5, dtype=torch.float64)
    assert torch.autograd.gradcheck(lambda a, b: PathSquaredError.apply(v, a, b, y, L, H, G, 2), (w, pos))
    loss = PathSquaredError.apply(v, w, pos, y, L, H, G, 2)
    assert torch.allclose(loss, ((f - y) ** 2).mean(), atol=1e-12)


def test_compiled_chunks_match_plain_autograd_in_float64():
    """The laptop training's loss with its chunks compiled by TorchInductor (gd_compile): loss and both weight
    gradients against torch's autograd of the plain operations (path_core_autograd), float64, chunks of 2 over 5
    sequences (a full and a short chunk: two compilations)."""
    from smattn.p1.images.path_form import path_core_autograd, path_squared_error

    torch.manual_seed(1)
    L, H, G, K = 2, 3, 2, 5
    O = 2 * L * H * G + H**L
    v = torch.randn(5, 7, K, dtype=torch.float64)
    y = torch.randn(5, dtype=torch.float64)
    w = torch.randn(O, K, dtype=torch.float64, requires_grad=True)
    pos = torch.randn(7, O, dtype=torch.float64, requires_grad=True)
    ref = ((path_core_autograd(v @ w.T, pos, L, H, G) - y) ** 2).mean()
    g_ref = torch.autograd.grad(3.0 * ref, (w, pos))
    loss = path_squared_error(v, w, pos, y, L, H, G, chunk=2, compiled=True)
    g = torch.autograd.grad(3.0 * loss, (w, pos))  # an incoming gradient of 3: the stored gradients are scaled
    assert torch.allclose(loss, ref, rtol=1e-12)
    for a, b in zip(g, g_ref, strict=True):
        assert torch.allclose(a, b, rtol=1e-11, atol=1e-12 * b.abs().max())


def test_compiled_loss_without_cpp_compiler_names_the_remedy(monkeypatch):
    from smattn.p1.images.path_form import cpp_compiler

    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ValueError, match="no C\\+\\+ compiler.*gd_compile: false"):
        cpp_compiler()


def test_path_layout_is_checked():
    from smattn.p1.images.path_form import path_core_autograd

    with pytest.raises(ValueError, match="paths"):
        path_core_autograd(torch.zeros(2, 5, 10), torch.zeros(5, 10), 2, 2, 1)


def test_token_features_stand_for_the_assembled_sequences():
    """TokenFeatures of a task draw rebuild, bit for bit, the sequences assemble_from_tokens makes of it."""
    from smattn.p1.images.features import assemble_features, patch_values
    from smattn.p1.images.tasks import assemble_from_tokens
    from smattn.p1.images.tokens import image_tokens, label_vectors, positional_encoding

    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(6, 32, 32), dtype=np.uint8)
    tokens = image_tokens(images, "omniglot")
    image = torch.from_numpy(rng.integers(0, 6, size=(4, 3)))
    la = torch.from_numpy(rng.integers(0, 2, size=4))
    label = torch.stack([la, 1 - la, torch.full_like(la, 2)], 1)
    labels, positions = torch.from_numpy(label_vectors(3)), torch.from_numpy(positional_encoding())
    x0 = assemble_from_tokens(torch.from_numpy(tokens), image, label, labels, positions)
    feats = assemble_features(torch.from_numpy(patch_values(tokens)), image, label, labels, positions)
    assert torch.equal(feats.x0(), x0)
    with pytest.raises(ValueError, match="replicated"):
        patch_values(tokens + rng.normal(size=tokens.shape).astype(np.float32))
