"""A throw-away single-node SLURM cluster on localhost, for testing the workflow's cluster path.

``SlurmCluster(root).start()`` writes ``/etc/slurm/slurm.conf`` and ``/etc/slurm/gres.conf`` (the SLURM client
commands and the executor plugin's job step only read the default location), keeps every state, spool, pid and log
file under ``root``, and starts ``slurmctld`` and ``slurmd`` (as root, in the foreground of their own sessions) on
free TCP ports. The cluster has one node (the host, ``cpus`` CPUs, one fake GPU backed by ``/dev/null``) in two
partitions, ``cpu`` and ``gpu`` (as on a cluster that splits its nodes by kind; neither is the default, so a job that
names no partition is refused). No accounting daemon: job states come from ``squeue`` (``MinJobAge`` keeps finished
jobs visible for ``min_job_age`` seconds), and authentication is ``auth/none`` (no munge daemon needed).

``stop()`` cancels every job, stops the daemons it started by PID (SIGTERM, then SIGKILL) and restores the
configuration files it replaced (or removes them). Requires root and the Debian packages ``slurmctld slurmd
slurm-client`` (Slurm 22.05); ``missing_requirements()`` says what is absent. The binaries are looked up on
``PATH`` plus ``/usr/sbin``, or only in the folders of ``SMATTN_SLURM_PATH`` when that is set.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

CONF_DIR = Path("/etc/slurm")
# The tag predates this file's move into tests/ and is kept verbatim, so that configuration files left by an
# earlier test cluster are still recognised as ours (and removed, not backed up, when the cluster stops).
MARKER = "# written by smattn.testing.slurm_cluster"
LOCK_NAME = ".smattn-test-cluster.lock"  # in conf_dir: one test cluster per configuration folder at a time
DAEMONS = ("slurmctld", "slurmd", "slurmstepd")
CLIENTS = ("sbatch", "squeue", "scancel", "sinfo", "scontrol", "srun")


class SlurmClusterError(RuntimeError):
    """The test cluster could not be started (the message carries the daemons' log tails)."""


def missing_requirements(conf_dir: Path = CONF_DIR) -> list[str]:
    """What this machine lacks to run the test cluster: a list of human-readable items (empty when ready)."""
    missing = [name for name in DAEMONS + CLIENTS if shutil.which(name, path=_search_path()) is None]
    if missing:
        missing = [
            f"SLURM binaries not found: {', '.join(missing)} "
            "(Debian/Ubuntu: apt-get install --no-install-recommends slurmctld slurmd slurm-client)"
        ]
    if os.geteuid() != 0:
        missing.append("the test cluster runs its daemons as root and writes /etc/slurm; run as root")
    elif conf_dir.exists() and not os.access(conf_dir, os.W_OK):
        missing.append(f"{conf_dir} is not writable")
    return missing


def _search_path() -> str:
    """Where the SLURM binaries are looked up: $SMATTN_SLURM_PATH if set, else $PATH plus the sbin folders."""
    if os.environ.get("SMATTN_SLURM_PATH"):
        return os.environ["SMATTN_SLURM_PATH"]
    return os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/usr/bin", "/sbin"])


def _which(name: str) -> str:
    path = shutil.which(name, path=_search_path())
    if path is None:
        raise SlurmClusterError(f"SLURM binary {name!r} not found")
    return path


def _free_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def client_env(base: dict | None = None) -> dict:
    """Environment for SLURM client commands: the default config location (no SLURM_CONF), sbin on PATH."""
    env = dict(os.environ if base is None else base)
    env.pop("SLURM_CONF", None)
    env["PATH"] = os.pathsep.join([env.get("SMATTN_SLURM_PATH", ""), env.get("PATH", ""), "/usr/sbin", "/usr/bin"])
    return env


@dataclass
class SlurmCluster:
    """A single-node cluster whose files live under ``root`` (a fresh temporary folder).

    The node advertises ``cpus`` CPUs and ``real_memory_mb`` MB whatever the host has (``config_overrides``); only
    cores are consumable (``CR_Core``), so ``--mem`` requests up to ``real_memory_mb`` are accepted, not enforced.
    Attributes after ``start()``: ``node`` (node name), ``partitions``, ``pids`` ({daemon: pid}),
    ``startup_seconds`` (from launching the daemons to an idle node).
    """

    root: Path
    partitions: tuple[str, ...] = ("cpu", "gpu")
    cpus: int = 2
    gpus: int = 1
    real_memory_mb: int = 16000
    min_job_age: int = 300
    conf_dir: Path = CONF_DIR
    node: str = field(default_factory=lambda: socket.gethostname().split(".")[0])
    pids: dict = field(default_factory=dict)
    startup_seconds: float | None = None
    _procs: dict = field(default_factory=dict, repr=False)
    _saved: dict = field(default_factory=dict, repr=False)
    _lock: object = field(default=None, repr=False)

    # ----------------------------------------------------------------------------------------------- files
    @property
    def log_dir(self) -> Path:
        return self.root / "log"

    def slurm_conf(self, ctld_port: int, slurmd_port: int) -> str:
        r = self.root
        return "\n".join(
            [
                MARKER + f" (state under {r}); removed when the test cluster stops",
                "ClusterName=smattntest",
                f"SlurmctldHost={self.node}(127.0.0.1)",
                f"SlurmctldPort={ctld_port}",
                f"SlurmdPort={slurmd_port}",
                "SlurmUser=root",
                "SlurmdUser=root",
                "AuthType=auth/none",
                "CredType=cred/none",
                f"StateSaveLocation={r / 'state'}",
                f"SlurmdSpoolDir={r / 'spool'}",
                f"SlurmctldPidFile={r / 'slurmctld.pid'}",
                f"SlurmdPidFile={r / 'slurmd.pid'}",
                f"SlurmctldLogFile={self.log_dir / 'slurmctld.log'}",
                f"SlurmdLogFile={self.log_dir / 'slurmd.log'}",
                "SlurmctldDebug=info",
                "SlurmdDebug=info",
                "ProctrackType=proctrack/linuxproc",
                "TaskPlugin=task/none",
                "MpiDefault=none",
                "SelectType=select/cons_tres",
                "SelectTypeParameters=CR_Core",
                "GresTypes=gpu",
                "SchedulerType=sched/backfill",
                "AccountingStorageType=accounting_storage/none",
                "JobAcctGatherType=jobacct_gather/none",
                "JobCompType=jobcomp/none",
                f"MinJobAge={self.min_job_age}",
                "ReturnToService=2",
                "SlurmdParameters=config_overrides",
                "SlurmdTimeout=300",
                "InactiveLimit=0",
                "KillWait=5",
                f"NodeName={self.node} NodeAddr=127.0.0.1 CPUs={self.cpus} RealMemory={self.real_memory_mb} "
                f"Gres=gpu:{self.gpus} State=UNKNOWN",
                *(f"PartitionName={p} Nodes={self.node} Default=NO MaxTime=INFINITE State=UP" for p in self.partitions),
                "",
            ]
        )

    def gres_conf(self) -> str:
        files = ",".join(["/dev/null"] * self.gpus)
        return f"{MARKER}\nNodeName={self.node} Name=gpu File={files}\n"

    def _acquire_lock(self) -> None:
        self.conf_dir.mkdir(parents=True, exist_ok=True)
        fh = open(self.conf_dir / LOCK_NAME, "a+")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "unknown"
            fh.close()
            raise SlurmClusterError(
                f"another test cluster is using {self.conf_dir} (lock {LOCK_NAME} held by pid "
                f"{holder}); run one cluster session at a time"
            ) from None
        fh.truncate(0)
        fh.write(str(os.getpid()))
        fh.flush()
        self._lock = fh

    def _release_lock(self) -> None:
        if self._lock is not None:
            (self.conf_dir / LOCK_NAME).unlink(missing_ok=True)
            self._lock.close()  # closing releases the flock
            self._lock = None

    def _install_conf(self, name: str, text: str) -> None:
        self.conf_dir.mkdir(parents=True, exist_ok=True)
        target = self.conf_dir / name
        if name not in self._saved:
            if target.exists() and MARKER not in target.read_text(errors="replace"):
                backup = self.root / f"{name}.orig"
                shutil.copy2(target, backup)
                self._saved[name] = backup
            else:
                self._saved[name] = None  # absent before (or left by an earlier test cluster): remove at stop
        tmp = target.with_name(f".{name}.smattn-tmp")
        tmp.write_text(text)
        os.replace(tmp, target)

    def _restore_confs(self) -> None:
        for name, backup in self._saved.items():
            target = self.conf_dir / name
            if backup is None:
                target.unlink(missing_ok=True)
            else:
                shutil.copy2(backup, target)
        self._saved.clear()

    # ------------------------------------------------------------------------------------------- lifecycle
    def start(self, timeout: float = 60.0) -> SlurmCluster:
        """Write the configuration, start slurmctld and slurmd, and wait for an idle node (or raise)."""
        problems = missing_requirements(self.conf_dir)
        if problems:
            raise SlurmClusterError("; ".join(problems))
        self.root = Path(self.root).resolve()
        for sub in ("state", "spool", "log"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        ctld_port, slurmd_port = _free_ports(2)
        try:
            self._acquire_lock()
            self._install_conf("slurm.conf", self.slurm_conf(ctld_port, slurmd_port))
            self._install_conf("gres.conf", self.gres_conf())
            t0 = time.monotonic()
            self._launch("slurmctld", [_which("slurmctld"), "-D", "-i"])
            self._launch("slurmd", [_which("slurmd"), "-D", "-N", self.node])
            self._wait_idle(timeout)
            self.startup_seconds = time.monotonic() - t0
        except BaseException:
            self.stop()
            raise
        return self

    def _launch(self, name: str, argv: list[str]) -> None:
        out = open(self.log_dir / f"{name}.stdout", "ab")
        try:
            proc = subprocess.Popen(
                argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=client_env(),
                start_new_session=True,
            )
        finally:
            out.close()
        self._procs[name] = proc
        self.pids[name] = proc.pid

    def node_state(self) -> str:
        r = self.run(["sinfo", "-h", "-N", "-n", self.node, "-o", "%T"], check=False)
        return r.stdout.strip() if r.returncode == 0 else f"unreachable ({r.stderr.strip()})"

    def _wait_idle(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        state = ""
        while time.monotonic() < deadline:
            for name, proc in self._procs.items():
                if proc.poll() is not None:
                    raise SlurmClusterError(f"{name} exited with status {proc.returncode}\n{self.log_tails()}")
            state = self.node_state()
            if state == "idle":
                return
            if state.startswith(("drain", "down", "inval", "fail")):
                reason = self.run(["sinfo", "-h", "-R", "-o", "%E"], check=False).stdout.strip()
                raise SlurmClusterError(f"node {self.node} is {state} ({reason})\n{self.log_tails()}")
            time.sleep(0.2)
        raise SlurmClusterError(
            f"node {self.node} not idle after {timeout:.0f} s (state: {state!r})\n{self.log_tails()}"
        )

    def run(self, argv: list[str], check: bool = True, timeout: float = 30.0) -> subprocess.CompletedProcess:
        """Run a SLURM client command against this cluster (text output captured)."""
        r = subprocess.run(argv, capture_output=True, text=True, env=client_env(), timeout=timeout)
        if check and r.returncode != 0:
            raise SlurmClusterError(f"{' '.join(argv)} failed ({r.returncode}): {r.stderr.strip()}")
        return r

    def job_ids(self) -> list[str]:
        """Ids of the jobs slurmctld still knows (pending, running, and finished within MinJobAge)."""
        r = self.run(["squeue", "-h", "-t", "all", "-o", "%i"], check=False)
        return r.stdout.split() if r.returncode == 0 else []

    def active_job_ids(self) -> list[str]:
        r = self.run(["squeue", "-h", "-o", "%i"], check=False)
        return r.stdout.split() if r.returncode == 0 else []

    def log_tails(self, lines: int = 25) -> str:
        parts = []
        for path in sorted(self.log_dir.glob("*")):
            text = path.read_text(errors="replace").splitlines()[-lines:]
            parts.append(f"--- {path.name} (last {len(text)} lines)\n" + "\n".join(text))
        return "\n".join(parts)

    def stop(self, timeout: float = 15.0) -> None:
        """Cancel all jobs, stop the daemons this object started (by PID), and restore /etc/slurm."""
        if any(p.poll() is None for p in self._procs.values()):
            try:
                active = self.active_job_ids()
                if active:
                    self.run(["scancel", *active], check=False)
                    deadline = time.monotonic() + timeout
                    while self.active_job_ids() and time.monotonic() < deadline:
                        time.sleep(0.3)
            except (OSError, subprocess.SubprocessError):
                pass
        for name in ("slurmd", "slurmctld"):
            proc = self._procs.get(name)
            if proc is None or proc.poll() is not None:
                continue
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=timeout)
        self._restore_confs()
        self._release_lock()

    def __enter__(self) -> SlurmCluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
