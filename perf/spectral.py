"""Spectral sweep: the cost of each of the 22 filtered passes against a
plain predict pass of the same model on the same images, in the same run
(target: at most 1.15x).

The plain pass is ``imagenetx.models.predict.predict`` (decode, resize,
crop, normalize, forward, write). The sweep is ``run_probe(..., "spectral")``
over the same images, once with the clean level only and once with all 23
levels; the cost of one filtered pass is the difference divided by 22
(each image is decoded once per sweep, the band-pass filter runs on the
batch with torch.fft on the model's device). The three runs alternate,
best of ``--repeats`` each (the machine may be shared). Also printed: that cost
against the model's bare forward over the same, already decoded, batches.

Usage: spectral.py [--n 128] [--model timm:efficientnet_lite0] [--device cpu]
[--batch-size 64] [--num-workers W] [--repeats 3] [--pretrained]
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _env  # noqa: E402,F401

import fiftyone as fo  # noqa: E402
import torch  # noqa: E402
from PIL import Image  # noqa: E402

from imagenetx.models.device import resolve_device as _device  # noqa: E402
from imagenetx.models.predict import predict  # noqa: E402
from imagenetx.models.sources import ModelRequest, load_model  # noqa: E402
from imagenetx.probes.run import run_probe  # noqa: E402
from predict import make_images  # noqa: E402


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def bare_forward(paths, args) -> float:
    """Seconds of the model's forward alone over the decoded images."""
    loaded = load_model(args.model, ModelRequest(pretrained=args.pretrained))
    device = _device(args.device)
    prep = loaded.preprocessing
    transform = prep.transform()
    batches = [torch.stack([transform(Image.open(p).convert("RGB"))
                            for p in paths[i:i + args.batch_size]])
               for i in range(0, len(paths), args.batch_size)]
    model = loaded.module.to(device, memory_format=torch.channels_last)
    with torch.inference_mode():
        model(batches[0][:2].to(device))
        start = time.perf_counter()
        for b in batches:
            model(b.to(device).contiguous(memory_format=torch.channels_last)).argmax(1).cpu()
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=128)
    parser.add_argument("--model", default="timm:efficientnet_lite0")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--num-workers", type=int)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pretrained", action="store_true",
                        help="load the pretrained weights (default: random; same cost)")
    args = parser.parse_args()
    _env.drop_database_at_exit()
    paths = make_images(args.n)
    ds = fo.Dataset()
    ds.add_samples([fo.Sample(filepath=p) for p in paths])
    common = dict(batch_size=args.batch_size, num_workers=args.num_workers,
                  device=args.device, pretrained=args.pretrained, overwrite=True,
                  progress=False)

    # warm: model files and worker start-up
    run_probe(ds.limit(args.batch_size), args.model, "warm", "spectral", levels=["clean"], **common)
    # alternating, best of --repeats: the machine may be shared
    plain = clean = sweep = float("inf")
    for _ in range(args.repeats):
        plain = min(plain, timed(lambda: predict(ds, args.model, "plain", amp="auto", **common))[0])
        clean = min(clean, timed(lambda: run_probe(ds, args.model, "clean", "spectral",
                                                   levels=["clean"], **common))[0])
        seconds, summary = timed(lambda: run_probe(ds, args.model, "sweep", "spectral", **common))
        sweep = min(sweep, seconds)
    assert summary.forwards == 23 * args.n
    per_pass = (sweep - clean) / 22
    forward = bare_forward(paths, args)
    dev = summary.device
    print(f"{args.model} on {dev}, {args.n} images, batch {args.batch_size}")
    print(f"plain predict pass:          {plain:8.2f} s ({args.n / plain:6.1f} images/s)")
    print(f"probe, clean level only:     {clean:8.2f} s")
    print(f"probe, all 23 levels:        {sweep:8.2f} s ({summary.images_per_second:6.1f} model inputs/s)")
    print(f"one filtered pass (marginal): {per_pass:7.2f} s")
    print(f"ratio filtered pass / plain predict pass: {per_pass / plain:.3f} (target <= 1.15)")
    print(f"ratio filtered pass / bare forward of decoded batches ({forward:.2f} s): "
          f"{per_pass / forward:.3f}")


if __name__ == "__main__":
    main()
