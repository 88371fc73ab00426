"""Benchmark: optimiser steps per second of the TREC experiment (P2 Fig. 3 right) on this machine.

    .venv/bin/python benchmarks/p2_dynamics_trec.py [--steps 300] [--threads 1] [--device cpu|cuda]

Times :func:`smattn.p2.dynamics.trec.train_trec_run` (forward, backward, AdamW, Gram recording; the paper's
configuration, ``--steps`` optimiser steps) with the compact embedding the library uses (only the rows of ids
that occur in TREC) and, in the same process, with the full 30,522-row table, alternating the two twice, and
prints the ratio. Both give the same trajectory (tests/p2_dynamics/test_p2d_trec.py).
"""

import argparse
import os
import tempfile
import time
from pathlib import Path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--data", default=os.environ.get("SMATTN_DATA_MIRROR", "../shared/data"))
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    from smattn.data.trec import load_trec
    from smattn.data.wordpiece import make_tokenizer
    from smattn.p2.dynamics.trec import encode_questions, paper_trec_config, train_trec_run

    qs = load_trec(Path(args.data) / "trec" / "train_5500.label")
    tok = make_tokenizer(Path(args.data) / "bert-base-uncased" / "vocab.txt", 32)
    ids, labels = encode_questions(qs, tok)
    cfg = paper_trec_config()
    rates = {True: [], False: []}
    for compact in (True, False, True, False):
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            out = train_trec_run(
                ids,
                labels,
                cfg,
                rep=0,
                workdir=tmp,
                device=torch.device(args.device),
                progress=None,
                show_bar=False,
                max_steps=args.steps,
                compact_embedding=compact,
            )
            dt = time.perf_counter() - t0
        rates[compact].append(out["n_steps"] / dt)
    for compact, name in ((True, "compact embedding"), (False, "full 30,522-row embedding")):
        r = max(rates[compact])
        print(
            f"{name}: {r:.1f} steps/s (best of 2, {args.steps} steps, threads={args.threads}, device {args.device}); "
            f"a 40-epoch run (10,920 steps) takes {10920 / r / 60:.1f} min"
        )
    print(f"compact / full speed ratio (same process): {max(rates[True]) / max(rates[False]):.2f}")


if __name__ == "__main__":
    main()
