"""What bounds a run's elapsed time: the critical path of its jobs through their dependencies and the ideal
(shortest possible) time on a number of cores.

Jobs are named by keys (a benchmark path, or any text): durations ``{job: seconds}``, dependencies ``{job: the jobs
it waits for}``, threads ``{job: int}``. Times in seconds. The measured table (``measured``) and the plan
(``plan``) both ask these questions, of measured and of projected wall times.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .measured import JobCost, span_s


def critical_path(durations: Mapping[str, float], after: Mapping[str, Sequence[str]]) -> tuple[float, list[str]]:
    """Length (s) and jobs of the longest chain of ``durations`` ({job: s}) through ``after`` ({job: the jobs it
    waits for}; jobs without a duration count 0). ``(0.0, [])`` for no jobs."""
    best: dict[str, tuple[float, list[str]]] = {}

    def visit(j: str, stack: tuple = ()) -> tuple[float, list[str]]:
        if j in best:
            return best[j]
        if j in stack:
            raise ValueError(f"dependency cycle through {j}")
        prev = [visit(k, (*stack, j)) for k in after.get(j, ()) if k in durations]
        length, path = max(prev, key=lambda x: x[0], default=(0.0, []))
        best[j] = (length + durations[j], [*path, j])
        return best[j]

    return max((visit(j) for j in durations), key=lambda x: x[0], default=(0.0, []))


def ideal_time(
    durations: Mapping[str, float], threads: Mapping[str, int], after: Mapping[str, Sequence[str]], cores: int
) -> float:
    """Lower bound (s) of the elapsed time of the jobs on ``cores`` cores: the longer of the critical path and the
    core-seconds of all jobs (duration x threads, threads capped at the cores) spread evenly over the cores."""
    core_s = sum(d * min(int(threads.get(j, 1)), cores) for j, d in durations.items())
    return max(critical_path(durations, after)[0], core_s / max(int(cores), 1))


@dataclass(frozen=True)
class Schedule:
    """What bounds a run's elapsed time: its measured span, the critical path of its jobs' measured wall times
    through their dependencies, and the ideal (shortest possible) time on ``cores`` cores."""

    span_s: float
    critical_path_s: float
    critical_path: tuple[str, ...]
    ideal_s: float
    cores: int
    critical_path_job_s: tuple[float, ...] = ()  # wall seconds of each job of critical_path

    @property
    def longest_on_path(self) -> tuple[str, float] | None:
        """The job that holds the critical path longest (its name and wall seconds); None for an empty path."""
        if not self.critical_path_job_s:
            return None
        k = max(range(len(self.critical_path_job_s)), key=self.critical_path_job_s.__getitem__)
        return self.critical_path[k], self.critical_path_job_s[k]


def schedule(jobs: Sequence[JobCost], specs: Mapping[str, Mapping], cores: int) -> Schedule:
    """The Schedule of ``jobs`` (their benchmark paths are the keys of ``specs``, each with ``threads`` and ``after``,
    the benchmarks of the jobs it waits for)."""
    durations = {j.benchmark: j.wall_s for j in jobs}
    after = {b: list(specs[b].get("after", ())) for b in durations}
    threads = {b: int(specs[b].get("threads", 1)) for b in durations}
    length, path = critical_path(durations, after)
    names = {j.benchmark: f"{j.rule} {j.wildcards}".strip() for j in jobs}
    return Schedule(
        span_s(jobs),
        length,
        tuple(names[b] for b in path),
        ideal_time(durations, threads, after, cores),
        cores,
        tuple(durations[b] for b in path),
    )
