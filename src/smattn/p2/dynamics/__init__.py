"""P2 learning dynamics of trained attention networks, one concept per module.

* :mod:`.sgd` -- :class:`~.sgd.SGDConfig` and plain SGD on the two-layer tied-attention target in JAX: R runs
  batched, records m, q ``(R, records, 2)`` after every batch visit, test error ``(R, K)`` (Fig. 2 right).
* :mod:`.trec_model` -- the two-layer tied-attention text classifier (PyTorch): ids ``(B, N)`` -> logits
  ``(B, n_classes)``; attention weights ``(h, k)`` = (64, 128).
* :mod:`.trec` -- :class:`~.trec.TRECConfig`, tokenised questions, splits, chunk padding, one training repetition
  with similarity ``(n_layers, steps)`` and validation accuracy ``(epochs,)`` (Fig. 3 right).
* :mod:`.similarity` -- Gram matrices ``W W^T`` ``(h, h)``, their similarity to the final Gram, and
  :class:`~.similarity.GramRecorder` (packed upper triangles on disk, streaming similarity ``(n_layers, steps)``).
"""
