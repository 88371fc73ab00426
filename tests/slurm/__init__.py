"""Cluster-path tests (pytest -m slurm)."""
