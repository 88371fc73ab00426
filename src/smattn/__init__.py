"""smattn: the science behind the workflow (only ``scriptio`` uses the Snakemake API, for standalone script runs).

Subpackages: ``smattn.data`` (raw data), ``smattn.p1`` (Tiberi et al. 2024), ``smattn.p2`` (Troiani et al. 2025).
"""

__version__ = "0.1.0"
