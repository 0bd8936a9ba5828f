"""Slice discovery: the search on hand-checkable arrays and against an
exhaustive enumeration, planted problems on a real ImageNet-X-tagged
FiftyOne dataset (found first, one click to exactly their mistakes), the
`discover` command, and clear errors."""

import contextlib
import io
import itertools
import json
import math
import os

import fiftyone as fo
import numpy as np
import pytest
from scipy import stats

from authors_tables import read_predictions
from conftest import SHARED_DATA
from imagenetx.analysis import discover_slices, slice_mistakes_view
from imagenetx.benchmarks.imagenet_x.tagging import tag_dataset
from imagenetx.cli import main
from imagenetx.errors import ImageNetXError
from imagenetx.metrics.discovery import find_slices
from imagenetx.store.classifications import write_classifications

NAME = "discovery-val"
N_IMAGES = 10_000
#: the planted 2-way problem (any predictions) and 3-way one (on ResNet50)
PLANTED_2 = (("factors", "pattern"), ("metaclass", "dog"))
PLANTED_3 = (("factors", "pattern"), ("factors", "color"),
             ("metaclass", "structure"))
has_resnet50 = pytest.mark.skipif(
    not (SHARED_DATA / "predictions" / "ResNet50.csv").exists(),
    reason="../shared/data/imagenetx/predictions absent")


def _onehot(ids, k):
    return np.eye(k, dtype=bool)[ids]


# -- the search on arrays ---------------------------------------------------

def _two_by_two():
    """400 images in a 2 x 2 design (A = a1/a2, B = b1/b2, 100 per cell);
    the model is wrong on exactly the 100 images of a1 x b1."""
    a = np.repeat([0, 0, 1, 1], 100)
    b = np.repeat([0, 1, 0, 1], 100)
    slicings = [("A", ("a1", "a2"), _onehot(a, 2)),
                ("B", ("b1", "b2"), _onehot(b, 2))]
    return ~((a == 0) & (b == 0)), slicings


def test_sliceline_score_by_hand():
    correct, slicings = _two_by_two()
    r = find_slices(correct, slicings, max_order=2, min_support=2,
                    score="sliceline", alpha=0.95, intervals=False)
    # error 100/400 = 0.25; a1 x b1: 100 images all wrong, ratio 4;
    # a1 and b1: 200 images, 100 wrong, ratio 2
    # score = 0.95 (ratio - 1) - 0.05 (400 / size - 1)
    assert [s.name for s in r.slices] == ["A=a1 x B=b1", "A=a1", "B=b1"]
    assert [s.n for s in r.slices] == [100, 200, 200]
    assert [s.errors for s in r.slices] == [100, 100, 100]
    expected = [0.95 * 3 - 0.05 * 3, 0.95 * 1 - 0.05 * 1, 0.95 * 1 - 0.05 * 1]
    assert np.allclose([s.score for s in r.slices], expected, rtol=0, atol=1e-12)
    assert [s.error_ratio for s in r.slices] == [4.0, 2.0, 2.0]


def test_bound_score_by_hand():
    correct, slicings = _two_by_two()
    r = find_slices(correct, slicings, max_order=2, min_support=2)
    # family: the 4 basic slices and their 6 pairs; z at 0.05 / 10
    assert r.family == 10
    z = stats.norm.isf(0.005)

    def wilson_lower(e, s):
        p = e / s
        return (p + z * z / (2 * s) - z * math.sqrt(p * (1 - p) / s + z * z / (4 * s * s))) / (
            1 + z * z / s)

    assert [s.name for s in r.slices] == ["A=a1 x B=b1", "A=a1", "B=b1"]
    assert r.slices[0].score == pytest.approx(wilson_lower(100, 100) / 0.25, abs=1e-12)
    assert r.slices[1].score == pytest.approx(wilson_lower(100, 200) / 0.25, abs=1e-12)
    # exact one-sided binomial p-value, Bonferroni over the family
    assert r.slices[0].p == pytest.approx(0.25 ** 100, rel=1e-9)
    assert r.slices[0].p_adjusted == pytest.approx(10 * 0.25 ** 100, rel=1e-9)
    lo, hi = r.slices[0].ci_low, r.slices[0].ci_high
    assert lo < 4.0 < hi


def test_redundant_conjunctions_are_not_reported():
    """A class implies its group: class x group is the class again."""
    correct, slicings = _two_by_two()
    a = slicings[0][2].argmax(axis=1)
    fine = a * 2 + (np.arange(400) % 2)  # c1, c2 inside a1; c3, c4 inside a2
    slicings.append(("C", ("c1", "c2", "c3", "c4"), _onehot(fine, 4)))
    r = find_slices(correct, slicings, max_order=3, min_support=2, top_k=50)
    for s in r.slices:
        names = dict(s.predicates)
        assert not ("A" in names and "C" in names), s.name
    # the halves of a1 x b1 are conjunctions of B and C instead
    assert {"B=b1 x C=c1", "B=b1 x C=c2"} <= {s.name for s in r.slices}


def _exhaustive(correct, slicings, max_order, min_support, top_k, scorer):
    """Every non-redundant conjunction, scored; the top ``top_k``."""
    x = np.hstack([m for _, _, m in slicings])
    names = [(n, v) for n, vals, _ in slicings for v in vals]
    n = len(correct)
    size1 = x.sum(axis=0)
    cols = [c for c in range(x.shape[1]) if min_support <= size1[c] < n]
    sizes = {}
    errors = {}
    for order in range(1, max_order + 1):
        for combo in itertools.combinations(cols, order):
            rows = x[:, combo].all(axis=1)
            if rows.sum() >= min_support:
                sizes[combo] = int(rows.sum())
                errors[combo] = int((~correct[rows]).sum())
    kept = [c for c in sizes if len(c) == 1 or all(
        c[:i] + c[i + 1:] in sizes and sizes[c] < sizes[c[:i] + c[i + 1:]]
        for i in range(len(c)))]
    scored = [(float(scorer.score(np.array(sizes[c]), np.array(errors[c]))), c)
              for c in kept]
    scored = [t for t in scored if t[0] > scorer.floor]
    scored.sort(key=lambda t: (-t[0], len(t[1]), t[1]))
    return [(round(s, 9), tuple(names[i] for i in c)) for s, c in scored[:top_k]]


@pytest.mark.parametrize("score", ["bound", "sliceline"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pruning_changes_no_result(score, seed):
    """The search with its pruning equals scoring every conjunction."""
    from imagenetx.metrics.discovery import _Scorer

    rng = np.random.default_rng(seed)
    n = 600
    multi = rng.random((n, 5)) < [0.5, 0.3, 0.2, 0.4, 0.1]
    group = rng.integers(0, 4, n)
    cls = group * 3 + rng.integers(0, 3, n)
    slicings = [("f", tuple("pqrst"), multi), ("g", tuple("ABCD"), _onehot(group, 4)),
                ("c", tuple(f"c{i}" for i in range(12)), _onehot(cls, 12))]
    wrong = rng.random(n) < 0.15
    wrong |= multi[:, 1] & (group == 2) & (rng.random(n) < 0.8)
    wrong |= multi[:, 0] & multi[:, 3] & (cls == 4)
    correct = ~wrong
    r = find_slices(correct, slicings, max_order=3, min_support=8, top_k=7,
                    score=score, alpha=0.9, intervals=False)
    scorer = _Scorer(score, n, int(wrong.sum()), r.family, 8, 0.9, 0.05)
    expected = _exhaustive(correct, slicings, 3, 8, 7, scorer)
    assert len(expected) >= 5
    assert [(round(s.score, 9), s.predicates) for s in r.slices] == expected


def test_no_mistakes_no_slices():
    correct, slicings = _two_by_two()
    r = find_slices(np.ones_like(correct), slicings)
    assert r.slices == () and r.errors == 0


# -- on a FiftyOne dataset --------------------------------------------------

def _in_slice(columns, predicates):
    out = np.ones(len(columns["metaclass"]), bool)
    for name, value in predicates:
        if name == "factors":
            out &= np.array([value in (f or ()) for f in columns["factors"]])
        else:
            out &= np.array([m == value for m in columns["metaclass"]])
    return out


@pytest.fixture(scope="module")
def planted():
    """The first 10,000 validation file names, tagged with ImageNet-X; field
    ``planted2`` is the ground truth except on pattern x dog images (all
    wrong); with ../shared, ``planted3`` is ResNet50's predictions except on
    pattern x color x structure images (all wrong)."""
    if fo.dataset_exists(NAME):
        fo.delete_dataset(NAME)
    ds = fo.Dataset(NAME)
    ds.add_samples(fo.Sample(filepath=f"/data/val/ILSVRC2012_val_{i:08d}.JPEG")
                   for i in range(1, N_IMAGES + 1))
    tag_dataset(ds)
    ids, names, truth, factors, meta, proto, split = ds.values(
        ["id", "filepath", "ground_truth.class_index", "imagenetx.factors",
         "imagenetx.metaclass", "imagenetx.prototype", "imagenetx.split"])
    columns = {"factors": factors, "metaclass": meta}
    # val images outside ImageNet-X have no annotation: never counted
    counted = np.array([s is not None and not p for s, p in zip(split, proto)])
    truth = np.array([-1 if t is None else t for t in truth])
    truth[truth < 0] = 0
    info = {"ids": np.array(ids), "counted": counted}
    bad = _in_slice(columns, PLANTED_2)
    write_classifications(ds, "planted2", ids, np.where(bad, (truth + 1) % 1000, truth))
    info["planted2"] = bad
    if (SHARED_DATA / "predictions" / "ResNet50.csv").exists():
        preds = read_predictions("ResNet50")
        model = np.array([preds[os.path.basename(p)][0] for p in names])
        bad3 = _in_slice(columns, PLANTED_3)
        write_classifications(ds, "planted3", ids,
                              np.where(bad3, (truth + 1) % 1000, model))
        info["planted3"] = bad3
        info["model_wrong"] = model != truth
    yield ds, info
    fo.delete_dataset(NAME)


def test_planted_two_way_problem_is_found_first(planted):
    ds, info = planted
    r = discover_slices(ds, "planted2", min_support=5)
    assert r.slicings == ("factors", "metaclass", "class")
    first = r.slices[0]
    assert first.predicates == PLANTED_2
    expected = int((info["planted2"] & info["counted"]).sum())
    assert first.n == first.errors == expected > 50
    assert r.search.errors == expected  # wrong nowhere else
    # one click to exactly its mistakes
    view = r.mistakes_view(1)
    want = set(info["ids"][info["planted2"] & info["counted"]])
    assert set(view.values("id")) == want
    assert set(slice_mistakes_view(ds, "planted2", PLANTED_2).values("id")) == want


@has_resnet50
def test_planted_three_way_problem_on_real_predictions_is_found_first(planted):
    """ResNet50 errs on a quarter of the images; a planted 3-way conjunction
    where it is always wrong still comes first."""
    ds, info = planted
    r = discover_slices(ds, "planted3", min_support=5, max_order=3)
    first = r.slices[0]
    assert first.predicates == PLANTED_3, [s.name for s in r.slices]
    expected = int((info["planted3"] & info["counted"]).sum())
    assert first.n == first.errors == expected
    assert first.p_adjusted < 1e-6
    assert r.search.errors > 2 * expected  # the model's own mistakes too
    assert set(r.mistakes_view(1).values("id")) == set(
        info["ids"][info["planted3"] & info["counted"]])


def test_discover_command(planted):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(["discover", "--dataset", NAME, "--pred-field", "planted2",
                       "--min-support", "5", "--top", "3", "--json"])
    assert status == 0
    result = json.loads(out.getvalue())
    assert result["slices"][0]["slice"] == "factors=pattern x metaclass=dog"
    assert len(result["slices"]) <= 3
    assert result["slicings"] == ["factors", "metaclass", "class"]

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(["discover", "--dataset", NAME, "--pred-field", "planted2",
                       "--slicing", "factors", "metaclass", "--max-order", "2",
                       "--min-support", "5", "--no-intervals"])
    assert status == 0
    lines = out.getvalue().splitlines()
    row = next(line for line in lines if line.lstrip().startswith("1 "))
    assert "factors=pattern x metaclass=dog" in row


@pytest.mark.parametrize("kwargs, message", [
    (dict(slicings=["factors", "weather"]), "Unknown slicing 'weather'"),
    (dict(min_support=20_000), "min support 20,000 is larger than"),
    (dict(max_order=0), "max order must be"),
    (dict(slicings=["factors", "factors"]), "Slicings repeat"),
])
def test_bad_input_gives_one_clear_error(planted, kwargs, message):
    with pytest.raises(ImageNetXError, match=message):
        discover_slices(NAME, "planted2", **kwargs)


def test_missing_prediction_field_is_one_clear_error(planted):
    with pytest.raises(ImageNetXError, match="no prediction field 'resnet'"):
        discover_slices(NAME, "resnet")
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = main(["discover", "--dataset", NAME, "--pred-field", "resnet"])
    assert status == 2
    lines = err.getvalue().strip().splitlines()
    assert len(lines) == 1 and "no prediction field 'resnet'" in lines[0]
    with pytest.raises(ImageNetXError, match="Unknown meta-class 'cats'"):
        slice_mistakes_view(NAME, "planted2", [("metaclass", "cats")])


def test_report_section(planted, tmp_path):
    from imagenetx.present.report import write_report

    out = tmp_path / "r.html"
    summary = write_report(NAME, "planted2", str(out), discover=True)
    path = tmp_path / "r_discovered_slices.csv"
    assert str(path) in summary.csvs
    with open(path) as f:
        import csv

        rows = list(csv.DictReader(f))
    assert rows[0]["model"] == "planted2" and rows[0]["rank"] == "1"
    assert rows[0]["slice"] == "factors=pattern x metaclass=dog"
    assert "slice discovery" in out.read_text()


def test_the_command_line_and_the_app_name_a_library_error_s_parameter_their_way(planted):
    # the library names the parameter; the command line its flag (from its
    # parser), the App the label of the form's input (from resolve_input)
    import fiftyone.operators as foo

    from imagenetx.app.install import PLUGIN_NAME, install_plugin

    with pytest.raises(ImageNetXError, match="pass a smaller `min_support`"):
        discover_slices(NAME, "planted2", min_support=20_000)

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = main(["discover", "--dataset", NAME, "--pred-field", "planted2",
                       "--min-support", "20000"])
    assert status == 2
    assert err.getvalue().strip().endswith("pass a smaller --min-support")

    install_plugin()
    result = foo.execute_operator(
        f"{PLUGIN_NAME}/discover_slices",
        ctx={"dataset": NAME, "params": {"pred_field": "planted2", "min_support": 20_000}})
    assert result.error is None, result.error
    assert result.result["error"].endswith("pass a smaller Fewest images per slice")


def test_operator_lists_slices_and_shows_the_first_ones_mistakes(planted):
    import fiftyone.operators as foo

    from imagenetx.app.install import PLUGIN_NAME, install_plugin

    _, info = planted
    install_plugin()
    result = foo.execute_operator(
        f"{PLUGIN_NAME}/discover_slices",
        ctx={"dataset": NAME, "params": {"pred_field": "planted2", "min_support": 5}})
    assert result.error is None, result.error
    assert result.result["slices"][0]["slice"] == "factors=pattern x metaclass=dog"
    assert result.result["count"] == int((info["planted2"] & info["counted"]).sum())
