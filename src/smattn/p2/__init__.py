"""P2 (Troiani et al., 2025): sequence multi-index models and deep attention networks.

Two independent groups, plus helpers both use:

* :mod:`.theory` -- Bayes-optimal theory of the deep tied-attention target (T = 2 tokens, rank 1): channel and
  prior denoisers, state evolution, weak-recovery thresholds, overlap curves, prediction errors and GAMP.
* :mod:`.dynamics` -- learning dynamics of trained networks: plain SGD on the two-layer target (Fig. 2 right) and
  the tied-attention text classifier on TREC (Fig. 3 right).
* :mod:`.trajectories` -- per-layer metrics along a training or GAMP trajectory (last axis = time): the authors'
  layer metric ``m_k / sqrt(q_k)``, sign correction, first crossing of a fraction of the final value.
* :mod:`.plotting` -- the figures' colours and style, long-format CSV rows (imports matplotlib).
"""
