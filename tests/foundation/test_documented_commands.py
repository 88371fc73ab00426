"""Every Snakemake command that the README and the pages of docs/ show runs as written: a command that executes jobs
names its cores or a profile (Snakemake refuses local execution without), its targets come before ``--config`` (which
takes every following word as a name=value pair), and each one, placeholders filled in, builds its DAG in a dry run
(mutation: dropping ``--cores 1`` from the cost-plan command, or moving ``gpu_doctor`` after ``--config``, fails)."""

from __future__ import annotations

import re
import shlex

import pytest

#: the documents read besides every page of docs/
DOCS = ("README.md",)
#: flags after which Snakemake executes no job
NO_JOBS = {"-n", "--dry-run", "--dryrun", "--lint", "--rulegraph", "--dag", "--report"}


def documented_commands(repo) -> list[tuple[str, list[str]]]:
    """(document, argv after the snakemake executable) of every snakemake command in a bash block."""
    out = []
    pages = sorted(p.relative_to(repo).as_posix() for p in (repo / "docs").glob("*.md"))
    for doc in (*DOCS, *pages):
        text = (repo / doc).read_text(encoding="utf-8")
        for block in re.findall(r"```bash\n(.*?)```", text, re.S):
            for line in block.replace("\\\n", " ").splitlines():
                for part in re.split(r"&&|\|", line.split(" # ")[0]):
                    words = shlex.split(part.strip(), comments=True)
                    if words and words[0].endswith("/snakemake"):
                        out.append((doc, words[1:]))
    return out


def test_docs_show_snakemake_commands(repo):
    cmds = documented_commands(repo)
    assert len(cmds) >= 8 and any("cost_plan" in argv for _, argv in cmds)


def test_every_command_that_runs_jobs_names_cores_or_a_profile(repo):
    for doc, argv in documented_commands(repo):
        if NO_JOBS & set(argv):
            continue
        assert {"--cores", "-c", "--profile"} & set(argv), f"{doc}: `snakemake {shlex.join(argv)}` needs --cores"
        if "--config" in argv:
            after = argv[argv.index("--config") + 1 :]
            bare = [w for w in after if "=" not in w and not w.startswith("-")]
            assert not bare, f"{doc}: `snakemake {shlex.join(argv)}`: {bare} after --config are read as config pairs"


def _filled(argv: list[str]) -> list[str]:
    """Placeholders such as ``<cpu partition>`` replaced by a name."""
    return [re.sub(r"<[^<>]+>", "x", w) for w in argv]


def test_every_command_builds_its_dag(repo, tmp_path, copy_workflow, raw_data, run_snakemake):
    wd = copy_workflow(tmp_path / "wf")
    env = {"SMATTN_DATA_MIRROR": str(raw_data), "PYTHONPATH": str(repo / "src")}
    seen = set()
    for doc, argv in documented_commands(repo):
        if {"--lint", "--rulegraph"} & set(argv) or tuple(argv) in seen:
            continue  # lint runs in its own test and in CI; the rule graph needs graphviz
        seen.add(tuple(argv))
        args = [a for a in _filled(argv) if a not in ("-n", "--dry-run")]
        r = run_snakemake(wd, ["--dry-run", *args], env, timeout=300)
        assert r.returncode == 0, (doc, argv, r.stderr[-3000:])
        assert "This was a dry-run" in r.stdout + r.stderr, (doc, argv)


@pytest.mark.parametrize(
    "bad",
    [
        ["cost_plan", "--config", "scale=paper"],
        ["--profile", "profiles/slurm", "--config", "scale=paper", "gpu_doctor"],
    ],
)
def test_the_checks_catch_a_broken_command(bad):
    """The static rules above reject the two forms that failed as documented before."""
    ok_cores = {"--cores", "-c", "--profile"} & set(bad)
    after = bad[bad.index("--config") + 1 :]
    bare = [w for w in after if "=" not in w and not w.startswith("-")]
    assert not ok_cores or bare
