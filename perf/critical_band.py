"""Critical band probe cost: one batch through ``CriticalBand.apply`` plus
the model, against the same model on the same batch alone, in the same run.

The model is timm's ``--model`` (default efficientnet_lite0, the model of
the project's tests; random weights: only its cost matters), eval mode,
no grad; the batch is ``--batch`` random 224 x 224 images on
``--device``. The probe side times 7 levels (one per band, SD 0.08: the
cost does not depend on the SD) plus ImageNet normalization; each side is
best of ``--repeats``, warm.

Usage: critical_band.py [--model efficientnet_lite0] [--batch 32] [--repeats 3] [--device cpu]
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import timm  # noqa: E402
import torch  # noqa: E402

from imagenetx.probes.critical_band import CriticalBand  # noqa: E402

MEAN = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)


def best(fn, repeats, device):
    fn()
    times = []
    for _ in range(repeats):
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--model", default="efficientnet_lite0")
    args = ap.parse_args()
    device = args.device
    model = timm.create_model(args.model, pretrained=False).eval().to(device)
    images = torch.rand(args.batch, 3, 224, 224, device=device)
    mean, std = MEAN.to(device), STD.to(device)
    probe = CriticalBand()
    levels = [f"{band}:0.08" for band in range(7)]
    seeds = list(range(args.batch))

    def plain():
        with torch.no_grad():
            for _ in levels:
                model((images - mean) / std)

    def probed():
        with torch.no_grad():
            for level in levels:
                model((probe.apply(images, level, seeds) - mean) / std)

    def probe_only():
        for level in levels:
            probe.apply(images, level, seeds)

    t_plain = best(plain, args.repeats, device)
    t_probe = best(probed, args.repeats, device)
    t_apply = best(probe_only, args.repeats, device)
    n = args.batch * len(levels)
    print(f"critical band on {device}, batch {args.batch}, 7 levels: "
          f"probe + {args.model} {n / t_probe:.1f} img/s, "
          f"{args.model} alone {n / t_plain:.1f} img/s, ratio {t_probe / t_plain:.2f}x; "
          f"the probe alone {1000 * t_apply / n:.2f} ms/img")


if __name__ == "__main__":
    main()
