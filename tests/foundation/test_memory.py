"""smattn.memory: after keep_freed_memory (which every workflow script gets from smattn.scriptio.run), an array freed
and allocated again faults in no fresh pages; without it, glibc returns the block to the kernel and every reuse faults
in all its pages again. Counted with the kernel's minor page-fault counter, in fresh processes
(transparent huge pages off, so that a fault is one 4 KB page)."""

import platform
import subprocess
import sys

import pytest

PROBE = r"""
import ctypes, resource, sys
import numpy as np

ctypes.CDLL(None).prctl(41, 1, 0, 0, 0)  # PR_SET_THP_DISABLE: count 4 KB pages, not transparent huge pages

def faults_of_reuse():
    np.ones(8 << 20)  # 64 MB, touched and freed once, so a kept heap already holds it
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(5):
        a = np.ones(8 << 20)
        del a
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

if sys.argv[1] == "harness":
    from smattn.scriptio import run
    out = {}
    run(lambda io: out.setdefault("faults", faults_of_reuse()), argv=[])
    print(out["faults"])
else:
    print(faults_of_reuse())
"""


def _faults(mode: str) -> int:
    res = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True)
    return int(res.stdout.split()[-1])


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="keep_freed_memory is a no-op without glibc")
def test_script_harness_keeps_freed_memory():
    pages = 5 * (64 << 20) // 4096  # the pages of five fresh 64 MB arrays
    plain, kept = _faults("plain"), _faults("harness")
    assert plain > 0.8 * pages, f"without the setting each reuse should fault its pages in again ({plain} faults)"
    assert kept < 0.05 * pages, f"with the harness's setting reuse should fault in nothing ({kept} faults)"


def test_keep_freed_memory_reports_glibc():
    from smattn.memory import keep_freed_memory

    assert keep_freed_memory() is (platform.libc_ver()[0] == "glibc")
