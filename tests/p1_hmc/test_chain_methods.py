"""The chain methods of the NUTS sampler draw the same chains (docs/p1_theory.md#sampler).

Parallel chains need several XLA host devices, which must be configured before JAX starts, so the runs happen in
a subprocess with two CPU devices: four chains one after another (``sequential``), two per device (``parallel``,
the CPU default with several devices) and batched in one program (``vectorized``, the GPU default). Sequential and
parallel run the same per-chain program and must agree to the bit; the vectorised program batches its arithmetic
differently, so it agrees to rounding, which the chaotic NUTS dynamics amplify over a short run only to ~1e-6.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

SCRIPT = textwrap.dedent(
    """
    import sys
    import numpy as np
    from smattn.p1.sampler import use_host_devices

    use_host_devices(2)
    from smattn.device import jax_setup

    jax_setup(x64=True)
    import jax
    from smattn.p1.action import Architecture
    from smattn.p1.sampler import default_chain_method, run_nuts

    rng = np.random.default_rng(0)
    P, Pt, D = 16, 10, 6
    xbar = rng.standard_normal((P + Pt, 2, D))
    y = np.sign(xbar[:P, 0, 0] + 0.3 * rng.standard_normal(P))
    arch = Architecture.equal_width((2, 1), 4)
    out = {"n_devices": jax.local_device_count(), "default": default_chain_method(4)}
    for m in ("sequential", "parallel", "vectorized"):
        r = run_nuts(xbar[:P], y, xbar[P:], arch, 0.1, 10, 10, num_chains=4, seed=3, max_tree_depth=4,
                     chain_method=m, rhat_null_trials=0)
        out[m + "_U"], out[m + "_f"], out[m + "_devices"] = r.U_by_chain, r.f_test, r.devices
    np.savez(sys.argv[1], **out)
    """
)


def test_sequential_parallel_and_vectorized_chains_agree(tmp_path: Path):
    out = tmp_path / "chains.npz"
    env = {**os.environ, "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"}
    res = subprocess.run([sys.executable, "-c", SCRIPT, str(out)], env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-3000:]
    z = np.load(out)
    assert int(z["n_devices"]) == 2 and str(z["default"]) == "parallel"
    assert int(z["sequential_devices"]) == 1 and int(z["parallel_devices"]) == 2
    U = z["sequential_U"]
    assert U.shape == (4, 10, 2, 2) and np.ptp(U[:, :, 0, 0], axis=1).min() > 0  # every chain moved
    np.testing.assert_array_equal(z["parallel_U"], U)
    np.testing.assert_array_equal(z["parallel_f"], z["sequential_f"])
    np.testing.assert_allclose(z["vectorized_U"], U, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(z["vectorized_f"], z["sequential_f"], rtol=1e-5, atol=1e-8)
    # the four chains are different chains (keys split from the seed), not copies
    assert np.abs(U[0] - U[1]).max() > 1e-3


def test_host_devices_follow_the_threads_up_to_the_chains(monkeypatch):
    """One host device per job thread, never more than the chains, at least one (threads None or 0 count as one);
    other XLA flags are kept."""
    from smattn.p1.sampler import use_host_devices_for_chains

    for threads, chains, want in ((2, 4, 2), (8, 4, 4), (None, 4, 1), (0, 1, 1), (3, 1, 1)):
        monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=7 --xla_cpu_multi_thread_eigen=false")
        assert use_host_devices_for_chains(threads, chains) == want
        flags = os.environ["XLA_FLAGS"].split()
        assert f"--xla_force_host_platform_device_count={want}" in flags
        assert "--xla_cpu_multi_thread_eigen=false" in flags and len(flags) == 2
