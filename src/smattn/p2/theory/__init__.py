"""P2 theory of the deep tied-attention target, one concept per module (float64 NumPy throughout).

Indices Z have shape ``(n, L, 2)`` (rows = layers, L in {2, 3}; columns = the T = 2 tokens); overlaps Q and the
channel covariance V are ``(L, L)``; an observation is stored as its two softmax logits ``ell`` ``(n, 2)``.

* :mod:`.attention_link` -- the target's link: skip matrix ``A_c(z)`` ``(..., 2, 2)``, last pre-activation
  ``(..., 2)``, logits ``(..., 2)`` <-> attention entries, softmax pre-image, first-layer solve
  :func:`~.attention_link.solve_softmax_layer` (branches ``(..., 2)``, log-Jacobian, admissibility mask).
* :mod:`.quadrature` -- Gauss-Hermite tensor grids ``(n1d**dim, dim)`` and :class:`~.quadrature.QuadratureSettings`
  (nodes per dimension, parametrisation, regime switch, mode grids) passed to every denoiser call.
* :mod:`.channel_denoiser` -- output-channel posterior moments (mean ``(n, L, 2)``, covariance ``(n, 2L, 2L)``),
  ``g_out`` ``(n, L, 2)`` and its analytic Jacobian ``(n, L, 2, L, 2)`` (parametrisations "A" and "A*").
* :mod:`.l2_grid` -- the L = 2 moments of parametrisations "A" and "A*" compiled with JAX (float64), the same
  numbers to rounding; ``QuadratureSettings.backend`` picks it or NumPy.
* :mod:`.prior_denoiser` -- Gaussian prior denoiser ``f_in``: ``(W_hat (p, d), C_hat (p, p))``.
* :mod:`.adaptive_reference` -- adaptive ``dblquad`` posterior mean ``(2, 2)`` of one L = 2 sample (tests, benchmarks).
* :mod:`.overlaps` -- overlap-matrix helpers: symmetrise-and-clip ``Q`` ``(L, L)``, PSD square root.
* :mod:`.state_evolution` -- teacher draws ``(N, L, 2)``, channel average ``R(Q)`` ``(L, L)``, the damped SE with
  optional Anderson mixing (:func:`~.state_evolution.anderson_step`); result Q ``(L, L)`` and history.
* :mod:`.thresholds` -- K operator ``(L, L)`` at Q = 0, alpha_last, the phase-II branch ``(m,)`` arrays,
  alpha_first (self-consistent and literal).
* :mod:`.overlap_curves` -- Q11, Q22 ``(m,)`` on an alpha grid (Fig. 1 left), depth-3 sweeps ``(m, 3, 3)`` (Fig. 3
  left), clamped first layer (Fig. 5).
* :mod:`.prediction_errors` -- Bayes-optimal and plug-in errors at an overlap Q: (mean, standard error).
* :mod:`.gamp` -- GAMP on synthetic data: per-iteration M, Q ``(iters, p, p)``, test error ``(iters,)``.
* :mod:`.gamp_metrics` -- the authors' layer metric ``|M_kk| / sqrt(Q_kk)`` ``(..., iters, 2)`` and half-crossing
  iterations of GAMP runs (Fig. 2 left).
* :mod:`.phase_diagram_analysis` -- our thresholds against the authors' CSV: the per-c table and a computed verdict
  for each hypothesis on how the CSV was obtained.
* :mod:`.phase_diagram_report` -- the phase-diagram deviation note (Markdown) rendered from that analysis.
* :mod:`.critical_csv` -- the authors' CSV as data: each column's scatter over c (a float) and the last-layer
  column minus the bound 1/6, per c (metrics of the claims table).
"""
