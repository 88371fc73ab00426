"""Benchmark: optimiser steps per second of the TREC experiment (P2 Fig. 3 right) on the CPU.

    .venv/bin/python benchmarks/p2_dynamics_trec.py [--steps 300] [--threads 1]

Times full training steps (forward, backward, AdamW, Gram recording) on real TREC batches, with the fused AdamW
kernel the library uses and, in the same process, with torch's default (foreach) AdamW for the ratio.
"""

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    from smattn.data.trec import load_trec
    from smattn.data.wordpiece import make_tokenizer
    from smattn.p2.dynamics.similarity import GramRecorder
    from smattn.p2.dynamics.trec import chunk_padded_lengths, collate, encode_questions
    from smattn.p2.dynamics.trec_model import TiedAttentionClassifier

    qs = load_trec(Path(args.data) / "trec" / "train_5500.label")
    tok = make_tokenizer(Path(args.data) / "bert-base-uncased" / "vocab.txt", 32)
    ids, labels = encode_questions(qs, tok)
    pad = chunk_padded_lengths([len(s) for s in ids], 1000)
    rng = np.random.default_rng(0)
    batches = [rng.choice(len(ids), 16, replace=False) for _ in range(args.steps)]
    rates = {}
    for fused in (True, False):
        model = TiedAttentionClassifier(generator=torch.Generator().manual_seed(0))
        opt = torch.optim.AdamW(model.parameters(), lr=5e-5, eps=1e-6, weight_decay=0.0, fused=fused or None)
        with tempfile.TemporaryDirectory() as tmp, GramRecorder(Path(tmp) / "g.npy", args.steps, 2, 64) as rec:
            t0 = time.perf_counter()
            for s, b in enumerate(batches):
                x, m = collate([ids[i] for i in b], [pad[i] for i in b])
                opt.zero_grad(set_to_none=True)
                loss = torch.nn.functional.cross_entropy(model(x, m), torch.as_tensor(labels[b]))
                loss.backward()
                opt.step()
                with torch.no_grad():
                    W = torch.stack([w.detach() for w in model.attention_weights()])
                    rec.record(s, (W @ W.transpose(1, 2)).numpy())
            dt = time.perf_counter() - t0
        rates[fused] = args.steps / dt
        name = "fused AdamW" if fused else "default AdamW"
        print(
            f"{name}: {args.steps} steps in {dt:.2f} s = {rates[fused]:.1f} steps/s "
            f"(threads={args.threads}); a 40-epoch run (10,920 steps) takes {10920 / rates[fused] / 60:.1f} min"
        )
    print(f"fused / default speed ratio (same process): {rates[True] / rates[False]:.2f}")


if __name__ == "__main__":
    main()
