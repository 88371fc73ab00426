"""The machine a run's costs were measured on, in one line (the cost tables print it beside the times).

Times in minutes mean little without the processor: the laptop preset's training steps, for one, take about six
times longer in bfloat16 on a CPU without bfloat16 instructions than with them. The line names the CPU model as the
operating system reports it, the widest x86 vector extension it offers (AVX2, AVX-512, and whether bfloat16 products
run in hardware: AVX512-BF16 or AMX), the number of CPUs and the memory. Read from ``/proc/cpuinfo`` and ``os``;
where there is no ``/proc/cpuinfo`` (not Linux) the model is ``platform.processor()`` and the extensions are not
named.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")


def _cpuinfo_fields(text: str) -> dict[str, str]:
    """The first processor's ``key: value`` lines of a /proc/cpuinfo text."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return fields


def cpu_flags(cpuinfo: str | None = None) -> set[str]:
    """The first processor's CPU flags from a /proc/cpuinfo text (read from the system when None; empty where there is
    none)."""
    if cpuinfo is None:
        try:
            cpuinfo = CPUINFO.read_text(errors="replace")
        except OSError:
            return set()
    return set(_cpuinfo_fields(cpuinfo).get("flags", "").split())


def vector_extensions(flags: set[str]) -> str:
    """The widest x86 vector extension among CPU ``flags`` and whether bfloat16 runs in hardware, as words."""
    bf16 = bool(flags & {"avx512_bf16", "amx_bf16"})
    if "avx512f" in flags:
        return "AVX-512, bfloat16 in hardware" if bf16 else "AVX-512, no bfloat16 instructions"
    if "avx2" in flags:
        return "AVX2, bfloat16 in hardware" if bf16 else "AVX2, no AVX-512, no bfloat16 instructions"
    return "no AVX2"


def describe_machine(cpuinfo: str | None = None, cpus: int | None = None, memory_bytes: int | None = None) -> str:
    """One line: ``<CPU model> (<vector extensions>), <n> CPUs, <memory> GiB``.

    cpuinfo: the text of /proc/cpuinfo (read from the system when None and the file exists); cpus: the CPUs this
    process may run on (``os.sched_getaffinity`` when None, else ``os.cpu_count``); memory_bytes: the physical
    memory (``os.sysconf`` when None and available)."""
    if cpuinfo is None and CPUINFO.exists():
        cpuinfo = CPUINFO.read_text(errors="replace")
    fields = _cpuinfo_fields(cpuinfo) if cpuinfo else {}
    model = fields.get("model name") or platform.processor() or platform.machine() or "unknown CPU"
    if "flags" in fields:
        model += f" ({vector_extensions(set(fields['flags'].split()))})"
    if cpus is None:
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 0)
    if memory_bytes is None:
        try:
            memory_bytes = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            memory_bytes = None
    mem = "" if not memory_bytes else f", {memory_bytes / 2**30:.0f} GiB"
    return f"{model}, {cpus} CPUs{mem}"
