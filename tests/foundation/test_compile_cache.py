"""smattn.compile_cache: the cache folder is keyed by jaxlib, CPU kind and XLA flags, a user's own setting wins, and a
second process loads what the first compiled (JAX's cache-hit events)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from smattn.compile_cache import cache_dir, cache_environment

PROBE = """
import json, jax, jax.numpy as jnp
events = []
jax.monitoring.register_event_listener(lambda name, **kw: events.append(name))
jax.config.update("jax_enable_x64", True)
jax.jit(lambda x: jnp.sin(x) @ x.T + 1.0)(jnp.ones((8, 8))).block_until_ready()
print(json.dumps({"hits": events.count("/jax/compilation_cache/cache_hits"),
                  "misses": events.count("/jax/compilation_cache/cache_misses")}))
"""


def test_folder_is_keyed_by_xla_flags_and_user_settings_win(tmp_path):
    a = cache_dir(tmp_path, {})
    b = cache_dir(tmp_path, {"XLA_FLAGS": "--xla_cpu_enable_fast_math=true"})
    assert a != b and a.parent == b.parent and a.parent.name.startswith("jaxlib-")
    env = cache_environment(tmp_path, {})
    assert env["JAX_COMPILATION_CACHE_DIR"] == str(a.resolve())
    assert env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] == "0"
    assert cache_environment(tmp_path, {"JAX_COMPILATION_CACHE_DIR": "/elsewhere"}) == {}
    assert cache_environment(tmp_path, {"SMATTN_JAX_CACHE": "off"}) == {}


def test_root_from_the_environment(tmp_path):
    """SMATTN_JAX_CACHE_ROOT moves the root, and the keyed folder below it is the same as under any root."""
    moved = cache_environment(None, {"SMATTN_JAX_CACHE_ROOT": str(tmp_path)})
    assert moved["JAX_COMPILATION_CACHE_DIR"] == str(cache_dir(tmp_path, {}).resolve())
    default = Path(cache_environment(None, {})["JAX_COMPILATION_CACHE_DIR"])
    assert default.parent.parent == (Path(".snakemake") / "jax-cache").resolve()
    assert default.relative_to(default.parent.parent) == cache_dir(tmp_path, {}).relative_to(tmp_path)


def test_a_second_process_hits_the_cache(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_COMPILATION_CACHE")}
    env.update(cache_environment(tmp_path / "cache", env))
    runs = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True, timeout=300
            )
            .stdout.strip()
            .splitlines()[-1]
        )
        for _ in range(2)
    ]
    assert runs[0]["misses"] >= 1 and runs[0]["hits"] == 0, runs
    assert runs[1]["hits"] >= 1 and runs[1]["misses"] == 0, runs
