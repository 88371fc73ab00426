"""Regenerate the P1 HMC-task reference numbers of ``smattn.data.published`` from the authors' code.

``P1_HMC_AUTHORS_ACC_GP``, ``P1_HMC_AUTHORS_ACC_THEORY`` and ``P1_HMC_AUTHORS_U`` are what the authors' repository
(tiberilor/attention-paths-interplay) computes on the instance of its run scripts. This script reruns that code from
a checkout at the pinned commit and prints each regenerated number beside the one in ``published.py``:

* training: the authors' ``TRAIN_conv_sum_heads_binary_regression_MARKOV_OPTION_E_TWO_LAYERS.py``, run unchanged in
  a subprocess with the arguments of the ``LOOP_RUN_*.sh`` script of its folder (read from the checkout: shell
  variables, comment lines dropped, as the shell script builds them), at each width a published number needs, in
  float64 on the CPU, results written to a temporary folder. Networks: ``4paths/data/all_paths`` (all four paths,
  widths 10, 30, 100, 1000), ``4paths/data/good_path`` and ``good_and_denoising_paths`` (one epoch: only their GP
  limit is used), ``2paths/data/all_paths`` as it stands (``two_path_uniform``, the layer-1 random head at
  perturbation 0) and with ``perturbation=1.0`` (``two_path_random``, the configuration the published numbers name
  for the paper text's Fig. 2e network);
* evaluation, as the authors' ``PLOT_classification_accuracy_mean_predictor.py`` does: their model's
  ``compute_predictor_statistics`` on their 1000 test chains (``prepare_dataset(..., train=False)``), the GP limit
  with ``gp_limit=True``, accuracy = fraction of test chains where the sign of the mean predictor equals the label;
  U is their ``compute_symmetrized_order_parameter_largest`` (as their ``PLOT_order_parameter.py`` reads it).

Tolerances (a row fails beyond them; the exit status is 1 if any row fails):

* GP accuracies: no minimisation, so the same 1000 test decisions; the published values are counts / 1000, so the
  regenerated accuracy must round to the same count (|difference| < 0.0005).
* U: the published and the regenerated U are both points where the authors' Adam stopped (max |dS/dM| < 1e-5). Each
  lies within b of the minimiser, b the first-order bound |g| / lambda_min(H) computed with this project's own action
  (``smattn.p1.minimise.stopping_distance_bound`` at its Newton minimiser, the bound ``tests/p1_hmc/test_published.py``
  uses), so they differ by at most 2 b per entry. On the same software the rerun is deterministic and the difference
  is at the published rounding (5e-8); another torch / BLAS build may stop Adam elsewhere, within 2 b.
* theory accuracies: one test chain (0.001): a U within 2 b of the published one may flip the sign of the predictor
  on a chain at the decision boundary (the tolerance the claims use for the same comparison).

Requirements: this project's environment (torch, jax, numpyro, arviz, matplotlib, numpy) plus ``einops``, which the
authors' library imports (``pip install einops``). Their library also imports ``torchvision`` (used only by its MNIST
/ CIFAR loaders, not by this task); install the build that matches your torch (``pip install torchvision`` with a
CUDA torch; the CPU build from PyTorch's own wheel index with a CPU torch). If ``torchvision`` cannot be imported, this
script puts an inert stand-in module on the subprocesses' and its own path, which raises if anything in it is called.

Run (about 3 CPU-minutes; the authors' code is needed only here, nowhere else in the project):
    git clone https://github.com/tiberilor/attention-paths-interplay /tmp/api
    git -C /tmp/api checkout 915ca41ba7af29507832f439cb56658a898d5dba
    PYTHONPATH=src .venv/bin/python tools/p1_hmc_authors_reference.py --authors-checkout /tmp/api
The script refuses (exit status 2) a checkout at any other commit, and says which of those packages are missing.
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from importlib.util import find_spec
from pathlib import Path

#: the commit of tiberilor/attention-paths-interplay the published numbers came from
PINNED_COMMIT = "915ca41ba7af29507832f439cb56658a898d5dba"

HMC = Path("hidden_markov_chain_classification")
TRAIN = "TRAIN_conv_sum_heads_binary_regression_MARKOV_OPTION_E_TWO_LAYERS.py"
LOOP_RUN = "LOOP_RUN_Width&Temp_train_conv_sum_heads_binary_regression_MARKOV_OPTION_E_TWO_LAYERS.sh"
#: the folder whose library the authors' evaluation (PLOT_*.py) imports
EVAL_DIR = HMC / "4paths"

#: network -> (folder of its LOOP_RUN script, shell variables set otherwise than in that script)
NETWORKS = {
    "all": (HMC / "4paths/data/all_paths/without_samples", {}),
    "good": (HMC / "4paths/data/good_path", {}),
    "good_denoising": (HMC / "4paths/data/good_and_denoising_paths", {}),
    "two_path_uniform": (HMC / "2paths/data/all_paths/without_samples", {}),
    "two_path_random": (HMC / "2paths/data/all_paths/without_samples", {"perturbation": "1.0"}),
}

TOL_GP = 0.0005
TOL_THEORY_ACC = 0.001
N_TEST = 1000


def checkout_error(path: Path) -> str | None:
    """Why ``path`` is not a checkout of the pinned commit (None if it is)."""
    try:
        out = subprocess.run(
            ["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True, check=False, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"cannot run git in {path}: {e}"
    head = out.stdout.strip()
    if out.returncode != 0 or not head:
        return f"{path} is not a git checkout ({out.stderr.strip()})"
    if head != PINNED_COMMIT:
        return (
            f"{path} is at commit {head}, not the pinned commit {PINNED_COMMIT} of tiberilor/attention-paths-interplay "
            f"that the published numbers came from; run\n    git -C {path} checkout {PINNED_COMMIT}"
        )
    return None


def loop_run_arguments(loop_run: Path, width: int, overrides: dict[str, str]) -> list[str]:
    """The training script's arguments as the LOOP_RUN script builds them for one width (T = 0.01, mult = 1)."""
    text = loop_run.read_text()
    variables = dict(re.findall(r"^(\w+)=([^\s$]+)\s*$", text, flags=re.M))
    variables.update(overrides)
    (temps,) = re.findall(r"^for T in ([^;]+);", text, flags=re.M)
    (mults,) = re.findall(r"^for mult in ([^;]+);", text, flags=re.M)
    if temps.split() != ["0.01"] or mults.split() != ["1"]:
        raise ValueError(f"{loop_run}: expected one temperature 0.01 x 1, found {temps!r} x {mults!r}")
    variables["temp"] = "0.01"
    variables["width"] = str(width)
    m = re.search(r'^script_string="(.*?)"\s*$', text, flags=re.M | re.S)
    if m is None:
        raise ValueError(f"{loop_run}: no script_string")
    lines = [ln for ln in m.group(1).replace("\\\\", "\\").splitlines() if not re.match(r"^ *#", ln)]
    body = "\n".join(lines)

    def arith(mt):
        expr = re.sub(r"[A-Za-z_]\w*", lambda v: variables[v.group(0)], mt.group(1))
        if not re.fullmatch(r"[\d+\-* ]+", expr):
            raise ValueError(f"unexpected shell arithmetic {mt.group(0)!r}")
        return str(eval(expr))  # noqa: S307 (digits and + - * only, checked above)

    body = re.sub(r"\$\(\(([^)]*)\)\)", arith, body)
    body = re.sub(r"\$(\w+)", lambda v: variables[v.group(1)], body)
    # backslash-newline continues the command; the shell script's sed drops the backslash that ends the last line
    args = shlex.split(body.replace("\\\n", " ").rstrip().removesuffix("\\"))
    if args[0] != TRAIN:
        raise ValueError(f"{loop_run}: script_string runs {args[0]!r}, not {TRAIN}")
    return args[1:]


STUB = '''"""Inert stand-in for torchvision (the authors' library imports it for MNIST/CIFAR loaders only)."""
class _Unavailable:
    def __init__(self, *a, **k):
        raise ImportError("torchvision is not installed; the HMC task does not need it")
    def __getattr__(self, name):
        raise ImportError("torchvision is not installed; the HMC task does not need it")
'''


def torchvision_stub(workdir: Path) -> Path | None:
    """A folder with an inert ``torchvision`` if the real one cannot be imported, else None."""
    probe = subprocess.run(
        [sys.executable, "-c", "import torchvision.datasets, torchvision.transforms"], capture_output=True, check=False
    )
    if probe.returncode == 0:
        return None
    root = workdir / "torchvision_stub"
    pkg = root / "torchvision"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text(STUB + "from . import datasets, transforms\n")
    (pkg / "datasets.py").write_text(STUB + "MNIST = CIFAR10 = _Unavailable\n")
    (pkg / "transforms.py").write_text(STUB + "ToTensor = _Unavailable\n")
    return root


def train(checkout: Path, network: str, width: int, workdir: Path, env: dict) -> Path:
    """Run the authors' training script for one network and width; returns its results file."""
    folder, overrides = NETWORKS[network]
    args = loop_run_arguments(checkout / folder / LOOP_RUN, width, overrides)
    out = workdir / f"{network}_N{width}"
    out.mkdir()
    args += ["--results_storage_location", f"{out}/"]  # argparse keeps the last value
    t0 = time.perf_counter()
    with open(out / "train.log", "w") as log:
        rc = subprocess.run(
            [sys.executable, str(checkout / folder / TRAIN), *args], cwd=out, env=env, stdout=log, stderr=log
        ).returncode
    (res,) = list(out.glob("*RESULTS*.pkl")) or [None]
    if rc != 0 or res is None:
        raise RuntimeError(f"the authors' training failed for {network} N = {width} (log: {out / 'train.log'})")
    print(f"  trained {network:16s} N = {width:4d}  {time.perf_counter() - t0:6.1f} s", flush=True)
    return res


def evaluate(results_file: Path, gp: bool):
    """Accuracy of the mean predictor on the authors' 1000 test chains, U, Adam steps and final max |dS/dM|."""
    import LIB_convergent_summation_heads as lib  # the authors' library (EVAL_DIR on sys.path)
    import numpy as np
    import torch

    with torch.no_grad():
        torch.set_default_dtype(torch.float64)
        res = torch.load(results_file, map_location=torch.device("cpu"), weights_only=False)
        model = res["model"]
        x_train, y_train, info_train = lib.prepare_dataset(None, copy.deepcopy(res["dataset_info"]), train=True)
        model.load(x_train, info_train)
        info_test = copy.deepcopy(res["dataset_info"])
        info_test["number_examples"] = N_TEST
        x_test, y_test, _ = lib.prepare_dataset(None, info_test, train=False)
        mean, _ = model.compute_predictor_statistics(x_test, y_train, gp_limit=gp)
        if len(y_test) != N_TEST:
            raise RuntimeError(f"expected {N_TEST} test chains, got {len(y_test)}")
        acc = float((torch.sign(mean) == y_test).double().mean())
        U = model.compute_symmetrized_order_parameter_largest().detach().cpu().numpy()
    tr = res["train_results"]
    steps = int(tr["time_points_history"][-1])
    gmax = float(max(h[-1] for h in tr["max_abs_gradient_history"]))
    return acc, np.asarray(U, dtype=np.float64), steps, gmax


def u_tolerance(variant: str, N: int) -> float:
    """2 b: twice the distance bound of a point passing the authors' stopping rule from the minimiser."""
    from smattn.device import jax_setup

    jax_setup(x64=True)
    from smattn.data.published import P1_HMC_AUTHORS_GRADIENT_TOL
    from smattn.p1 import hmc_task as H
    from smattn.p1.action import Architecture
    from smattn.p1.attention import attentioned_inputs_from_heads
    from smattn.p1.kernels import PathGram
    from smattn.p1.minimise import ActionProblem, minimise_action, stopping_distance_bound

    spec = H.VARIANTS[variant]
    train = H.generate_hmc(100, H.SEED_TRAIN, sigma_perp=spec["sigma_perp"])
    xi = attentioned_inputs_from_heads(train.x, [{"W": W} for W in H.head_matrices(variant)], "last")
    problem = ActionProblem(
        Architecture.equal_width((len(spec["layer1"]), len(spec["layer2"])), N), PathGram(xi), train.y, 0.01
    )
    res = minimise_action(problem, tol=1e-9)
    if not res.converged:
        raise RuntimeError(f"Newton did not converge for {variant} N = {N}")
    return 2 * stopping_distance_bound(problem, res.Us, P1_HMC_AUTHORS_GRADIENT_TOL)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--authors-checkout", type=Path, required=True, help="clone of the authors' repository")
    ap.add_argument("--workdir", type=Path, default=None, help="where the authors' runs write (default: a temp dir)")
    a = ap.parse_args(argv)
    checkout = a.authors_checkout.resolve()
    error = checkout_error(checkout)
    if error:
        print(f"ERROR: {error}", file=sys.stderr)
        return 2
    missing = [m for m in ("torch", "einops", "jax", "numpyro", "arviz", "matplotlib") if not find_spec(m)]
    if missing:
        need = " ".join(missing)
        print(f"ERROR: the authors' code imports {need}, which is not installed: pip install {need}", file=sys.stderr)
        return 2

    import numpy as np

    from smattn.data.published import P1_HMC_AUTHORS_ACC_GP, P1_HMC_AUTHORS_ACC_THEORY, P1_HMC_AUTHORS_U

    # widths each network needs: those of its published theory numbers; a GP-only network its script's own width
    widths: dict[str, set[int]] = {v: set() for v in NETWORKS}
    for v, N in [*P1_HMC_AUTHORS_ACC_THEORY, *P1_HMC_AUTHORS_U]:
        widths[v].add(N)
    for v in P1_HMC_AUTHORS_ACC_GP:
        if not widths[v]:
            text = (checkout / NETWORKS[v][0] / LOOP_RUN).read_text()
            widths[v].add(int(re.search(r"^for width in ([^;]+);", text, flags=re.M).group(1).split()[0]))

    workdir = Path(a.workdir or tempfile.mkdtemp(prefix="p1_hmc_authors_"))
    workdir.mkdir(parents=True, exist_ok=True)
    stub = torchvision_stub(workdir)
    env = dict(os.environ)
    extra = [str(stub)] if stub else []
    env["PYTHONPATH"] = os.pathsep.join([*extra, *filter(None, [env.get("PYTHONPATH")])])
    sys.path[:0] = [*extra, str(checkout / EVAL_DIR)]
    print(
        f"authors' checkout {checkout} at {PINNED_COMMIT}; runs in {workdir}"
        + ("; torchvision: inert stand-in" if stub else "")
    )

    t0 = time.perf_counter()
    results = {(v, N): train(checkout, v, N, workdir, env) for v in NETWORKS for N in sorted(widths[v])}
    print(f"  training total {time.perf_counter() - t0:.1f} s\n")

    rows, failed = [], 0

    def row(name, published, regenerated, tol):
        nonlocal failed
        diff = regenerated - published
        ok = abs(diff) <= tol
        failed += not ok
        rows.append(
            f"{name:44s} {published:12.7f} {regenerated:12.7f} {diff:+11.2e} {tol:9.1e}  {'ok' if ok else 'FAIL'}"
        )

    for v, pub in P1_HMC_AUTHORS_ACC_GP.items():
        acc, *_ = evaluate(results[(v, min(widths[v]))], gp=True)
        row(f"GP accuracy {v}", pub, acc, TOL_GP)
    for (v, N), pub in P1_HMC_AUTHORS_ACC_THEORY.items():
        acc, _, steps, gmax = evaluate(results[(v, N)], gp=False)
        row(f"theory accuracy {v} N={N}", pub, acc, TOL_THEORY_ACC)
        rows[-1] += f"   (Adam: {steps} steps, max |dS/dM| {gmax:.1e})"
    for (v, N), pub in P1_HMC_AUTHORS_U.items():
        _, U, _, _ = evaluate(results[(v, N)], gp=False)
        pub = np.asarray(pub)
        tol = u_tolerance(v, N)
        k = np.unravel_index(np.argmax(np.abs(U - pub)), pub.shape)
        row(f"U {v} N={N} max|dU| at {tuple(int(i) for i in k)}", float(pub[k]), float(U[k]), tol)

    print(f"{'number':44s} {'published':>12s} {'regenerated':>12s} {'difference':>11s} {'tolerance':>9s}")
    print("\n".join(rows))
    print(f"\n{len(rows) - failed} of {len(rows)} within tolerance" + (f"; {failed} FAIL" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
