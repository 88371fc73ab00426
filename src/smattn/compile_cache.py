"""JAX's persistent compilation cache for the workflow's jobs, in a folder keyed so that no cache entry crosses a
change of jaxlib, CPU kind or XLA flags (docs/cluster.md#compilation-cache).

Many jobs compile the same JAX functions afresh (the per-c threshold jobs, the GAMP runs, the figure groups' short
jobs). With the cache, a job loads an executable a previous job (or run) compiled. JAX's own cache key covers the
program, the compile options and the jax/jaxlib versions; an XLA:CPU executable is also specific to the host's
instruction set, which a cache folder shared between machines (a cluster's home directory) would not see, so the
folder is ``<root>/jaxlib-<version>/<cpu key>`` with the CPU key a hash of the processor's model name, its flags
and ``XLA_FLAGS``. ``cache_environment`` gives the environment variables JAX reads at import; the Snakefile sets them
for every job unless the user set ``JAX_COMPILATION_CACHE_DIR`` (or ``SMATTN_JAX_CACHE=off``) already. The root is
``.snakemake/jax-cache`` in the working directory unless ``SMATTN_JAX_CACHE_ROOT`` names another (one root shared
by several checkouts, as CI shares it between its test runs: the keyed folders below it stay apart).
"""

from __future__ import annotations

import hashlib
import os
import platform
from importlib import metadata
from pathlib import Path


def cpu_key(environ=None) -> str:
    """12 hex digits naming this processor kind and the XLA flags: model name and flags from /proc/cpuinfo (Linux;
    ``platform.processor()`` elsewhere), the machine architecture, ``XLA_FLAGS``."""
    environ = os.environ if environ is None else environ
    model, flags = platform.processor(), ""  # /proc/cpuinfo's model name replaces the generic processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                model = value.strip()
            elif key.strip() in ("flags", "Features") and not flags:
                flags = " ".join(sorted(value.split()))
    except OSError:
        pass
    text = "\n".join([platform.machine(), model, flags, environ.get("XLA_FLAGS", "")])
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def cache_dir(root: str | os.PathLike, environ=None) -> Path:
    """The cache folder under ``root`` for this jaxlib, processor kind and XLA flags."""
    try:
        version = metadata.version("jaxlib")
    except metadata.PackageNotFoundError:
        version = "none"
    return Path(root) / f"jaxlib-{version}" / cpu_key(environ)


#: the root of the keyed folders when ``SMATTN_JAX_CACHE_ROOT`` names none (relative: in the working directory)
DEFAULT_ROOT = Path(".snakemake") / "jax-cache"


def cache_root(environ=None) -> Path:
    """``SMATTN_JAX_CACHE_ROOT`` if set and not empty, else ``DEFAULT_ROOT``."""
    environ = os.environ if environ is None else environ
    return Path(environ.get("SMATTN_JAX_CACHE_ROOT") or DEFAULT_ROOT)


def cache_environment(root: str | os.PathLike | None = None, environ=None) -> dict[str, str]:
    """Environment variables that turn on JAX's persistent cache in ``cache_dir(root)`` (``root`` None:
    ``cache_root()``) for every compilation (JAX's defaults skip compilations under 1 s, which are most of the
    workflow's); {} when the environment already names a cache folder or says ``SMATTN_JAX_CACHE=off``."""
    environ = os.environ if environ is None else environ
    root = cache_root(environ) if root is None else root
    if "JAX_COMPILATION_CACHE_DIR" in environ or environ.get("SMATTN_JAX_CACHE", "").lower() == "off":
        return {}
    return {
        "JAX_COMPILATION_CACHE_DIR": str(cache_dir(root, environ).resolve()),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
    }
