"""Benchmark: one NUTS sampling job of the workflow, before and after a change of its preset or of the library.

The job is ``scripts/p1_hmc_sample.py`` (``--task hmc``: the rule ``p1_hmc_sample`` at ``--variant``, ``--N``) or
``scripts/p1_images_sample.py`` (``--task images``: an export and its theory grid at ``--N``), run standalone in a
process of its own with the job's threads, as the workflow runs it (imports, JAX start, compilation, sampling and the
diagnostics all counted). Two settings, each a NUTS preset ``chains,warmup,samples`` and the library the job imports
(``--before-src``: the ``src`` folder of another checkout, e.g. ``git worktree add /tmp/base <commit>``; default:
this checkout's), alternate in order over ``--repeats`` rounds. Printed per run: the process's wall and CPU seconds,
the smallest bulk and tail ESS over U per chain, the R-hat verdict's p-value, gradients per effective sample and the
sampled accuracy; per setting the medians; per round the paired ratio after / before and its median.

    PYTHONPATH=src .venv/bin/python benchmarks/p1_nuts_presets.py --task hmc --variant all --N 10 \\
        --before 4,200,200 --after 4,100,175 --before-src /tmp/base/src --threads 2 --repeats 2
    PYTHONPATH=src .venv/bin/python benchmarks/p1_nuts_presets.py --task images --N 10 \\
        --export results/p1_images/L2H4/export.npz --theory results/p1_images/L2H4/theory.npz \\
        --before 4,100,300 --after 4,100,200 --before-src /tmp/base/src --dtype float32 --repeats 1
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def child_cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def preset(text: str, a) -> dict:
    """``chains,warmup,samples`` as a NUTS settings table of every width (smattn.p1.sampler.settings_for_width)."""
    try:
        chains, warmup, samples = (int(x) for x in text.split(","))
    except ValueError:
        raise SystemExit(f"a preset is chains,warmup,samples (three integers), got {text!r}") from None
    return {"default": {"chains": chains, "warmup": warmup, "samples": samples, "seed": a.seed, "dtype": a.dtype}}


def job_command(a, nuts: dict, out: Path) -> list[str]:
    """The sampling script's standalone command line for one run."""
    if a.task == "hmc":
        cmd = [sys.executable, str(REPO / "scripts/p1_hmc_sample.py"), "--rule", "p1_hmc_sample"]
        cmd += ["--wildcards", f"variant={a.variant}", f"N={a.N}", "--config", f"scale={a.scale}"]
    else:
        cmd = [sys.executable, str(REPO / "scripts/p1_images_sample.py"), "--wildcards", "model=L2H4", f"N={a.N}"]
        cmd += ["--input", f"export={a.export}", f"theory={a.theory}"]
    params = {"nuts": nuts} if a.task == "hmc" else {"nuts": nuts, "sampler": a.sampler}
    return [*cmd, "--output", f"samples={out}", "--threads", str(a.threads), "--params", json.dumps(params)]


def run_job(a, label: str, nuts: dict, src: Path, out: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS",)}
    env["PYTHONPATH"] = str(src)
    env["JAX_PLATFORMS"] = "cpu"
    w0, c0 = time.perf_counter(), child_cpu_seconds()
    p = subprocess.run(job_command(a, nuts, out), cwd=REPO, env=env, capture_output=True, text=True, check=False)
    wall, cpu = time.perf_counter() - w0, child_cpu_seconds() - c0
    if p.returncode != 0:
        raise SystemExit(f"the {label} run failed:\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}")
    rec = json.loads(out.read_text())
    chains = rec["chains"]
    acc = rec["acc"] if isinstance(rec["acc"], float) else rec["acc"].get("omniglot")
    return {
        "wall": wall,
        "cpu": cpu,
        "ess_bulk": rec["ess_U_min"] / chains,
        "ess_tail": rec["ess_tail_U_min"] / chains,
        "rhat_p": rec.get("rhat_U_p"),
        "grads_per_ess": rec["grads_per_ess"],
        "acc": acc,
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--task", choices=["hmc", "images"], required=True)
    ap.add_argument("--variant", default="all", help="HMC variant (--task hmc)")
    ap.add_argument("--N", type=int, default=10)
    ap.add_argument("--scale", default="laptop", help="the scale of the rule's other params (--task hmc)")
    ap.add_argument("--export", help="--task images: the model's export.npz")
    ap.add_argument("--theory", help="--task images: its theory.npz")
    ap.add_argument("--sampler", default="collapsed", choices=["collapsed", "full"])
    ap.add_argument("--before", required=True, help="chains,warmup,samples")
    ap.add_argument("--after", required=True, help="chains,warmup,samples")
    ap.add_argument("--before-src", default=str(REPO / "src"), help="library of the before runs")
    ap.add_argument("--after-src", default=str(REPO / "src"), help="library of the after runs")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dtype", default="float64", choices=["float32", "float64"])
    ap.add_argument("--threads", type=int, default=1, help="the job's threads (the HMC rule: one per chain)")
    ap.add_argument("--repeats", type=int, default=2)
    a = ap.parse_args(argv)
    if a.task == "images" and not (a.export and a.theory):
        ap.error("--task images needs --export and --theory")
    settings = {
        "before": (preset(a.before, a), Path(a.before_src)),
        "after": (preset(a.after, a), Path(a.after_src)),
    }
    for label, (_, src) in settings.items():
        if not (src / "smattn").is_dir():
            ap.error(f"--{label}-src {src} holds no smattn package")
    print(
        f"{a.task} NUTS job, N = {a.N}{', variant ' + a.variant if a.task == 'hmc' else ''}, {a.dtype}, "
        f"{a.threads} thread(s): before {a.before} ({a.before_src}), after {a.after} ({a.after_src}); "
        f"{os.cpu_count()} CPU(s), load average {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    runs = {k: [] for k in settings}
    rounds = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(a.repeats):
            this = {}
            for label in ("before", "after") if k % 2 == 0 else ("after", "before"):
                nuts, src = settings[label]
                r = run_job(a, label, nuts, src, Path(tmp) / f"{label}{k}.json")
                this[label] = r
                runs[label].append(r)
                print(
                    f"round {k + 1}, {label}: process wall {r['wall']:.1f} s, CPU {r['cpu']:.1f} s; ESS per chain "
                    f"bulk {r['ess_bulk']:.0f} tail {r['ess_tail']:.0f}; R-hat p {r['rhat_p']}; grads/ESS "
                    f"{r['grads_per_ess']:.1f}; accuracy {r['acc']}",
                    flush=True,
                )
            rounds.append(this)
    med = statistics.median
    for label, rs in runs.items():
        print(f"{label}: median process wall {med(r['wall'] for r in rs):.1f} s, CPU {med(r['cpu'] for r in rs):.1f} s")
    for key in ("wall", "cpu"):
        ratios = [r["after"][key] / r["before"][key] for r in rounds]
        each = ", ".join(f"{x:.3f}" for x in ratios)
        print(f"ratio after / before, process {key}: median {med(ratios):.3f} (rounds: {each})")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
