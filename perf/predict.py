"""End-to-end images/s of ``imagenetx.models.predict.predict`` against a plain
PyTorch loop with the same decoder, per model and decoder, in one run.

Targets: predict at least 0.95 of the loop with the same decoder, and the
default (``--decoder auto``, default batch size and workers) at least 1.6x
today's default (PIL, batch 64, min(8, CPU cores) workers: measured here as
``predict --decoder pil`` with those settings).

Per model (``--models``, default efficientnet_lite0 and resnet50, random
weights: the same speed) it prints:

-   the model alone: images/s of forward passes on a ready uint8 batch on
    the device (normalize, channels-last, autocast, top-5), the ceiling;
    and each decoder alone (the loader, no model)
-   per decoder (``--decoders``, default pil, torchvision, auto): the plain
    loop (a Dataset decoding with that decoder, a DataLoader with the same
    workers, batch and prefetch, the model, top-5 kept in memory) and
    ``predict`` (which also writes to the database and evaluates), and
    their ratio. ``auto`` is ``torchvision`` on the CPU; on a GPU it is the
    hybrid (the GPU decodes a share of each batch while the workers decode
    the rest), and its loop does the same
-   on a GPU, ``auto`` again with other shares of each batch decoded on the
    GPU (``--gpu-shares``; 1.0: the GPU decodes every JPEG)
-   today's default, and the default's speed-up over it

Both timings include building the model. Each is run ``--repeats`` times,
alternating, and the best counts (the machine may be shared); the CPU
seconds of the loop runs (this process and its DataLoader workers) are
printed too.

With ``--cue-conflict DIR`` (the stimuli folder) both run over the 1,280
cue-conflict stimuli instead, with 16-class decisions (model-vs-human's mean
over each category's ImageNet indices) in the loop as in ``predict``.

On the GPU machine (see ../shared/gpu/README.md), e.g.:
``perf/predict.py --device cuda --n 50000 --models timm:resnet50,timm:vit_base_patch16_224``

Zero-shot: ``--models open_clip:ViT-B-32 --decoders auto`` compares predict
with a plain open_clip script (open_clip's model, head builder and
``encode_image``; the single ``--prompt``, random weights) over the same
decoder.

Usage: predict.py [--n 256] [--models SPEC,...] [--decoders pil,torchvision,auto]
[--device auto|cpu|cuda] [--batch-size B] [--num-workers W] [--amp auto|bf16|fp16|off]
[--compile] [--repeats 2] [--gpu-shares 0.25,0.75,1.0] [--no-baseline] [--cue-conflict DIR]
"""

import argparse
import os
import resource
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _env  # noqa: E402,F401

import fiftyone as fo  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from PIL import Image  # noqa: E402

from imagenetx.classes.imagenet import class_table  # noqa: E402
from open_clip.zero_shot_metadata import IMAGENET_CLASSNAMES  # noqa: E402
import imagenetx.models.loader as loader  # noqa: E402
from imagenetx.models.decode import decode_batch  # noqa: E402
from imagenetx.models.device import (  # noqa: E402
    DEFAULT_BATCH_SIZE,
    amp_dtype as _amp_dtype,
    default_batch_size,
    resolve_device as _device,
)
from imagenetx.models.predict import predict  # noqa: E402
from imagenetx.models.loader import (  # noqa: E402
    PREFETCH_FACTOR,
    ImageFiles,
    collate_images,
    crop_reader as _reader,
    default_workers,
)
from imagenetx.models.sources import ModelRequest, load_model  # noqa: E402

FOLDER = Path(tempfile.gettempdir()) / "imagenetx-bench-jpegs"


def make_image(i: int) -> str:
    """One smooth-plus-noise 500x375 JPEG (about 75 KiB), cached."""
    path = FOLDER / f"img_{i:06d}.jpg"
    if not path.exists():
        rng = np.random.default_rng(i)
        base = rng.integers(0, 256, (12, 16, 3), dtype=np.uint8)
        img = Image.fromarray(base).resize((500, 375), Image.BICUBIC)
        arr = np.asarray(img, np.int16) + rng.integers(-20, 21, (375, 500, 3))
        Image.fromarray(arr.clip(0, 255).astype(np.uint8)).save(path, quality=90)
    return str(path)


def make_images(n: int) -> list:
    FOLDER.mkdir(exist_ok=True)
    with ProcessPoolExecutor(default_workers()) as pool:
        return list(pool.map(make_image, range(n), chunksize=256))


def cpu_seconds() -> float:
    """User + system CPU time of this process and its reaped children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def timed(fn, *args, **kwargs) -> tuple:
    """(wall seconds, CPU seconds) of one call."""
    wall, cpu = time.perf_counter(), cpu_seconds()
    fn(*args, **kwargs)
    return time.perf_counter() - wall, cpu_seconds() - cpu


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


class Model:
    """The model on its device, as both runs use it."""

    def __init__(self, spec, args):
        self.device = _device(args.device)
        self.dtype = _amp_dtype(args.amp, self.device)
        loaded = load_model(spec, ModelRequest(pretrained=False,
                                              prompt=zero_shot_prompt(spec, args)))
        self.loaded = loaded
        self.normalize = loaded.preprocessing.normalizer(self.device)
        model = loaded.module.to(self.device, memory_format=torch.channels_last)
        self.model = torch.compile(model) if args.compile else model

    def __call__(self, images, mapping=None):
        with torch.inference_mode(), torch.autocast(
                self.device.type, dtype=self.dtype, enabled=self.dtype is not None):
            x = self.normalize(images).contiguous(memory_format=torch.channels_last)
            probs = self.model(x).float().softmax(dim=1)
        if mapping is not None:
            decided = (probs @ mapping).max(dim=1)
            return decided.indices[:, None], decided.values[:, None]
        conf, idx = probs.topk(5, dim=1)
        return idx, conf


def zero_shot_prompt(spec, args):
    """The single prompt of a zero-shot spec (the head's cost stays small)."""
    return args.prompt if spec.startswith("open_clip:") else None


class PlainOpenClip(Model):
    """A zero-shot model as a plain open_clip script runs it: open_clip's
    model and head builder, ``encode_image``, normalize, ``logit_scale *
    features @ head``."""

    def __init__(self, spec, args):
        import open_clip

        self.device = _device(args.device)
        self.dtype = _amp_dtype(args.amp, self.device)
        arch = spec.partition(":")[2].partition("/")[0]
        clip, _, preprocess = open_clip.create_model_and_transforms(arch, pretrained=None)
        clip.eval()
        tokenizer = open_clip.get_tokenizer(arch)
        with torch.no_grad():
            head = open_clip.build_zero_shot_classifier(
                clip, tokenizer, IMAGENET_CLASSNAMES,
                [lambda c: args.prompt.format(c=c)], num_classes_per_batch=10)
        self.loaded = type("Loaded", (), {"preprocessing": _prep(preprocess)})()
        self.normalize = self.loaded.preprocessing.normalizer(self.device)
        self.head = head.to(self.device)
        self.scale = clip.logit_scale.exp().item()
        clip = clip.to(self.device, memory_format=torch.channels_last)
        self.encode = torch.compile(clip.encode_image) if args.compile else clip.encode_image

    def __call__(self, images, mapping=None):
        with torch.inference_mode(), torch.autocast(
                self.device.type, dtype=self.dtype, enabled=self.dtype is not None):
            x = self.normalize(images).contiguous(memory_format=torch.channels_last)
            features = self.encode(x, normalize=True).float()
            probs = (self.scale * features @ self.head).softmax(dim=1)
        conf, idx = probs.topk(5, dim=1)
        return idx, conf


def _prep(preprocess):
    from imagenetx.models.preprocess import from_transform

    return from_transform(preprocess, "open_clip")


def model_only(model: Model, batch_size: int, batches: int = 20) -> float:
    """Images/s of the model alone on a ready uint8 batch on its device."""
    c, h, w = model.loaded.preprocessing.input_size
    x = torch.randint(0, 256, (batch_size, c, h, w), dtype=torch.uint8, device=model.device)
    model(x)  # warm-up
    _sync(model.device)
    t = time.perf_counter()
    for _ in range(batches):
        idx, conf = model(x)
        idx.cpu()
    _sync(model.device)
    return batches * batch_size / (time.perf_counter() - t)


def decode_only(paths, model: Model, decoder, batch_size, workers) -> float:
    """Images/s of the decoding alone: the loader (and, for the hybrid, the
    device decode), no model."""
    reader, share = _reader(model.loaded, decoder, model.device)
    loader = torch.utils.data.DataLoader(
        ImageFiles(paths, reader, share), batch_size=batch_size, num_workers=workers,
        collate_fn=collate_images, pin_memory=model.device.type == "cuda",
        prefetch_factor=PREFETCH_FACTOR if workers else None)
    t = time.perf_counter()
    for batch in loader:
        if batch.images is not None:
            batch.images.to(model.device, non_blocking=True)
        if batch.raw_positions:
            decode_batch(batch.encoded(), reader.geometry, model.device)
    _sync(model.device)
    return len(paths) / (time.perf_counter() - t)


def plain_loop(paths, spec, args, decoder, batch_size, workers, mapping=None):
    """The baseline: what a hand-written PyTorch script does with the same
    decoder, no database. Decoding uses the library's reader (the decoder
    itself); batching is PyTorch's own."""
    model = (PlainOpenClip if spec.startswith("open_clip:") else Model)(spec, args)
    reader, share = _reader(model.loaded, decoder, model.device)
    loader = torch.utils.data.DataLoader(
        ImageFiles(paths, reader, share), batch_size=batch_size, num_workers=workers,
        collate_fn=collate_images, pin_memory=model.device.type == "cuda",
        prefetch_factor=PREFETCH_FACTOR if workers else None)
    results = []
    for batch in loader:
        parts = [] if batch.images is None else [batch.images.to(model.device, non_blocking=True)]
        if batch.raw_positions:
            crops, refused = decode_batch(batch.encoded(), reader.geometry, model.device)
            assert not refused
            parts.append(crops)
        idx, conf = model(torch.cat(parts), mapping)
        results.append((idx.to("cpu", non_blocking=True), conf.to("cpu", non_blocking=True)))
    _sync(model.device)
    assert sum(len(r[0]) for r in results) == len(paths)


def predict_run(dataset, spec, args, decoder, batch_size, workers):
    summary = predict(
        dataset, spec, "pred", batch_size=batch_size, num_workers=workers,
        device=args.device, amp=args.amp, compile=args.compile, overwrite=True,
        pretrained=False, progress=False, decoder=decoder,
        prompt=zero_shot_prompt(spec, args),
        protocol="none")  # the decoder asked for, not a benchmark protocol's PIL
    assert summary.predicted == len(dataset) and summary.failed == 0


def best(runs) -> float:
    return min(w for w, _ in runs)


def bench_model(spec, paths, dataset, args, mapping):
    device = _device(args.device)
    batch_size = args.batch_size or default_batch_size(device)
    workers = default_workers() if args.num_workers is None else args.num_workers
    n = len(paths)
    model = Model(spec, args)
    ceiling = model_only(model, batch_size)
    print(f"\n== {spec} on {device}, batch {batch_size}, {workers} workers, amp {args.amp}, "
          f"compile {args.compile}, {torch.get_num_threads()} torch threads, {n:,} images")
    print(f"model alone:                  {ceiling:8.1f} images/s")
    print("decoding alone (no model):    " + ", ".join(
        f"{d} {decode_only(paths, model, d, batch_size, workers):.1f}" for d in args.decoders)
        + " images/s")
    plain_loop(paths[:batch_size], spec, args, "pil", batch_size, 0, mapping)  # warm-up

    rows = {}
    runs = list(args.decoders)
    if device.type == "cuda" and args.gpu_shares:  # the hybrid's split, swept
        runs += [f"auto@{share}" for share in args.gpu_shares.split(",")]
    default_share = loader.GPU_DECODE_SHARE
    for label in runs:
        decoder, _, share = label.partition("@")
        loader.GPU_DECODE_SHARE = float(share) if share else default_share
        loop_runs, pred_runs = [], []
        for _ in range(args.repeats):
            loop_runs.append(timed(plain_loop, paths, spec, args, decoder, batch_size,
                                   workers, mapping))
            pred_runs.append(timed(predict_run, dataset, spec, args, decoder, batch_size,
                                   workers))
        rows[label] = (n / best(loop_runs), n / best(pred_runs))
        loop_ips, pred_ips = rows[label]
        print(f"--decoder {label:<12} loop {loop_ips:8.1f}  predict {pred_ips:8.1f} images/s  "
              f"ratio {pred_ips / loop_ips:.2f} (target >= 0.95: "
              f"{'met' if pred_ips >= 0.95 * loop_ips else 'NOT met'})   wall s loop "
              + "/".join(f"{w:.1f}" for w, _ in loop_runs) + ", predict "
              + "/".join(f"{w:.1f}" for w, _ in pred_runs) + "; CPU s loop "
              + "/".join(f"{c:.1f}" for _, c in loop_runs))
    loader.GPU_DECODE_SHARE = default_share
    fastest = max(loop for loop, _ in rows.values())
    if "auto" in rows:
        print(f"predict (auto) / fastest loop: {rows['auto'][1] / fastest:.2f}")

    if not args.no_baseline and "auto" in rows:
        old_workers = min(8, os.cpu_count() or 1)
        runs = [timed(predict_run, dataset, spec, args, "pil", DEFAULT_BATCH_SIZE, old_workers)
                for _ in range(args.repeats)]
        today = n / best(runs)
        speedup = rows["auto"][1] / today
        print(f"today's default (pil, batch {DEFAULT_BATCH_SIZE}, {old_workers} workers): "
              f"predict {today:8.1f} images/s; the default (auto, batch {batch_size}, "
              f"{workers} workers) is {speedup:.2f}x (target >= 1.6: "
              f"{'met' if speedup >= 1.6 else 'NOT met'})")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--models", default="timm:efficientnet_lite0,timm:resnet50")
    parser.add_argument("--decoders", default="pil,torchvision,auto")
    parser.add_argument("--batch-size", type=int, help="default: predict's for the device")
    parser.add_argument("--num-workers", type=int, help="default: predict's (the CPU affinity)")
    parser.add_argument("--amp", default="auto")
    parser.add_argument("--compile", action="store_true", help="torch.compile the model in both")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--gpu-shares", default="0.25,0.75,1.0",
                        help="on a GPU, also run auto with these shares decoded there "
                             "(the default share is GPU_DECODE_SHARE)")
    parser.add_argument("--no-baseline", action="store_true",
                        help="skip the run with today's defaults")
    parser.add_argument("--prompt", default="A photo of a {c}",
                        help="open_clip: specs: the single zero-shot prompt of both runs")
    parser.add_argument("--cue-conflict", metavar="DIR",
                        help="run over the cue-conflict stimuli of DIR, with 16-class decisions")
    args = parser.parse_args()
    args.decoders = args.decoders.split(",")
    _env.drop_database_at_exit()

    mapping = None
    if args.cue_conflict:
        from imagenetx.benchmarks.cue_conflict import load_cue_conflict
        from imagenetx.classes.cue_conflict import mean_matrix

        dataset, _ = load_cue_conflict(args.cue_conflict, name="bench-predict",
                                       overwrite=True, progress=False)
        paths = dataset.values("filepath")
        mapping = torch.as_tensor(mean_matrix(), device=_device(args.device))
        print(f"{len(paths):,} cue-conflict stimuli (PNG, 512x512), 16-class decisions")
    else:
        t = time.perf_counter()
        paths = make_images(args.n)
        print(f"{args.n:,} JPEGs 500x375 ready in {time.perf_counter() - t:.1f} s")
        labels = class_table().labels
        dataset = fo.Dataset("bench-predict")
        dataset.add_samples(
            fo.Sample(filepath=p, ground_truth=fo.Classification(label=labels[i % 1000]))
            for i, p in enumerate(paths))

    for spec in args.models.split(","):
        bench_model(spec, paths, dataset, args, mapping)


if __name__ == "__main__":
    main()
