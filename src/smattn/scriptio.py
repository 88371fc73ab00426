"""The harness every workflow script uses, so that a script runs under Snakemake and standalone alike.

Under Snakemake (``script:`` directive) the injected ``snakemake`` object is passed in; standalone, the
same names come from the command line::

    python scripts/x.py --input name=path ... --output name=path ... --params '{"k": 1}' [--log path] [--threads 2]

The script's ``main(io)`` sees ``io.input.<name>``, ``io.output.<name>``, ``io.params.<name>``,
``io.wildcards.<name>``, ``io.threads``, ``io.log`` (a path or None) and ``io.config`` (the workflow config;
empty standalone). When a log path is given, stdout and
stderr are appended to it and the start, end and wall time are recorded.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Callable, Sequence

from .device import set_threads


@dataclass
class ScriptIO:
    input: SimpleNamespace
    output: SimpleNamespace
    params: SimpleNamespace
    wildcards: SimpleNamespace = field(default_factory=SimpleNamespace)
    threads: int = 1
    log: str | None = None
    config: dict = field(default_factory=dict)  # the workflow config (empty when standalone)


def _named(namedlist) -> SimpleNamespace:
    """Named entries of a Snakemake Namedlist (positional-only entries are not accessible by name)."""
    return SimpleNamespace(**{k: v for k, v in namedlist.items()})


def from_snakemake(smk) -> ScriptIO:
    log = None
    logs = list(smk.log)
    if logs:
        log = str(logs[0])
    return ScriptIO(
        input=_named(smk.input),
        output=_named(smk.output),
        params=_named(smk.params),
        wildcards=_named(smk.wildcards),
        threads=int(smk.threads),
        log=log,
        config=dict(getattr(smk, "config", {}) or {}),
    )


def _pairs(items: Sequence[str] | None, flag: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or []:
        if "=" not in item:
            raise SystemExit(f"{flag} expects name=path, got {item!r}")
        k, v = item.split("=", 1)
        out[k] = v
    return out


def from_argv(argv: Sequence[str] | None = None) -> ScriptIO:
    ap = argparse.ArgumentParser(description="Run a workflow script standalone.")
    ap.add_argument("--input", nargs="*", default=[], metavar="NAME=PATH")
    ap.add_argument("--output", nargs="*", default=[], metavar="NAME=PATH")
    ap.add_argument("--wildcards", nargs="*", default=[], metavar="NAME=VALUE")
    ap.add_argument("--params", default="{}", help="JSON object, or @file.json")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--log", default=None)
    ns = ap.parse_args(argv)
    raw = ns.params
    if raw.startswith("@"):
        raw = Path(raw[1:]).read_text()
    try:
        params = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise SystemExit(f"--params is not valid JSON: {exc}") from exc
    if not isinstance(params, dict):
        raise SystemExit("--params must be a JSON object")
    return ScriptIO(
        input=SimpleNamespace(**_pairs(ns.input, "--input")),
        output=SimpleNamespace(**_pairs(ns.output, "--output")),
        params=SimpleNamespace(**params),
        wildcards=SimpleNamespace(**_pairs(ns.wildcards, "--wildcards")),
        threads=ns.threads,
        log=ns.log,
    )


def run(main: Callable[[ScriptIO], object], smk=None, argv: Sequence[str] | None = None) -> None:
    """Build the ScriptIO (from ``smk`` or the command line), route output to the log and call ``main``."""
    io = from_snakemake(smk) if smk is not None else from_argv(argv)
    set_threads(io.threads)
    if io.log is None:
        main(io)
        return
    Path(io.log).parent.mkdir(parents=True, exist_ok=True)
    with open(io.log, "a", buffering=1, encoding="utf-8") as fh:
        with contextlib.redirect_stdout(fh), contextlib.redirect_stderr(fh):
            t0 = time.time()
            print(f"[smattn] start {time.strftime('%Y-%m-%d %H:%M:%S')} threads={io.threads}", flush=True)
            try:
                main(io)
            except BaseException:
                traceback.print_exc()
                print(f"[smattn] FAILED after {time.time() - t0:.1f} s", flush=True)
                raise
            print(f"[smattn] done in {time.time() - t0:.1f} s", flush=True)
