"""The harness every workflow script uses, so that a script runs under Snakemake and standalone alike.

Under Snakemake (``script:`` directive) the injected ``snakemake`` object is passed in; standalone, the
same names come from the command line::

    python scripts/x.py --input name=path ... --output name=path ... --params '{"k": 1}' [--log path] [--threads 2]

or, with the real job of a rule built from the Snakefile (inputs, outputs, params, wildcards, threads and log as
Snakemake would pass them; the explicit options above then override single entries)::

    python scripts/x.py --rule p2_thresholds_c --wildcards c=1 [--config scale=smoke ...] [--output json=/tmp/c1.json]

The script's ``main(io)`` sees ``io.input.<name>``, ``io.output.<name>``, ``io.params.<name>``,
``io.wildcards.<name>``, ``io.threads``, ``io.log`` (a path or None) and ``io.config`` (the workflow config;
empty standalone). When a log path is given, stdout and
stderr are appended to it and the start, end and wall time are recorded.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

from .device import GPUUnavailableError, set_threads
from .memory import keep_freed_memory


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


def _find_snakefile(start: Path) -> Path:
    """The workflow's Snakefile: in ``start`` or the closest parent directory that has one."""
    for d in (start, *start.parents):
        if (d / "Snakefile").is_file():
            return d / "Snakefile"
    raise SystemExit(f"--rule: no Snakefile in {start} or any parent directory")


def _absolute(value, root: Path):
    """Paths of a job (str, or lists of str) made absolute against the workflow root."""
    if isinstance(value, (list, tuple)):
        return [_absolute(v, root) for v in value]
    return str(root / value)


def _plain(value):
    """Snakemake's list-like containers (Namedlist, InputFiles, ...) as plain lists of plain str."""
    if isinstance(value, str):
        return str(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _named_entries(namedlist) -> dict:
    return {k: _plain(v) for k, v in namedlist.items()}


@contextlib.contextmanager
def loaded_workflow(config: Sequence[str] = (), snakefile: str | Path | None = None):
    """Snakemake's parsed workflow of ``snakefile`` (default: the Snakefile in the current directory or a parent),
    loaded through Snakemake's API with the ``config`` overrides (``key=value`` strings, parsed like
    ``snakemake --config``). Inside the block the working directory is the workflow's; it is restored after.
    Snakemake is imported here only: the science library never needs it."""
    from snakemake.api import SnakemakeApi
    from snakemake.cli import parse_config
    from snakemake.settings.enums import Quietness
    from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings

    snakefile = (Path(snakefile) if snakefile is not None else _find_snakefile(Path.cwd())).resolve()
    cwd = Path.cwd()
    try:
        with SnakemakeApi(OutputSettings(quiet={Quietness.ALL})) as api:
            wf_api = api.workflow(
                resource_settings=ResourceSettings(),
                config_settings=ConfigSettings(config=parse_config(list(config))),
                snakefile=snakefile,
                workdir=snakefile.parent,
            )
            yield wf_api._workflow  # the parsed workflow (Snakemake's API has no public accessor for it)
    finally:
        os.chdir(cwd)


def _expand_job(r, wildcards: dict[str, str]):
    """The (input, output, params, logs, threads) of the job of rule ``r`` at ``wildcards``, as Snakemake builds it."""
    output, _ = r.expand_output(wildcards)
    input, _, _, _ = r.expand_input(wildcards)
    params, _ = r.expand_params(wildcards, input, output, job=None)
    logs = list(r.expand_log(wildcards))
    threads = r.expand_resources(wildcards, input, attempt=1)["_cores"]
    return input, output, params, logs, threads


def job_from_workflow(
    rule: str,
    wildcards: dict[str, str] | None = None,
    config: Sequence[str] = (),
    snakefile: str | Path | None = None,
) -> ScriptIO:
    """The ScriptIO of one job of ``rule``, as Snakemake would build it.

    Loads the workflow (see ``loaded_workflow``), applies ``wildcards`` ({name: value}; every wildcard of the
    rule's outputs must be given) to the rule's inputs, outputs, params, threads and log, and returns them with
    paths made absolute against the workflow's directory.
    """
    wildcards = dict(wildcards or {})
    with loaded_workflow(config, snakefile) as workflow:
        root = Path(workflow.basedir)
        if not workflow.is_rule(rule):
            names = sorted(r.name for r in workflow.rules)
            raise SystemExit(f"--rule: no rule {rule!r} in {workflow.main_snakefile}; rules: {names}")
        r = workflow.get_rule(rule)
        missing = sorted(set(r.wildcard_names) - set(wildcards))
        extra = sorted(set(wildcards) - set(r.wildcard_names))
        if missing or extra:
            raise SystemExit(
                f"--rule {rule}: wildcards {sorted(r.wildcard_names)} expected; missing {missing}, unknown {extra}"
            )
        input, output, params, logs, threads = _expand_job(r, wildcards)
        cfg = dict(workflow.config)
    return ScriptIO(
        input=SimpleNamespace(**{k: _absolute(v, root) for k, v in _named_entries(input).items()}),
        output=SimpleNamespace(**{k: _absolute(v, root) for k, v in _named_entries(output).items()}),
        params=SimpleNamespace(**_named_entries(params)),
        wildcards=SimpleNamespace(**wildcards),
        threads=int(threads),
        log=_absolute(str(logs[0]), root) if logs else None,
        config=cfg,
    )


# --- --help: the rules that run a script, with their inputs, outputs and params ---------------------------------------

_HOW = """Runs under Snakemake (the rule's script: directive) or standalone. Standalone, --rule RULE builds the job of
that rule from the Snakefile as Snakemake would (inputs, outputs, params, threads, log; give the rule's wildcards with
--wildcards, the scale with --config scale=smoke|laptop|paper); --input/--output/--params/--threads/--log then
override single entries (e.g. --output png=/tmp/f.png). Without --rule, give every entry the script reads."""


def _short(text, width: int = 110) -> str:
    """``text`` on one line (runs of white space made one space), cut to ``width`` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 3] + "..."


def _show(value, path: bool) -> str:
    """One entry of a rule as one line of the help: a path (``path``: an input or output; a pattern keeps its
    wildcards, without their constraints), a list, a param value, or a function of the job (not called)."""
    from snakemake.io import strip_wildcard_constraints

    if callable(value):
        name = getattr(value, "__name__", "")
        return "(computed per job" + (f" by {name})" if name and name != "<lambda>" else ")")
    if isinstance(value, (list, tuple)):
        items = [_show(v, path) for v in value]
        more = f", ... ({len(items)} entries)" if len(items) > 3 else ""
        return "[" + ", ".join(items[:3]) + more + "]"
    if path and isinstance(value, str):
        return _short(strip_wildcard_constraints(value))
    return _short(repr(value))


def _entries(namedlist, path: bool) -> list[tuple[str, str]]:
    """(name, shown value) of each entry of a Snakemake Namedlist; entries without a name are named '(unnamed)'."""
    taken: set[int] = set()
    for start, end in getattr(namedlist, "_names", {}).values():
        taken.update(range(start, start + 1 if end is None else end))
    out = [(k, _show(v if callable(v) else _plain(v), path)) for k, v in namedlist.items()]
    out += [
        ("(unnamed)", _show(v if callable(v) else _plain(v), path)) for i, v in enumerate(namedlist) if i not in taken
    ]
    return out


def rules_of_script(workflow, script: str | Path) -> list:
    """The rules of ``workflow`` whose ``script:`` is the file ``script``, in the order of the rule files."""
    target = Path(script).resolve()
    return [r for r in workflow.rules if r.script and (Path(str(r.basedir)) / r.script).resolve() == target]


def _relative(path, root: Path) -> str:
    p = Path(str(path)).resolve()
    return p.relative_to(root).as_posix() if p.is_relative_to(root) else str(path)


def rule_help(workflow, r, wildcards: dict[str, str] | None = None, script: str | Path | None = None) -> str:
    """The help paragraph of rule ``r`` of ``workflow``: its doc, wildcards, named inputs, outputs and params.

    Values are those of the rule's job (paths relative to the workflow, params at the loaded config's scale) when
    the rule has no wildcards or ``wildcards`` gives them all; else the declared patterns, with functions of the
    job named, not called. Ends with the command line that runs the job standalone (``script``: the script)."""
    import textwrap

    root = Path(workflow.basedir).resolve()
    wanted = sorted(r.wildcard_names)
    wildcards = {k: v for k, v in (wildcards or {}).items() if k in r.wildcard_names}
    job, note = None, None
    if set(wanted) <= set(wildcards):
        try:
            job = _expand_job(r, wildcards)
        except Exception as err:  # e.g. an input function that reads an output not made yet
            note = f"as declared: the job could not be built ({type(err).__name__}: {_short(err, 80)})"
    elif wanted:
        note = f"patterns; with --wildcards {' '.join(f'{w}=...' for w in wanted)} the values of that job"
    lines = [f"rule {r.name} ({_relative(r.snakefile, root)})"]
    if r.docstring:
        lines += textwrap.wrap(" ".join(r.docstring.split()), 114, initial_indent="  ", subsequent_indent="  ")
    if wanted:
        constraints = getattr(r, "wildcard_constraints", None) or {}
        shown = [f"{w} ({_short(constraints[w], 60)})" if w in constraints else w for w in wanted]
        at = f"; shown at {' '.join(f'{k}={v}' for k, v in sorted(wildcards.items()))}" if job else ""
        lines.append(f"  wildcards: {', '.join(shown)}{at}")
    if job is None:
        sections = {"input": r.input, "output": r.output, "params": r.params}
        logs, threads = list(r.log), None
    else:
        input, output, params, logs, threads = job
        sections = {"input": input, "output": output, "params": params}
    if note:
        lines.append(f"  ({note})")
    shown = {title: _entries(entries, path=title != "params") for title, entries in sections.items()}
    width = max((len(k) for entries in shown.values() for k, _ in entries), default=0)
    scale = workflow.config.get("scale")
    for title, entries in shown.items():
        head = f"  {title}" + (f" (scale {scale})" if title == "params" and scale and entries else "") + ":"
        lines.append(head + ("" if entries else " (none)"))
        lines += [f"    {k.ljust(width)}  {v}" for k, v in entries]
    log = ", ".join(_show(str(x), path=True) for x in logs) if logs else "(none)"
    lines.append(f"  log: {log}" + (f"; threads: {threads}" if threads is not None else ""))
    cmd = _relative(script, root) if script is not None else "SCRIPT"
    wc = (" --wildcards " + " ".join(f"{w}={wildcards.get(w, '...')}" for w in wanted)) if wanted else ""
    lines.append(f"  run it: python {cmd} --rule {r.name}{wc} [--config scale=...] [--output NAME=PATH ...]")
    return "\n".join(lines)


def script_help(
    script: str | Path,
    config: Sequence[str] = (),
    snakefile: str | Path | None = None,
    rule: str | None = None,
    wildcards: dict[str, str] | None = None,
) -> str:
    """What --help adds for ``script``: each rule of the workflow that runs it (only ``rule`` if given) with its
    inputs, outputs and params (``rule_help``); the workflow is loaded with the ``config`` overrides. Never raises:
    a workflow that cannot be loaded is named with its reason."""
    script = Path(script).resolve()
    try:
        if snakefile is None:
            snakefile = _find_snakefile(script.parent)
        with loaded_workflow(config, snakefile) as workflow:
            rules = rules_of_script(workflow, script)
            if rule is not None:
                rules = [r for r in rules if r.name == rule]
            if not rules:
                which = f"rule {rule!r}" if rule else "no rule"
                return f"Rules: {which} of {workflow.main_snakefile} runs {script.name}."
            head = f"Rules that run {script.name} ({len(rules)}; paths relative to {workflow.basedir}):"
            return "\n\n".join([head] + [rule_help(workflow, r, wildcards, script) for r in rules])
    except (Exception, SystemExit) as err:
        return f"Rules: the workflow could not be loaded ({type(err).__name__}: {_short(err, 200)})."


class _HelpWithRules(argparse.Action):
    """-h/--help: argparse's help, then the rules that run the script (``script_help``, which loads the workflow
    with the --config, --snakefile, --rule and --wildcards of the command line)."""

    def __init__(self, option_strings, dest, script=None, argv=None, **kwargs):
        kwargs.setdefault("help", "show this help, with the rules that run this script, and exit")
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)
        self.script, self.argv = script, argv

    def __call__(self, parser, namespace, values, option_string=None):
        parser.print_help()
        if self.script is not None:  # argparse stops at --help: read the options the rules depend on here
            pre = argparse.ArgumentParser(add_help=False)
            for flag, many in (("--rule", False), ("--config", True), ("--snakefile", False), ("--wildcards", True)):
                pre.add_argument(flag, nargs="*" if many else None, default=[] if many else None)
            k, _ = pre.parse_known_args(self.argv)
            wildcards = dict(kv.split("=", 1) for kv in k.wildcards if "=" in kv)
            print("\n" + script_help(self.script, k.config, k.snakefile, k.rule, wildcards))
        parser.exit()


def from_argv(argv: Sequence[str] | None = None, script: str | Path | None = None, doc: str | None = None) -> ScriptIO:
    """The ScriptIO of the command line ``argv`` (default ``sys.argv[1:]``). ``script`` (the script's file) and
    ``doc`` (its docstring) feed --help only: without ``script`` it lists no rules."""
    ap = argparse.ArgumentParser(
        description=(doc or "Run a workflow script standalone.").strip() + "\n\n" + _HOW,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        add_help=False,
    )
    ap.add_argument("-h", "--help", action=_HelpWithRules, script=script, argv=argv)
    ap.add_argument("--rule", default=None, help="build the job of this rule from the Snakefile")
    ap.add_argument("--config", nargs="*", default=[], metavar="KEY=VALUE", help="with --rule: config overrides")
    ap.add_argument(
        "--snakefile",
        default=None,
        help="with --rule: the Snakefile (default: found from the cwd; for --help, from the script's folder)",
    )
    ap.add_argument("--input", nargs="*", default=[], metavar="NAME=PATH")
    ap.add_argument("--output", nargs="*", default=[], metavar="NAME=PATH")
    ap.add_argument("--wildcards", nargs="*", default=[], metavar="NAME=VALUE")
    ap.add_argument("--params", default=None, help="JSON object, or @file.json")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--log", default=None)
    ns = ap.parse_args(argv)
    raw = "{}" if ns.params is None else ns.params
    if raw.startswith("@"):
        raw = Path(raw[1:]).read_text()
    try:
        params = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise SystemExit(f"--params is not valid JSON: {exc}") from exc
    if not isinstance(params, dict):
        raise SystemExit("--params must be a JSON object")
    wildcards = _pairs(ns.wildcards, "--wildcards")
    if ns.rule is None:
        if ns.config or ns.snakefile:
            raise SystemExit("--config and --snakefile need --rule")
        return ScriptIO(
            input=SimpleNamespace(**_pairs(ns.input, "--input")),
            output=SimpleNamespace(**_pairs(ns.output, "--output")),
            params=SimpleNamespace(**params),
            wildcards=SimpleNamespace(**wildcards),
            threads=1 if ns.threads is None else ns.threads,
            log=ns.log,
        )
    io = job_from_workflow(ns.rule, wildcards, ns.config, ns.snakefile)
    # explicit entries override single entries of the job (e.g. to write the outputs elsewhere)
    for flag, ns_attr, given in (("--input", io.input, ns.input), ("--output", io.output, ns.output)):
        for k, v in _pairs(given, flag).items():
            if not hasattr(ns_attr, k):
                raise SystemExit(f"{flag} {k}: rule {ns.rule} has no such entry")
            setattr(ns_attr, k, v)
    for k, v in params.items():
        setattr(io.params, k, v)
    if ns.threads is not None:
        io.threads = ns.threads
    if ns.log is not None:
        io.log = ns.log
    return io


#: exit status of a job that failed for a reason a retry cannot change: a gpu=1 job that must run on a GPU and sees
#: none (smattn.device.GPUUnavailableError). Its log ends with "[smattn] FAILED ... (deterministic ...)". Snakemake
#: resubmits every failed job alike (profiles/slurm: retries); such a job fails again within seconds of its start.
EXIT_DETERMINISTIC = 3


def _script_of(main: Callable) -> tuple[str | None, str | None]:
    """The file and the docstring of the module (the script) that defines ``main``, for --help."""
    module = sys.modules.get(getattr(main, "__module__", ""))
    path = getattr(module, "__file__", None)
    return (path if path and Path(path).is_file() else None), getattr(module, "__doc__", None)


def run(main: Callable[[ScriptIO], object], smk=None, argv: Sequence[str] | None = None) -> None:
    """Build the ScriptIO (from ``smk`` or the command line), route output to the log and call ``main``; a failure
    that a retry cannot change exits with ``EXIT_DETERMINISTIC``."""
    if smk is not None:
        io = from_snakemake(smk)
    else:
        io = from_argv(argv, *_script_of(main))
    set_threads(io.threads)
    keep_freed_memory()  # no page faults for re-allocated arrays (smattn.memory): the same numbers, less system time
    try:
        _run_logged(main, io)
    except GPUUnavailableError as err:
        if io.log is not None:  # the traceback is in the log; the reason also where the job was started
            print(f"GPUUnavailableError: {err} (log: {io.log})", file=sys.stderr, flush=True)
        raise SystemExit(EXIT_DETERMINISTIC) from err


def _run_logged(main: Callable[[ScriptIO], object], io: ScriptIO) -> None:
    if io.log is None:
        try:
            main(io)
        except GPUUnavailableError:
            traceback.print_exc()
            raise
        return
    Path(io.log).parent.mkdir(parents=True, exist_ok=True)
    with open(io.log, "a", buffering=1, encoding="utf-8") as fh:
        with contextlib.redirect_stdout(fh), contextlib.redirect_stderr(fh):
            t0 = time.time()
            print(f"[smattn] start {time.strftime('%Y-%m-%d %H:%M:%S')} threads={io.threads}", flush=True)
            try:
                main(io)
            except BaseException as err:
                traceback.print_exc()
                why = " (deterministic: a retry fails the same way)" if isinstance(err, GPUUnavailableError) else ""
                print(f"[smattn] FAILED after {time.time() - t0:.1f} s{why}", flush=True)
                raise
            print(f"[smattn] done in {time.time() - t0:.1f} s", flush=True)
