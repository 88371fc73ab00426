"""The P1 Bayesian network with the input projection ``V0`` integrated out (the collapsed posterior).

Given the other weights (``V1`` .. ``VL``, ``a``), the network output is linear in ``V0`` [N_0, D] (see
:func:`smattn.p1.network.forward_paths`), and ``V0`` has an i.i.d. Gaussian prior of variance ``sigma0^2``, so the
training outputs are jointly Gaussian given the rest:

    f | rest ~ N(0, K_U),   K_U(x, x') = sigma0^2 / (D H_tot) * sum_{pi pi'} U_{pi pi'} xbar_pi(x) . xbar_pi'(x'),

with ``U = w w^T / N_0`` the sampled order parameter (paper Eq. 13) and ``xbar`` the un-normalised path-attended
inputs [P, H_tot, D]. This is the renormalised kernel of the theory (paper Eq. 7; ``xi = sigma0 xbar / sqrt(D H_tot)``
in :mod:`smattn.p1.kernels`). With the likelihood ``y ~ N(f, T)`` the marginal likelihood of the remaining weights is

    y | rest ~ N(0, K_U + T I)   (P x P, one Cholesky factorisation per evaluation),

and the posterior of ``V0`` given the rest is Gaussian, so a test prediction per sample is replaced by its
conditional mean ``k_U(x*)^T (K_U + T I)^{-1} y`` (the Gaussian-process mean with kernel ``K_U``; Rao-Blackwellised:
same expectation over the posterior as the full model's ``f(x*)``, smaller variance). The marginal posterior of
(``V1`` .. ``VL``, ``a``), hence of ``U``, is exactly that of the full model. See ``docs/p1_theory.md``.

Why: the likelihood pins the training outputs to within sqrt(T), which makes the data-spanned ``V0`` directions
stiff (curvature ~ 1/T times the data scale) next to prior-dominated ones; removing ``V0`` removes that stiffness.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.linalg import cho_solve, solve_triangular
from scipy.linalg import lapack

from .kernels import PathGram
from .network import effective_weights

_LOG_2PI = float(np.log(2.0 * np.pi))


class CollapsedData:
    """Training and test inputs of the collapsed model, with the path-pair Gram tensor of the training set.

    xbar_train: [P, H_tot, D], xbar_test: [P_test, H_tot, D] un-normalised path-attended inputs; y: [P];
    sigma0_sq: prior variance of ``V0``; dtype: a JAX float dtype. Attributes (JAX arrays of ``dtype``):
    ``G`` [n_pairs, P (P + 1) / 2] (the upper triangles, row-major, of the symmetrised Gram matrices of
    :class:`~smattn.p1.kernels.PathGram` of ``sqrt(sigma0_sq) xbar / sqrt(D H_tot)``, or None when it would exceed
    ``gram_max_bytes``; then ``K_U`` is contracted from ``xbar`` directly, P^2 H_tot D per evaluation instead of
    n_pairs P^2 / 2), ``iu`` the upper-triangle indices of U, ``xb``/``xt`` the scaled inputs, ``y``.
    """

    def __init__(self, xbar_train, y, xbar_test, sigma0_sq: float, dtype, gram_max_bytes: float = 1.0e9):
        xbar_train = np.asarray(xbar_train, dtype=np.float64)
        xbar_test = np.asarray(xbar_test, dtype=np.float64)
        P, Htot, D = xbar_train.shape
        if xbar_test.shape[1:] != (Htot, D) or np.shape(y) != (P,):
            raise ValueError(
                f"shapes do not match: xbar_train {xbar_train.shape}, y {np.shape(y)}, xbar_test {xbar_test.shape}"
            )
        scale = np.sqrt(float(sigma0_sq) / (D * Htot))
        xi = xbar_train * scale
        self.P, self.Htot, self.D = P, Htot, D
        self.iu = np.triu_indices(Htot)
        n_pairs = len(self.iu[0])
        itemsize = np.dtype(np.float64 if dtype == jnp.float64 else np.float32).itemsize
        n_tri = P * (P + 1) // 2
        use_gram = n_pairs * n_tri * itemsize <= gram_max_bytes
        # [n_pairs, P (P + 1) / 2]: K_U is symmetric, so only the upper triangles are stored. Reading this tensor
        # bounds the cost of a gradient (once for K_U, once for its vector-Jacobian product), and the triangle halves
        # it (benchmarks/p1_collapsed_gradient.py). A matvec on a flat matrix: XLA's CPU contraction over two
        # trailing axes is ~20x slower.
        self.G = jnp.asarray(PathGram(xi).G[:, *np.triu_indices(P)], dtype) if use_gram else None
        self.xb = jnp.asarray(xi, dtype)
        self.xt = jnp.asarray(xbar_test * scale, dtype)
        self.y = jnp.asarray(y, dtype)

    def model_args(self) -> tuple:
        """The arrays the NumPyro model takes as arguments (traced, not baked into the compiled program)."""
        return (self.G if self.G is not None else self.xb, self.y)

    @property
    def model_iu(self):
        """``iu`` for :func:`train_kernel` with :meth:`model_args` (None when the Gram tensor was not built)."""
        return self.iu if self.G is not None else None


def train_kernel(U, gram_or_xb, iu=None):
    """K_U on the training set [P, P] for a symmetric U [H_tot, H_tot]: from the Gram tensor's upper triangles
    [n_pairs, P (P + 1) / 2] when ``iu`` (U's upper-triangle indices) is given, else from the scaled inputs
    [P, H_tot, D] by direct contraction."""
    if iu is not None:
        P = (math.isqrt(8 * int(gram_or_xb.shape[1]) + 1) - 1) // 2
        return _unpack(U[iu] @ gram_or_xb, P)
    return jnp.einsum("apd,pq,bqd->ab", gram_or_xb, U, gram_or_xb)


@jax.custom_vjp
def gaussian_log_density(S, y):
    """log N(y; 0, S) for a symmetric positive-definite S [P, P] and y [P] (scalar).

    Its gradient is the closed form d/dS = (alpha alpha^T - S^{-1}) / 2, d/dy = -alpha with alpha = S^{-1} y,
    from one Cholesky factorisation (about half the cost of differentiating through the factorisation)."""
    return _gaussian_log_density_fwd(S, y)[0]


def _lapack_cholesky_and_inverse(S):
    """NumPy callback: (lower Cholesky factor, inverse) of an SPD S [P, P] by LAPACK potrf + potri; NaN if S is not
    positive definite (as jnp.linalg.cholesky, so that NUTS sees a divergence)."""
    S = np.asarray(S)
    potrf, potri = lapack.get_lapack_funcs(("potrf", "potri"), (S,))
    C, info = potrf(S, lower=1, clean=1)
    if info != 0:
        nan = np.full_like(S, np.nan)
        return nan, nan
    inv, info = potri(C, lower=1)
    inv = np.tril(inv) + np.tril(inv, -1).T
    return C, inv


def cholesky_and_inverse(S):
    """Lower Cholesky factor C and S^{-1} of an SPD S [P, P] (JAX arrays).

    On the CPU through LAPACK's potri (inverse from the factor, 2 P^3 / 3 flops after the factorisation) instead of
    XLA's triangular solve against the identity plus the product C^-T C^-1 (benchmarks/p1_collapsed_gradient.py
    times the whole gradient both ways); elsewhere (GPU) with XLA's operations."""
    if jax.default_backend() == "cpu":
        shape = jax.ShapeDtypeStruct(S.shape, S.dtype)
        return jax.pure_callback(_lapack_cholesky_and_inverse, (shape, shape), S, vmap_method="sequential")
    return xla_cholesky_and_inverse(S)


def xla_cholesky_and_inverse(S):
    """:func:`cholesky_and_inverse` with XLA's operations only (any backend)."""
    C = jnp.linalg.cholesky(S)
    C_inv = solve_triangular(C, jnp.eye(S.shape[0], dtype=S.dtype), lower=True)
    return C, C_inv.T @ C_inv


def _gaussian_log_density_fwd(S, y):
    P = y.shape[0]
    C, S_inv = cholesky_and_inverse(S)
    z = solve_triangular(C, y, lower=True)
    value = -0.5 * jnp.dot(z, z) - jnp.sum(jnp.log(jnp.diag(C))) - 0.5 * P * _LOG_2PI
    return value, (S_inv @ y, S_inv)


def _gaussian_log_density_bwd(res, g):
    alpha, S_inv = res
    return g * 0.5 * (jnp.outer(alpha, alpha) - S_inv), -g * alpha


gaussian_log_density.defvjp(_gaussian_log_density_fwd, _gaussian_log_density_bwd)


def marginal_log_likelihood(K, y, temperature):
    """log N(y; 0, K + T I) of the training labels y [P] given the kernel K [P, P] (scalar)."""
    return gaussian_log_density(K + temperature * jnp.eye(y.shape[0], dtype=K.dtype), y)


@functools.cache
def _packed_layout(P: int, dtype: np.dtype):
    """Flat C-order indices [P (P + 1) / 2] of the upper triangle of a P x P matrix (row-major, as ``train_kernel``
    packs it) and the factors (of ``dtype``) that turn alpha alpha^T - S^{-1} of a symmetric S into d log N / d(packed
    S): 1/2 on the diagonal, 1 off it (d/dS = (alpha alpha^T - S^{-1}) / 2, each off-diagonal entry counted twice)."""
    r, c = np.triu_indices(P)
    return r * P + c, np.where(r == c, 0.5, 1.0).astype(dtype)


def _lapack_packed_log_density(k_tri, y, temperature):
    """NumPy callback of :func:`packed_marginal_log_likelihood`: (value, d/dk_tri [P (P + 1) / 2], d/dy [P], d/dT),
    all NaN when K + T I is not positive definite.

    S = K + T I is unpacked into the upper triangle of a C-order buffer, which is the lower triangle of the same
    memory read in Fortran order, so LAPACK factors it (potrf), solves (potrs) and inverts (potri) in place without a
    copy, and the gradient is read back from the upper triangle: d/dS = (alpha alpha^T - S^{-1}) / 2 packed with
    ``_packed_layout``'s factors; d/dT = trace(d/dS); d/dy = -alpha."""
    k_tri, y = np.asarray(k_tri), np.asarray(y)
    P, dt = y.shape[0], k_tri.dtype
    flat, factor = _packed_layout(P, dt)
    S = np.empty((P, P), dt)
    S.ravel()[flat] = k_tri
    S.ravel()[:: P + 1] += np.asarray(temperature, dt)
    potrf, potrs, potri = lapack.get_lapack_funcs(("potrf", "potrs", "potri"), (S,))
    C, info = potrf(S.T, lower=1, overwrite_a=1, clean=0)
    if info != 0:
        nan = np.asarray(np.nan, dt)
        return nan, np.full_like(k_tri, np.nan), np.full_like(y, np.nan), nan
    alpha, _ = potrs(C, y, lower=1)
    value = -0.5 * np.dot(y, alpha) - np.sum(np.log(np.diag(C))) - 0.5 * P * _LOG_2PI
    inv, _ = potri(C, lower=1, overwrite_c=1)  # S^{-1} in the lower triangle, Fortran order: the C-order upper one
    inv_tri = inv.T.ravel()[flat]
    d_tri = (np.outer(alpha, alpha).ravel()[flat] - inv_tri) * factor
    d_T = 0.5 * (np.dot(alpha, alpha) - np.trace(inv))
    return np.asarray(value, dt), d_tri, (-alpha).astype(dt), np.asarray(d_T, dt)


@jax.custom_vjp
def packed_marginal_log_likelihood(k_tri, y, temperature):
    """log N(y; 0, K + T I) (scalar) of labels y [P] given the kernel K by its packed upper triangle k_tri
    [P (P + 1) / 2] (row-major, ``train_kernel``'s layout) and the temperature T (scalar).

    The gradient with respect to k_tri comes back packed, so no P x P matrix is unpacked, symmetrised or gathered by
    XLA: on the CPU one LAPACK callback factors, solves and inverts in place (``_lapack_packed_log_density``);
    elsewhere (GPU) the matrix is unpacked and :func:`marginal_log_likelihood` is differentiated."""
    return _packed_fwd(k_tri, y, temperature)[0]


def _packed_fwd(k_tri, y, temperature):
    if jax.default_backend() == "cpu":
        dt = k_tri.dtype
        shapes = tuple(jax.ShapeDtypeStruct(a.shape, dt) for a in (jnp.zeros((), dt), k_tri, y, jnp.zeros((), dt)))
        value, *grads = jax.pure_callback(
            _lapack_packed_log_density,
            shapes,
            k_tri,
            y.astype(dt),
            jnp.asarray(temperature, dt),
            vmap_method="sequential",
        )
        return value, tuple(grads)
    value, vjp = jax.vjp(
        lambda k, yy, t: marginal_log_likelihood(_unpack(k, yy.shape[0]), yy, t), k_tri, y, temperature
    )
    return value, vjp(jnp.ones_like(value))


def _packed_bwd(grads, g):
    return tuple(g * d for d in grads)


packed_marginal_log_likelihood.defvjp(_packed_fwd, _packed_bwd)


def _unpack(k_tri, P: int):
    """The symmetric P x P matrix of a packed upper triangle [P (P + 1) / 2]."""
    upper = jnp.zeros((P, P), k_tri.dtype).at[np.triu_indices(P)].set(k_tri)
    return upper + jnp.triu(upper, 1).T


def gp_mean(U, data: CollapsedData, temperature):
    """Test predictions k_U(x*)^T (K_U + T I)^{-1} y [P_test] given U [H, H]."""
    K = train_kernel(U, data.xb)
    alpha = cho_solve((jnp.linalg.cholesky(K + temperature * jnp.eye(data.P, dtype=K.dtype)), True), data.y)
    v = jnp.einsum("b,bqd->qd", alpha, data.xb)  # [H, D]
    return jnp.einsum("apd,pq,qd->a", data.xt, U, v)


def collapsed_weights_model(gram_or_xb, y, arch=None, iu=None, temperature=None, dtype=None):
    """NumPyro model over V1..VL and a (priors as in the full model) with the V0-marginal likelihood.

    gram_or_xb, y: :meth:`CollapsedData.model_args`; arch (an :class:`~smattn.p1.action.Architecture`), iu
    (``CollapsedData.model_iu``), temperature and dtype are bound with functools.partial (static)."""
    import numpyro
    import numpyro.distributions as dist

    N = [int(n) for n in arch.widths]
    weights = {}
    for l, H in enumerate(arch.heads, start=1):
        sl = jnp.sqrt(jnp.asarray(arch.sigma2[l], dtype))
        weights[f"V{l}"] = numpyro.sample(f"V{l}", dist.Normal(jnp.zeros((H, N[l], N[l - 1]), dtype), sl))
    sa = jnp.sqrt(jnp.asarray(arch.sigma2_a, dtype))
    weights["a"] = numpyro.sample("a", dist.Normal(jnp.zeros((N[-1],), dtype), sa))
    U = order_parameter(weights, N[0])
    T = jnp.asarray(temperature, dtype)
    if iu is not None:  # the Gram tensor's triangles: the kernel stays packed (packed_marginal_log_likelihood)
        numpyro.factor("y", packed_marginal_log_likelihood(U[iu] @ gram_or_xb, y, T))
    else:
        numpyro.factor("y", marginal_log_likelihood(train_kernel(U, gram_or_xb), y, T))


def order_parameter(weights: dict, N0: int):
    """U = w w^T / N_0 [H_tot, H_tot] from V1..VL and a (V0 is not needed)."""
    w = effective_weights(weights)
    return w @ w.T / N0


def postprocess(data: CollapsedData, temperature, N0: int):
    """A NumPyro postprocess function: weights (no V0) -> {'f_test': GP mean [P_test], 'U': [H, H]}."""

    def post(z):
        U = order_parameter(z, N0)
        return {"f_test": gp_mean(U, data, temperature), "U": U}

    return post


def sample_v0_conditional(key, weights: dict, xbar_train, y, temperature, sigma0_sq: float = 1.0):
    """One exact draw of V0 [N_0, D] from p(V0 | V1..VL, a, y) (a Gibbs step), for when explicit V0 is wanted.

    f = Phi vec(V0) with Phi [P, N_0 D] the design matrix ``(w^T V0 xbar)/sqrt(D H N_0)``; the posterior of vec(V0)
    is Gaussian with precision I/sigma0^2 + Phi^T Phi / T. Drawn by perturbation (Matheron's rule), which needs only a
    P x P solve: v = v_prior + sigma0^2 Phi^T (sigma0^2 Phi Phi^T + T I)^{-1} (y - Phi v_prior - sqrt(T) eps).
    """
    w = effective_weights(weights)  # [H, N0]
    xbar_train = jnp.asarray(xbar_train)
    P, Htot, D = xbar_train.shape
    N0 = w.shape[1]
    Phi = jnp.einsum("pn,apd->and", w, xbar_train).reshape(P, N0 * D) / jnp.sqrt(D * Htot * N0)
    k1, k2 = jax.random.split(key)
    v0 = jnp.sqrt(sigma0_sq) * jax.random.normal(k1, (N0 * D,), Phi.dtype)
    eps = jax.random.normal(k2, (P,), Phi.dtype)
    A = sigma0_sq * Phi @ Phi.T + temperature * jnp.eye(P, dtype=Phi.dtype)
    r = jnp.asarray(y, Phi.dtype) - Phi @ v0 - jnp.sqrt(temperature) * eps
    v = v0 + sigma0_sq * Phi.T @ jnp.linalg.solve(A, r)
    return v.reshape(N0, D)
