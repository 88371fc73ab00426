#!/usr/bin/env bash
# Installs this repository's smattn library into a conda environment of envs/ (the .yaml of the same name). Snakemake
# (--sdm conda) runs it once, right after creating the environment, with the environment active and from the
# workflow's working directory, the repository root (where config.yaml lies). The env file itself cannot install it:
# Snakemake copies the file to .snakemake/conda/<hash>.yaml and conda runs its pip section from that folder, where a
# relative path (`-e ..`) misses the repository.
# Editable, so the jobs import the checkout's src/smattn as the main environment does; no dependencies (the env file
# pins them all, from the lock), no build isolation and no index (setuptools, the build backend, is pinned there too).
# The three envs/*.post-deploy.sh are one script; Snakemake hashes it with the env file (a change makes new envs).
set -euo pipefail
if ! grep -qx 'name = "smattn"' pyproject.toml 2>/dev/null; then
    echo "post-deploy: $PWD is not the smattn repository (its pyproject.toml): run snakemake from there" >&2
    exit 1
fi
python -m pip install --no-deps --no-build-isolation --no-index -e "$PWD"
