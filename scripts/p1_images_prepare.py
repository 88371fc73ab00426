"""P1 image task: raw Omniglot zips and MNIST / Fashion-MNIST IDX files -> one store of 32x32 uint8 images
(Vinyals splits; classes 0 and 1 of the OOD sets), docs/p1_images.md#tasks."""

from pathlib import Path

from smattn.scriptio import run


def main(io):
    from smattn.io import write_npz
    from smattn.p1.images.datasets import omniglot_store, ood_store

    store = omniglot_store(io.input.omniglot_background, io.input.omniglot_evaluation)
    store.update(ood_store(Path(io.input.mnist[0]).parent, Path(io.input.fashion[0]).parent))
    for k, v in store.items():
        print(f"{k}: {v.shape} {v.dtype}")
    write_npz(io.output.store, **store)


if __name__ == "__main__":
    run(main, globals().get("snakemake"))
