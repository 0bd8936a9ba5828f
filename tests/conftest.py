"""Test session setup: a private database, temp folders, a loopback Hub.

Environment variables are set at import, before FiftyOne or
huggingface_hub read them.
"""

import contextlib
import os
import shutil
import socket
import tempfile
import uuid
from pathlib import Path

_TMP = Path(tempfile.mkdtemp(prefix="imagenetx-tests-"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


HUB_PORT = _free_port()
os.environ.update(
    FIFTYONE_DATABASE_NAME=f"imagenetx-test-{uuid.uuid4().hex[:8]}",
    FIFTYONE_DO_NOT_TRACK="true",
    FIFTYONE_DATABASE_VALIDATION="false",
    FIFTYONE_DEFAULT_DATASET_DIR=str(_TMP / "fiftyone"),
    FIFTYONE_PLUGINS_DIR=str(_TMP / "plugins"),
    FIFTYONE_SHOW_PROGRESS_BARS="false",
    HF_HOME=str(_TMP / "hf"),
    HF_ENDPOINT=f"http://127.0.0.1:{HUB_PORT}",
    # commands use FiftyOne's own per-process database, so the suite leaves
    # no database service running (tests/test_service.py starts its own)
    IMAGENETX_DB_AUTOSTART="0",
)
os.environ.pop("HF_HUB_OFFLINE", None)
os.environ.pop("FIFTYONE_DATABASE_URI", None)

import numpy as np  # noqa: E402
import pytest  # noqa: E402

REPO = Path(__file__).resolve().parents[1]

#: multiplies the tests' waits and time bounds: a slow or busy machine can
#: give more (IMAGENETX_TEST_TIMEOUT_SCALE=3) without editing a test
TIMEOUT_SCALE = max(1.0, float(os.environ.get("IMAGENETX_TEST_TIMEOUT_SCALE") or 1))


def scaled(value: float) -> float:
    """A wait or bound (seconds or milliseconds) times :data:`TIMEOUT_SCALE`."""
    return value * TIMEOUT_SCALE
SHARED_DATA = REPO.parent / "shared" / "data" / "imagenetx"

#: the test files outside the fast tier (`make test-fast`, ``pytest -m "not
#: heavy"``): each drives a browser, installs packages, builds the whole demo,
#: runs real models on the CPU, starts its own database or Hub service, or
#: runs the command line in a process per case
HEAVY_FILES = frozenset({
    "test_as_authors_ran.py", "test_attacks.py", "test_browser.py", "test_cbar.py",
    "test_claims.py", "test_cli.py", "test_cue_conflict.py", "test_demo.py", "test_distributed.py",
    "test_embedding_slices.py", "test_hub_imagenet.py", "test_inference.py",
    "test_install.py", "test_model_sources.py", "test_plugin.py", "test_plugins.py",
    "test_probes.py", "test_protocol_models.py", "test_service.py",
    "test_write_failures.py", "test_zero_shot.py",
})


#: the fixtures that put a test outside the fast tier: all 50,000 val file
#: names tagged (with predictions imported), a dozen command-line processes
HEAVY_FIXTURES = frozenset({"val_dataset", "val_resnet50", "cli_runs", "demo_build"})


def pytest_collection_modifyitems(config, items):
    """Marks the tests outside the fast tier ``heavy``: the files of
    :data:`HEAVY_FILES`, the tests using :data:`HEAVY_FIXTURES` and any test
    marked ``slow`` or ``browser``."""
    for item in items:
        if (item.path.name in HEAVY_FILES or item.get_closest_marker("slow")
                or item.get_closest_marker("browser")
                or HEAVY_FIXTURES & set(getattr(item, "fixturenames", ()))):
            item.add_marker(pytest.mark.heavy)


@pytest.fixture(scope="session", autouse=True)
def _drop_test_database():
    yield
    import fiftyone as fo
    import fiftyone.core.odm as foo

    foo.get_db_client().drop_database(fo.config.database_name)
    shutil.rmtree(_TMP, ignore_errors=True)


@pytest.fixture
def tmp_env(tmp_path):
    """The environment for a subprocess that shares this test database."""
    return dict(os.environ, PYTHONPATH=str(REPO))


def _photo(name: str) -> np.ndarray:
    import skimage.data

    return getattr(skimage.data, name)()


def save_photo(path: Path, photo: str = "chelsea") -> Path:
    """Saves one of scikit-image's real photos as a JPEG."""
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(_photo(photo)).convert("RGB").save(path, "JPEG")
    return path


#: annotated validation images (from the packaged annotations) and classes
VAL_FILES = {
    "ILSVRC2012_val_00000001.JPEG": 65,   # sea snake, top factor background
    "ILSVRC2012_val_00000002.JPEG": 970,
    "ILSVRC2012_val_00000004.JPEG": 809,  # top factor color
}
TRAIN_FILE = ("n03633091", "n03633091_15528.JPEG")  # ladle, annotated
UNANNOTATED_VAL = "ILSVRC2012_val_00000014.JPEG"  # not in ImageNet-X


@pytest.fixture(scope="session")
def photos_dir() -> Path:
    """A flat ImageNet val folder of real photos under real val file names,
    plus one file that is not an ImageNet image."""
    folder = _TMP / "photos-flat"
    for name, photo in zip(
        list(VAL_FILES) + [UNANNOTATED_VAL],
        ["chelsea", "coffee", "astronaut", "rocket"],
    ):
        save_photo(folder / name, photo)
    save_photo(folder / "holiday.jpg", "coffee")
    return folder


def make_dataset(name, files_dir: Path, gt=None):
    """A plain FiftyOne dataset of the images in a folder, optionally with
    ground truth ``{file name: label}``."""
    import fiftyone as fo

    if fo.dataset_exists(name):
        fo.delete_dataset(name)
    ds = fo.Dataset(name)
    samples = []
    for path in sorted(files_dir.rglob("*")):
        if path.is_file():
            sample = fo.Sample(filepath=str(path))
            if gt and path.name in gt:
                sample["ground_truth"] = fo.Classification(label=gt[path.name])
            samples.append(sample)
    ds.add_samples(samples)
    return ds


@pytest.fixture(scope="session")
def hub_repo(tmp_path_factory, photos_dir):
    """A FiftyOne-format repo, as push_to_hub writes it, on the loopback Hub."""
    export = tmp_path_factory.mktemp("hub-export")
    import fiftyone as fo
    from hub_server import serve_repo

    src = fo.Dataset()
    src.add_samples([fo.Sample(filepath=str(p)) for p in sorted(photos_dir.iterdir())])
    src.export(str(export), dataset_type=fo.types.FiftyOneDataset,
               export_media=True)
    src.delete()
    (export / "fiftyone.yml").write_text(
        "format: FiftyOneDataset\nname: imagenet-photos\ntags: []\n")
    server = serve_repo(HUB_PORT, "test-org/imagenet-photos", str(export))
    yield "test-org/imagenet-photos"
    server.shutdown()


DEMO_NAME = "demo-test"


@pytest.fixture(scope="session")
def demo_build():
    """The full offline demo, built once per session through the command
    line: ``(dataset name, what the command printed)``."""
    import contextlib
    import io

    from imagenetx.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(["demo", "--name", DEMO_NAME, "--overwrite"])
    assert status == 0, out.getvalue()
    return DEMO_NAME, out.getvalue()


@contextlib.contextmanager
def open_clip_architecture(name: str, config: dict):
    """A tiny OpenCLIP architecture registered under ``name`` (random
    weights, nothing downloaded), removed again on exit."""
    import open_clip

    open_clip.factory._MODEL_CONFIGS[name] = config
    try:
        yield
    finally:
        open_clip.factory._MODEL_CONFIGS.pop(name, None)


#: the 1,280 cue-conflict stimuli of ../shared/data (empty when absent)
CUE_CONFLICT_IMAGES = sorted(str(p) for p in (REPO.parent / "shared" / "data" / "cue-conflict"
                                              / "images").glob("*/*.png"))
#: a tiny OpenCLIP architecture (random weights) that describes slices
TINY_CLIP = ("tiny-clip-error-slices-test", {
    "embed_dim": 64,
    "vision_cfg": {"image_size": 64, "layers": 1, "width": 64, "patch_size": 16},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 64, "heads": 2,
                 "layers": 1}})


def planted_slices_dataset(name, blobs=6, per_blob=100, bad=2):
    """``blobs * per_blob`` real images with a ground truth, a prediction
    ``pred`` wrong on every sample of blob ``bad`` and on 10 % elsewhere, and
    embeddings ``emb`` of known geometry (one well separated Gaussian cluster
    per blob); ``(dataset, whether each sample is in blob bad)``."""
    import fiftyone as fo

    if fo.dataset_exists(name):
        fo.delete_dataset(name)
    rng = np.random.default_rng(0)
    n = blobs * per_blob
    blob = np.repeat(np.arange(blobs), per_blob)
    centres = rng.normal(size=(blobs, 32)) * 4
    emb = centres[blob] + rng.normal(size=(n, 32))
    wrong = (blob == bad) | (rng.random(n) < 0.10)
    ds = fo.Dataset(name)
    ds.add_samples([fo.Sample(
        filepath=CUE_CONFLICT_IMAGES[i], blob=int(blob[i]),
        ground_truth=fo.Classification(label="tench", class_index=0),
        pred=fo.Classification(label="goldfish" if wrong[i] else "tench",
                               class_index=1 if wrong[i] else 0, confidence=0.9))
        for i in range(n)])
    ds.add_dynamic_sample_fields()
    ds.set_values("emb", list(emb))
    return ds, blob == bad


def describe_planted_slices(ds, truth, key=None, k=2, texts=()):
    """The slices of a :func:`planted_slices_dataset` in the space of a
    random-weight tiny open_clip model (its image tower's embeddings of the
    real images, in ``clip``; the planted blob pushed apart so it is found),
    described by the same model's text tower."""
    import open_clip
    import torch
    from PIL import Image

    from imagenetx.analysis.embedding_slices import discover_error_slices

    arch, config = TINY_CLIP
    with open_clip_architecture(arch, config):
        model, _, preprocess = open_clip.create_model_and_transforms(arch)
        model.eval()
        with torch.inference_mode():
            x = model.encode_image(torch.stack(
                [preprocess(Image.open(p)) for p in ds.values("filepath")])).numpy()
        x[truth] += 3 * x.std()
        ds.set_values("clip", list(x))
        return discover_error_slices(ds, "pred", "clip", k=k, key=key,
                                     describe_with=f"open_clip:{arch}", texts=texts,
                                     pretrained=False)
