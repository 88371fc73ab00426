"""Keeping freed memory in the process, so that a job faults in no fresh pages for the arrays it frees and asks for
again (docs/CONVENTIONS.md#memory).

glibc returns large freed blocks to the kernel (blocks above its mmap threshold, and the heap's top beyond its trim
threshold); the next request for them then costs a page fault per 4 KB page (about 2-3 us each on the project
machines, 40 ms for one 50 MB array), which the job pays as system time. ``keep_freed_memory`` tells glibc to serve
every allocation from its heap and never to trim it, for the rest of the process; every workflow script calls it
(``smattn.scriptio.run``), and so does a CPU training. It changes no number; it is a no-op where the C library is not
glibc. The heap then stays at the process's peak working set, which is what the job's memory request covers anyway.
"""

from __future__ import annotations

import ctypes
import ctypes.util

#: glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4
#: heap top kept before trimming: 1 GiB (the heap then stays at the process's peak working set)
_TRIM_KEEP = 1 << 30


def keep_freed_memory() -> bool:
    """Ask glibc to keep freed memory (module docstring); True when glibc took both settings."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_MMAP_MAX, 0)) and bool(mallopt(_M_TRIM_THRESHOLD, _TRIM_KEEP))
