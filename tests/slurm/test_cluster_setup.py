"""Fast checks of the test-cluster machinery that need no SLURM (these run in the default suite): the configuration
it writes, that it restores /etc/slurm, and that without SLURM the cluster tests are skipped with a reason (and fail
under CI)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .slurm_cluster import MARKER, SlurmCluster, SlurmClusterError, missing_requirements

REPO = Path(__file__).resolve().parents[2]


def conf_items(text: str) -> list[str]:
    return [tok for line in text.splitlines() if not line.startswith("#") for tok in line.split()]


def test_config_declares_node_gpu_partition_and_private_state(tmp_path):
    cluster = SlurmCluster(tmp_path, partitions=("c", "g"), cpus=2, gpus=1, node="n1")
    text = cluster.slurm_conf(7001, 7002)
    items = conf_items(text)
    for expected in (
        "SlurmctldPort=7001",
        "SlurmdPort=7002",
        "GresTypes=gpu",
        "NodeName=n1",
        "CPUs=2",
        "Gres=gpu:1",
        "PartitionName=c",
        "PartitionName=g",
        "Nodes=n1",
        "AuthType=auth/none",
        "SelectType=select/cons_tres",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
    ):
        assert expected in items, expected
    partitions = [line for line in text.splitlines() if line.startswith("PartitionName=")]
    assert len(partitions) == 2 and all("Default=NO" in line for line in partitions)  # a job must name its partition
    settings = dict(i.split("=", 1) for i in items if "=" in i)
    assert int(settings["MinJobAge"]) >= 300  # squeue must still see finished jobs when the plugin asks
    for key in ("StateSaveLocation", "SlurmdSpoolDir", "SlurmctldPidFile", "SlurmdPidFile", "SlurmctldLogFile"):
        assert Path(settings[key]).is_relative_to(tmp_path), key
    gres = conf_items(cluster.gres_conf())
    assert {"NodeName=n1", "Name=gpu", "File=/dev/null"} <= set(gres)  # without a File the node drains


def test_stop_restores_a_foreign_config_and_removes_its_own(tmp_path):
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "slurm.conf").write_text("ClusterName=real\n")
    cluster = SlurmCluster(tmp_path / "run", node="n1", conf_dir=etc)
    (tmp_path / "run").mkdir()
    cluster._install_conf("slurm.conf", cluster.slurm_conf(1, 2))
    cluster._install_conf("gres.conf", cluster.gres_conf())
    assert MARKER in (etc / "slurm.conf").read_text()
    cluster.stop()  # no daemons were started: only the files are put back
    assert (etc / "slurm.conf").read_text() == "ClusterName=real\n"
    assert not (etc / "gres.conf").exists()


def test_missing_binaries_are_named(tmp_path, monkeypatch):
    monkeypatch.setenv("SMATTN_SLURM_PATH", str(tmp_path))
    problems = missing_requirements()
    assert problems and "SLURM binaries not found" in problems[0], problems
    assert "slurmctld" in problems[0] and "sbatch" in problems[0] and "apt-get install" in problems[0]
    with pytest.raises(SlurmClusterError, match="SLURM binaries not found"):
        SlurmCluster(tmp_path / "run", conf_dir=tmp_path / "etc").start()
    assert not (tmp_path / "etc").exists()  # nothing written before the check


@pytest.mark.parametrize("ci", ["", "true"])
def test_cluster_tests_skip_with_a_reason_without_slurm_and_fail_under_ci(tmp_path, ci):
    env = dict(os.environ, SMATTN_SLURM_PATH=str(tmp_path), CI=ci)
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-m",
            "slurm",
            "-rs",
            "-p",
            "no:cacheprovider",
            "-q",
            "tests/slurm/test_gpu_and_resume.py",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = r.stdout + r.stderr
    assert "no SLURM test cluster: SLURM binaries not found" in out, out
    assert "passed" not in out, out
    if ci:  # CI=true: a missing cluster is a failure (the fixture's error ends both tests), never a pass by skipping
        assert r.returncode != 0 and "2 errors" in out and "skipped" not in out, out
        assert "CI=true and this machine lacks a test's requirement" in out, out
    else:
        assert r.returncode == 0 and "2 skipped" in out, out


def test_one_cluster_per_config_folder_at_a_time(tmp_path):
    etc = tmp_path / "etc"
    first = SlurmCluster(tmp_path / "a", node="n1", conf_dir=etc)
    second = SlurmCluster(tmp_path / "b", node="n1", conf_dir=etc)
    first._acquire_lock()
    with pytest.raises(SlurmClusterError, match="another test cluster is using"):
        second._acquire_lock()
    first.stop()  # releases the lock
    second._acquire_lock()
    second.stop()
    assert not any(etc.iterdir())
