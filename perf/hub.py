"""Pulling ImageNet from the Hub (``imagenetx load imagenet-x --hub``) against the raw
download plus extraction of the same shards, and against FiftyOne's
``load_from_hub`` on a FiftyOne-format repo of the same images, in the same
run, from a loopback Hub (``tests/hub_server.py`` through ``HF_ENDPOINT``).

The repos hold ``--n`` generated JPEGs (noise, ``--size`` pixels square)
under ImageNet val names, as parquet shards (ILSVRC/imagenet-1k's schema)
and as webdataset tars (timm/imagenet-1k-wds's), ``--shards`` of each.
Each measurement downloads into an empty cache (each serves the shards
under its own repo id):

-   pull: ``load_hub_dataset`` (download, write each image once, build the
    tagged dataset)
-   raw: ``snapshot_download`` of the shards, then ``pyarrow.parquet`` /
    ``tarfile`` writing each image's bytes to a file, single-threaded; no
    dataset (goal: pull >= 0.9x raw)
-   FiftyOne: ``fiftyone.utils.huggingface.load_from_hub`` of a
    FiftyOneDataset export of the same images (images only, no tagging)

Usage: hub.py [--n 10000] [--shards 8] [--size 160] [--repeat 3] [--no-load-from-hub]
"""

import argparse
import io
import json
import os
import socket
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
import _env  # noqa: E402,F401


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


PORT = _free_port()
TMP = _env.temp_folder("imagenetx-hub-perf-")
os.environ["HF_ENDPOINT"] = f"http://127.0.0.1:{PORT}"
os.environ["HF_HOME"] = os.path.join(TMP, "hf")
os.environ.pop("HF_HUB_OFFLINE", None)
os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"

import numpy as np  # noqa: E402
import fiftyone as fo  # noqa: E402

from hub_server import serve_repo  # noqa: E402
from imagenetx.benchmarks.imagenet_x import annotations as anno  # noqa: E402
from imagenetx.benchmarks.imagenet_x.sources import load_hub_dataset  # noqa: E402


def _jpegs(n: int, size: int) -> dict:
    from PIL import Image

    rng = np.random.default_rng(0)
    base = rng.integers(0, 255, (size, size, 3), dtype=np.uint8)
    out = {}
    for i in range(1, n + 1):
        img = np.roll(base, i, axis=1)
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, "JPEG", quality=90)
        out[f"ILSVRC2012_val_{i:08d}.JPEG"] = buf.getvalue()
    return out


def _write_repos(images: dict, shards: int) -> dict:
    import pyarrow as pa
    import pyarrow.parquet as pq

    labels = anno.val_labels()
    names = sorted(images)
    per = -(-len(names) // shards)
    parquet = os.path.join(TMP, "parquet")
    wds = os.path.join(TMP, "wds")
    os.makedirs(os.path.join(parquet, "data"))
    os.makedirs(wds)
    schema = pa.schema([("image", pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
                        ("label", pa.int64())])
    for k in range(shards):
        part = names[k * per:(k + 1) * per]
        rows = [{"image": {"bytes": images[n], "path": n},
                 "label": int(labels[anno.val_number(n) - 1])} for n in part]
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), os.path.join(
            parquet, "data", f"validation-{k:05d}-of-{shards:05d}.parquet"))
        with tarfile.open(os.path.join(wds, f"imagenet1k-validation-{k:02d}.tar"), "w") as tar:
            for n in part:
                klass = int(labels[anno.val_number(n) - 1])
                for ext, body in (("jpg", images[n]), ("cls", str(klass).encode()),
                                  ("json", json.dumps({"filename": n}).encode())):
                    info = tarfile.TarInfo(f"{n[:-5]}.{ext}")
                    info.size = len(body)
                    tar.addfile(info, io.BytesIO(body))
    # a FiftyOne-format repo of the same images, as push_to_hub writes it
    media = os.path.join(TMP, "media")
    os.makedirs(media)
    for n in names:
        with open(os.path.join(media, n), "wb") as f:
            f.write(images[n])
    src = fo.Dataset()
    src.add_samples([fo.Sample(filepath=os.path.join(media, n)) for n in names])
    export = os.path.join(TMP, "fiftyone")
    src.export(export, dataset_type=fo.types.FiftyOneDataset, export_media=True,
               chunk_size=1000 if len(names) > 10000 else None)
    src.delete()
    with open(os.path.join(export, "fiftyone.yml"), "w") as f:
        f.write("format: FiftyOneDataset\nname: perf\ntags: []\n")
    return {"parquet": parquet, "webdataset": wds, "fiftyone": export}


def _raw(repo: str, layout: str) -> int:
    """The baseline: plain huggingface_hub + pyarrow / tarfile."""
    import pyarrow.parquet as pq
    from huggingface_hub import snapshot_download

    local = snapshot_download(repo, repo_type="dataset")
    out = os.path.join(TMP, "raw", repo.replace("/", "--"))
    os.makedirs(out)
    count = 0
    for root, _, files in os.walk(local):
        for name in sorted(files):
            path = os.path.join(root, name)
            if layout == "parquet" and name.endswith(".parquet"):
                for batch in pq.ParquetFile(path).iter_batches(columns=["image"]):
                    for row in batch.column("image").to_pylist():
                        with open(os.path.join(out, row["path"]), "wb") as f:
                            f.write(row["bytes"])
                        count += 1
            elif layout == "webdataset" and name.endswith(".tar"):
                with tarfile.open(path, "r|") as tar:
                    for member in tar:
                        data = tar.extractfile(member).read()
                        if member.name.endswith(".jpg"):
                            with open(os.path.join(out, member.name), "wb") as f:
                                f.write(data)
                            count += 1
    return count


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=10000)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--size", type=int, default=160)
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs of each measurement, the best kept (2 shared cores are noisy)")
    parser.add_argument("--no-load-from-hub", dest="load_from_hub", action="store_false",
                        help="leave out FiftyOne's load_from_hub (minutes at 10,000 images)")
    args = parser.parse_args()
    _env.drop_database_at_exit()

    t = time.perf_counter()
    images = _jpegs(args.n, args.size)
    folders = _write_repos(images, args.shards)
    mean_kb = sum(map(len, images.values())) / len(images) / 1024
    print(f"{args.n:,} JPEGs ({mean_kb:.1f} KB mean), {args.shards} shards per layout, "
          f"made in {time.perf_counter() - t:.1f} s; {os.cpu_count()} cores\n")

    from imagenetx.benchmarks.imagenet_x.tagging import warm_annotations

    t = time.perf_counter()
    warm_annotations("val")
    print(f"reading the ImageNet-X val annotations: {time.perf_counter() - t:.2f} s, once "
          "per process (a pull reads them while its shards download); done here before "
          "the runs, so that both layouts measure the same\n")
    rates = {}
    for layout in ("parquet", "webdataset"):
        for r in range(args.repeat):
            for kind in ("raw", "pull"):  # alternated, each into an empty cache
                repo = f"perf/{layout}-{kind}-{r}"
                serve_repo(PORT, repo, folders[layout])
                t = time.perf_counter()
                if kind == "raw":
                    n = _raw(repo, layout)
                else:
                    ds, _ = load_hub_dataset(repo, name=f"perf-{layout}", overwrite=True)
                    n = len(ds)
                rate = n / (time.perf_counter() - t)
                rates[layout, kind] = max(rates.get((layout, kind), 0), rate)
    rates["fiftyone"] = float("nan")
    if args.load_from_hub:
        serve_repo(PORT, "perf/fiftyone", folders["fiftyone"])
        import fiftyone.utils.huggingface as fouh

        t = time.perf_counter()
        ds = fouh.load_from_hub("perf/fiftyone", name="perf-fo", overwrite=True,
                                persistent=True)
        rates["fiftyone"] = len(ds) / (time.perf_counter() - t)

    print(f"{'layout':<12}{'pull img/s':>12}{'raw img/s':>12}{'pull/raw':>10}"
          f"{'load_from_hub img/s':>22}{'pull/load_from_hub':>20}")
    for layout in ("parquet", "webdataset"):
        pull, raw = rates[layout, "pull"], rates[layout, "raw"]
        print(f"{layout:<12}{pull:>12,.0f}{raw:>12,.0f}{pull / raw:>10.2f}"
              f"{rates['fiftyone']:>22,.0f}{pull / rates['fiftyone']:>20.2f}")
    print("\npull: download, write each image once, build the tagged dataset; raw: "
          "snapshot_download + pyarrow/tarfile to files, no dataset (goal pull/raw >= 0.9); "
          "load_from_hub: FiftyOne's own, a FiftyOneDataset repo of the same images")


if __name__ == "__main__":
    main()
