"""Images/s of ``imagenetx attack`` (PGD-40, Gavrikov's settings, through
the model pipeline: decode, device, attack, adversarial predictions,
database writes, evaluation) against the library's plain loop over the same
model and images in the same run: a DataLoader with the same decoder and
workers, foolbox's ``PyTorchModel`` with the normalization as its
preprocessing, ``LinfPGD(steps=40, abs_stepsize=2/255)`` at 0.5/255, the
success flags kept in memory. Target: at least 0.95.

Usage: attack.py [--n 16] [--model SPEC] [--device auto|cpu|cuda] [--batch-size B]
[--steps 40] [--repeats 2]

On the GPU machine: ``perf/attack.py --device cuda --n 1024 --model timm:resnet50``.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _env  # noqa: E402,F401

import fiftyone as fo  # noqa: E402
import foolbox as fb  # noqa: E402
import torch  # noqa: E402

from imagenetx.attacks.run import attack_amp, run_attack  # noqa: E402
from imagenetx.attacks.budget import AttackSettings  # noqa: E402
from imagenetx.classes.imagenet import class_table  # noqa: E402
from imagenetx.models.device import (  # noqa: E402
    amp_dtype, default_batch_size, resolve_device)
from imagenetx.models.loader import (  # noqa: E402
    PREFETCH_FACTOR, ImageFiles, collate_images, crop_reader, default_workers)
from imagenetx.models.config import RunOptions  # noqa: E402
from imagenetx.models.sources import ModelRequest, load_model  # noqa: E402
from predict import make_images  # noqa: E402


def plain_loop(paths, labels, spec, args, batch_size, workers):
    """The baseline: foolbox's own loop, as Gavrikov's eval_imagenet_adv.py."""
    device = resolve_device(args.device)
    classifier = load_model(spec, ModelRequest(pretrained=False))
    reader, _ = crop_reader(classifier, "auto", torch.device("cpu"))
    prep = classifier.preprocessing
    model = classifier.module.to(device).eval()
    fmodel = fb.PyTorchModel(model, bounds=(0, 1), device=device, preprocessing=dict(
        mean=list(prep.mean), std=list(prep.std), axis=-3))
    attack = fb.attacks.LinfPGD(steps=args.steps, abs_stepsize=2 / 255)
    loader = torch.utils.data.DataLoader(
        ImageFiles(paths, reader), batch_size=batch_size, num_workers=workers,
        collate_fn=collate_images, pin_memory=device.type == "cuda",
        prefetch_factor=PREFETCH_FACTOR if workers else None)
    dtype = amp_dtype(attack_amp(args.amp), device)  # as ours: auto is float32
    success = []
    for batch in loader:
        x = batch.images.to(device, non_blocking=True).float().div_(255)
        y = torch.tensor([labels[i] for i in batch.positions.tolist()], device=device)
        with torch.autocast(device.type, dtype=dtype, enabled=dtype is not None):
            _, _, ok = attack(fmodel, x, y, epsilons=0.5 / 255)
        success.append(ok.cpu())
    assert sum(len(s) for s in success) == len(paths)


def ours(dataset, spec, args, batch_size, workers):
    summary = run_attack(
        dataset, spec, "adv", AttackSettings(steps=args.steps), ModelRequest(pretrained=False),
        RunOptions(batch_size=batch_size, num_workers=workers, device=args.device,
                   amp=args.amp, overwrite=True, protocol="none"),  # the baseline's decoding
        progress=False)
    assert summary.predicted == len(dataset)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=16)
    parser.add_argument("--model", default="timm:efficientnet_lite0")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--amp", default="auto")
    parser.add_argument("--batch-size", type=int)
    parser.add_argument("--num-workers", type=int)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    _env.drop_database_at_exit()

    device = resolve_device(args.device)
    batch_size = args.batch_size or default_batch_size(device)
    workers = default_workers() if args.num_workers is None else args.num_workers
    paths = make_images(args.n)
    table = class_table().labels
    labels = [i % 1000 for i in range(args.n)]
    dataset = fo.Dataset("bench-attack")
    dataset.add_samples(fo.Sample(filepath=p, ground_truth=fo.Classification(
        label=table[k], class_index=k)) for p, k in zip(paths, labels))
    print(f"== PGD-{args.steps} L∞ 0.5/255 of {args.model} (random weights) on {device}, "
          f"batch {batch_size}, {workers} workers, {args.n} images")
    plain, mine = [], []
    for _ in range(args.repeats):  # alternating: the machine may be shared
        t = time.perf_counter()
        plain_loop(paths, labels, args.model, args, batch_size, workers)
        plain.append(time.perf_counter() - t)
        t = time.perf_counter()
        ours(dataset, args.model, args, batch_size, workers)
        mine.append(time.perf_counter() - t)
    loop_ips, our_ips = args.n / min(plain), args.n / min(mine)
    print(f"foolbox loop {loop_ips:7.2f} images/s, imagenetx attack {our_ips:7.2f} images/s, "
          f"ratio {our_ips / loop_ips:.2f} (target >= 0.95: "
          f"{'met' if our_ips >= 0.95 * loop_ips else 'NOT met'}); wall s loop "
          + "/".join(f"{w:.1f}" for w in plain) + ", attack " + "/".join(f"{w:.1f}" for w in mine))


if __name__ == "__main__":
    main()
