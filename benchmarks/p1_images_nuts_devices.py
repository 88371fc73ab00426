"""Benchmark: the image task's NUTS on one and on two XLA host devices (parallel chains over a job's threads).

On the CPU (``JAX_PLATFORMS=cpu``, also where a GPU is visible: on a GPU the chains are vectorised instead).

Each run is ``smattn.p1.sampler.run_nuts`` called as ``scripts/p1_images_sample.py`` calls it (the export's heads at
width N, the temperature the theory selected at N, the workflow's sampler and NUTS settings), in its own process,
since XLA fixes its host-device count when JAX starts: 1 device (chains one after another) and 2 devices (chains
spread over them, ``parallel``), with the same chains, warm-up, samples and seed. The two configurations alternate
in order over ``--repeats`` rounds. Printed: every run's wall and CPU seconds of the ``run_nuts`` call (with its
warm-up / sampling split) and of its whole process (JAX start, compilation and diagnostics included); per
configuration the medians; per round the paired ratio 2 devices / 1 device and its median; and whether the draws
agree: the largest absolute difference of the mean predictor (all test tasks) and of the posterior mean of U between
the configurations, and between the rounds of one configuration (the run-to-run reproducibility).

What the sampler promises (``smattn.p1.sampler``): at a fixed host-device count, chains one after another and
chains spread over the devices give the same draws, to the bit with single-threaded XLA kernels. Across host-device
counts it promises nothing: with XLA's default multi-threaded kernels the rounding depends on the device count and
the chaotic dynamics carry it into other chains, so the two configurations are expected to differ by a Monte-Carlo
amount; ``--single-thread-kernels`` runs both with single-threaded kernels to see whether they then agree. Both
configurations run under the same environment, so XLA's kernels may use every core in either: one host device is
not one thread.

Run (a laptop export; the settings of the scale's NUTS preset at N from config.yaml unless given):
    PYTHONPATH=src .venv/bin/python benchmarks/p1_images_nuts_devices.py \\
        --export results/p1_images/L2H4/export.npz --theory results/p1_images/L2H4/theory.npz --N 10 \\
        [--scale laptop] [--repeats 3] [--chains 4 --warmup 100 --samples 300 --seed 1 --dtype float32]
    PYTHONPATH=src .venv/bin/python benchmarks/p1_images_nuts_devices.py --tiny   # toy size, random inputs (the test's)
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

CONFIGS = (1, 2)  # XLA host devices
TINY = {"N": 4, "chains": 2, "warmup": 4, "samples": 4, "seed": 1, "dtype": "float64"}
SINGLE_THREAD_KERNELS = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


def worker(a) -> None:
    """One run in this process: ``a.worker_devices`` host devices, then JAX, then run_nuts; its figures to a.result."""
    from smattn.p1.sampler import use_host_devices

    use_host_devices(a.worker_devices)
    from smattn.device import jax_setup

    platform = jax_setup(x64=(a.dtype == "float64"))
    import jax
    import numpy as np

    from smattn.p1.images.theory_grid import sampling_inputs
    from smattn.p1.sampler import run_nuts

    with np.load(a.export) as z:
        ex = {k: z[k] for k in z.files}
    with np.load(a.theory) as z:
        xb, y, xt, arch, T = sampling_inputs(ex, z["widths"], z["T_selected"], a.N)
    w0, c0 = time.perf_counter(), time.process_time()
    r = run_nuts(xb, y, xt, arch, T, a.warmup, a.samples, a.chains, a.seed, a.dtype, sampler=a.sampler)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    out = {
        "platform": platform,
        "local_devices": jax.local_device_count(),
        "devices": r.devices,
        "chain_method": r.chain_method,
        "T": T,
        "wall": wall,
        "cpu": cpu,
        "seconds_warmup": r.seconds_warmup,
        "seconds_sampling": r.seconds_sampling,
        "f_mean": r.mean_predictor.tolist(),
        "U_mean": r.U_mean.tolist(),
    }
    Path(a.result).write_text(json.dumps(out))


def child_cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_config(a, devices: int, result: Path) -> dict:
    """One run on ``devices`` host devices in a fresh process; its figures plus the process's wall and CPU seconds."""
    cmd = [sys.executable, __file__, "--worker-devices", str(devices), "--result", str(result)]
    cmd += ["--export", a.export, "--theory", a.theory, "--N", str(a.N), "--sampler", a.sampler]
    for k in ("chains", "warmup", "samples", "seed", "dtype"):
        cmd += [f"--{k}", str(getattr(a, k))]
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}  # host devices are the CPU's: a GPU stays out of the comparison
    if a.single_thread_kernels:
        env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} {SINGLE_THREAD_KERNELS}".strip()
    w0, c0 = time.perf_counter(), child_cpu_seconds()
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, timeout=a.run_timeout)
    except subprocess.TimeoutExpired:  # killed and reaped by subprocess.run
        wall, cpu = time.perf_counter() - w0, child_cpu_seconds() - c0
        return {"hung": True, "process_wall": wall, "process_cpu": cpu}
    wall, cpu = time.perf_counter() - w0, child_cpu_seconds() - c0
    if p.returncode != 0:
        raise SystemExit(f"the run on {devices} host device(s) failed:\n{p.stderr[-3000:]}")
    return {**json.loads(result.read_text()), "hung": False, "process_wall": wall, "process_cpu": cpu}


def max_abs_diff(runs_a: list, runs_b: list, key: str) -> float:
    """Largest absolute difference of ``key`` (f_mean or U_mean) between every run of ``runs_a`` and ``runs_b``."""
    import numpy as np

    return max(float(np.max(np.abs(np.subtract(x[key], y[key])))) for x in runs_a for y in runs_b)


def settings(a) -> None:
    """Fill a's NUTS settings: --tiny's, else the flags given over the scale's preset at N (config.yaml)."""
    if a.tiny:
        for k, v in TINY.items():
            setattr(a, k, v)
        a.sampler = "collapsed"
        return
    from smattn.p1.sampler import settings_for_width
    from smattn.settings import scale_params

    params = scale_params("p1_images", a.scale)
    preset = settings_for_width(params["nuts_presets"][params["nuts_preset"]], a.N)
    for k, v in preset.items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    a.sampler = a.sampler or params["sampler"]


def tiny_inputs(folder: Path, N: int) -> tuple[str, str]:
    """Random export and theory files of the image task's layout (smattn.p1.images.theory_grid.random_export)."""
    import numpy as np

    from smattn.p1.images.theory_grid import random_export

    export, theory = folder / "export.npz", folder / "theory.npz"
    np.savez(export, **random_export(P=20, n_test=10))
    np.savez(theory, widths=np.array([N]), T_selected=np.array([0.5]))
    return str(export), str(theory)


def report(a, runs: dict, rounds: list) -> None:
    med = statistics.median
    for d in CONFIGS:
        hung = [r for r in runs[d] if r["hung"]]
        if hung:
            print(
                f"{d} host device(s): {len(hung)} of {len(runs[d])} run(s) did not finish within {a.run_timeout:.0f} s "
                f"(process CPU {med(r['process_cpu'] for r in hung):.1f} s in that time)"
            )
    if any(r["hung"] for rs in runs.values() for r in rs):
        rounds = [r for r in rounds if not any(x["hung"] for x in r.values())]
        runs = {d: [r for r in rs if not r["hung"]] for d, rs in runs.items()}
        if not all(runs.values()):
            print("no finished run of one configuration: nothing to compare")
            return
    for d in CONFIGS:
        rs = runs[d]
        print(
            f"{d} host device(s), {rs[0]['chain_method']} chains on {rs[0]['devices']} device(s) "
            f"({rs[0]['local_devices']} visible, {rs[0]['platform']}): median over {len(rs)} run(s): run_nuts wall "
            f"{med(r['wall'] for r in rs):.2f} s, CPU {med(r['cpu'] for r in rs):.2f} s (warm-up "
            f"{med(r['seconds_warmup'] for r in rs):.2f} s, sampling {med(r['seconds_sampling'] for r in rs):.2f} s); "
            f"process wall {med(r['process_wall'] for r in rs):.2f} s, CPU {med(r['process_cpu'] for r in rs):.2f} s"
        )
    for what, key in (
        ("run_nuts wall", "wall"),
        ("run_nuts CPU", "cpu"),
        ("process wall", "process_wall"),
        ("process CPU", "process_cpu"),
    ):
        ratios = [r[2][key] / r[1][key] for r in rounds]
        if not ratios:
            continue
        each = ", ".join(f"{x:.3f}" for x in ratios)
        print(f"ratio 2 devices / 1 device, {what}: median {med(ratios):.3f} (rounds: {each})")
    f12, u12 = max_abs_diff(runs[1], runs[2], "f_mean"), max_abs_diff(runs[1], runs[2], "U_mean")
    same = "identical" if f12 == 0.0 and u12 == 0.0 else "different"
    print(f"draws 1 vs 2 devices: {same}; max |mean predictor difference| {f12:.3g}, max |U mean difference| {u12:.3g}")
    for d in CONFIGS:
        print(
            f"draws of {d} device(s) across rounds: max |mean predictor difference| "
            f"{max_abs_diff(runs[d], runs[d], 'f_mean'):.3g}, max |U mean difference| "
            f"{max_abs_diff(runs[d], runs[d], 'U_mean'):.3g}"
        )


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--export", default="results/p1_images/L2H4/export.npz")
    ap.add_argument("--theory", default="results/p1_images/L2H4/theory.npz")
    ap.add_argument("--N", type=int, default=10)
    ap.add_argument("--scale", default="laptop", help="the NUTS preset and sampler of this scale (config.yaml)")
    for k in ("chains", "warmup", "samples", "seed"):
        ap.add_argument(f"--{k}", type=int, default=None, help=f"NUTS {k} (default: the scale's preset at N)")
    ap.add_argument("--dtype", choices=["float32", "float64"], default=None)
    ap.add_argument("--sampler", choices=["collapsed", "full"], default=None)
    ap.add_argument("--repeats", type=int, default=3, help="rounds of both configurations, alternating their order")
    ap.add_argument("--single-thread-kernels", action="store_true", help=f"XLA_FLAGS {SINGLE_THREAD_KERNELS}")
    ap.add_argument(
        "--run-timeout", type=float, default=3600.0, help="seconds after which a run is killed and counted as hung"
    )
    ap.add_argument("--tiny", action="store_true", help="random inputs of the export's layout, toy settings: seconds")
    ap.add_argument("--worker-devices", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--result", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker_devices:
        worker(a)
        return
    settings(a)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if a.tiny:
            a.export, a.theory = tiny_inputs(tmp, a.N)
        print(
            f"image task NUTS ({a.sampler}), N = {a.N}: {a.chains} chain(s) x ({a.warmup} warm-up + {a.samples} "
            f"samples), seed {a.seed}, {a.dtype}; export {'random (--tiny)' if a.tiny else a.export}; "
            f"{os.cpu_count()} CPU(s), load average {os.getloadavg()[0]:.2f}"
            + ("; single-threaded XLA kernels" if a.single_thread_kernels else "")
        )
        runs, rounds = {d: [] for d in CONFIGS}, []
        for k in range(a.repeats):
            order = CONFIGS if k % 2 == 0 else CONFIGS[::-1]
            this = {}
            for d in order:
                this[d] = run_config(a, d, tmp / f"run{k}_{d}.json")
                runs[d].append(this[d])
                r = this[d]
                if r["hung"]:
                    print(f"round {k + 1}, {d} host device(s): did not finish within {a.run_timeout:.0f} s", flush=True)
                    continue
                print(
                    f"round {k + 1}, {d} host device(s): run_nuts wall {r['wall']:.2f} s, CPU {r['cpu']:.2f} s; "
                    f"process wall {r['process_wall']:.2f} s, CPU {r['process_cpu']:.2f} s",
                    flush=True,
                )
            rounds.append(this)
    report(a, runs, rounds)
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
