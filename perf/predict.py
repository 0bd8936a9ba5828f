"""End-to-end images/s of ``imagenetx.models.inference.predict`` against a plain
PyTorch loop (target: at least 0.9 of the loop).

Both run the same model on the same synthetic ImageNet-sized JPEGs
(500x375) with the same preprocessing, DataLoader settings (batch size,
workers, pinned memory on CUDA), channels-last, inference mode and autocast.
The loop keeps top-5 results in memory; ``predict`` also writes them to the
database and evaluates them against ground truth. Both timings include
building the model. Each is run ``--repeats`` times, alternating, and the
best run counts (the machine may be shared). The CPU seconds of each run
(this process and its DataLoader workers) are printed too: on a busy
machine they vary less than the wall clock.

With ``--cue-conflict DIR`` (the stimuli folder) both run over the 1,280
cue-conflict stimuli instead, and the loop maps each batch onto the 16
categories with the same matrix (model-vs-human's mean over each
category's ImageNet indices); ``predict`` writes those decisions.

Usage: predict.py [--n 2000] [--cue-conflict DIR] [--device auto|cpu|cuda] [--model SPEC]
[--arch NAME] [--remap-by-position] [--batch-size 64] [--num-workers W] [--amp auto|bf16|fp16|off]
[--pretrained] [--repeats 2]
"""

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _env  # noqa: E402,F401

import fiftyone as fo  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from PIL import Image  # noqa: E402

from imagenetx.classes.imagenet import class_table  # noqa: E402
from imagenetx.models.inference import (  # noqa: E402
    DEFAULT_BATCH_SIZE,
    _amp_dtype,
    _device,
    predict,
)
from imagenetx.models.specs import load_model  # noqa: E402


def make_images(n: int) -> list:
    """n smooth-plus-noise 500x375 JPEGs, cached between runs."""
    folder = Path(tempfile.gettempdir()) / "imagenetx-bench-jpegs"
    folder.mkdir(exist_ok=True)
    rng = np.random.default_rng(0)
    paths = []
    for i in range(n):
        path = folder / f"img_{i:06d}.jpg"
        if not path.exists():
            base = rng.integers(0, 256, (12, 16, 3), dtype=np.uint8)
            img = Image.fromarray(base).resize((500, 375), Image.BICUBIC)
            arr = np.asarray(img, np.int16) + rng.integers(-20, 21, (375, 500, 3))
            Image.fromarray(arr.clip(0, 255).astype(np.uint8)).save(path, quality=90)
        paths.append(str(path))
    return paths


class Files(torch.utils.data.Dataset):
    def __init__(self, paths, transform):
        self.paths = paths
        self.transform = transform

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        with Image.open(self.paths[i]) as img:
            return self.transform(img.convert("RGB"))


def cpu_seconds() -> float:
    """User + system CPU time of this process and its reaped children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def timed(fn, *args) -> tuple:
    """(wall seconds, CPU seconds) of one call."""
    wall, cpu = time.perf_counter(), cpu_seconds()
    fn(*args)
    return time.perf_counter() - wall, cpu_seconds() - cpu


def plain_loop(paths, args, mapping=None):
    """The baseline: what a hand-written PyTorch script does, no database."""
    device = _device(args.device)
    dtype = _amp_dtype(args.amp, device)
    loaded = load_model(args.model, args.arch, pretrained=args.pretrained,
                        remap_by_position=args.remap_by_position)
    cuda = device.type == "cuda"
    prep = loaded.preprocessing
    model = loaded.model.to(device, memory_format=torch.channels_last)
    normalize = prep.normalizer(device)
    loader = torch.utils.data.DataLoader(
        Files(paths, prep.transform(normalize=not cuda)),
        batch_size=args.batch_size,
        num_workers=args.num_workers,
        pin_memory=cuda,
    )
    results = []
    with torch.inference_mode():
        for batch in loader:
            x = batch.to(device, non_blocking=True)
            if cuda:
                x = normalize(x)
            x = x.contiguous(memory_format=torch.channels_last)
            with torch.autocast(device.type, dtype=dtype, enabled=dtype is not None):
                out = model(x)
            probs = out.float().softmax(dim=1)
            conf, idx = probs.topk(5, dim=1)
            if mapping is not None:
                decided = (probs @ mapping).max(dim=1)
                conf, idx = decided.values[:, None], decided.indices[:, None]
            results.append((idx.cpu(), conf.cpu()))
    assert sum(len(r[0]) for r in results) == len(paths)


def predict_run(dataset, args):
    summary = predict(
        dataset, args.model, "pred", arch=args.arch,
        remap_by_position=args.remap_by_position,
        batch_size=args.batch_size, num_workers=args.num_workers,
        device=args.device, amp=args.amp, overwrite=True,
        pretrained=args.pretrained, progress=False,
    )
    assert summary.predicted == len(dataset) and summary.failed == 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--model", default="timm:efficientnet_lite0")
    parser.add_argument("--arch")
    parser.add_argument("--remap-by-position", action="store_true",
                        help="load a checkpoint whose key names differ by position")
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE)
    parser.add_argument("--num-workers", type=int, default=min(8, os.cpu_count() or 1))
    parser.add_argument("--amp", default="auto")
    parser.add_argument("--pretrained", action="store_true",
                        help="load pretrained weights (default: random, same speed)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--cue-conflict", metavar="DIR",
                        help="run over the cue-conflict stimuli of DIR, with 16-class decisions")
    args = parser.parse_args()
    _env.drop_database_at_exit()

    mapping = None
    if args.cue_conflict:
        from imagenetx.benchmarks.cue_conflict import load_cue_conflict
        from imagenetx.classes.cue_conflict import mean_matrix

        dataset, _ = load_cue_conflict(args.cue_conflict, name="bench-predict",
                                       overwrite=True, progress=False)
        paths = dataset.values("filepath")
        args.n = len(paths)
        mapping = torch.as_tensor(mean_matrix(), device=_device(args.device))
        print(f"{args.n:,} cue-conflict stimuli (PNG, 512x512), 16-class decisions")
    else:
        t = time.perf_counter()
        paths = make_images(args.n)
        print(f"{args.n:,} JPEGs 500x375 ready in {time.perf_counter() - t:.1f} s")
        labels = class_table().labels
        dataset = fo.Dataset("bench-predict")
        dataset.add_samples(
            fo.Sample(filepath=p, ground_truth=fo.Classification(label=labels[i % 1000]))
            for i, p in enumerate(paths)
        )

    # warm-up: imports, page cache, one model build
    plain_loop(paths[: args.batch_size], args, mapping)

    loop_runs, predict_runs = [], []
    for _ in range(args.repeats):
        loop_runs.append(timed(plain_loop, paths, args, mapping))
        predict_runs.append(timed(predict_run, dataset, args))
    loop_ips = args.n / min(w for w, _ in loop_runs)
    pred_ips = args.n / min(w for w, _ in predict_runs)
    ratio = pred_ips / loop_ips
    cpu_ratio = min(c for _, c in loop_runs) / min(c for _, c in predict_runs)

    device = _device(args.device)
    print(f"model {args.model}, device {device}, batch {args.batch_size}, "
          f"{args.num_workers} workers, amp {args.amp}, "
          f"{torch.get_num_threads()} torch threads")
    for name, runs in (("plain loop", loop_runs), ("predict", predict_runs)):
        print(f"{name + ' runs':<17} wall s: "
              + ", ".join(f"{w:.1f}" for w, _ in runs)
              + "   CPU s: " + ", ".join(f"{c:.1f}" for _, c in runs))
    print(f"plain PyTorch loop: {loop_ips:.1f} images/s")
    print(f"imagenetx predict:  {pred_ips:.1f} images/s")
    print(f"ratio predict / loop: {ratio:.2f} (CPU time: {cpu_ratio:.2f})  "
          f"target >= 0.9 -> {'met' if ratio >= 0.9 else 'NOT met'}")


if __name__ == "__main__":
    main()
