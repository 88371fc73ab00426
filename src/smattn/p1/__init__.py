"""P1 (Tiberi et al., NeurIPS 2024): Bayesian theory of deep multi-head attention, its posterior sampler and tasks.

Engine (general L, H_l, readouts ``last``/``first``/``mean``, W-style and QK-style attention), one concept per module:

* :mod:`.attention` -- attention matrices ``[B, H, T, T]`` (key first), path attention vectors ``[B, H_tot, T]``
  (paths row-major over (h_1..h_L)), attentioned inputs ``xi`` ``[B, H_tot, D]``.
* :mod:`.kernels` -- path-path kernels, ``K_U``, and :class:`~.kernels.PathGram`, the symmetrised path-pair Gram
  tensor ``[n_pairs, P, P]`` computed once per data set.
* :mod:`.action` -- :class:`~.action.Architecture`, entropy / energy / action for general L, closed-form readout
  scalar, GP point.
* :mod:`.minimise` -- :class:`~.minimise.ActionProblem`, :func:`~.minimise.minimise_action` (Cholesky-parametrised
  saddle-free Newton, PD at every iterate, stops at the reference's ``g_max < 1e-5``) and the reference's Adam
  scheme (``optax.adam``); results carry steps, g_max, converged flag and the minimum eigenvalue at every step.
* :mod:`.minimise_bfgs` -- :func:`~.minimise_bfgs.minimise_action_bfgs`, BFGS on Cholesky factors with the
  closed-form energy and entropy gradients in NumPy, for large P (the image task and pruning); same result type.
* :mod:`.predictor` -- mean predictor, variance, accuracy; :mod:`.alignment` -- PC overlaps with the labels;
  :mod:`.head_score` -- head scores from U.
* :mod:`.network` -- the Bayesian network in JAX (layer-by-layer and path forms, effective weights, Eq. 13).
* :mod:`.sampler` -- NumPyro NUTS over all Bayesian weights, keeping only test predictions and U per sample.

Tasks: :mod:`.hmc_task` (hidden Markov chain, reference draw order); ``images`` (one-shot image task, and head
pruning of its gradient-descent network in ``images.pruning``).

Typical use::

    xi = attentioned_inputs_from_heads(x_train, [{"W": W1}, {"W": W2}], "last")   # [P, H_tot, D]
    prob = ActionProblem(Architecture.equal_width((2, 2), N), PathGram(xi), y, temperature)
    res = minimise_action(prob)            # res.U, res.converged, res.g_max, res.steps
    mean = predictor(res.U, xi, y, xi_test, temperature)
"""
