"""Action, GP point, gradients and the minimiser (spec §2.2-2.3)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import brentq

from smattn.p1.action import (
    Architecture,
    action,
    entropy,
    gp_entropy_per_width,
    gp_point,
    partial_trace_lowest,
    readout_scalar,
)
from smattn.p1.kernels import kernel_U
from smattn.p1.minimise import ActionProblem, minimise_action, minimise_action_adam


@pytest.mark.parametrize("heads", [(1,), (3,), (2, 2), (2, 1), (2, 3, 2)])
def test_gp_point_is_stationary_and_entropy_identity(heads):
    arch = Architecture.equal_width(heads, 50.0)
    Us = [jnp.asarray(U) for U in gp_point(arch)]
    assert float(readout_scalar(jnp.trace(Us[-1]), arch)) == pytest.approx(1.0, abs=1e-14)
    S = float(jax.jit(lambda U: entropy(U, arch))(Us))
    assert S / 50.0 == pytest.approx(gp_entropy_per_width(heads), rel=1e-12)
    # explicit values quoted in the spec: 7 for H=(2,2), 4 for (2,1), 3 for (1,1)
    assert gp_entropy_per_width((2, 2)) == 7 and gp_entropy_per_width((2, 1)) == 4 and gp_entropy_per_width((1, 1)) == 3
    grads = jax.jit(jax.grad(lambda Ms: entropy([(M + M.T) / 2 for M in Ms], arch)))(Us)
    for g in grads:
        assert float(jnp.max(jnp.abs(g))) < 1e-10


def test_readout_scalar_is_stationary_point_of_entropy(random_pd):
    rng = np.random.default_rng(1)
    arch = Architecture((2, 3), (7.0, 11.0, 13.0), (1.3, 0.7, 1.1), 0.9)
    Us = [jnp.asarray(random_pd(6, rng)), jnp.asarray(random_pd(3, rng))]
    u = readout_scalar(jnp.trace(Us[-1]), arch)
    du = jax.grad(lambda uu: entropy(Us, arch, uu))(u)
    assert abs(float(du)) < 1e-9 * 13
    # stable branch (b >= 0) and the textbook root agree
    arch2 = Architecture((4,), (30.0, 10.0))
    tr = 2.5
    b = arch2.sigma2_a * (4 * 30 / 10 - 1)
    c = 30 * tr / 10
    assert float(readout_scalar(jnp.asarray(tr), arch2)) == pytest.approx((-b + np.sqrt(b * b + 4 * c)) / 2, rel=1e-12)


def test_partial_trace_lowest_head():
    rng = np.random.default_rng(2)
    U = rng.standard_normal((6, 6))
    pt = np.asarray(partial_trace_lowest(jnp.asarray(U), 2))
    np.testing.assert_allclose(pt, U[:3, :3] + U[3:, 3:])


def test_action_gradient_matches_finite_differences(make_problem, random_pd):
    prob, _ = make_problem((2, 2), 20.0)
    rng = np.random.default_rng(3)
    Us = [random_pd(4, rng), random_pd(2, rng)]
    data = dict(G=jnp.asarray(prob.gram.G), iu=prob.gram.iu, y=jnp.asarray(prob.y), temperature=prob.temperature)

    @jax.jit
    def S(Ms):
        return action([(M + M.T) / 2 for M in Ms], prob.arch, **data)

    g = jax.grad(S)([jnp.asarray(U) for U in Us])
    h = 1e-6
    for l, U in enumerate(Us):
        for i in range(U.shape[0]):
            for j in range(U.shape[1]):
                Up = [u.copy() for u in Us]
                Um = [u.copy() for u in Us]
                Up[l][i, j] += h
                Um[l][i, j] -= h
                fd = (float(S([jnp.asarray(u) for u in Up])) - float(S([jnp.asarray(u) for u in Um]))) / (2 * h)
                assert float(g[l][i, j]) == pytest.approx(fd, rel=1e-5, abs=1e-8)


def test_energy_gradient_closed_form(make_problem, random_pd):
    """dE/dU_{pi pi'} = <Xi_pi Xi_pi'^T, (K+T)^-1 - alpha alpha^T> (spec §8)."""
    prob, xi = make_problem((2, 2), 20.0, seed=5)
    from smattn.p1.action import energy

    U = random_pd(4, np.random.default_rng(4))
    g = np.asarray(
        jax.grad(
            lambda M: energy(
                (M + M.T) / 2, jnp.asarray(prob.gram.G), prob.gram.iu, jnp.asarray(prob.y), prob.temperature
            )
        )(jnp.asarray(U))
    )
    A = kernel_U(U, xi) + prob.temperature * np.eye(len(prob.y))
    Ainv = np.linalg.inv(A)
    alpha = Ainv @ prob.y
    M = Ainv - np.outer(alpha, alpha)
    ref = np.einsum("ad,bd,ab->", xi[:, 0], xi[:, 1], M)  # derivative w.r.t. the (0,1) entry of a symmetric U
    assert g[0, 1] == pytest.approx(ref, rel=1e-8)


def test_L1_H1_against_closed_form_scalar_renormalisation(make_problem):
    """For L=1, H=1 the stationarity condition is a scalar equation in U (solved here by root bracketing)."""
    prob, xi = make_problem((1,), 8.0, P=20, seed=6)
    res = minimise_action(prob, tol=1e-11)
    assert res.converged and res.g_max < 1e-11
    K0 = kernel_U(np.eye(1), xi)
    lam, V = np.linalg.eigh(K0)
    yv = V.T @ prob.y
    T, N0, N1 = prob.temperature, 8.0, 8.0

    def u_of(U):
        b = N0 / N1 - 1.0
        c = N0 * U / N1
        return (-b + np.sqrt(b * b + 4 * c)) / 2

    def dS(U):  # derivative of S_ent + E at the stationary u (envelope theorem)
        d = U * lam + T
        dE = np.sum(lam / d) - np.sum(lam * yv**2 / d**2)
        return N0 * (1.0 / u_of(U) - 1.0 / U) + dE

    U_star = brentq(dS, 1e-6, 1e4, xtol=1e-14)
    assert res.U[0, 0] == pytest.approx(U_star, rel=1e-7)
    assert res.u == pytest.approx(u_of(U_star), rel=1e-7)


def test_minimiser_pd_every_step_and_agrees_with_reference_adam(make_problem):
    prob, _ = make_problem((2, 1), 5.0, P=20, T=0.05, seed=7)
    res = minimise_action(prob, tol=1e-9)
    assert res.converged and res.g_max < 1e-9
    assert len(res.min_eig) == res.steps + 1 and min(res.min_eig) > 0
    for U in res.Us:
        assert np.linalg.eigvalsh(U).min() > 0
    ref = minimise_action_adam(prob, lr=0.1, tol=1e-6, max_steps=20000)
    assert ref.converged
    np.testing.assert_allclose(res.U, ref.U, atol=1e-5 * np.abs(res.U).max())  # optax Adam: the same minimum
    assert res.action <= ref.action + 1e-9
    # far from the GP point at small width (alpha = P/N ~ 5)
    assert np.abs(res.U - np.eye(2)).max() > 0.1


def test_bad_problem_raises(make_problem):
    prob, xi = make_problem((2, 2), 5.0)
    with pytest.raises(ValueError, match="y must"):
        ActionProblem(prob.arch, prob.gram, np.ones(3), 0.1)
    with pytest.raises(ValueError, match="paths"):
        ActionProblem(Architecture.equal_width((3,), 5.0), prob.gram, prob.y, 0.1)
    with pytest.raises(ValueError, match="widths"):
        Architecture((2, 2), (1.0, 2.0))
