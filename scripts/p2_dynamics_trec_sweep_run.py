"""P2 Fig. 3 right, one configuration of the short TREC runs (the sequential-learning sweep, the learning-rate
comparison): ``reps`` runs of ``steps`` steps at the attention init std ``init``, AdamW variant ``opt`` and (when
given) learning rate ``lr`` of the params, everything else as in the main runs.

Output ``runs``: NPZ with similarity (reps, 2, steps) (S_l(t) of W_l W_l^T to each run's last step), train_loss
(reps, steps), wall_s (reps,), steps_per_epoch, full_steps (the steps of the whole training, trec_epochs epochs),
lr, init, optimizer, device and the configuration as JSON.

Input ``main_runs`` (may be empty): the main runs (scripts/p2_dynamics_trec.py) of the repetitions 0..reps-1 when the
configuration is theirs. When the sweep's runs are whole trainings they are the same trainings (the same
configuration, seeds and steps), so their records are taken instead of training again.
"""

import json
import tempfile
from pathlib import Path

import numpy as np

from smattn.scriptio import run


def main(io):
    from smattn.data.trec import load_trec
    from smattn.data.wordpiece import make_tokenizer
    from smattn.device import torch_device
    from smattn.io import write_npz
    from smattn.p2.dynamics.trec import encode_questions, steps_per_epoch, train_trec_run, trec_config

    p = io.params
    lr = {} if getattr(p, "lr", None) is None else {"lr": float(p.lr)}
    cfg = trec_config(p.trec, attn_init_std=float(p.init), optimizer=str(p.opt), **lr)
    device = torch_device()
    questions = load_trec(io.input.train)
    tok = make_tokenizer(io.input.vocab, max_length=cfg.max_length)
    ids, labels = encode_questions(questions, tok)
    n_q = cfg.max_questions if 0 < cfg.max_questions < len(ids) else len(ids)
    full_steps = steps_per_epoch(n_q, cfg) * cfg.epochs
    steps = min(int(p.steps), full_steps)
    print(
        f"[trec sweep] device {device}; {p.reps} runs x {steps} steps; config {json.dumps(cfg.as_dict())}", flush=True
    )
    S, loss, wall = [], [], []
    out_dir = Path(io.output.runs).parent
    out_dir.mkdir(parents=True, exist_ok=True)
    main_runs = list(getattr(io.input, "main_runs", []) or [])
    if main_runs and steps == full_steps:
        for rep, path in enumerate(main_runs[: int(p.reps)]):
            with np.load(path) as z:
                if (
                    json.loads(str(z["config"])) != json.loads(json.dumps(cfg.as_dict()))
                    or len(z["train_loss"]) != steps
                ):
                    raise ValueError(f"{path}: not a whole training of this configuration")
                S.append(z["similarity"])
                loss.append(z["train_loss"])
                wall.append(float(z["wall_s"]))
                device = str(z["device"])
            print(f"[trec sweep] run {rep}: the main run {path} (the same training)", flush=True)
    for rep in range(len(S), int(p.reps)):
        with tempfile.TemporaryDirectory(dir=out_dir, prefix="grams_") as tmp:
            out = train_trec_run(
                ids,
                labels,
                cfg,
                rep=rep,
                workdir=tmp,
                device=device,
                vocab_size=tok.get_vocab_size(),
                progress=None,
                max_steps=steps,
                evaluate=False,  # the sweep records no validation accuracy
            )
        S.append(out["similarity"])
        loss.append(out["train_loss"])
        wall.append(out["wall_s"])
        print(
            f"[trec sweep] run {rep}: {out['n_steps']} steps in {out['wall_s']:.1f} s; start similarity "
            f"{out['similarity'][0, 0]:.4f} / {out['similarity'][1, 0]:.4f}",
            flush=True,
        )
    write_npz(
        io.output.runs,
        similarity=np.stack(S),
        train_loss=np.stack(loss),
        wall_s=np.asarray(wall),
        steps_per_epoch=steps_per_epoch(n_q, cfg),
        full_steps=full_steps,
        lr=cfg.lr,
        init=cfg.attn_init_std,
        optimizer=cfg.optimizer,
        device=str(device),
        config=json.dumps(cfg.as_dict()),
    )


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
