"""Shared setup for the p1_hmc tests: float64 JAX, one thread."""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

from smattn.device import jax_setup  # noqa: E402

jax_setup(x64=True)
