"""Helpers for the test suite that are worth importing elsewhere (e.g. a throw-away SLURM cluster)."""
