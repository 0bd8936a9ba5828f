"""The pure-numpy statistics: the authors' tables reproduced number by
number, the toolkit's other computations run beside ours, and sanity
checks of the intervals and tests the toolkit lacks."""

import math

import numpy as np
import pytest
from scipy import stats

from authors_tables import (
    MODELS,
    model_arrays,
    needs_shared_data,
    read_table,
    val_arrays,
)
from imagenetx import metrics
from imagenetx.analysis.settings import Settings
from imagenetx.benchmarks.imagenet_d.benchmark import ImageNetD
from imagenetx.benchmarks.imagenet_x.benchmark import ImageNetX
from imagenetx.classes.spaces import ClassSubset, ExactClass
from imagenetx.errors import ImageNetXError
from imagenetx.classes.imagenet import METACLASSES, class_table
from imagenetx.benchmarks.imagenet_x.factors import FACTORS

TOL = 1e-9


def _close(ours, theirs: str, what):
    """A table cell (string; empty = undefined) against our value."""
    if theirs == "":
        assert ours is None or (isinstance(ours, float) and math.isnan(ours)), what
    else:
        assert ours is not None and abs(ours - float(theirs)) <= TOL, (
            what, ours, theirs)


def _summaries(which, correct):
    """Our summary of the models of one authors' table (paper mode)."""
    v = val_arrays()
    models = list(MODELS) + (["human"] if correct == "real" else [])
    space = ImageNetX().label_spaces(Settings(real_mode="paper"))[correct]
    columns = {"ground_truth.class_index": list(v["classes"]),
               "imagenetx.real_labels": [list(r) for r in v["real"]]}
    mc = class_table().metaclass_index[v["classes"]]
    scored = {}
    for m in models:
        predicted, confidence = model_arrays(m)
        columns[f"{m}.class_index"] = list(predicted)
        is_correct, counted = space.score(m, columns)
        assert counted.all()
        scored[m] = metrics.Scored(is_correct, v[which], v["classes"],
                                   confidence, mc)
    out = metrics.ErrorRatios(intervals=False).reduce(scored, FACTORS, METACLASSES)
    return {m: s.to_dict() for m, s in out.items()}


@needs_shared_data
@pytest.mark.parametrize("correct", ["class", "metaclass", "real"])
@pytest.mark.parametrize("which", ["top", "multi"])
def test_every_number_of_the_authors_tables(which, correct):
    """accuracies_per_factor.csv and accuracies_per_factor_metaclass.csv:
    every factor, worst_factor, average, worst_100_classes, for every model
    (ReaL in paper mode, which adds the `human` row), to 1e-9."""
    ours = _summaries(which, correct)
    rows = read_table(which, correct)
    assert sorted(r["model"] for r in rows) == sorted(ours)
    for row in rows:
        s = ours[row["model"]]
        assert s["n"] == 46110
        for f in FACTORS:
            _close(s["slices"][f]["accuracy"], row[f], (row["model"], f))
            # the error ratio, from the table's own numbers
            expected = (1 - float(row[f])) / (1 - float(row["average"]))
            assert abs(s["slices"][f]["error_ratio"] - expected) <= TOL
        _close(s["accuracy"], row["average"], "average")
        _close(s["worst_slice_accuracy"], row["worst_factor"], "worst_factor")
        assert s["slices"][s["worst_slice"]]["accuracy"] == s["worst_slice_accuracy"]
        _close(s["worst_100_classes"], row["worst_100_classes"], "worst_100")

    rows = read_table(which, correct, metaclass=True)
    assert len(rows) == len(ours) * len(METACLASSES)
    for row in rows:
        s = ours[row["model"]]["groups"][row["metaclass"]]
        for f in FACTORS:
            _close(s["slices"][f]["accuracy"], row[f],
                   (row["model"], row["metaclass"], f))
        _close(s["accuracy"], row["average"], "average")
        _close(s["worst_slice_accuracy"], row["worst_factor"], "worst_factor")


def test_worst_classes_break_ties_like_the_toolkit():
    """Many tied class accuracies with different class sizes, where the
    tie order changes the answer: same result as the toolkit's pandas code
    run on the same data in this process."""
    import pandas as pd
    from imagenet_x.aggregate import worst_k_class_acc

    rng = np.random.default_rng(3)
    corrects, classes = {}, None
    sizes = rng.choice([2, 4, 6], 1000)
    classes = np.repeat(np.arange(1000), sizes)
    for m in ("a", "b", "c"):
        # 60 classes all wrong, 300 at exactly 0.5 (of 2, 4 or 6 images),
        # the rest all right: the cut at 100 falls inside the tie
        kind = rng.permutation(np.r_[np.zeros(60), np.ones(300), np.full(640, 2)])
        rank = np.concatenate([np.arange(s) for s in sizes])
        per_image = kind[classes]
        corrects[m] = (per_image == 2) | ((per_image == 1) & (rank % 2 == 0))
    frames = [pd.DataFrame({"model": m, "class": classes, "is_correct": c})
              for m, c in corrects.items()]
    theirs = worst_k_class_acc(pd.concat(frames, ignore_index=True), k=100)

    ours = metrics.worst_classes_accuracies(
        list(corrects.values()), [classes] * 3, k=100)
    assert list(ours) == [theirs[m] for m in corrects]
    # the tie order matters here: a stable sort would give other numbers
    stable = []
    for c in corrects.values():
        n, k = metrics.class_counts(c, classes)
        order = np.argsort(k / n, kind="stable")[:100]
        stable.append(k[order].sum() / n[order].sum())
    assert stable != list(ours)
    assert metrics.worst_classes_accuracy(corrects["a"], classes) == \
        worst_k_class_acc(frames[0], k=100)["a"]


@needs_shared_data
def test_calibration_and_prevalence_shift_equal_the_toolkit():
    import pandas as pd
    from imagenet_x.aggregate import estimated_calibration_error
    from imagenet_x.prevalence import Prevalence

    v = val_arrays()
    predicted, conf = model_arrays("ResNet50")
    correct = predicted == v["classes"]
    for which in ("top", "multi"):
        ours = metrics.slice_calibration_errors(correct, conf, v[which])
        for i, f in enumerate(FACTORS):
            rows = v[which][:, i]
            theirs = estimated_calibration_error(correct[rows], conf[rows])
            assert abs(ours[i] - theirs) <= TOL, f
    assert abs(metrics.calibration_error(correct, conf)
               - estimated_calibration_error(correct, conf)) <= TOL

    prevalence = Prevalence.__new__(Prevalence)
    prevalence.factors = list(FACTORS)
    frame = pd.DataFrame(v["top"].astype(int), columns=list(FACTORS))
    frame["model"] = "ResNet50"
    frame["is_correct"] = correct
    prevalence.all_df = frame
    theirs = prevalence.compute_misclassification_shift("ResNet50")
    _, _, shift = metrics.prevalence_shift(correct, v["top"])
    assert np.allclose(shift, theirs["shift"].to_numpy(), rtol=0, atol=TOL)


def test_label_spaces_score_exact_set_and_group_correctness():
    """The label spaces behind every correctness mode, on small columns."""
    cols = {"m.class_index": [1, 2, 3, 4], "imagenetx.real_labels": [[1, 5], [], [7], [4]]}
    spaces = ImageNetX().label_spaces(Settings(real_mode="paper"))
    correct, counted = spaces["real"].score("m", cols)
    assert list(correct) == [True, False, False, True] and counted.all()
    spaces = ImageNetX().label_spaces(Settings(real_mode="clean"))
    correct, counted = spaces["real"].score("m", cols)
    assert list(counted) == [True, False, True, True]
    assert list(metrics.real_correct(np.array([1, 2, 3, 4]), cols["imagenetx.real_labels"])) == [True, False, False, True]
    sets = metrics.RealSets.from_lists(cols["imagenetx.real_labels"])
    assert list(sets.contains(np.array([5, 4, 7, 1]))) == [True, False, True, False]
    # a missing set (a training image) is one clear error
    with pytest.raises(ImageNetXError, match="ReaL labels exist only for validation"):
        spaces["real"].score("m", {**cols, "imagenetx.real_labels": [[1], None, [3], [4]]})

    # meta-class: two "other" classes count as the same meta-class
    mc = class_table().metaclass
    others = [i for i, m in enumerate(mc) if m == "other"][:2]
    dogs = [i for i, m in enumerate(mc) if m == "dog"][:2]
    cols = {"m.class_index": [others[0], dogs[0], dogs[1], None],
            "ground_truth.class_index": [others[1], dogs[1], others[0], 3]}
    correct, counted = spaces["metaclass"].score("m", cols)
    assert list(correct) == [True, True, False, False]
    assert list(counted) == [True, True, True, False]
    correct, _ = spaces["class"].score("m", cols)
    assert list(correct) == [False, False, False, False]

    # ImageNet-D: right when the top-1 index is any index of the class
    space = ImageNetD().label_spaces(Settings())["class"]
    cols = {"m.class_index": [423, 765, 1, 2],
            "ground_truth.imagenet_indices": [[423, 559, 765], [423, 559, 765], [2], [2]]}
    assert list(space.score("m", cols)[0]) == [True, True, False, True]

    # argmax over a class subset (ImageNet-A/R): the stored logits decide
    subset = ClassSubset(ExactClass(), [1, 3], "subset")
    logits = [np.array([0.0, 1.0, 9.0, 2.0]), np.array([0.0, 3.0, 9.0, 2.0])]
    cols = {"m.class_index": [2, 2], "m.logits": logits,
            "ground_truth.class_index": [3, 3]}
    subset.num_outputs = 4
    assert list(subset.score("m", cols)[0]) == [True, False]
    with pytest.raises(ImageNetXError, match=r"`predict\(logits=True\)`"):
        subset.score("m", {**cols, "m.logits": [None, None]})

    with pytest.raises(ImageNetXError, match="0-999"):
        spaces["class"].score("m", {"m.class_index": [1000],
                                    "ground_truth.class_index": [1]})
    with pytest.raises(ImageNetXError, match="Unknown ReaL mode"):
        Settings.create(real_mode="strict")


def _toy(seed=0, n=20000):
    rng = np.random.default_rng(seed)
    factors = np.zeros((n, len(FACTORS)), bool)
    p = np.array([0.3, 0.2, 0.1, 0.1, 0.08, 0.06, 0.05, 0.04, 0.03, 0.02,
                  0.012, 0.004, 0.002, 0.001, 0.001, 0.0])
    factors[np.arange(n), rng.choice(len(FACTORS), n, p=p / p.sum())] = True
    # harder factors: accuracy falls with the factor index
    p_right = 0.85 - 0.03 * factors.argmax(axis=1)
    correct = rng.random(n) < p_right
    return correct, factors


def test_bootstrap_intervals():
    correct, factors = _toy()
    table = metrics.slice_table(correct, factors, FACTORS, intervals=True)
    ok = table.n >= metrics.MIN_RELIABLE_N
    ratio = table.error_ratio
    assert np.all(table.ci_low[ok] < ratio[ok]) and np.all(ratio[ok] < table.ci_high[ok])
    # no image, no interval
    assert table.n[-1] == 0 and np.isnan(table.ci_low[-1]) and np.isnan(table.ci_high[-1])
    assert list(table.few_images) == list(table.n < 50)

    # seeded: the same numbers again; another seed moves them a little
    again = metrics.slice_table(correct, factors, FACTORS, intervals=True)
    assert np.array_equal(again.ci_low, table.ci_low, equal_nan=True)
    other = metrics.slice_table(correct, factors, FACTORS, intervals=True, seed=1)
    assert not np.array_equal(other.ci_low[ok], table.ci_low[ok])
    assert np.allclose(other.ci_low[ok], table.ci_low[ok], rtol=0.05)
    # independent of the order of the images
    perm = np.random.default_rng(9).permutation(len(correct))
    shuffled = metrics.slice_table(correct[perm], factors[perm], FACTORS, intervals=True)
    assert np.array_equal(shuffled.ci_high, table.ci_high, equal_nan=True)
    # a wider level gives a wider interval
    wide = metrics.slice_table(correct, factors, FACTORS, intervals=True, level=0.99)
    assert np.all(wide.ci_low[ok] <= table.ci_low[ok])
    assert np.all(wide.ci_high[ok] >= table.ci_high[ok])


def test_bootstrap_matches_resampling_image_indices():
    """The four-cell multinomial draw is the image bootstrap: compare with
    literally resampling image indices (2,000 times)."""
    correct, factors = _toy(seed=1, n=5000)
    ours = metrics.slice_table(correct, factors, FACTORS, intervals=True, resamples=4000)
    rng = np.random.default_rng(5)
    ratios = []
    for _ in range(2000):
        idx = rng.integers(0, len(correct), len(correct))
        ratios.append(metrics.slice_table(correct[idx], factors[idx], FACTORS).error_ratio)
    with np.errstate(invalid="ignore"):
        low, high = np.nanpercentile(np.array(ratios), [2.5, 97.5], axis=0)
    big = ours.n >= 200
    assert np.allclose(ours.ci_low[big], low[big], rtol=0.03)
    assert np.allclose(ours.ci_high[big], high[big], rtol=0.03)


def test_mcnemar_and_holm():
    correct, factors = _toy()
    same = metrics.mcnemar(correct, correct, factors, FACTORS)
    has = same.n > 0
    assert np.all(same.p[has] == 1.0) and np.all(same.p_holm[has] == 1.0)
    assert same.overall["p"] == 1.0
    assert np.isnan(same.p[~has]).all()

    # exact below 25 discordant pairs, chi2 with continuity correction above
    stat, p, method = metrics.mcnemar_counts([0, 3, 40], [10, 9, 20])
    assert list(method) == ["exact", "exact", "chi2"]
    assert p[0] == pytest.approx(2 * 0.5 ** 10)
    assert p[1] == pytest.approx(2 * stats.binom.cdf(3, 12, 0.5))
    assert stat[2] == pytest.approx((20 - 1) ** 2 / 60)
    assert p[2] == pytest.approx(stats.chi2.sf((20 - 1) ** 2 / 60, 1))

    # Holm: sorted p times (m, m-1, ...), made monotone, capped at 1
    adjusted = metrics.holm(np.array([0.01, 0.04, np.nan, 0.03, 0.5]))
    assert np.allclose(adjusted[[0, 1, 3, 4]], [0.04, 0.09, 0.09, 0.5])
    assert np.isnan(adjusted[2])

    # a model that is right more often on a factor is detected there
    rng = np.random.default_rng(4)
    better = correct | (factors[:, 0] & (rng.random(len(correct)) < 0.5))
    test = metrics.mcnemar(better, correct, factors, FACTORS)
    assert test.p_holm[0] < 1e-6 and test.a_only[0] > 0 and test.b_only[0] == 0
    assert np.all(test.p_holm[1:][test.n[1:] > 0] == 1.0)
    d = test.to_dict()
    assert set(d["slices"]) == set(FACTORS) and d["overall"]["n"] == len(correct)


def test_alexander_govern_is_scipys_per_factor():
    rng = np.random.default_rng(2)
    groups = {"cnn": rng.normal(1.0, 0.1, (4, 16)),
              "vit": rng.normal(1.2, 0.2, (3, 16))}
    groups["vit"][:, 5] += 1.0
    result = metrics.alexander_govern(groups)
    for i in range(16):
        ref = stats.alexandergovern(groups["cnn"][:, i], groups["vit"][:, i])
        assert result["p"][i] == pytest.approx(ref.pvalue)
        assert result["statistic"][i] == pytest.approx(ref.statistic)
    assert result["p"][5] < 0.01
    with pytest.raises(ImageNetXError, match="at least two groups"):
        metrics.alexander_govern({"cnn": groups["cnn"], "one": groups["vit"][:1]})


def test_summary_is_json_ready_and_flags_few_images():
    import json

    correct, factors = _toy()
    classes = np.arange(len(correct)) % 1000
    scored = metrics.Scored(correct, factors, classes,
                            np.full(len(correct), 0.8), classes % len(METACLASSES))
    out = metrics.ErrorRatios().reduce({"m": scored}, FACTORS, METACLASSES)
    out = {m: s.to_dict() for m, s in out.items()}
    text = json.dumps(out, allow_nan=False)  # NaN became None
    s = json.loads(text)["m"]
    assert s["slices"]["multiple_objects"]["accuracy"] is None
    assert s["slices"]["multiple_objects"]["few_images"] is True
    assert s["slices"]["pose"]["few_images"] is False
    assert s["worst_reliable_slice"] in FACTORS
    assert set(s["groups"]) == set(METACLASSES)
    shares = [s["slices"][f]["share_of_images"] for f in FACTORS]
    assert sum(shares) == pytest.approx(1.0)


@pytest.mark.parametrize("old", [{"which": "multi"}, {"metaclass": "dog"},
                                 {"by_metaclass": True}])
def test_settings_have_one_keyword_per_concept(old):
    """The first release's synonyms are unknown settings: the error names
    the keyword and lists the settings, `slicing`, `within` and `by` among them."""
    with pytest.raises(ImageNetXError, match=f"Unknown analysis setting\\(s\\) {next(iter(old))}: "
                       "use .*by.*slicing.*within"):
        Settings.create(**old)
    assert Settings.create(slicing="factors", within=("metaclass", "dog"), by="metaclass") \
        == Settings(slicing="factors", within=("metaclass", "dog"), by="metaclass")
