"""Snakemake's between-workflow output cache (--cache, $SNAKEMAKE_OUTPUT_CACHE) shares an expensive output between two
checkouts: the second takes it from the cache without running the job, and the key changes with the parameters and
with the library src/smattn (docs/cluster.md, "Sharing expensive outputs between checkouts")."""

from __future__ import annotations

import shutil
from pathlib import Path

TARGET = "results/p2_theory/l2_curve.json"  # rule p2_l2_state_evolution: raw input, fetched from the mirror
LOG = "logs/p2_theory/p2_l2_state_evolution.log"
BENCHMARK = "results/benchmarks/p2_theory/p2_l2_state_evolution.tsv"
# what a dry run with --cache says of the job
FOUND = f"Output file {TARGET} will be obtained from global between-workflow cache."
MISSED = f"Output file {TARGET} will be written to global between-workflow cache."


def run(cli, wd, cache, raw_data, *extra, config=(), env_extra=None):
    """``cli``: the run_snakemake fixture."""
    env = {"SNAKEMAKE_OUTPUT_CACHE": str(cache), "SMATTN_DATA_MIRROR": str(raw_data), **(env_extra or {})}
    args = ["--cache", "--cores", "1", *extra, "--config", "scale=smoke", *config, "--", TARGET]
    r = cli(wd, args, env, timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-3000:]
    return out


def test_second_checkout_takes_the_l2_curve_from_the_cache(tmp_path, copy_workflow, raw_data, run_snakemake):
    import smattn

    cache = tmp_path / "cache"
    cache.mkdir()
    first, second, third = (copy_workflow(tmp_path / name) for name in ("first", "second", "third"))

    out = run(run_snakemake, first, cache, raw_data)
    assert f"Moving output file {TARGET} to cache." in out, out[-3000:]
    [entry] = cache.iterdir()  # one output, one cache entry named by its provenance hash
    assert (first / LOG).stat().st_size > 0  # the job ran here
    computed = (first / TARGET).read_bytes()

    out = run(run_snakemake, second, cache, raw_data)
    assert f"Symlinking output file {TARGET} from cache." in out, out[-3000:]
    assert "Moving output file" not in out, out[-3000:]  # nothing new was stored: the job did not run
    assert [p.name for p in cache.iterdir()] == [entry.name]
    assert not (second / LOG).exists() or (second / LOG).stat().st_size == 0  # the script never wrote its log
    assert (second / TARGET).resolve() == entry.resolve()
    assert (second / TARGET).read_bytes() == computed
    # a cached rule has no benchmark (Snakemake's rule), in either checkout
    assert not (first / BENCHMARK).exists() and not (second / BENCHMARK).exists()

    # the key, by dry runs in a third fresh copy: found with the same code and parameters; not found with another
    # seed, nor with the library changed by one comment line (LIBRARY_KEY in rules/common.smk)
    assert FOUND in run(run_snakemake, third, cache, raw_data, "-n")
    out = run(run_snakemake, third, cache, raw_data, "-n", config=["p2_theory={seed: 2}"])
    assert MISSED in out, out[-2000:]
    lib = tmp_path / "lib"
    shutil.copytree(Path(smattn.__file__).parent, lib / "smattn", ignore=shutil.ignore_patterns("__pycache__"))
    with open(lib / "smattn" / "__init__.py", "a") as fh:
        fh.write("# changed\n")
    out = run(run_snakemake, third, cache, raw_data, "-n", env_extra={"PYTHONPATH": str(lib)})
    assert MISSED in out, out[-2000:]
