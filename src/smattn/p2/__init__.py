"""P2 library: Troiani et al. (2025), sequence multi-index models and deep attention networks."""
