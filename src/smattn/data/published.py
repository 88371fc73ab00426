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


# ---------------------------------------------------------------------------------------------------------------
# P2 (Troiani et al. 2025)
# ---------------------------------------------------------------------------------------------------------------

# The 16 skip strengths c of the authors' phase diagram (the rows of reference/spoc/alpha_critical.csv), in the
# file's order.
P2_PHASE_DIAGRAM_SKIPS = (4.0, 3.5, 3.0, 2.5, 2.0, 1.5, 1.25, 1.0, 0.875, 0.75, 0.625, 0.5625, 0.5, 0.1, 0.01, 0.0001)

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
