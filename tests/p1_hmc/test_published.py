"""The HMC task against what the authors' code gives on the same instance (smattn.data.published; P1 Sec. 4.1).

Our data and heads follow the authors' draw order, so the GP accuracies must agree to the test item and the
renormalised theory's order parameter to within the distance between the authors' stopping point and the exact
minimiser. The authors' Adam stops once every entry of dS/dM is below 1e-5 (S = action / N_max, U = (M + M^T)/2);
a point with gradient g lies within |H^-1 g| of the minimiser (H the Hessian of S in the distinct entries of
U^(1), U^(2), computed here), so the tolerance is twice that first-order bound (8e-3 on the flattest instance,
N = 10 with all paths, where ours and the authors' differ by 2e-4; below 1.2e-3 on the others). Mutations: the
first-token readout (the paper text's) gives a GP accuracy of 0.843 instead of 0.826 and fails; a wrong entropy
coefficient, head or data draw moves U by orders of magnitude more than the tolerance (U[g,g] at N = 10 is 13.4, 1 at
the GP point).
"""

import numpy as np
import pytest

from smattn.data.published import (
    P1_HMC_AUTHORS_ACC_GP,
    P1_HMC_AUTHORS_ACC_THEORY,
    P1_HMC_AUTHORS_GRADIENT_TOL,
    P1_HMC_AUTHORS_U,
)
from smattn.p1 import hmc_task as H
from smattn.p1.action import Architecture
from smattn.p1.attention import attentioned_inputs_from_heads
from smattn.p1.kernels import PathGram
from smattn.p1.minimise import ActionProblem, minimise_action, stopping_distance_bound
from smattn.p1.predictor import accuracy, predictor

pytestmark = pytest.mark.published

T = 0.01


@pytest.fixture(scope="module")
def data():
    """Training (100) and test (1000) chains at sigma_perp = 1 and 5, the authors' seeds."""
    return {
        sp: (H.generate_hmc(100, H.SEED_TRAIN, sigma_perp=sp), H.generate_hmc(1000, H.SEED_TEST, sigma_perp=sp))
        for sp in (1.0, 5.0)
    }


def _paths(variant, data):
    train, test = data[H.VARIANTS[variant]["sigma_perp"]]
    heads = [{"W": W} for W in H.head_matrices(variant)]
    return train, test, *(attentioned_inputs_from_heads(d.x, heads, "last") for d in (train, test))


@pytest.mark.parametrize("variant", sorted(P1_HMC_AUTHORS_ACC_GP))
def test_gp_accuracy_equals_the_authors(variant, data):
    """GP limit (U = identity): no minimisation, so the same instance gives the same 1000 test decisions."""
    train, test, xi, xt = _paths(variant, data)
    acc = accuracy(predictor(np.eye(xi.shape[1]), xi, train.y, xt, T), test.y)
    assert round(acc * 1000) == round(P1_HMC_AUTHORS_ACC_GP[variant] * 1000), (variant, acc)


@pytest.mark.parametrize("variant,N", sorted(P1_HMC_AUTHORS_U))
def test_theory_order_parameter_and_accuracy_equal_the_authors(variant, N, data):
    train, test, xi, xt = _paths(variant, data)
    heads = (len(H.VARIANTS[variant]["layer1"]), len(H.VARIANTS[variant]["layer2"]))
    arch = Architecture.equal_width(heads, N)
    problem = ActionProblem(arch, PathGram(xi), train.y, T)
    res = minimise_action(problem, tol=1e-9)
    assert res.converged
    tol = 2 * stopping_distance_bound(problem, res.Us, P1_HMC_AUTHORS_GRADIENT_TOL)
    U_authors = np.asarray(P1_HMC_AUTHORS_U[(variant, N)])
    np.testing.assert_allclose(res.U, U_authors, rtol=0, atol=tol)
    # the bound is far below the structure the paper reads off U (e.g. the good-denoising anti-correlation)
    assert tol < 0.01 * np.abs(U_authors - np.eye(len(U_authors))).max()
    acc = accuracy(predictor(res.U, xi, train.y, xt, T), test.y)
    assert round(acc * 1000) == round(P1_HMC_AUTHORS_ACC_THEORY[(variant, N)] * 1000), (variant, N, acc)
