"""OOD detectors scored on datasets built to the OOD-detection contract
(``ood_role``, ``ood_source``, ``ood_class``; ID ground truth; the
benchmark in ``dataset.info``), with real JPEG placeholders and predictions
holding logits as ``imagenetx predict --logits`` stores them: the stored
scores equal the detectors' functions on the same arrays, the metrics equal
:mod:`imagenetx.metrics.ood` on the split, each benchmark's headline is its
authors' helper, and the command line's JSON carries them."""

import json

import fiftyone as fo
import numpy as np
import pytest
from PIL import Image

from imagenetx.analysis.ood_detection import (
    CLASS_FIELD,
    ROLE_FIELD,
    SOURCE_FIELD,
    false_positives_per_factor,
    flagged_id_view,
    id_threshold,
    missed_ood_view,
    score_field,
    score_ood,
)
from imagenetx.classes.imagenet import class_table
from imagenetx.cli import main
from imagenetx.errors import ImageNetXError
from imagenetx.metrics.ood import (
    imagenet_o_headline,
    ninco_headline,
    ood_metrics,
    openood_headline,
)
from imagenetx.ood.features import ash_s, fit_knn, fit_react, fit_vim, knn, react, vim
from imagenetx.ood.logits import energy, fit_temperature, gen, max_logit, msp
from imagenetx.store.schema import declare_classification

LOGIT_DETECTORS = ("msp", "max_logit", "energy", "gen", "temp_scaling")
D = 24
FACTORS = ("pose", "background", "color")


def _images(folder, n):
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for k in range(n):
        path = folder / f"img_{k:05d}.jpg"
        if not path.exists():
            Image.fromarray(np.full((8, 8, 3), k % 255, dtype=np.uint8)).save(path)
        paths.append(str(path))
    return paths


def _head(seed=1):
    rng = np.random.default_rng(seed)
    return rng.normal(0, 0.3, (1000, D)), rng.normal(0, 0.1, 1000)


def build(name, tmp_path, benchmark, sets, classes=None, info=None, seed=0,
          logits=True):
    """A dataset to the contract: ``sets`` is ``[(role, source, n, ood classes)]``;
    the ID images (role ``id``) get labels among ``classes`` and a top
    factor; features are ReLU'd and the logits are the head's of them, ID
    images with their class's logit raised."""
    if fo.dataset_exists(name):
        fo.delete_dataset(name)
    rng = np.random.default_rng(seed)
    weight, bias = _head()
    labels = class_table().labels
    classes = list(range(1000)) if classes is None else list(classes)
    total = sum(s[2] for s in sets)
    paths = _images(tmp_path / name, total)
    samples, k = [], 0
    for role, source, n, ood_classes in sets:
        for j in range(n):
            ood = role != "id"
            f = np.maximum(rng.normal(0.5 if ood else 1.0, 1.0, D), 0)
            z = f @ weight.T + bias
            sample = fo.Sample(filepath=paths[k], **{ROLE_FIELD: role, SOURCE_FIELD: source})
            k += 1
            if ood:
                sample[CLASS_FIELD] = ood_classes[j % len(ood_classes)]
            else:
                c = classes[int(rng.integers(len(classes)))]
                z[c] += rng.normal(4.0, 2.0)
                sample["ground_truth"] = fo.Classification(label=labels[c], class_index=c)
                sample["imagenetx"] = fo.DynamicEmbeddedDocument(
                    top_factor=FACTORS[j % 3], factors=list(FACTORS[: 1 + j % 3]))
            top = int(np.argmax(z))
            sample["pred"] = fo.Classification(
                label=labels[top], class_index=top, confidence=float(msp(z[None])[0]),
                logits=z.astype(np.float32) if logits else None)
            sample["emb"] = f.astype(np.float32)
            samples.append(sample)
    ds = fo.Dataset(name)
    for field in ("ground_truth", "pred"):  # with class_index, as the project declares them
        declare_classification(ds, field)
    ds.add_samples(samples)
    ds.info["imagenetx"] = {"benchmark": benchmark, **(info or {})}
    ds.save()
    return ds


OPENOOD = [("id", "imagenet_val", 120, [None]),
           ("near", "ssb_hard", 40, ["a", "b"]), ("near", "ninco", 30, ["c"]),
           ("far", "inaturalist", 30, ["d"]), ("far", "textures", 30, ["e"])]


@pytest.fixture(scope="module")
def openood(tmp_path_factory):
    return build("ood-score-openood", tmp_path_factory.mktemp("openood"),
                 "openood_imagenet", OPENOOD)


def _arrays(ds, ids=None):
    view = ds if ids is None else ds.select(ids, ordered=True)
    roles, sources, z, f, y = view.values(
        [ROLE_FIELD, SOURCE_FIELD, "pred.logits", "emb", "ground_truth.class_index"])
    return (np.array(roles), np.array(sources), np.stack(z).astype(np.float64),
            np.stack(f).astype(np.float64), np.array([-1 if v is None else v for v in y]))


def test_scores_are_the_detectors_and_the_metrics_those_of_the_split(openood):
    ds = openood
    weight, bias = _head()
    result = score_ood(ds, "pred", LOGIT_DETECTORS + ("react", "ash_s", "vim", "knn"),
                       features_field="emb", head=(weight, bias),
                       options={"knn": {"k": 5}, "vim": {"dim": 12}}, intervals=False)
    assert result.convention == "openood"  # the benchmark's own
    roles, sources, z, f, y = _arrays(ds)
    is_id = roles == "id"
    fit_ids = set(result.fit_ids)
    fit = np.array([i in fit_ids for i in ds.values("id")])
    # the held-out part: a tenth of the ID images, never an OOD one
    assert fit.sum() == 12 and not (fit & ~is_id).any()
    t = fit_temperature(z[fit], y[fit])
    expected = {
        "msp": msp(z), "max_logit": max_logit(z), "energy": energy(z), "gen": gen(z),
        "temp_scaling": msp(z, t.temperature),
        "react": react(f, weight, bias, fit_react(f[fit])),
        "ash_s": ash_s(f, weight, bias),
        "vim": vim(f, weight, bias, fit_vim(f[fit], weight, bias, dim=12)),
        "knn": knn(f, fit_knn(f[fit]), k=5),
    }
    assert result.detectors["temp_scaling"].stats.temperature == t.temperature
    for name, scores in expected.items():
        stored = np.array(ds.values(score_field("pred", name)))
        np.testing.assert_allclose(stored, scores, rtol=1e-12, atol=1e-12, err_msg=name)
        det = result.detectors[name]
        fitted = name in ("temp_scaling", "react", "vim", "knn")
        id_rows = is_id & ~fit if fitted else is_id
        assert det.n_fit == (12 if fitted else 0)
        assert det.metrics.to_dict() == ood_metrics(
            stored[id_rows], stored[~is_id], "openood", resamples=0).to_dict()
        for src in ("ssb_hard", "ninco", "inaturalist", "textures"):
            assert det.sources[src].to_dict() == ood_metrics(
                stored[id_rows], stored[sources == src], "openood", resamples=0).to_dict()
        assert det.roles["near"].to_dict() == ood_metrics(
            stored[id_rows], stored[roles == "near"], "openood", resamples=0).to_dict()
        headline = openood_headline(
            {s: det.sources[s] for s in ("ssb_hard", "ninco")},
            {s: det.sources[s] for s in ("inaturalist", "textures")})
        assert det.headline.to_dict() == headline.to_dict()
    # ID images score higher here: the detectors do detect
    assert result.detectors["msp"].metrics.auroc > 0.7


def test_intervals_and_the_convention_asked(openood):
    result = score_ood(openood, "pred", ["energy"], convention="ninco", store=False)
    det = result.detectors["energy"]
    assert det.field is None and det.metrics.convention == "ninco"
    lo, hi = det.sources["textures"].intervals["auroc"]
    assert lo <= det.sources["textures"].auroc <= hi and lo < hi
    # OpenOOD's headline stays in OpenOOD's convention
    assert det.headline.values["near_auroc"] == pytest.approx(np.mean(
        [det.sources[s].auroc for s in ("ssb_hard", "ninco")]))


def test_ninco_headline_is_the_mean_per_class_auroc(tmp_path):
    ds = build("ood-score-ninco", tmp_path, "ninco",
               [("id", "imagenet_val", 60, [None]),
                ("near", "ninco", 45, ["lemur", "sponge", "bridge"]),
                ("far", "ninco_unit_tests", 20, ["noise", "stripes"])])
    result = score_ood(ds, "pred", ["msp"], intervals=False)
    assert result.convention == "ninco"
    roles, sources, z, _, _ = _arrays(ds)
    classes = np.array(ds.values(CLASS_FIELD))
    s = msp(z)
    ninco = sources == "ninco"  # NINCO's classes, not its unit tests
    expected = ninco_headline(s[roles == "id"], s[ninco], classes[ninco])
    det = result.to_dict()["detectors"]["msp"]
    assert det["headline"] == expected.to_dict()
    assert sorted(det["headline"]["parts"]) == ["bridge", "lemur", "sponge"]
    assert det["sources"]["ninco_unit_tests"] == ood_metrics(
        s[roles == "id"], s[sources == "ninco_unit_tests"], "ninco", resamples=0).to_dict()


def test_imagenet_o_headline_is_the_aupr_of_msp_over_its_200_classes(tmp_path):
    cols = sorted(np.random.default_rng(3).choice(1000, 200, replace=False).tolist())
    ds = build("ood-score-imagenet-o", tmp_path, "imagenet_o",
               [("id", "imagenet_val", 80, [None]), ("ood", "imagenet_o", 50, ["n0001"])],
               classes=cols, info={"ood": {"class_indices": cols}})
    result = score_ood(ds, "pred", ["msp", "energy", "temp_scaling"], intervals=False)
    assert result.convention == "hendrycks"
    roles, _, z, _, _ = _arrays(ds)
    expected = imagenet_o_headline(z[roles == "id"], z[roles == "ood"], cols)
    assert result.detectors["msp"].headline.to_dict() == expected.to_dict()
    # the same protocol for another logit detector: its score of the masked logits
    e = energy(z[:, cols])
    m = ood_metrics(e[roles == "id"], e[roles == "ood"], "hendrycks", resamples=0)
    assert result.detectors["energy"].headline.values == {
        "aupr": m.aupr_out, "auroc": m.auroc, "fpr95": m.fpr95}
    # the temperature of the headline is refitted on the held-out ID images only
    assert result.detectors["temp_scaling"].headline.values["aupr"] > 0


def test_false_positives_per_factor_and_the_views(openood):
    score_ood(openood, "pred", ["msp"], intervals=False)
    name = score_field("pred", "msp")
    roles, scores, tops = openood.values([ROLE_FIELD, name, "imagenetx.top_factor"])
    is_id = np.array(roles) == "id"
    s = np.array(scores)
    t = float(np.quantile(s[is_id], 0.05))
    assert id_threshold(s[is_id]) == t
    table = false_positives_per_factor(openood, "pred", "msp")
    tops = np.array(tops, dtype=object)
    for row in table.rows:
        mine = is_id & (tops == row["factor"])
        assert row["n"] == mine.sum() and row["flagged"] == (s[mine] < t).sum()
    assert table.flagged == (s[is_id] < t).sum() == 6  # 5 % of 120
    flagged = flagged_id_view(openood, "pred", "msp")
    assert len(flagged) == 6 and set(flagged.values(ROLE_FIELD)) == {"id"}
    assert sorted(flagged.values(name)) == flagged.values(name)
    one = table.rows[0]["factor"]
    assert len(flagged_id_view(openood, "pred", "msp", factor=one)) == table.rows[0]["flagged"]
    missed = missed_ood_view(openood, "pred", "msp")
    assert len(missed) == (s[~is_id] >= t).sum() > 0
    assert "id" not in missed.values(ROLE_FIELD)
    textures = missed_ood_view(openood, "pred", "msp", source="textures")
    assert set(textures.values(SOURCE_FIELD)) <= {"textures"}
    multi = false_positives_per_factor(openood, "pred", "msp", slicing="factors")
    assert sum(r["n"] for r in multi.rows) > multi.n  # an image counts under each factor


def test_command_line_json(openood, capsys):
    assert main(["ood", "--dataset", openood.name, "--pred-field", "pred",
                 "--detector", "msp,energy", "--no-intervals", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["detectors"]) == {"msp", "energy"} == set(out["headline"])
    for det in out["detectors"].values():
        assert {"auroc", "fpr95", "aupr_in", "aupr_out", "headline", "sources",
                "roles"} <= set(det)
        assert det["headline"]["values"]["near_auroc"] == det["headline"]["values"]["near_auroc"]
    assert main(["ood", "--dataset", openood.name, "--pred-field", "pred",
                 "--detector", "msp", "--no-intervals"]) == 0
    text = capsys.readouterr().out
    assert "msp" in text and "ssb_hard" in text and "near" in text


def test_missing_logits_is_one_line_and_nothing_is_written(tmp_path, capsys):
    ds = build("ood-score-no-logits", tmp_path, "imagenet_o",
               [("id", "imagenet_val", 6, [None]), ("ood", "imagenet_o", 4, ["n1"])],
               logits=False)
    before = set(ds.get_field_schema())
    assert main(["ood", "--dataset", ds.name, "--pred-field", "pred",
                 "--detector", "msp"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--logits" in err and "10 of 10" in err
    assert set(ds.get_field_schema()) == before
    with pytest.raises(ImageNetXError, match="needs the head's weight and bias"):
        score_ood(ds, "pred", ["vim"], features_field="emb")


def test_feature_detectors_say_what_they_need(openood):
    with pytest.raises(ImageNetXError, match="pass `features_field`"):
        score_ood(openood, "pred", ["knn"], store=False)
    with pytest.raises(ImageNetXError, match="needs the head's weight and bias"):
        score_ood(openood, "pred", ["react"], features_field="emb", store=False)
    with pytest.raises(ImageNetXError, match="Unknown OOD detector 'mps'"):
        score_ood(openood, "pred", ["mps"], store=False)
    # KNN reads the features alone
    assert score_ood(openood, "pred", ["knn"], features_field="emb", store=False,
                     options={"knn": {"k": 5}}, intervals=False).detectors["knn"].metrics.n_id == 108


def _update_commands() -> int:
    import fiftyone.core.odm as foo

    status = foo.get_db_client().admin.command("serverStatus")
    return int(status["metrics"]["commands"]["update"]["total"])


def test_scores_are_written_in_bulk(openood):
    """Five detectors' scores of 250 samples: a handful of update commands
    (one bulk write per field, and the schema's), not one per sample (the
    server counts commands for every database: the bound leaves room for
    others' writes meanwhile)."""
    for name in LOGIT_DETECTORS:
        if openood.has_field(score_field("pred", name)):
            openood.delete_sample_field(score_field("pred", name))
    before = _update_commands()
    score_ood(openood, "pred", LOGIT_DETECTORS, intervals=False)
    writes = _update_commands() - before
    assert writes < 100 < len(openood) * len(LOGIT_DETECTORS)
    assert all(v is not None for v in openood.values(score_field("pred", "gen")))


def test_report_section_and_score_chart(openood):
    from imagenetx.present.figures import ood_score_chart
    from imagenetx.present.report import ood_section

    result = score_ood(openood, "pred", ["msp", "energy"], store=False, intervals=False)
    sets = result.distributions("energy")
    assert list(sets) == ["ID", "ninco", "ssb_hard", "inaturalist", "textures"]
    assert [len(v) for v in sets.values()] == [120, 30, 40, 30, 30]
    traces, layout = ood_score_chart(sets, "energy", id_threshold(sets["ID"]))
    assert [t["name"] for t in traces] == ["ID (120)", "ninco (30)", "ssb_hard (40)",
                                           "inaturalist (30)", "textures (30)"]
    # densities: each set's bars integrate to 1, its counts to its images
    for t, scores in zip(traces, sets.values()):
        assert sum(t["customdata"]) == len(scores)
        assert sum(t["y"]) * t["width"] == pytest.approx(1.0)
    assert layout["shapes"][0]["x0"] == id_threshold(sets["ID"])
    title, content = ood_section(result)
    assert "openood_imagenet" in title and content.count("plotly-graph-div") == 2
    auroc = result.detectors["msp"].sources["textures"].auroc
    assert f"{auroc:.4f}" in content and "near_auroc" in content


def test_report_of_an_ood_dataset_has_the_section(openood, tmp_path):
    import csv

    from imagenetx.present.report import write_report

    summary = write_report(openood, ["pred"], str(tmp_path / "report.html"))
    page = (tmp_path / "report.html").read_text()
    assert "OOD detection: pred (openood_imagenet, openood convention)" in page
    rows = list(csv.DictReader(open(tmp_path / "report_ood_pred.csv")))
    assert str(tmp_path / "report_ood_pred.csv") in summary.csvs
    assert {r["detector"] for r in rows} == {"msp", "max_logit", "energy", "gen",
                                            "temp_scaling"}
    msp_textures = next(r for r in rows if r["detector"] == "msp" and r["set"] == "textures")
    assert float(msp_textures["auroc"]) == score_ood(
        openood, "pred", ["msp"], store=False, intervals=False
    ).detectors["msp"].sources["textures"].auroc


def test_the_panels_false_positive_chart_and_its_click(openood):
    """The panel's chart on an OOD dataset: per factor the share of ID
    images the field's first stored detector flags (the table above), a
    click shows exactly those; a field without scores is said."""
    from imagenetx.benchmarks import get_benchmark
    from imagenetx.present.charts import CHARTS, charts_for

    score_ood(openood, "pred", ["msp", "energy"], intervals=False)
    openood.set_values("unscored", openood.values("pred"))
    assert [c.name for c in charts_for(openood, get_benchmark(openood))][0] == \
        "OOD false positives"
    chart = CHARTS.get("OOD false positives")
    traces, layout, summary, title = chart.draw(openood.view(), ["pred", "unscored"], {})
    table = false_positives_per_factor(openood, "pred", "msp")
    bars = next(t for t in traces if t["name"] == "pred")
    shares = {r["factor"]: r["share"] for r in table.rows}
    assert dict(zip(bars["x"], bars["y"])) == pytest.approx(shares)
    # the first stored detector in the registry's order (the module's other tests store more)
    assert "detector msp (also stored: " in summary and "energy" in summary.split("also stored:")[1]
    assert "**unscored**: no stored OOD scores" in summary
    worst = max(table.rows, key=lambda r: r["share"])
    drill = chart.click(openood.view(), "pred", worst["factor"], {})
    assert drill.count == worst["flagged"] > 0
    assert set(drill.view.values("imagenetx.top_factor")) == {worst["factor"]}
    assert set(drill.view.values(ROLE_FIELD)) == {"id"}
