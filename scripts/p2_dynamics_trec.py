"""P2 Fig. 3 right, step 1: one repetition of the TREC experiment (tied-attention classifier, AdamW).

Output ``run``: NPZ with similarity (2, steps) (S_l(t) of W_l W_l^T to the last step), val_accuracy (epochs,),
train_loss (steps,), steps_per_epoch, wall_s, device and the configuration as JSON.
"""

import json
from pathlib import Path

from smattn.scriptio import run


def main(io):
    from smattn.data.trec import load_trec
    from smattn.data.wordpiece import make_tokenizer
    from smattn.device import torch_device
    from smattn.io import write_npz
    from smattn.p2.dynamics.trec import encode_questions, train_trec_run, trec_config

    rep = int(io.wildcards.rep)
    cfg = trec_config(io.params.trec)
    if rep >= cfg.repetitions:
        raise ValueError(f"repetition {rep} requested but trec_repetitions = {cfg.repetitions}")
    device = torch_device()
    print(f"[trec] device {device}; rep {rep}; config {json.dumps(cfg.as_dict())}", flush=True)
    questions = load_trec(io.input.train)
    tok = make_tokenizer(io.input.vocab, max_length=cfg.max_length)
    ids, labels = encode_questions(questions, tok)
    vocab_size = tok.get_vocab_size()
    out = train_trec_run(
        ids,
        labels,
        cfg,
        rep=rep,
        workdir=Path(io.output.run).parent,
        device=device,
        vocab_size=vocab_size,
        progress=lambda s: print(s, flush=True),
    )
    write_npz(
        io.output.run,
        similarity=out["similarity"],
        val_accuracy=out["val_accuracy"],
        train_loss=out["train_loss"],
        steps_per_epoch=out["steps_per_epoch"],
        wall_s=out["wall_s"],
        n_train=out["n_train"],
        n_val=out["n_val"],
        device=str(device),
        config=json.dumps(cfg.as_dict()),
    )
    print(
        f"[trec] rep {rep}: {out['n_steps']} steps in {out['wall_s']:.1f} s "
        f"({out['n_steps'] / out['wall_s']:.1f} steps/s); final val acc {out['val_accuracy'][-1]:.4f}",
        flush=True,
    )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
