"""Numbers the papers' authors published that are not in a data file we can fetch.

Everything a figure or claim compares against and that had to be typed in lives here, each with where it comes
from. Values that the authors did publish as files (P2's ``reference/spoc/``) are read by :mod:`.spoc` instead.
"""

from __future__ import annotations

# ---------------------------------------------------------------------------------------------------------------
# P1 (Tiberi et al. 2024)
# ---------------------------------------------------------------------------------------------------------------

# Fig. 3e: the authors' in-distribution accuracy drops (percentage points) when one head of the L = 2, H = 4
# network is pruned, heads in order of increasing theory score, read off the published figure; and the unpruned
# network's in-distribution accuracy (percent) stated in the paper's text.
P1_PRUNING_DROPS_POINTS = (2.0, 0.8, 4.3, 8.4, 7.8, 7.3, 9.5, 8.9)
P1_PRUNING_BASE_ACCURACY_PERCENT = 83.8
# Sec. 4.2 (Fig. 3f): the two lowest-scoring heads of the L = 2, H = 4 network (N = 512, G = 128) amount to about 24 %
# of its parameters (a whole percentage in the text).
P1_PRUNING_PARAMS_REMOVED_PERCENT_L2H4_2_HEADS = 24.0

# HMC task (Sec. 4.1, Figs 2c, 2e, 5c): what the authors' code gives on the instance of their run scripts (data seeds
# 27 / 59, heads 127 / 147 / 217 / 247, T = 0.01, P = 100, 1000 test chains, last-token readout): their repository
# (tiberilor/attention-paths-interplay, commit 915ca41), TRAIN_conv_sum_heads_binary_regression_MARKOV_OPTION_E_TWO_
# LAYERS.py with the arguments of its LOOP_RUN scripts (4paths/data/{all_paths, good_path, good_and_denoising_paths}
# and 2paths; "two_path_random", the paper text's Fig. 2e network, is the 2paths script with its layer-1 random head
# at perturbation 1 instead of 0, a configuration the repository does not list), evaluated as their
# PLOT_classification_accuracy_mean_predictor.py does (sign of the mean predictor on 1000 test chains) and their
# PLOT_order_parameter.py reads U (compute_symmetrized_order_parameter_largest). Run on a CPU in float64; the paper
# prints none of these numbers (its figures show them). tools/p1_hmc_authors_reference.py regenerates them from a
# clone of that repository at that commit.
# GP-limit test accuracy (U = identity) of each network.
P1_HMC_AUTHORS_ACC_GP = {
    "all": 0.826,
    "good": 0.940,
    "good_denoising": 0.955,
    "two_path_random": 0.764,
    "two_path_uniform": 0.843,
}
# renormalised-theory test accuracy, (variant, N) -> accuracy, at the end of the authors' Adam minimisation
P1_HMC_AUTHORS_ACC_THEORY = {
    ("all", 10): 0.964,
    ("all", 30): 0.961,
    ("all", 100): 0.911,
    ("all", 1000): 0.834,
    ("two_path_random", 10): 0.945,
    ("two_path_uniform", 10): 0.957,
}
# the order parameter U (paths in flat order g, a1, d, a2 for "all"; g, d for the two-path networks) where the
# authors' Adam stops (max |dS/dM| < 1e-5 with S = action / N_max), (variant, N) -> U
P1_HMC_AUTHORS_U = {
    ("all", 10): (
        (13.3651229, -0.0039700, -5.3969437, -0.3395428),
        (-0.0039700, 0.5462971, -0.1644217, 0.0443226),
        (-5.3969437, -0.1644217, 6.7451652, 0.0190804),
        (-0.3395428, 0.0443226, 0.0190804, 0.3434218),
    ),
    ("all", 1000): (
        (1.2673932, 0.0224575, -0.0390046, 0.0028945),
        (0.0224575, 1.1756717, -0.0112725, 0.0027881),
        (-0.0390046, -0.0112725, 1.2533402, 0.0096890),
        (0.0028945, 0.0027881, 0.0096890, 1.2077351),
    ),
    ("two_path_random", 10): ((2.1303749, -1.0369026), (-1.0369026, 0.7047429)),
    ("two_path_uniform", 10): ((2.9348435, -1.7392525), (-1.7392525, 1.2574088)),
}
#: the authors' stopping rule: max |dS/dM| below this, S = action / N_max
P1_HMC_AUTHORS_GRADIENT_TOL = 1e-5


# ---------------------------------------------------------------------------------------------------------------
# P2 (Troiani et al. 2025)
# ---------------------------------------------------------------------------------------------------------------

# The 16 skip strengths c of the authors' phase diagram (the rows of reference/spoc/alpha_critical.csv), in the
# file's order.
P2_PHASE_DIAGRAM_SKIPS = (4.0, 3.5, 3.0, 2.5, 2.0, 1.5, 1.25, 1.0, 0.875, 0.75, 0.625, 0.5625, 0.5, 0.1, 0.01, 0.0001)

# Fig. 1 right: the authors' thresholds, reference/spoc/alpha_critical.csv row by row (same order): skip c, alpha1
# (the FIRST layer's threshold, alpha_first) and alpha2 (the last layer's, alpha_last). The claims rows of
# claims/p2_theory.yaml carry these as their paper values (tests/p2_theory/test_critical_csv.py checks both against
# the file). The file has no error bars and the code that made it is not published.
P2_ALPHA_CRITICAL = (
    (4.0, 0.19633579116834615, 0.08265563989578797),
    (3.5, 0.23635469775355897, 0.08797467205978199),
    (3.0, 0.30419681016777106, 0.09432894608903773),
    (2.5, 0.39065976786967194, 0.10290529684498781),
    (2.0, 0.5133383692453267, 0.11187752449195658),
    (1.5, 0.6580675458050763, 0.12407481655572462),
    (1.25, 0.7356785032416565, 0.13086094395462916),
    (1.0, 0.793646302451566, 0.14358446549404996),
    (0.875, 0.8228506548798457, 0.15200331205433934),
    (0.75, 0.8237277524918267, 0.16096359002295674),
    (0.625, 0.7965388456685832, 0.1730866106452066),
    (0.5625, 0.7818408783076831, 0.17969629298056136),
    (0.5, 0.7552121669182138, 0.18644020883563048),
    (0.1, 0.42247405429476104, 0.19142873899170545),
    (0.01, 0.3325266847222539, 0.18941822020941937),
    (0.0001, 0.318331800930651, 0.19536818610385773),
)

# Figs 1 left and 3 left: the authors' error files (gen_error_BO_2w*.csv, gen_error_BO_3w*.csv) are plug-in errors at
# their SE overlaps, each a Monte-Carlo mean over this many samples per alpha (their gen_error notebooks).
P2_AUTHORS_ERROR_SAMPLES = 100_000

# Fig. 2 left: Q^t_kk of the authors' published GAMP run (d = 1000, alpha = 1.2, seed 1). Their GAMP script saves
# only M^t; the plotting notebook of their repository types these overlaps in by hand, so they are copied here.
P2_GAMP_RUN_Q11 = (
    0.0486702, 0.07225786, 0.01251389, 0.04260792, 0.01636443, 0.09943516, 0.04243677, 0.37061162,
    0.09684821, 0.5320698, 0.17103162, 0.45562906, 0.30545907, 0.41270007, 0.38583303, 0.49319571,
    0.4168609, 0.38410595, 0.46652435, 0.49880665, 0.55272534, 0.61118504, 0.65214856, 0.69184505,
    0.70198443, 0.72383352, 0.72162928, 0.74464462, 0.74679141, 0.75688189, 0.75613677, 0.75397049,
    0.75658042, 0.76064953,
)  # fmt: skip
P2_GAMP_RUN_Q22 = (
    0.34211042, 1.37339999, 0.72505987, 1.19063012, 1.03800363, 1.2026546, 1.14016995, 1.13818946,
    1.11755712, 1.11697078, 1.10540574, 1.11786401, 1.11655613, 1.120012, 1.11600583, 1.11490668,
    1.11609528, 1.11867997, 1.1184805, 1.11681475, 1.12105857, 1.11701311, 1.11478586, 1.11300499,
    1.11344296, 1.11433813, 1.11636928, 1.11681489, 1.11683432, 1.11898691, 1.11837686, 1.11800234,
    1.11871953, 1.11897841,
)  # fmt: skip
