"""P1 one-shot in-context image classification (Tiberi et al. 2024, Sec. 4.2 / App. H; docs/p1_images.md).

Modules (one concept each):

* ``tokens``     image -> 16 patch tokens of 192 numbers (resize, inversion, normalisation, 8x8 patches, LayerNorm),
                 sinusoidal positions, label vectors, the 48-token sequence ``x_0``.
* ``tasks``      one-shot 2-way task sampler on the Vinyals class split; OOD MNIST / Fashion-MNIST 0-vs-1 sequences.
* ``model``      the gradient-descent transformer (attention from ``x_0`` in every layer, summed heads, mean pooling),
                 with head pruning by output masking.
* ``training``   Adam training loop with validation, best-checkpoint selection and resumable checkpoints.
* ``export``     export of the fixed query/key weights, balanced sequence sets and the GD order parameter ``U_GD``.
* ``theory_grid`` the Bayesian theory on the exported heads over the (N, T) grid, temperature selection, GP line
                 (minimiser: ``smattn.p1.minimise_bfgs``).
* ``pruning``    head pruning of a trained model guided by the theory's U: scores, cumulative / single / random
                 orders, accuracies of every pruned network from one pass of path contributions.
"""
