"""P1 image task: evaluate the selected GD model (ID Omniglot test tasks, MNIST and Fashion-MNIST 0-vs-1) and export
its fixed query/key weights, value/readout weights, U_GD and the balanced sequence sets for the theory
(docs/p1_images.md#export)."""

import json

from smattn.scriptio import run


def main(io):
    import torch

    from smattn.device import torch_device
    from smattn.io import write_json, write_metrics, write_npz
    from smattn.p1.images.datasets import load_store
    from smattn.p1.images.export import export_for_theory, gd_accuracies
    from smattn.p1.images.training import model_from_checkpoint

    p = io.params
    model_name = io.wildcards.model
    ck = torch.load(io.input.model, map_location="cpu", weights_only=True)
    model = model_from_checkpoint(ck)
    seed = int(ck["config"]["seed"])
    device = torch_device()
    model.to(device).eval()
    store = load_store(io.input.store)
    accs = gd_accuracies(model, store, seed, int(p.gd_eval_tasks), device=device)
    for k, v in accs.items():
        print(f"GD {model_name} accuracy on {k}: {v['acc']:.4f} (n = {v['n']})")
    model.to("cpu")
    ex = export_for_theory(
        model, store, seed, int(p.P), int(p.n_test), int(p.n_train_pool), int(p.n_test_pool), int(p.n_test_omniglot)
    )
    write_npz(io.output.export, **ex)
    write_json(
        io.output.gd_eval,
        {
            "model": model_name,
            "accuracy": accs,
            "best_val_acc": float(ck["best_val_acc"]),
            "best_step": int(ck["best_step"]),
            "steps": int(ck["step"]),
            "hparams": ck["hparams"],
            "U_gd": ex["U_gd"].tolist(),
        },
    )
    m = {f"p1.img.gd_acc[model={model_name}][set={s}]": v["acc"] for s, v in accs.items()}
    m.update({f"p1.img.gd_n[model={model_name}][set={s}]": v["n"] for s, v in accs.items()})  # binomial errors
    with open(io.input.train_summary) as fh:
        tr = json.load(fh)  # the training loop's own timing on this run's device
    for key, name in (("steps_per_second", "gd_steps_per_s"), ("batch_ms_per_step", "gd_batch_ms")):
        if tr.get(key) is not None:
            m[f"p1.img.{name}[model={model_name}]"] = float(tr[key])
    write_metrics(io.output.metrics, m)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
