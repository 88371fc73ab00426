"""The prepared device run: one command, at most 4 minutes, on a bare GPU machine (no network, no pip install).

Two steps:

``prepare`` (here, on the CPU): copy what the device run reads into a small bundle folder carried with the
repository: the paper-scale parameters of config.yaml resolved to ``params.json`` (the device may lack PyYAML), the
image store ``images32.npz`` (its Omniglot training and validation images only, compressed) and, when
a run of the workflow has made them, the L2H4 export and theory (``export.npz``, ``theory.npz``: NUTS on real
inputs). Prints the bundle's size (the device takes at most 64 MiB with the repository).

``check`` (on the device): writes into ``--out`` (at most 6 files)

* ``doctor.txt``: ``python -m smattn.doctor`` (what torch and JAX see);
* ``results.json``: every measured number: the GEMM peak (fp16, TF32, float32) and the float32 product errors; the
  paper-size L2H4 network (N = 512, G = 128, batch 128) trained with the workflow's ``train`` (validation every
  ``val_every`` steps on ``n_val`` tasks and checkpoints in the loop) at fp16 (the paper's preset) and TF32, steps/s
  and the projection of the paper's 41,240 steps; NUTS (collapsed, float32, 10 vectorised chains) at N = 10 and
  N = 500 on the export, s per vectorised tree step, ESS of U and the projected faithful presets; peak GPU memory
  (torch, JAX) and host RSS;
* ``unit_costs.csv``: the measured GPU rows of the cost plan (rules/unit_costs.csv format: ``p1_images_train``,
  ``p1_images_sample``; merge with ``tools/unit_costs.py --gpu-rows``);
* ``log.txt``: the run's lines.

``chain`` (on the device, a second command of at most 8 minutes): the L2H4 chain of the workflow (train, export,
theory, NUTS at N = 10) from the jobs ``prepare --chain-scale paper`` resolved from the Snakefile (``chain.json``),
each script run standalone; writes ``chain.json``, ``chain_log.txt`` and ``chain_results.tar.gz`` (see
docs/cluster.md, "Prepared device run").

Each phase of ``check`` has a wall-clock budget and is skipped when the time left is short; a watchdog writes what
was measured and exits at ``--budget`` seconds even when a phase hangs. Only torch, JAX, NumPyro (and their
dependencies) are needed: ArviZ, when absent, is replaced by NumPyro's ESS
(``numpyro.diagnostics.effective_sample_size``).

    PYTHONPATH=src python3 tools/device_run.py prepare --out device_bundle
    PYTHONPATH=src python3 tools/device_run.py check --bundle device_bundle --out "$OUT"
    PYTHONPATH=src python3 tools/device_run.py check --tiny --out /tmp/dr   # seconds on a CPU (the test's)
    PYTHONPATH=src python3 tools/device_run.py chain --bundle device_bundle --out "$OUT" --budget 470
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

# this folder's tools, and the benchmarks whose measuring code they reuse (benchmarks/p1_images_gd_steps.py,
# benchmarks/p1_hmc_nuts.py)
sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1] / "benchmarks")]

PAPER_STEPS = 41_240
BUNDLE_FILES = {
    "images32.npz": "results/p1_images/images32.npz",
    "export.npz": "results/p1_images/L2H4/export.npz",
    "theory.npz": "results/p1_images/L2H4/theory.npz",
}
STORE_KEYS = ("train_images", "val_images")  # what the training phase reads of the image store
BUNDLE_MAX_MIB = 56  # the device takes 64 MiB with the repository (about 5 MiB of tracked files)
# sizes and per-phase budgets (s); NUTS: (N, chains, warm-up, samples, max tree depth)
PAPER = dict(
    L=2, H=4, N=512, G=128, batch=128, budget=225.0, train_s=45.0, nuts=((10, 10, 20, 20, 10), (500, 10, 20, 20, 10)),
    nuts_s=45.0, P=600,
)  # fmt: skip
TINY = dict(
    L=2, H=4, N=16, G=8, batch=8, budget=55.0, train_s=4.0, nuts=((4, 2, 4, 4, 3),), nuts_s=15.0,
    P=40,
)  # fmt: skip
FAITHFUL = {10: (10, 100, 100), 500: (10, 20, 20)}  # chains, warm-up, samples of the paper scale (config.yaml)


def have(name: str) -> bool:
    """Whether ``name`` can be imported here."""
    try:
        importlib.import_module(name)
        return True
    except ImportError:
        return False


class Run:
    """The results dict, the log and the wall clock of one check; ``save`` writes what has been measured so far."""

    def __init__(self, out: Path, budget: float):
        self.out, self.t0, self.budget = out, time.monotonic(), budget
        self.res: dict = {"phases": {}, "skipped": []}
        self.lock = threading.Lock()
        out.mkdir(parents=True, exist_ok=True)
        self.logf = open(out / "log.txt", "w")  # noqa: SIM115 (closed by the process's end)

    def left(self) -> float:
        return self.budget - (time.monotonic() - self.t0)

    def say(self, msg: str) -> None:
        line = f"[{time.monotonic() - self.t0:6.1f} s] {msg}"
        print(line, flush=True)
        self.logf.write(line + "\n")
        self.logf.flush()

    def save(self) -> None:
        with self.lock:
            self.res["elapsed_s"] = time.monotonic() - self.t0
            self.res["memory"] = memory_peaks()
            tmp = self.out / "results.json.tmp"
            tmp.write_text(json.dumps(self.res, indent=1, default=float))
            os.replace(tmp, self.out / "results.json")

    def phase(self, name: str, need_s: float, fn, *args):
        """Run ``fn`` when at least ``need_s`` seconds are left; record its result (or its error) under ``name``."""
        if self.left() < need_s:
            self.say(f"{name}: skipped ({self.left():.0f} s left, needs {need_s:.0f} s)")
            self.res["skipped"].append(name)
            self.save()
            return None
        t = time.monotonic()
        try:
            r = fn(*args)
        except Exception as e:  # a failed phase is a result; the others still run
            self.say(f"{name}: FAILED {type(e).__name__}: {e}\n{traceback.format_exc(limit=-6)}")
            self.res["phases"][name] = {"error": f"{type(e).__name__}: {e}"}
            self.save()
            return None
        r = {**r, "phase_s": time.monotonic() - t}
        self.res["phases"][name] = r
        self.save()
        return r


def memory_peaks() -> dict:
    """Peak host RSS of this process and peak device memory of torch and JAX (None where not measurable)."""
    out = {"host_rss_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        out["torch_gpu_peak_mb"] = torch.cuda.max_memory_allocated() / 2**20
    jax = sys.modules.get("jax")
    if jax is not None:
        try:
            stats = jax.devices()[0].memory_stats() or {}
            out["jax_gpu_peak_mb"] = stats["peak_bytes_in_use"] / 2**20 if "peak_bytes_in_use" in stats else None
        except Exception:
            out["jax_gpu_peak_mb"] = None
    return out


def doctor(run: Run) -> dict:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(Path("src").resolve()), os.environ.get("PYTHONPATH")])),
    }
    r = subprocess.run(
        [sys.executable, "-m", "smattn.doctor"], capture_output=True, text=True, timeout=90, env=env
    )  # fmt: skip
    (run.out / "doctor.txt").write_text(r.stdout + r.stderr)
    return {"rc": r.returncode, "last_line": (r.stdout.strip().splitlines() or [""])[-1]}


def gemm(device, tiny: bool) -> dict:
    """GEMM peak of the value projection's shape at fp16, TF32 and float32; float32 product errors vs float64."""
    import torch
    from gpu_check import precision_check
    from p1_images_gd_steps import gemm_peak

    rows, n = (8 * 48, 64) if tiny else (128 * 48, 512)
    out = {f"{k} relative error": v for k, v in precision_check(device).items()}
    for name, dtype, tf32 in (
        ("fp16", torch.float16, False),
        ("tf32", torch.float32, True),
        ("fp32", torch.float32, False),
    ):
        if device.type == "cpu" and name == "fp16":
            continue  # emulated on a CPU
        out[f"peak_{name}_tflops"] = gemm_peak(device, rows, n, 4 * n, dtype=dtype, tf32=tf32) / 1e12
    return out


def sampler_and_val(bundle: Path | None, seed: int, n_val: int, classes: tuple = (1028, 172)):
    """The training sampler and the fixed validation set: the bundle's store, else random images of its shape."""
    import numpy as np

    from smattn.p1.images.export import sequence_context, validation_tasks
    from smattn.p1.images.tasks import TaskSampler

    labels, pos = sequence_context(seed)
    store = bundle / "images32.npz" if bundle else None
    if store is not None and store.exists():
        from smattn.p1.images.datasets import load_store

        s = load_store(store)
        return TaskSampler(s["train_images"], labels, pos), validation_tasks(s, seed, n_val), f"store {store}"
    rng = np.random.default_rng(0)
    train = TaskSampler(rng.integers(0, 256, (classes[0], 20, 32, 32), dtype=np.uint8), labels, pos)
    val = TaskSampler(rng.integers(0, 256, (classes[1], 20, 32, 32), dtype=np.uint8), labels, pos)
    return train, val.task_set(np.random.default_rng(1), n_val), "random images of the store's shapes"


def training(run: Run, s: dict, device, precision: str, bundle, budget_s: float) -> dict:
    """The workflow's ``train`` at paper size for as many steps as fit ``budget_s`` (after a short timing), with
    validation every ``val_every`` steps and a checkpoint at every sync point; steps/s and the projection."""
    import dataclasses
    import tempfile

    from p1_images_gd_steps import bench_loop, step_flops

    from smattn.costs import forward_flops
    from smattn.p1.images.training import TrainConfig, paper_train_config, train

    tiny = s["N"] < 64
    over = dict(width=s["N"], qk_dim=s["G"], batch=s["batch"], precision=precision, compile=False)
    params = bundle / "params.json" if bundle else None
    if params is not None and params.exists():  # the paper-scale values, resolved by prepare (no PyYAML needed)
        p = {"gd_n_layers": s["L"], "gd_n_heads": s["H"], **json.loads(params.read_text())}
        cfg = TrainConfig.from_params(p, prefix="gd_", **over)
    else:
        cfg = paper_train_config(s["L"], s["H"], **over)
    if tiny:
        cfg = dataclasses.replace(cfg, val_every=5, n_val=32, sync_every=5)
    sampler, val, src = sampler_and_val(bundle, cfg.seed, cfg.n_val, (20, 10) if tiny else (1028, 172))
    flops = step_flops(cfg, sampler.on(device), device)
    sps0, _ = bench_loop(cfg, sampler.on(device), device, 5 if tiny else 30)  # compiles kernels, sizes the timed run
    steps = max(cfg.sync_every, int(0.6 * budget_s * sps0) // cfg.sync_every * cfg.sync_every)
    steps = 2 * cfg.val_every if tiny else steps  # tiny: the code path (validation, checkpoints), not a rate
    cfg = dataclasses.replace(cfg, max_steps=steps, ckpt_minutes=0.0)
    run.say(f"train {precision}: {sps0:.2f} steps/s in the timing loop; {steps} steps with validation ({src})")
    with tempfile.TemporaryDirectory() as d:
        t = time.perf_counter()
        ck = train(cfg, sampler, val, Path(d) / "state.pt", device=device, progress=False)
        seconds = time.perf_counter() - t
        ckpt_mb = (Path(d) / "state.pt").stat().st_size / 2**20
    h = ck["history"]
    sps = steps / seconds  # validation and checkpoints included
    val_flops = (PAPER_STEPS // cfg.val_every + 1) * forward_flops(s["L"], s["H"], s["N"], s["G"], cfg.n_val)
    n_val_runs = len(h["val_step"])
    return dict(
        precision=precision, steps=steps, seconds=seconds, steps_per_s=sps, steps_per_s_timing_loop=sps0,
        gflop_per_step=flops / 1e9, tflops=flops * sps0 / 1e12, val_every=cfg.val_every, n_val=cfg.n_val,
        validations=n_val_runs, checkpoint_every=cfg.sync_every, checkpoint_mb=ckpt_mb,
        best_val_acc=float(ck["best_val_acc"]), data=src,
        projected_paper_h=(PAPER_STEPS / sps0 + val_flops / (flops * sps0)) / 3600,
        projected_paper_h_in_loop=PAPER_STEPS / sps / 3600,
    )  # fmt: skip


def ess_u(U_by_chain, arviz_ess) -> dict:
    """ESS of the distinct U entries: ArviZ's bulk ESS (the workflow's) when it ran, else NumPyro's."""
    import numpy as np

    H = U_by_chain.shape[-1]
    iu = np.triu_indices(H)
    if np.isfinite(arviz_ess).any():
        return {"ess_U_min": float(np.nanmin(arviz_ess[iu])), "ess_method": "arviz bulk"}
    from numpyro.diagnostics import effective_sample_size

    e = effective_sample_size(U_by_chain[:, :, iu[0], iu[1]])
    return {"ess_U_min": float(np.min(e)), "ess_method": "numpyro.diagnostics.effective_sample_size"}


def nuts(s: dict, spec: tuple, bundle) -> dict:
    """NUTS (collapsed, float32, vectorised chains) at one width; the export's inputs when the bundle has them."""
    from gpu_check import nuts_inputs

    from smattn.p1.sampler import run_nuts

    N, chains, warmup, samples, depth = spec
    ex, th = (bundle / "export.npz", bundle / "theory.npz") if bundle else (None, None)
    real = ex is not None and ex.exists() and th.exists()
    xb, y, xt, arch, T, src = nuts_inputs(
        {"nuts_N": N, "P": s["P"]}, str(ex) if real else None, str(th) if real else None
    )
    have_arviz = have("arviz")
    r = run_nuts(
        xb, y, xt, arch, T, warmup, samples, chains, 4, "float32", max_tree_depth=depth, chain_method="vectorized",
        rhat_null_trials=0, diagnostics=have_arviz,
    )  # fmt: skip
    compile_s = r.seconds_compile_sampling if r.seconds_compile_sampling == r.seconds_compile_sampling else 0.0
    tree_steps = r.mean_leapfrog_steps * samples
    s_per_step = max(r.seconds_sampling - compile_s, 1e-9) / max(tree_steps, 1e-9)
    fc, fw, fs = FAITHFUL.get(N, (chains, warmup, samples))
    return dict(
        N=N, chains=chains, warmup=warmup, samples=samples, max_tree_depth=depth, inputs=src, seconds=r.seconds,
        seconds_warmup=r.seconds_warmup, leapfrog_per_transition=r.mean_leapfrog_steps,
        s_per_vectorised_step=s_per_step, divergences=r.divergences, accept_prob=r.accept_prob,
        projected_faithful_min=(fw + fs) * r.mean_leapfrog_steps * s_per_step * max(1.0, fc / chains) / 60,
        **ess_u(r.U_by_chain, r.ess_U),
    )  # fmt: skip


def unit_costs(run: Run, card: str, on_gpu: bool, tiny: bool) -> None:
    from gpu_check import commit

    from smattn.costs import UnitCost, write_unit_costs

    ph, kind, when, rev = run.res["phases"], ("gpu" if on_gpu else "cpu"), dt.date.today().isoformat(), commit()
    scale, rows = ("smoke" if tiny else "paper"), []
    tr = ph.get("train fp16") or ph.get("train fp32")
    if tr and "steps_per_s" in tr:
        rows.append(UnitCost(
            "p1_images_train", kind, 60.0, 1.0 / (tr["gflop_per_step"] * 1e9 * tr["steps_per_s"]), 1.0, 4000.0, 0.0,
            scale, "measured", f"tools/device_run.py: {tr['steps_per_s']:.2f} steps/s at {tr['precision']}, "
            f"validation and checkpoints included", card, when, rev))  # fmt: skip
    nu = [v for k, v in ph.items() if k.startswith("nuts") and "s_per_vectorised_step" in v]
    if nu:
        big = max(nu, key=lambda v: v["N"])
        # work unit of the cost plan: a float64-equivalent chain gradient (float32 counts 0.55)
        per_chain = big["s_per_vectorised_step"] / big["chains"]
        rows.append(UnitCost(
            "p1_images_sample", kind, 60.0, per_chain / 0.55, 1.0, 4000.0, 0.0, scale, "measured",
            f"tools/device_run.py: {1e3 * big['s_per_vectorised_step']:.2f} ms per vectorised step of "
            f"{big['chains']} chains at N = {big['N']}", card, when, rev))  # fmt: skip
    if rows:
        write_unit_costs(run.out / "unit_costs.csv", rows)
        run.say(f"unit costs: {len(rows)} rows written")


def check(a) -> int:
    s = dict(TINY if a.tiny else PAPER)
    if a.budget:
        s["budget"] = a.budget
    run = Run(Path(a.out), s["budget"])
    bundle = Path(a.bundle) if a.bundle else None

    def watchdog():
        run.say(f"budget of {s['budget']:.0f} s reached: writing what was measured and stopping")
        run.res["stopped_by_watchdog"] = True
        unit_costs(run, run.res.get("card", "unknown"), run.res.get("card", "CPU") != "CPU", a.tiny)
        run.save()
        os._exit(3)

    timer = threading.Timer(s["budget"] + 10.0, watchdog)
    timer.daemon = True
    timer.start()
    run.res.update(tiny=a.tiny, budget_s=s["budget"], bundle=str(bundle), arviz=have("arviz"))
    if "doctor" not in (a.skip or ""):
        run.phase("doctor", 5.0, doctor, run)
    run.say(f"doctor: {run.res['phases'].get('doctor', {}).get('last_line')}")

    import torch

    from smattn.device import jax_setup, torch_device

    jax_setup(x64=False)
    device = torch_device()
    on_gpu = device.type == "cuda"
    card = torch.cuda.get_device_name() if on_gpu else "CPU"
    run.res["card"] = card
    if not on_gpu and not a.tiny:
        run.say("WARNING: torch sees no GPU: the numbers below are the CPU's")
    skip = set(a.skip.split(",")) if a.skip else set()
    if "gemm" not in skip:
        r = run.phase("gemm", 5.0, gemm, device, a.tiny)
        run.say(f"gemm: {r}")
    for prec in ("fp16", "tf32") if on_gpu else ("fp32",):
        if "train" not in skip:
            r = run.phase(f"train {prec}", s["train_s"], training, run, s, device, prec, bundle, s["train_s"])
            run.say(f"train {prec}: {r}")
    for spec in s["nuts"]:
        if "nuts" not in skip:
            r = run.phase(f"nuts N={spec[0]}", min(s["nuts_s"], 10.0), nuts, s, spec, bundle)
            run.say(f"nuts N = {spec[0]}: {r}")
    unit_costs(run, card, on_gpu, a.tiny)
    run.save()
    timer.cancel()
    run.say(f"done in {run.budget - run.left():.0f} s; files: {sorted(p.name for p in run.out.iterdir())}")
    return 0


CHAIN = (
    ("p1_images_train", {"model": "L2H4"}),
    ("p1_images_export", {"model": "L2H4"}),
    ("p1_images_theory", {"model": "L2H4"}),
    ("p1_images_sample", {"model": "L2H4", "N": "10"}),
)


def write_chain(out: Path, scale: str) -> int:
    """``chain.json``: the jobs of the L2H4 chain at ``scale`` as the Snakefile builds them (script, inputs, outputs
    relative to the workflow, params), so that the device runs them without Snakemake. Returns the file's size."""
    from smattn.scriptio import job_from_workflow

    root = Path.cwd().resolve()
    jobs = []
    for rule, wc in CHAIN:
        io = job_from_workflow(rule, wc, [f"scale={scale}"])
        rel = {
            k: {n: str(Path(v).resolve().relative_to(root)) for n, v in vars(getattr(io, k)).items()}
            for k in ("input", "output")
        }
        jobs.append(
            {
                "rule": rule,
                "script": f"scripts/{rule}.py",
                **rel,
                "params": vars(io.params),
                "threads": io.threads,
                "wildcards": wc,
            }
        )
    (out / "chain.json").write_text(json.dumps({"scale": scale, "jobs": jobs}, indent=1))
    print(f"chain.json: {len(jobs)} jobs of the L2H4 chain at scale {scale}")
    return (out / "chain.json").stat().st_size


def chain(a) -> int:
    """Run the bundle's chain jobs in order under ``--workdir`` (the store from the bundle), each script standalone
    with its explicit inputs, outputs and params, within ``--budget`` seconds; pack the results into ``--out``."""
    import tarfile

    t0 = time.monotonic()
    bundle, out, wd = Path(a.bundle), Path(a.out), Path(a.workdir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    spec = json.loads((bundle / "chain.json").read_text())
    store = wd / "results/p1_images/images32.npz"
    store.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(bundle / "images32.npz", store)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(Path("src").resolve()), os.environ.get("PYTHONPATH")])),
    }
    report = {"scale": spec["scale"], "jobs": []}
    with open(out / "chain_log.txt", "w") as log:
        for job in spec["jobs"]:
            left = a.budget - (time.monotonic() - t0)
            if left < 5:
                report["jobs"].append({"rule": job["rule"], "skipped": f"{left:.0f} s left"})
                continue
            if job["rule"] == "p1_images_sample" and not have("arviz"):  # its R-hat / ESS go to the ledger
                report["jobs"].append({"rule": job["rule"], "skipped": "ArviZ is not installed (run it on the host)"})
                print(f"{job['rule']}: skipped, ArviZ is not installed", flush=True)
                continue
            pfile = wd / f"{job['rule']}.params.json"
            pfile.write_text(json.dumps(job["params"]))
            for v in job["output"].values():
                (wd / v).parent.mkdir(parents=True, exist_ok=True)
            cmd = [sys.executable, job["script"], "--params", f"@{pfile}", "--threads", str(job["threads"])]
            cmd += ["--input", *[f"{k}={wd / v}" for k, v in job["input"].items()]]
            cmd += ["--output", *[f"{k}={wd / v}" for k, v in job["output"].items()]]
            cmd += ["--wildcards", *[f"{k}={v}" for k, v in job["wildcards"].items()]]
            log.write(f"$ {' '.join(cmd)}\n")
            log.flush()
            ts = time.monotonic()
            try:
                r = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, timeout=left)
                rc = r.returncode
            except subprocess.TimeoutExpired:
                rc = "timeout"
            report["jobs"].append({"rule": job["rule"], "rc": rc, "seconds": time.monotonic() - ts})
            print(f"{job['rule']}: rc {rc} in {time.monotonic() - ts:.0f} s", flush=True)
            if rc != 0:
                break
    with tarfile.open(out / "chain_results.tar.gz", "w:gz") as tar:
        tar.add(wd / "results", arcname="results", filter=lambda ti: None if ti.name.endswith("images32.npz") else ti)
    report["seconds"] = time.monotonic() - t0
    (out / "chain.json").write_text(json.dumps(report, indent=1))
    ok = all(j.get("rc") == 0 or "ArviZ" in j.get("skipped", "") for j in report["jobs"])
    print(f"chain {'done' if ok else 'incomplete'} in {report['seconds']:.0f} s; results in {out}")
    return 0 if ok else 1


def prepare(a) -> int:
    from smattn.settings import scale_params

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "params.json").write_text(json.dumps(scale_params("p1_images", "paper"), indent=1))
    total = (out / "params.json").stat().st_size
    print(f"params.json: the paper-scale p1_images parameters of config.yaml ({total} bytes)")
    import numpy as np

    for name, src in BUNDLE_FILES.items():
        p = Path(a.results_root) / src if a.results_root else Path(src)
        if not p.exists():
            print(f"{name}: not found at {p} (the device run uses random inputs of its shapes for it)")
            continue
        with np.load(p, allow_pickle=False) as z:
            keys = [k for k in z.files if name != "images32.npz" or a.chain_scale or k in STORE_KEYS]
            np.savez_compressed(out / name, **{k: z[k] for k in keys})  # the store: only what training reads
        size = (out / name).stat().st_size
        total += size
        print(f"{name}: {size / 2**20:.1f} MiB from {p} ({', '.join(keys)}; compressed)")
    if a.chain_scale:
        total += write_chain(out, a.chain_scale)
    print(f"bundle {out}: {total / 2**20:.1f} MiB")
    if total > BUNDLE_MAX_MIB * 2**20:
        print(
            f"WARNING: the bundle exceeds {BUNDLE_MAX_MIB} MiB: with the repository it may not fit the 64 MiB carried"
        )
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare", help="build the carried bundle from the workflow's results (on the CPU)")
    p.add_argument("--out", default="device_bundle")
    p.add_argument("--results-root", default=None, help="folder holding results/ (default: the current one)")
    p.add_argument("--chain-scale", default=None, help="also the L2H4 chain's jobs at this scale (paper, smoke)")
    h = sub.add_parser("chain", help="the L2H4 chain (train, export, theory, NUTS N = 10) from the bundle's jobs")
    h.add_argument("--bundle", required=True)
    h.add_argument("--out", required=True)
    h.add_argument("--workdir", default="chain_run")
    h.add_argument("--budget", type=float, default=470.0, help="wall-clock seconds for all jobs")
    c = sub.add_parser("check", help="the device run")
    c.add_argument("--out", required=True)
    c.add_argument("--bundle", default=None)
    c.add_argument("--tiny", action="store_true", help="toy sizes on the CPU, seconds (the test suite's run)")
    c.add_argument("--budget", type=float, default=None, help="wall-clock seconds for all phases")
    c.add_argument("--skip", default=None, help="comma-separated phases to leave out: gemm, train, nuts")
    a = ap.parse_args(argv)
    return {"prepare": prepare, "check": check, "chain": chain}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
