# Raw data: every file of the checksum table, from the data folder, a mirror, or upstream; verified by sha256.

from smattn.data.fetch import DataError, verify_present

RAW_RELPATHS = [f.relpath for f in RAW_FILES]

# Every run (and every dry run) first re-checks the raw files already in the data folder, before any job can read
# them: a file changed since it was verified stops the workflow here, naming the file and its expected checksum.
# Unchanged files cost one stat each (cache <data_dir>/.verified.json, keyed by size, mtime, ctime and inode).
try:
    verify_present(DATA_DIR, RAW_RELPATHS)
except DataError as _err:
    raise WorkflowError(f"Raw data check failed: {_err}")


localrules:
    fetch_raw,


rule fetch_raw:
    """Obtain one raw file (verified data folder -> mirror -> official URL) and verify its checksum.
    The mirror (config data_mirror, else SMATTN_DATA_MIRROR) is read by the script, not passed as a parameter, so
    that moving the mirror does not re-fetch verified files."""
    output:
        f"{DATA_DIR}/{{relpath}}",
    log:
        "logs/data/fetch_{relpath}.log",
    wildcard_constraints:
        relpath="|".join(re.escape(p) for p in RAW_RELPATHS),
    # before everything else (a copy and a checksum each): a priority does not pass to a job's inputs, so without it
    # the P1 image chain (priority 50) waited minutes for its raw files behind the P2 theory jobs
    priority: 100
    conda:
        "../envs/workflow.yaml"
    threads: 1
    resources:
        mem_mb=512,
        runtime=30,
    params:
        relpath=lambda wc: wc.relpath,
        data_dir=lambda wc, output: output[0][: -len(wc.relpath) - 1],
    script:
        "../scripts/fetch_raw.py"


rule raw_data:
    """Every raw file, verified (a convenience target: snakemake raw_data)."""
    input:
        [raw(p) for p in RAW_RELPATHS],


rule data_summary:
    """Load every raw data set with the library's loaders and record its counts (a check of the data layer)."""
    input:
        omniglot_background=raw("omniglot/images_background.zip"),
        omniglot_evaluation=raw("omniglot/images_evaluation.zip"),
        mnist=[
            raw(f"mnist/{s}-{k}-idx{n}-ubyte.gz") for s in ("train", "t10k") for k, n in (("images", 3), ("labels", 1))
        ],
        fashion=[
            raw(f"fashion-mnist/{s}-{k}-idx{n}-ubyte.gz")
            for s in ("train", "t10k")
            for k, n in (("images", 3), ("labels", 1))
        ],
        trec_train=raw("trec/train_5500.label"),
        trec_test=raw("trec/TREC_10.label"),
        vocab=raw("bert-base-uncased/vocab.txt"),
        spoc=[raw(p) for p in RAW_RELPATHS if p.startswith("reference/spoc/")],
    output:
        summary="results/data/summary.json",
    log:
        "logs/data/data_summary.log",
    benchmark:
        "results/benchmarks/data/data_summary.tsv"
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=planned_mem_mb("data_summary"),
        runtime=planned_runtime("data_summary"),
    script:
        "../scripts/data_summary.py"
