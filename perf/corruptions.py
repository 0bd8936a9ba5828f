"""Corruptions on the fly on the CPU: images/s per corruption against a
plain predict pass of the same model on the same images, in the same run.

Each corruption runs as ``run_probe(..., Corruptions([NAME:SEVERITY]))``
(the DataLoader workers decode, crop and corrupt; the model predicts),
and its images/s counts the corrupted images only. The plain pass is
``imagenetx.models.predict.predict``. The slowest corruptions are named
at the end, with the milliseconds one image's corruption takes alone (one
core, no model) to say why.

Usage: corruptions.py [--n 32] [--severity 3] [--model timm:efficientnet_lite0]
[--batch-size 32] [--num-workers W]
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _env  # noqa: E402,F401

import fiftyone as fo  # noqa: E402
import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

from imagenetx.metrics.corruption import CORRUPTIONS  # noqa: E402
from imagenetx.models.predict import predict  # noqa: E402
from imagenetx.probes.corruption import Corruptions  # noqa: E402
from imagenetx.probes.run import run_probe  # noqa: E402
from predict import make_images  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=32)
    parser.add_argument("--severity", type=int, default=3)
    parser.add_argument("--model", default="timm:efficientnet_lite0")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--num-workers", type=int)
    args = parser.parse_args()
    _env.drop_database_at_exit()
    paths = make_images(args.n)
    ds = fo.Dataset()
    ds.add_samples([fo.Sample(filepath=p) for p in paths])
    common = dict(batch_size=args.batch_size, num_workers=args.num_workers,
                  device="cpu", pretrained=False, overwrite=True, progress=False)
    # warm: model files, and numba's compile of glass_blur in this process
    Corruptions([f"glass_blur:{args.severity}"]).apply_image(
        np.zeros((64, 64, 3), np.uint8), f"glass_blur:{args.severity}", 0)
    predict(ds.limit(8), args.model, "warm", **common)

    start = time.perf_counter()
    predict(ds, args.model, "plain", **common)
    plain = args.n / (time.perf_counter() - start)
    print(f"{args.model} on cpu, {args.n} images, severity {args.severity}, "
          f"batch {args.batch_size}")
    print(f"plain predict pass: {plain:7.1f} images/s")
    print(f"{'corruption':<18} {'images/s':>9} {'/ plain':>8} {'ms/image alone':>15}")
    rates = {}
    crops = [np.asarray(Image.open(p).convert("RGB").resize((224, 224))) for p in paths[:8]]
    for name in CORRUPTIONS:
        level = f"{name}:{args.severity}"
        probe = Corruptions([level])
        start = time.perf_counter()
        summary = run_probe(ds, args.model, f"c_{name}", probe, levels=[level], **common)
        rates[name] = summary.probed / (time.perf_counter() - start)
        # the corruption alone, one core, no model: why a corruption is slow
        start = time.perf_counter()
        for k, crop in enumerate(crops):
            probe.apply_image(crop, level, k)
        alone = (time.perf_counter() - start) / len(crops) * 1000
        print(f"{name:<18} {rates[name]:9.1f} {rates[name] / plain:8.2f} {alone:15.1f}")
    slowest = sorted(rates, key=rates.get)[:3]
    print("slowest: " + ", ".join(f"{n} ({rates[n]:.1f} images/s)" for n in slowest))


if __name__ == "__main__":
    main()
