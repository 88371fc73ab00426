"""The collapsed model (V0 integrated out) against the full network on tiny problems.

The reference quantities are built without the kernel formula: the design matrix of the full network's output as a
function of V0 is its Jacobian (forward_paths is linear in V0), so y ~ N(0, s0^2 Phi Phi^T + T I) is the exact
V0-marginal of the full model's likelihood.
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.stats import multivariate_normal, norm

from smattn.p1 import collapsed as C
from smattn.p1.network import forward_paths, order_parameter_sample


def _problem(seed=0, P=6, Pt=4, H1=2, H2=2, D=3, N=3):
    rng = np.random.default_rng(seed)
    Ht = H1 * H2
    xbar = rng.standard_normal((P + Pt, Ht, D))
    y = rng.standard_normal(P)
    w = {
        "V0": rng.standard_normal((N, D)),
        "V1": rng.standard_normal((H1, N, N)),
        "V2": rng.standard_normal((H2, N, N)),
        "a": rng.standard_normal(N),
    }
    return xbar[:P], y, xbar[P:], w


def _design(w, xbar):
    """Phi [P, N0*D] with f = Phi vec(V0), from the Jacobian of the full forward pass."""
    J = jax.jacobian(lambda V0: forward_paths({**w, "V0": V0}, jnp.asarray(xbar)))(jnp.asarray(w["V0"]))
    return np.asarray(J).reshape(xbar.shape[0], -1)


def _collapsed_ll(w, xb, y, T, s0sq, gram_max_bytes=1e9):
    data = C.CollapsedData(xb, y, xb[:1], s0sq, jnp.float64, gram_max_bytes=gram_max_bytes)
    U = C.order_parameter(w, w["V0"].shape[0])
    arr, yy = data.model_args()
    return C.marginal_log_likelihood(C.train_kernel(U, arr, data.model_iu), yy, T)


def test_marginal_likelihood_is_the_full_likelihood_integrated_over_v0():
    xb, y, _, w = _problem()
    T, s0sq = 0.3, 1.7
    Phi = _design(w, xb)
    ref = multivariate_normal.logpdf(y, np.zeros(len(y)), s0sq * Phi @ Phi.T + T * np.eye(len(y)))
    for gram in (1e9, 0.0):  # with the Gram tensor and by direct contraction
        np.testing.assert_allclose(float(_collapsed_ll(w, xb, y, T, s0sq, gram)), float(ref), rtol=1e-10)
    # U of the collapsed model is the full network's sampled order parameter (Eq. 13)
    np.testing.assert_allclose(
        C.order_parameter({k: v for k, v in w.items() if k != "V0"}, 3), order_parameter_sample(w), rtol=1e-12
    )


def test_marginal_likelihood_monte_carlo_over_v0():
    xb, y, _, w = _problem(seed=1, P=3)
    T, s0sq = 1.0, 1.0
    V0 = np.random.default_rng(2).standard_normal((100_000, *w["V0"].shape)) * np.sqrt(s0sq)
    f = jax.vmap(lambda v: forward_paths({**w, "V0": v}, jnp.asarray(xb)))(jnp.asarray(V0))  # [S, P]
    like = np.exp(np.asarray(norm.logpdf(jnp.asarray(y), f, np.sqrt(T)).sum(axis=1)))
    mc, se = like.mean(), like.std() / np.sqrt(len(like))
    exact = float(np.exp(_collapsed_ll(w, xb, y, T, s0sq)))
    assert abs(mc - exact) < 4 * se, (mc, exact, se)


def test_marginal_likelihood_gradient_matches_finite_differences():
    xb, y, _, w = _problem(seed=3)
    T = 0.2
    rest = {k: jnp.asarray(v) for k, v in w.items() if k != "V0"}

    def ll(r):
        return _collapsed_ll({**r, "V0": w["V0"]}, xb, y, T, 1.0)

    g = jax.grad(ll)(rest)
    rng = np.random.default_rng(4)
    for k, v in rest.items():
        for _ in range(3):
            idx = tuple(rng.integers(0, s) for s in v.shape)
            eps = 1e-6
            up = {**rest, k: v.at[idx].add(eps)}
            dn = {**rest, k: v.at[idx].add(-eps)}
            fd = (float(ll(up)) - float(ll(dn))) / (2 * eps)
            np.testing.assert_allclose(float(g[k][idx]), fd, rtol=1e-6, atol=1e-8)


def test_gp_mean_is_the_conditional_mean_of_the_full_network_and_gibbs_draws_match_it():
    xb, y, xt, w = _problem(seed=5)
    T, N0 = 0.1, w["V0"].shape[0]
    Phi, Phit = _design(w, xb), _design(w, xt)
    mean_v = Phi.T @ np.linalg.solve(Phi @ Phi.T + T * np.eye(len(y)), y)  # posterior mean of vec(V0), s0 = 1
    data = C.CollapsedData(xb, y, xt, 1.0, jnp.float64)
    out = C.postprocess(data, T, N0)({k: v for k, v in w.items() if k != "V0"})
    np.testing.assert_allclose(np.asarray(out["f_test"]), Phit @ mean_v, rtol=1e-9, atol=1e-12)
    draws = jax.vmap(lambda k: C.sample_v0_conditional(k, w, xb, y, T))(jax.random.split(jax.random.PRNGKey(0), 4000))
    d = np.asarray(draws).reshape(4000, -1)
    cov = np.linalg.inv(np.eye(Phi.shape[1]) + Phi.T @ Phi / T)
    se = np.sqrt(np.diag(cov) / 4000)
    np.testing.assert_array_less(np.abs(d.mean(axis=0) - mean_v), 5 * se)
    np.testing.assert_allclose(np.cov(d.T), cov, atol=0.1 * np.abs(cov).max())


def test_cholesky_and_inverse_lapack_and_xla_agree_and_flag_indefinite_matrices():
    rng = np.random.default_rng(7)
    A = rng.standard_normal((30, 40))
    S = jnp.asarray(A @ A.T / 40 + 0.1 * np.eye(30))
    for fn in (jax.jit(C.cholesky_and_inverse), jax.jit(C.xla_cholesky_and_inverse)):
        L, S_inv = fn(S)
        np.testing.assert_allclose(np.asarray(L), np.linalg.cholesky(np.asarray(S)), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(np.asarray(S_inv), np.linalg.inv(np.asarray(S)), rtol=1e-8, atol=1e-10)
        # not positive definite: NaN (a divergence for NUTS), never a silently wrong factor
        L_bad, inv_bad = fn(S - 10.0 * jnp.eye(30))
        assert np.isnan(np.asarray(L_bad)).any() and np.isnan(np.asarray(inv_bad)).any()
    # inside a vmap (vectorised chains) the callback runs per element
    L_b, inv_b = jax.vmap(C.cholesky_and_inverse)(jnp.stack([S, 2.0 * S]))
    np.testing.assert_allclose(np.asarray(inv_b[1]), np.linalg.inv(2.0 * np.asarray(S)), rtol=1e-8, atol=1e-10)


def test_packed_log_density_and_its_gradients_against_autodiff_of_the_dense_density():
    """The packed kernel's log density (one in-place LAPACK callback on the CPU): value and gradients with respect to
    the packed triangle, y and T against JAX's autodiff of multivariate_normal.logpdf on the unpacked matrix, with an
    incoming gradient of 1.7; NaN where K + T I is not positive definite."""
    rng = np.random.default_rng(11)
    P = 9
    A = rng.standard_normal((P, P + 3))
    K = A @ A.T / P
    iu = np.triu_indices(P)
    k_tri, y, T = jnp.asarray(K[iu]), jnp.asarray(rng.standard_normal(P)), jnp.asarray(0.3)

    def dense(k, yy, t):
        upper = jnp.zeros((P, P)).at[iu].set(k)
        S = upper + jnp.triu(upper, 1).T + t * jnp.eye(P)
        return 1.7 * multivariate_normal.logpdf(yy, jnp.zeros(P), S)

    packed = jax.jit(lambda k, yy, t: 1.7 * C.packed_marginal_log_likelihood(k, yy, t))
    np.testing.assert_allclose(float(packed(k_tri, y, T)), float(dense(k_tri, y, T)), rtol=1e-12)
    for got, ref in zip(
        jax.grad(packed, argnums=(0, 1, 2))(k_tri, y, T), jax.grad(dense, argnums=(0, 1, 2))(k_tri, y, T), strict=True
    ):
        np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=1e-10, atol=1e-12)
    assert np.isnan(float(packed(k_tri, y, jnp.asarray(-50.0))))
    # inside a vmap (vectorised chains) the callback runs per element
    batched = jax.vmap(C.packed_marginal_log_likelihood, in_axes=(0, None, None))(jnp.stack([k_tri, 2.0 * k_tri]), y, T)
    np.testing.assert_allclose(float(batched[1]), float(dense(2.0 * k_tri, y, T)) / 1.7, rtol=1e-12)
