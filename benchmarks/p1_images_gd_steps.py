"""Benchmark: Adam training steps per second of the GD transformer (batch 128 one-shot Omniglot-shaped sequences),
at paper size (L = 2, H = 4, N = 512, G = 128) and at the laptop size (N = 64, G = 32), on the CPU and on a GPU when
one is visible. Task sampling is excluded (random sequences); forward + backward + Adam step are timed.

    .venv/bin/python benchmarks/p1_images_gd_steps.py [--threads 2] [--steps 10]
"""

import argparse
import time

import torch

from smattn.p1.images.model import AttentionPathsTransformer

SIZES = {
    "paper L2H4 (N=512, G=128)": (2, 4, 512, 128),
    "laptop L2H4 (N=64, G=32)": (2, 4, 64, 32),
    "paper L3H3 (N=512, G=128)": (3, 3, 512, 128),
    "laptop L3H3 (N=64, G=32)": (3, 3, 64, 32),
}


def bench(device, L, H, N, G, steps, batch=128, amp=False):
    torch.manual_seed(0)
    m = AttentionPathsTransformer(L, H, N, G).to(device)
    opt = torch.optim.Adam(m.parameters(), lr=3e-4, weight_decay=5e-5)
    x = torch.randn(batch, 48, 192, device=device)
    y = torch.sign(torch.randn(batch, device=device))
    scaler = torch.amp.GradScaler(enabled=amp)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=amp):
            loss = ((m(x) - y) ** 2).mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    for _ in range(2):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return steps / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=10)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    for name, (L, H, N, G) in SIZES.items():
        sps = bench(torch.device("cpu"), L, H, N, G, a.steps)
        print(
            f"CPU ({a.threads} threads) {name}: {sps:.2f} steps/s -> 41 240 paper steps in {41240 / sps / 3600:.1f} h"
        )
    if torch.cuda.is_available():
        dev = torch.device("cuda")
        for name, (L, H, N, G) in SIZES.items():
            for amp in (False, True):
                sps = bench(dev, L, H, N, G, 20 * a.steps, amp=amp)
                print(
                    f"GPU {torch.cuda.get_device_name()} {'fp16 autocast' if amp else 'fp32'} {name}: {sps:.1f} "
                    f"steps/s -> 41 240 paper steps in {41240 / sps / 60:.1f} min"
                )
    else:
        print("no GPU visible: GPU figures not measured")


if __name__ == "__main__":
    main()
