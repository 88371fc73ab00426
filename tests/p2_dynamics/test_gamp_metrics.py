import numpy as np
import pytest

from smattn.p2.theory.gamp_metrics import LEARNED_MIN, half_crossing_iterations, takeoff_iteration


@pytest.mark.parametrize(
    "C, expected",
    [
        ([0.05, 0.1, 0.4, 0.8, 0.9], 3),  # rises once
        ([0.05, 0.35, 0.1, 0.5, 0.9], 4),  # an early excursion above the level does not count
        ([0.5, 0.6, 0.7], 1),  # learned from the first iteration
        ([0.05, 0.4, 0.1], 4),  # ends below: not learned within the iterations (len + 1)
    ],
)
def test_takeoff_is_the_iteration_from_which_the_metric_stays_learned(C, expected):
    assert LEARNED_MIN == 0.3  # the cases above are written for this level
    assert takeoff_iteration(C) == expected


def test_half_crossing_counts_unlearned_runs_after_the_last_iteration():
    C = np.array([[0.0, 0.2, 0.5, 0.8], [0.01, 0.02, 0.03, 0.02]])
    it, learned = half_crossing_iterations(C)
    assert learned.tolist() == [True, False]
    assert it.tolist() == [3, 5]  # half of 0.8 first reached at iteration 3; the unlearned run gets n_iter + 1
