"""The fast image-task minimiser: analytic gradient vs autodiff of the engine's action; same minimiser as Newton."""

from __future__ import annotations

import numpy as np
import pytest

from smattn.device import jax_setup

jax_setup(x64=True)  # before the imports below: float64 must be on before any JAX array exists

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from smattn.p1.action import Architecture, action  # noqa: E402
from smattn.p1.minimise_bfgs import ImageAction, minimise_action_bfgs  # noqa: E402


def _kw():  # the problem size of these tests: correlated paths (off-diagonal U entries matter)
    return {"P": 24, "D": 6, "correlated": True}


@pytest.mark.parametrize("heads", [(2, 2), (2, 1, 2)])
def test_analytic_gradient_matches_autodiff(heads, make_problem, random_pd):
    prob, _ = make_problem(heads, 4.0, T=0.3, **_kw())
    rng = np.random.default_rng(1)
    sizes = [int(np.prod(heads[l:])) for l in range(len(heads))]
    Us = [random_pd(n, rng, scale=np.sqrt(0.3 / n)) for n in sizes]
    S, grads, _ = ImageAction(prob).value_grad(Us)
    a = prob.arch

    def f(Us_):
        return action(Us_, a, jnp.asarray(prob.gram.G), prob.gram.iu, jnp.asarray(prob.y), prob.temperature)

    S_ref, g_ref = jax.jit(jax.value_and_grad(lambda Ms: f([(M + M.T) / 2 for M in Ms])))([jnp.asarray(U) for U in Us])
    assert np.isclose(S, S_ref, rtol=1e-12)
    for g, gr in zip(grads, g_ref, strict=True):
        assert np.allclose(g, np.asarray(gr), rtol=1e-9, atol=1e-12)


def test_non_pd_point_is_rejected(make_problem):
    prob, _ = make_problem((2, 2), 5.0, T=0.3, **_kw())
    S, g, _ = ImageAction(prob).value_grad([-np.eye(4), np.eye(2)])
    assert S == np.inf and g is None


def _line_search_floor(prob, Us) -> tuple[float, float]:
    """(|dS/dtheta| at Us, the smallest such norm a line search can still resolve there): along the gradient the
    largest decrease is |g|^2 / (2 lam) (lam the curvature along g, a finite difference of the gradient), which a
    line search sees only above the rounding noise sd of S (measured: S at 200 points 1e-13 away, a change far below
    the gradient's effect), so |g| < sqrt(2 lam sd) is as stationary as float64 can tell."""
    from smattn.p1.minimise import pack_cholesky
    from smattn.p1.minimise_bfgs import cholesky_gradient, unpack_cholesky

    act = ImageAction(prob)
    sizes = [U.shape[0] for U in Us]

    def value_grad(theta):
        Us_, Cs_ = unpack_cholesky(theta, sizes)
        S, grads, _ = act.value_grad(Us_)
        return S, cholesky_gradient(grads, Cs_)

    theta = pack_cholesky(Us, prob.arch.heads)
    _, g = value_grad(theta)
    rng = np.random.default_rng(0)
    sd = float(np.std([value_grad(theta + 1e-13 * rng.standard_normal(theta.size))[0] for _ in range(200)]))
    d, h = g / np.linalg.norm(g), 1e-4
    lam = float(d @ (value_grad(theta + h * d)[1] - value_grad(theta - h * d)[1])) / (2 * h)
    return float(np.linalg.norm(g)), float(np.sqrt(2.0 * abs(lam) * sd))


@pytest.mark.parametrize("N,T", [(3.0, 0.05), (50.0, 0.3)])
def test_bfgs_converges_to_a_stationary_point_of_the_engine_action(N, T, make_problem):
    """To tol = 1e-8, or, where that is below what float64 resolves (N = 3, T = 0.05: the action's rounding noise
    ~3e-15 and curvature ~1e2 put the floor near 1e-6 on some CPUs), to a point no line search can improve on: the
    minimiser stops there (it does not spin through its 2000 steps) with the gradient under that floor."""
    prob, _ = make_problem((2, 2), N, T=T, **_kw())
    res = minimise_action_bfgs(prob, tol=1e-8)
    assert res.steps < 2000 and min(res.min_eig) > 0
    g_norm, floor = _line_search_floor(prob, res.Us)
    assert (res.converged and res.g_max < 1e-8) or g_norm < floor, (res.g_max, g_norm, floor)
    a = prob.arch
    f = jax.jit(
        jax.value_and_grad(
            lambda Ms: action(
                [(M + M.T) / 2 for M in Ms],
                a,
                jnp.asarray(prob.gram.G),
                prob.gram.iu,
                jnp.asarray(prob.y),
                prob.temperature,
            )
        )
    )
    S, g = f([jnp.asarray(U) for U in res.Us])
    assert np.isclose(float(S), res.action, rtol=1e-12)
    # stationary for the engine's autodiff gradient too (as far as the minimiser's own gradient is)
    assert max(float(jnp.abs(x).max()) for x in g) < max(1e-8, 1.001 * res.g_max)
    S_gp, _ = f([jnp.eye(U.shape[0]) for U in res.Us])
    assert res.action < float(S_gp)
    # warm start from the solution with its inverse Hessian converges at once
    res2, Hinv = minimise_action_bfgs(prob, tol=1e-8, init=res.Us, return_hinv=True)
    assert res2.steps == 0 and res2.converged == res.converged and Hinv.shape[0] == Hinv.shape[1]


@pytest.mark.parametrize("heads", [(4, 4), (3, 3, 3)])
def test_numpy_entropy_at_the_gp_point(heads):
    from smattn.p1.action import gp_entropy_per_width, gp_point
    from smattn.p1.minimise_bfgs import entropy_and_grad

    arch = Architecture.equal_width(heads, 7.0)
    S, grads = entropy_and_grad(gp_point(arch), arch.heads, arch.widths, arch.sigma2, arch.sigma2_a)
    assert np.isclose(S / 7.0, gp_entropy_per_width(heads), rtol=1e-13)
    assert max(np.abs(g).max() for g in grads) < 1e-12


def test_numpy_entropy_matches_the_engine_at_unequal_widths(random_pd):
    from smattn.p1.action import entropy
    from smattn.p1.minimise_bfgs import entropy_and_grad

    rng = np.random.default_rng(4)
    arch = Architecture((2, 3), (5.0, 8.0, 3.0), (1.0, 0.7, 1.3), 0.9)
    Us = [random_pd(6, rng, scale=np.sqrt(0.3 / 6)), random_pd(3, rng, scale=np.sqrt(0.3 / 3))]
    S, grads = entropy_and_grad(Us, arch.heads, arch.widths, arch.sigma2, arch.sigma2_a)
    S_ref, g_ref = jax.jit(jax.value_and_grad(lambda Ms: entropy([(M + M.T) / 2 for M in Ms], arch)))(
        [jnp.asarray(U) for U in Us]
    )
    assert np.isclose(S, float(S_ref), rtol=1e-12)
    for g, gr in zip(grads, g_ref, strict=True):
        assert np.allclose((g + g.T) / 2, np.asarray(gr), rtol=1e-9, atol=1e-12)


def test_bfgs_agrees_with_scipy_bfgs_to_the_tolerance(make_problem):
    """SciPy's BFGS on the reference's unconstrained M_l (its gtol with norm=inf is then exactly g_max < tol)
    reaches the same U as the Cholesky-parametrised BFGS (benchmarks/p1_minimise_bfgs.py compares the two in the
    same parametrisation at larger P)."""
    from scipy.optimize import minimize

    prob, _ = make_problem((2, 2), 20.0, T=0.3, **_kw())
    tol = 1e-6  # SciPy stops on "precision loss" before 1e-9 here (see the module docstring)
    ours = minimise_action_bfgs(prob, tol=tol)
    act = ImageAction(prob)
    sizes = [U.shape[0] for U in ours.Us]

    def split(m):
        starts = np.cumsum([0, *[k * k for k in sizes[:-1]]])
        return [m[a : a + n * n].reshape(n, n) for a, n in zip(starts, sizes, strict=True)]

    def fun(m):
        S, grads, _ = act.value_grad([(M + M.T) / 2 for M in split(m)])
        if grads is None:  # not positive definite: the line search backs off
            return np.inf, np.zeros_like(m)
        return S, np.concatenate([g.ravel() for g in grads])

    m0 = np.concatenate([np.eye(n).ravel() for n in sizes])
    r = minimize(fun, m0, jac=True, method="BFGS", options={"gtol": tol, "norm": np.inf, "maxiter": 2000})
    assert ours.converged and r.success
    for U, M in zip(ours.Us, split(r.x), strict=True):
        np.testing.assert_allclose(U, (M + M.T) / 2, atol=1e2 * tol)
    assert ours.action == pytest.approx(r.fun, rel=1e-12)


def test_progress_lines_do_not_change_the_minimiser(make_problem, capsys, monkeypatch):
    monkeypatch.setenv("SMATTN_PROGRESS_INTERVAL", "0.001")
    prob, _ = make_problem((2, 2), 5.0, T=0.3, **_kw())
    quiet = minimise_action_bfgs(prob, tol=1e-8)
    assert capsys.readouterr().err == ""
    loud = minimise_action_bfgs(prob, tol=1e-8, desc="theory U")
    lines = capsys.readouterr().err.splitlines()
    assert lines and all(line.startswith("theory U") for line in lines) and f"{quiet.steps}/" in lines[-1]
    assert loud.steps == quiet.steps and all(np.array_equal(a, b) for a, b in zip(loud.Us, quiet.Us, strict=True))
