"""Snakemake's between-workflow output cache (--cache, $SNAKEMAKE_OUTPUT_CACHE) shares an expensive output between two
checkouts: the second takes it from the cache without running the job (docs/cluster.md)."""

from __future__ import annotations

import os
import subprocess
import sys

TARGET = "results/p2_theory/l2_curve.json"  # rule p2_l2_state_evolution: raw input, fetched from the mirror
LOG = "logs/p2_theory/p2_l2_state_evolution.log"
BENCHMARK = "results/benchmarks/p2_theory/p2_l2_state_evolution.tsv"


def run(wd, cache, raw_data):
    env = {**os.environ, "SNAKEMAKE_OUTPUT_CACHE": str(cache), "SMATTN_DATA_MIRROR": str(raw_data)}
    r = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cache", "--cores", "1", "--config", "scale=smoke", "--", TARGET],
        cwd=wd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-3000:]
    return out


def test_second_checkout_takes_the_l2_curve_from_the_cache(tmp_path, copy_workflow, raw_data):
    cache = tmp_path / "cache"
    cache.mkdir()
    first, second = copy_workflow(tmp_path / "first"), copy_workflow(tmp_path / "second")

    out = run(first, cache, raw_data)
    assert f"Moving output file {TARGET} to cache." in out, out[-3000:]
    [entry] = cache.iterdir()  # one output, one cache entry named by its provenance hash
    assert (first / LOG).stat().st_size > 0  # the job ran here
    computed = (first / TARGET).read_bytes()

    out = run(second, cache, raw_data)
    assert f"Symlinking output file {TARGET} from cache." in out, out[-3000:]
    assert "Moving output file" not in out, out[-3000:]  # nothing new was stored: the job did not run
    assert [p.name for p in cache.iterdir()] == [entry.name]
    assert not (second / LOG).exists() or (second / LOG).stat().st_size == 0  # the script never wrote its log
    assert (second / TARGET).resolve() == entry.resolve()
    assert (second / TARGET).read_bytes() == computed
    # a cached rule has no benchmark (Snakemake's rule), in either checkout
    assert not (first / BENCHMARK).exists() and not (second / BENCHMARK).exists()
