"""OOD detection, the library layer: the metrics (imagenetx.metrics.ood) equal
scikit-learn's and the authors' own code, written out below as they wrote it,
under each positive-class convention, on built score sets with ties; the
detectors (imagenetx.ood) equal their papers' formulas on built logits and
features; and the ImageNet-X toolkit's ResNet-50 predictions give OpenOOD's
ID accuracy on its ImageNet-1K ID test list.

Fast and offline: no database, no model.
"""

import csv
import json

import numpy as np
import pytest
from scipy.special import logsumexp, softmax
from sklearn import metrics
from sklearn.covariance import EmpiricalCovariance

from conftest import REPO
from imagenetx.errors import ImageNetXError
from imagenetx.metrics.ood import (
    CONVENTIONS,
    aupr,
    auroc,
    fpr_at_tpr,
    imagenet_o_headline,
    ninco_headline,
    ood_metrics,
    openood_headline,
    split_scores,
)
from imagenetx.ood import DETECTORS, Detector, Outputs, detector_names, get_detector
from imagenetx.ood import register_detector
from imagenetx.ood.features import (
    KNNStats,
    ReActStats,
    ViMStats,
    ash_s,
    ash_s_features,
    fit_knn,
    fit_react,
    fit_vim,
    knn,
    react,
    vim,
    vim_dim,
)
from imagenetx.ood.logits import (
    TemperatureStats,
    energy,
    fit_temperature,
    gen,
    max_logit,
    msp,
)

SHARED = REPO.parent / "shared" / "data"


# --- the authors' code, written out ------------------------------------------


def openood_auc_and_fpr_recall(conf, label, tpr_th):
    """Jingkang50/OpenOOD openood/evaluators/metrics.py:40-61 (v1.5, at
    3c35632), as written."""
    # following convention in ML we treat OOD as positive
    ood_indicator = np.zeros_like(label)
    ood_indicator[label == -1] = 1

    # in the postprocessor we assume ID samples will have larger
    # "conf" values than OOD samples
    # therefore here we need to negate the "conf" values
    fpr_list, tpr_list, thresholds = metrics.roc_curve(ood_indicator, -conf)
    fpr = fpr_list[np.argmax(tpr_list >= tpr_th)]

    precision_in, recall_in, thresholds_in \
        = metrics.precision_recall_curve(1 - ood_indicator, conf)

    precision_out, recall_out, thresholds_out \
        = metrics.precision_recall_curve(ood_indicator, -conf)

    auroc = metrics.auc(fpr_list, tpr_list)
    aupr_in = metrics.auc(recall_in, precision_in)
    aupr_out = metrics.auc(recall_out, precision_out)

    return auroc, aupr_in, aupr_out, fpr


def ninco_auroc_ood(values_in, values_out):
    """j-cb/NINCO utils.py:215-233, as written."""
    if len(values_in) * len(values_out) == 0:
        return np.nan
    y_true = len(values_in) * [1] + len(values_out) * [0]
    y_score = np.nan_to_num(np.concatenate([values_in, values_out]).flatten())
    return metrics.roc_auc_score(y_true, y_score)


def ninco_fpr_at_tpr(values_in, values_out, tpr):
    """j-cb/NINCO utils.py:236-256, as written."""
    if len(values_in) * len(values_out) == 0:
        return np.nan
    t = np.quantile(values_in, (1 - tpr))
    fpr = (values_out >= t).mean()
    return fpr


def stable_cumsum(arr):
    # scikit-learn's extmath.stable_cumsum, which calibration_tools.py calls
    return np.cumsum(arr, dtype=np.float64)


def hendrycks_fpr_and_fdr_at_recall(y_true, y_score, recall_level=0.95, pos_label=None):
    """hendrycks/natural-adv-examples calibration_tools.py:117-157, as written."""
    classes = np.unique(y_true)
    if (pos_label is None and
            not (np.array_equal(classes, [0, 1]) or
                 np.array_equal(classes, [-1, 1]) or
                 np.array_equal(classes, [0]) or
                 np.array_equal(classes, [-1]) or
                 np.array_equal(classes, [1]))):
        raise ValueError("Data is not binary and pos_label is not specified")
    elif pos_label is None:
        pos_label = 1.

    # make y_true a boolean vector
    y_true = (y_true == pos_label)

    # sort scores and corresponding truth values
    desc_score_indices = np.argsort(y_score, kind="mergesort")[::-1]
    y_score = y_score[desc_score_indices]
    y_true = y_true[desc_score_indices]

    distinct_value_indices = np.where(np.diff(y_score))[0]
    threshold_idxs = np.r_[distinct_value_indices, y_true.size - 1]

    # accumulate the true positives with decreasing threshold
    tps = stable_cumsum(y_true)[threshold_idxs]
    fps = 1 + threshold_idxs - tps      # add one because of zero-based indexing

    thresholds = y_score[threshold_idxs]

    recall = tps / tps[-1]

    last_ind = tps.searchsorted(tps[-1])
    sl = slice(last_ind, None, -1)      # [last_ind::-1]
    recall, fps, tps, thresholds = np.r_[recall[sl], 1], np.r_[fps[sl], 0], np.r_[tps[sl], 0], thresholds[sl]

    cutoff = np.argmin(np.abs(recall - recall_level))

    return fps[cutoff] / (np.sum(np.logical_not(y_true)))


def hendrycks_get_measures(_pos, _neg, recall_level=0.95):
    """calibration_tools.py:159-170, as written: ``_pos`` the anomalies'
    scores (``-MSP``), ``_neg`` the ID images'."""
    pos = np.array(_pos[:]).reshape((-1, 1))
    neg = np.array(_neg[:]).reshape((-1, 1))
    examples = np.squeeze(np.vstack((pos, neg)))
    labels = np.zeros(len(examples), dtype=np.int32)
    labels[:len(pos)] += 1

    auroc = metrics.roc_auc_score(labels, examples)
    aupr = metrics.average_precision_score(labels, examples)
    fpr = hendrycks_fpr_and_fdr_at_recall(labels, examples, recall_level)

    return auroc, aupr, fpr


# --- built score sets ----------------------------------------------------------


def _sets():
    """(name, id_scores, ood_scores): continuous, heavy ties, all equal,
    perfectly separated, reversed, one OOD image, a collinear ROC."""
    rng = np.random.default_rng(7)
    yield "continuous", rng.normal(1.0, 1.0, 400), rng.normal(0.0, 1.0, 150)
    yield "ties", rng.integers(0, 6, 300).astype(float), rng.integers(-2, 4, 120).astype(float)
    yield "all_equal", np.full(50, 0.3), np.full(20, 0.3)
    yield "separated", rng.uniform(2, 3, 60), rng.uniform(0, 1, 40)
    yield "reversed", rng.uniform(0, 1, 60), rng.uniform(2, 3, 40)
    yield "one_ood", rng.normal(size=80), np.array([0.1])
    # one ID and one OOD image per score: a diagonal of collinear ROC points
    # that roc_curve drops, and OpenOOD's FPR@95 with them (0.769, not 0.731)
    yield ("collinear", np.r_[np.arange(100.0), rng.uniform(100, 120, 30)],
           np.r_[np.arange(100.0), rng.uniform(-20, 0, 10)])
    for k in range(12):
        n_id, n_ood, levels = rng.integers(1, 90), rng.integers(1, 90), rng.integers(1, 9)
        yield (f"random_ties_{k}", rng.integers(0, levels, n_id).astype(float),
               rng.integers(0, levels, n_ood).astype(float) - rng.integers(0, 2))


SETS = list(_sets())
IDS = [name for name, *_ in SETS]


def _conf_label(id_scores, ood_scores):
    conf = np.concatenate([id_scores, ood_scores])
    label = np.r_[np.zeros(len(id_scores), dtype=np.int64), -np.ones(len(ood_scores), np.int64)]
    return conf, label


@pytest.mark.parametrize("name,id_scores,ood_scores", SETS, ids=IDS)
def test_openood_convention_is_openoods_evaluator(name, id_scores, ood_scores):
    conf, label = _conf_label(id_scores, ood_scores)
    ref_auroc, ref_in, ref_out, ref_fpr = openood_auc_and_fpr_recall(conf, label, 0.95)
    m = ood_metrics(id_scores, ood_scores, "openood", resamples=0)
    assert m.positive == "ood" and m.aupr_method == "trapezoid"
    assert m.fpr95 == ref_fpr  # the same ROC point, exactly
    assert m.auroc == pytest.approx(ref_auroc, abs=1e-12)
    assert m.aupr_in == pytest.approx(ref_in, abs=1e-12)
    assert m.aupr_out == pytest.approx(ref_out, abs=1e-12)


@pytest.mark.parametrize("name,id_scores,ood_scores", SETS, ids=IDS)
def test_ninco_convention_is_nincos_code(name, id_scores, ood_scores):
    m = ood_metrics(id_scores, ood_scores, "ninco", resamples=0)
    assert m.positive == "id"
    assert m.fpr95 == ninco_fpr_at_tpr(id_scores, ood_scores, 0.95)
    assert m.auroc == pytest.approx(ninco_auroc_ood(id_scores, ood_scores), abs=1e-12)
    # NINCO reports no AUPR: scikit-learn's average precision, each class positive
    is_id = np.r_[np.ones(len(id_scores)), np.zeros(len(ood_scores))]
    conf = np.r_[id_scores, ood_scores]
    assert m.aupr_in == pytest.approx(metrics.average_precision_score(is_id, conf), abs=1e-12)
    assert m.aupr_out == pytest.approx(
        metrics.average_precision_score(1 - is_id, -conf), abs=1e-12)


@pytest.mark.parametrize("name,id_scores,ood_scores", SETS, ids=IDS)
def test_hendrycks_convention_is_hendrycks_get_measures(name, id_scores, ood_scores):
    # anomalies positive, scored -confidence (eval_many_models.py:103-110)
    ref_auroc, ref_aupr, ref_fpr = hendrycks_get_measures(-ood_scores, -id_scores)
    m = ood_metrics(id_scores, ood_scores, "hendrycks", resamples=0)
    assert m.positive == "ood" and m.aupr_method == "average_precision"
    assert m.fpr95 == ref_fpr
    assert m.auroc == pytest.approx(ref_auroc, abs=1e-12)
    assert m.aupr_out == pytest.approx(ref_aupr, abs=1e-12)


@pytest.mark.parametrize("name,id_scores,ood_scores", SETS, ids=IDS)
def test_auroc_and_auprs_under_either_positive_class(name, id_scores, ood_scores):
    is_id = np.r_[np.ones(len(id_scores)), np.zeros(len(ood_scores))]
    conf = np.r_[id_scores, ood_scores]
    value = auroc(id_scores, ood_scores)
    assert value == pytest.approx(metrics.roc_auc_score(is_id, conf), abs=1e-12)  # ID positive
    assert value == pytest.approx(metrics.roc_auc_score(1 - is_id, -conf), abs=1e-12)  # OOD
    for positive, y, s in (("id", is_id, conf), ("ood", 1 - is_id, -conf)):
        p, r, _ = metrics.precision_recall_curve(y, s)
        assert aupr(id_scores, ood_scores, positive, "trapezoid") == pytest.approx(
            metrics.auc(r, p), abs=1e-12)
        assert aupr(id_scores, ood_scores, positive, "average_precision") == pytest.approx(
            metrics.average_precision_score(y, s), abs=1e-12)


def test_openoods_fpr_reads_the_roc_curve_without_its_collinear_points():
    name, id_scores, ood_scores = SETS[IDS.index("collinear")]
    conf, label = _conf_label(id_scores, ood_scores)
    full_fpr, full_tpr, _ = metrics.roc_curve(label == -1, -conf, drop_intermediate=False)
    kept = fpr_at_tpr(id_scores, ood_scores, "openood")
    assert kept == openood_auc_and_fpr_recall(conf, label, 0.95)[3]
    assert kept != full_fpr[np.argmax(full_tpr >= 0.95)]


def test_all_equal_scores_are_chance_and_flag_everything():
    m = ood_metrics(np.zeros(30), np.zeros(10), resamples=0)
    assert m.auroc == 0.5 and m.fpr95 == 1.0
    assert m.aupr_in == pytest.approx((1 + 0.75) / 2)  # trapezoid from (0, 1) to (1, 0.75)
    assert ood_metrics(np.zeros(30), np.zeros(10), "hendrycks", resamples=0).aupr_in == 0.75
    assert fpr_at_tpr(np.zeros(30), np.zeros(10), "ninco") == 1.0


def test_the_conventions_disagree_where_the_papers_do():
    # OOD spread out, ID tight: catching 95 % of the OOD flags few ID images,
    # keeping 95 % of the ID accepts few OOD images, but not the same few
    rng = np.random.default_rng(1)
    id_scores, ood_scores = rng.normal(0, 0.2, 1000), rng.normal(-1, 1.0, 1000)
    openood = fpr_at_tpr(id_scores, ood_scores, "openood")
    ninco = fpr_at_tpr(id_scores, ood_scores, "ninco")
    assert abs(openood - ninco) > 0.1
    # ten OOD images, the last tied with an ID one: OpenOOD reads the first
    # point at recall >= 0.95 (1.0, the tie included), Hendrycks et al. the
    # nearest to 0.95 (0.9 is nearer in floating point), before the tie
    id_scores, ood_scores = np.arange(10, 30.0), np.arange(10.0)
    ood_scores[-1] = 25.0
    assert fpr_at_tpr(id_scores, ood_scores, "openood") == 16 / 20
    assert fpr_at_tpr(id_scores, ood_scores, "hendrycks") == 15 / 20


def test_errors_are_one_line():
    cases = [
        (lambda: ood_metrics([0.1, 0.2], []), r"^No OOD samples: `ood_scores` is empty"),
        (lambda: ood_metrics([], [0.1]), r"^No ID samples"),
        (lambda: ood_metrics([0.1, np.nan], [0.2]), r"`id_scores` holds 1 NaN or infinite"),
        (lambda: auroc([0.1], [np.inf]), r"`ood_scores` holds 1 NaN"),
        (lambda: split_scores([0.1, 0.2, 0.3], [True, False]),
         r"`scores` has 3 values and `is_ood` 2"),
        (lambda: ninco_headline([0.1], [0.2, 0.3], ["a"]), r"`ood_classes` has 1 labels for 2"),
        (lambda: ood_metrics([0.1], [0.2], "openood_v1"), r"Unknown OOD metric convention"),
        (lambda: aupr([0.1], [0.2], positive="in"), r"`positive` is 'in'"),
    ]
    for call, pattern in cases:
        with pytest.raises(ImageNetXError, match=pattern) as e:
            call()
        assert "\n" not in str(e.value)


def test_each_convention_says_its_positive_class_and_source():
    assert {k: (c.positive, c.aupr) for k, c in CONVENTIONS.items()} == {
        "openood": ("ood", "trapezoid"), "ninco": ("id", "average_precision"),
        "hendrycks": ("ood", "average_precision")}
    assert all(".py" in c.source for c in CONVENTIONS.values())


def test_split_scores_reads_openoods_labels():
    conf = np.array([0.9, 0.1, 0.8, 0.2])
    id_scores, ood_scores = split_scores(conf, np.array([0, -1, 3, -1]) == -1)
    assert id_scores.tolist() == [0.9, 0.8] and ood_scores.tolist() == [0.1, 0.2]


def test_bootstrap_intervals_hold_the_point_and_repeat_with_the_seed():
    rng = np.random.default_rng(3)
    id_scores, ood_scores = rng.normal(1, 1, 300), rng.normal(0, 1, 200)
    a = ood_metrics(id_scores, ood_scores, resamples=200, seed=5)
    b = ood_metrics(id_scores, ood_scores, resamples=200, seed=5)
    c = ood_metrics(id_scores, ood_scores, resamples=200, seed=6)
    assert a.intervals == b.intervals and a.intervals != c.intervals
    for name in ("auroc", "fpr95", "aupr_in", "aupr_out"):
        low, high = a.intervals[name]
        assert low <= getattr(a, name) <= high and low < high
    d = a.to_dict()
    assert {"auroc", "fpr95", "aupr_in", "aupr_out", "positive", "convention"} <= set(d)
    assert d["positive"] == "ood" and d["convention"] == "openood"
    assert d["interval"] == {"level": 0.95, "resamples": 200, "seed": 5}
    json.dumps(d)
    assert "intervals" not in ood_metrics(id_scores, ood_scores, resamples=0).to_dict()


def test_bootstrap_is_stratified_by_class():
    # one OOD image: every resample keeps exactly one, so FPR@95 (OOD
    # positive) is the share of ID images at or below it, never undefined
    id_scores = np.linspace(0, 1, 101)
    m = ood_metrics(id_scores, [0.5], resamples=100, seed=0)
    assert m.n_ood == 1 and all(np.isfinite(v) for lh in m.intervals.values() for v in lh)


# --- the headlines ---------------------------------------------------------------


def test_ninco_headline_is_the_mean_of_per_class_aurocs():
    rng = np.random.default_rng(4)
    id_scores = rng.normal(1, 1, 200)
    classes = np.repeat(["a", "b", "c"], [10, 40, 5])
    ood_scores = rng.normal(0, 1, len(classes)) + (classes == "c") * 2
    h = ninco_headline(id_scores, ood_scores, classes)
    per_class = [ninco_auroc_ood(id_scores, ood_scores[classes == c]) for c in "abc"]
    # evaluate.py:272-283: the classes weigh equally, whatever their size
    assert h.values["auroc"] == pytest.approx(np.mean(per_class), abs=1e-12)
    assert h.values["auroc"] != pytest.approx(ninco_auroc_ood(id_scores, ood_scores))
    assert h.values["fpr95"] == pytest.approx(np.mean(
        [ninco_fpr_at_tpr(id_scores, ood_scores[classes == c], 0.95) for c in "abc"]))
    assert set(h.to_dict()["parts"]) == {"a", "b", "c"}


def test_imagenet_o_headline_is_hendrycks_aupr_of_masked_msp():
    rng = np.random.default_rng(5)
    classes = np.sort(rng.choice(1000, 200, replace=False))
    id_logits = rng.normal(0, 1, (300, 1000))
    id_logits[np.arange(300), rng.choice(classes, 300)] += 6
    ood_logits = rng.normal(0, 1, (100, 1000)) * 1.5
    h = imagenet_o_headline(id_logits, ood_logits, classes)
    mask = np.zeros(1000, bool)
    mask[classes] = True
    # eval_many_models.py:83-110: softmax over the masked logits, anomalies positive
    conf_in = softmax(id_logits[:, mask], axis=1).max(1)
    conf_out = softmax(ood_logits[:, mask], axis=1).max(1)
    ref_auroc, ref_aupr, ref_fpr = hendrycks_get_measures(-conf_out, -conf_in)
    assert h.values["aupr"] == pytest.approx(ref_aupr, abs=1e-12)
    assert h.values["auroc"] == pytest.approx(ref_auroc, abs=1e-12)
    assert h.values["fpr95"] == ref_fpr
    with pytest.raises(ImageNetXError, match="distinct"):
        imagenet_o_headline(id_logits, ood_logits, [1, 1, 2])


def test_openood_headline_is_the_mean_over_near_and_over_far():
    rng = np.random.default_rng(6)
    id_scores = rng.normal(1, 1, 300)
    sets = {name: ood_metrics(id_scores, rng.normal(shift, 1, 100), resamples=0)
            for name, shift in (("ssb_hard", 0.8), ("ninco", 0.5), ("inaturalist", -1.0),
                                ("textures", -0.5), ("openimage_o", 0.0))}
    near = {k: sets[k] for k in ("ssb_hard", "ninco")}
    far = {k: sets[k] for k in ("inaturalist", "textures", "openimage_o")}
    h = openood_headline(near, far)
    assert h.values["near_auroc"] == pytest.approx(np.mean([m.auroc for m in near.values()]))
    assert h.values["far_auroc"] == pytest.approx(np.mean([m.auroc for m in far.values()]))
    assert h.values["far_fpr95"] == pytest.approx(np.mean([m.fpr95 for m in far.values()]))
    ninco = {"ninco": ood_metrics(id_scores, rng.normal(0, 1, 50), "ninco", resamples=0)}
    with pytest.raises(ImageNetXError, match="convention='openood'"):
        openood_headline(ninco, far)


# --- detectors from logits ---------------------------------------------------------


@pytest.fixture(scope="module")
def logits():
    rng = np.random.default_rng(11)
    return rng.normal(0, 3, (64, 20))


def test_msp_and_max_logit(logits):
    assert np.allclose(msp(logits), softmax(logits, axis=1).max(1), rtol=1e-13)
    assert np.array_equal(max_logit(logits), logits.max(1))
    # MSP is unchanged by a constant shift of the logits
    assert np.allclose(msp(logits + 37.5), msp(logits), rtol=1e-12)


def test_energy_with_temperature(logits):
    for t in (1.0, 0.5, 4.0):
        assert np.allclose(energy(logits, t), t * logsumexp(logits / t, axis=1), rtol=1e-13)
        # shifting every logit by c shifts the energy by c
        assert np.allclose(energy(logits + 5.0, t), energy(logits, t) + 5.0, rtol=1e-13)


def test_logit_detectors_refuse_meaningless_options(logits):
    with pytest.raises(ImageNetXError, match="`temperature` is 0"):
        energy(logits, 0)
    with pytest.raises(ImageNetXError, match="`m` is 0"):
        gen(logits, 0.1, 0)


@pytest.mark.parametrize("gamma,m", [(0.1, 100), (0.1, 5), (0.5, 10), (2.0, 1)])
def test_gen_is_the_generalized_entropy_of_the_top_m(logits, gamma, m):
    p = softmax(logits, axis=1)
    expected = []
    for row in p:
        top = np.sort(row)[::-1][:m]  # m above the class count: all of them
        expected.append(-np.sum(top ** gamma * (1 - top) ** gamma))
    assert np.allclose(gen(logits, gamma, m), expected, rtol=1e-12)


def test_temperature_scaling_recovers_a_planted_temperature():
    rng = np.random.default_rng(12)
    n, c, planted = 20000, 10, 2.5
    calibrated = rng.normal(0, 2, (n, c))
    cdf = softmax(calibrated, axis=1).cumsum(1)
    labels = (rng.uniform(size=(n, 1)) > cdf).sum(1)  # drawn from the calibrated softmax
    labels = np.minimum(labels, c - 1)
    stats = fit_temperature(calibrated * planted, labels)  # an overconfident model
    assert stats.temperature == pytest.approx(planted, rel=0.03)
    assert stats.nll < stats.nll_before
    # the fit is the NLL's minimum

    def nll(t):
        z = calibrated * planted / t
        return np.mean(logsumexp(z, axis=1) - z[np.arange(n), labels])

    assert nll(stats.temperature) <= min(nll(stats.temperature * 0.99),
                                         nll(stats.temperature * 1.01))
    detector = get_detector("temp_scaling")
    assert detector.fit_on == "id_val"
    fitted = detector.fit(Outputs(logits=calibrated * planted, labels=labels))
    scores = detector.score(Outputs(logits=calibrated[:5] * planted), fitted)
    assert np.allclose(scores, msp(calibrated[:5] * planted, fitted.temperature))
    assert TemperatureStats.from_dict(json.loads(json.dumps(fitted.to_dict()))) == fitted


def test_temperature_is_never_fitted_on_ood_labels(logits):
    with pytest.raises(ImageNetXError, match=r"never on OOD \(label -1\)"):
        fit_temperature(logits, -np.ones(len(logits), dtype=int))
    with pytest.raises(ImageNetXError, match="`labels` has 3 entries"):
        fit_temperature(logits, [0, 1, 2])
    with pytest.raises(ImageNetXError, match="scores with its fitted statistics"):
        get_detector("temp_scaling").score(Outputs(logits=logits))


# --- detectors from features ------------------------------------------------------


@pytest.fixture(scope="module")
def head():
    """A ReLU feature space of 16 dimensions, a 6-class head, ID training
    and test features."""
    rng = np.random.default_rng(13)
    w = rng.normal(0, 0.5, (6, 16))
    b = rng.normal(0, 0.1, 6)
    train = np.maximum(rng.normal(0.5, 1, (400, 16)), 0)
    test = np.maximum(rng.normal(0.3, 1.5, (50, 16)), 0)
    return w, b, train, test


def test_react_clips_at_the_percentile_then_takes_the_energy(head):
    w, b, train, test = head
    stats = fit_react(train, 90)
    assert stats.threshold == np.percentile(train.flatten(), 90)
    expected = logsumexp(np.clip(test, None, stats.threshold) @ w.T + b, axis=1)
    assert np.allclose(react(test, w, b, stats), expected, rtol=1e-13)
    assert np.any(test > stats.threshold)  # the clip bites


def _ash_s_as_written(x, percentile):
    """OpenOOD networks/ash_net.py:62-82 (``ash_s``), on numpy: the top-k by
    a stable sort stands in for torch.topk."""
    x = x.copy()
    b, c = x.shape
    s1 = x.sum(axis=1)
    n = c
    k = n - int(np.round(n * percentile / 100.0))
    i = np.argsort(-x, axis=1, kind="stable")[:, :k]
    v = np.take_along_axis(x, i, axis=1)
    t = np.zeros_like(x)
    np.put_along_axis(t, i, v, axis=1)
    s2 = t.sum(axis=1)
    scale = s1 / s2
    return t * np.exp(scale[:, None])


@pytest.mark.parametrize("percentile", [65, 90])
def test_ash_s_prunes_and_sharpens(head, percentile):
    w, b, _, test = head
    shaped = ash_s_features(test, percentile)
    assert np.allclose(shaped, _ash_s_as_written(test, percentile), rtol=1e-12)
    k = 16 - int(np.round(16 * percentile / 100))
    assert ((shaped != 0).sum(1) <= k).all()
    assert np.allclose(ash_s(test, w, b, percentile),
                       logsumexp(_ash_s_as_written(test, percentile) @ w.T + b, axis=1))


def test_ash_s_matches_openoods_torch_code(head):
    torch = pytest.importorskip("torch")
    _, _, _, test = head
    x = torch.from_numpy(test.copy()).view(len(test), -1, 1, 1)
    # ash_net.py:62-82, as written
    b, c, h, w = x.shape
    s1 = x.sum(dim=[1, 2, 3])
    n = x.shape[1:].numel()
    k = n - int(np.round(n * 90 / 100.0))
    t = x.view((b, c * h * w))
    v, i = torch.topk(t, k, dim=1)
    t.zero_().scatter_(dim=1, index=i, src=v)
    s2 = x.sum(dim=[1, 2, 3])
    scale = s1 / s2
    x = x * torch.exp(scale[:, None, None, None])
    assert np.allclose(ash_s_features(test, 90), x.view(b, -1).numpy(), rtol=1e-12)


def test_vim_is_openoods_vim(head):
    w, b, train, test = head
    dim = 8
    stats = fit_vim(train, w, b, dim)
    # vim_postprocessor.py:39-65 and 69-76, as written
    logit_id_train = train @ w.T + b
    u = -np.matmul(np.linalg.pinv(w), b)
    ec = EmpiricalCovariance(assume_centered=True)
    ec.fit(train - u)
    eig_vals, eigen_vectors = np.linalg.eig(ec.covariance_)
    NS = np.ascontiguousarray((eigen_vectors.T[np.argsort(eig_vals * -1)[dim:]]).T)
    vlogit_id_train = np.linalg.norm(np.matmul(train - u, NS), axis=-1)
    alpha = logit_id_train.max(axis=-1).mean() / vlogit_id_train.mean()
    logit_ood = test @ w.T + b
    energy_ood = logsumexp(logit_ood, axis=-1)
    vlogit_ood = np.linalg.norm(np.matmul(test - u, NS), axis=-1) * alpha
    score_ood = -vlogit_ood + energy_ood

    assert np.allclose(stats.origin, u) and stats.alpha == pytest.approx(alpha, rel=1e-10)
    assert np.allclose(vim(test, w, b, stats), score_ood, rtol=1e-10)
    # the residual space is orthogonal to the principal one
    assert np.allclose(stats.residual.T @ stats.residual, np.eye(16 - dim), atol=1e-10)
    back = ViMStats.from_dict(json.loads(json.dumps(stats.to_dict())))
    assert back.dim == dim and np.allclose(vim(test, w, b, back), score_ood, rtol=1e-10)
    assert (vim_dim(2048), vim_dim(768), vim_dim(512)) == (1000, 512, 256)
    with pytest.raises(ImageNetXError, match="leaves no residual space"):
        fit_vim(train, w, b, 16)


def test_knn_is_minus_the_kth_neighbour_distance(head):
    _, _, train, test = head
    stats = fit_knn(train)
    z = test / np.linalg.norm(test, axis=1, keepdims=True)
    bank = train / np.linalg.norm(train, axis=1, keepdims=True)
    dists = np.linalg.norm(z[:, None, :] - bank[None, :, :], axis=2)
    for k in (1, 5, 50):
        assert np.allclose(knn(test, stats, k), -np.sort(dists, axis=1)[:, k - 1], atol=1e-7)
    # OpenOOD's -squared distance (knn_postprocessor.py:50-54) orders them alike
    assert np.array_equal(np.argsort(knn(test, stats, 5)),
                          np.argsort(-np.sort(dists ** 2, axis=1)[:, 4]))
    assert KNNStats.from_dict(json.loads(json.dumps(stats.to_dict()))).bank.shape == (400, 16)
    with pytest.raises(ImageNetXError, match="`k` is 401"):
        knn(test, stats, 401)


def test_every_builtin_detector_fits_and_scores_through_the_registry(head):
    w, b, train, test = head
    fit_split = Outputs(logits=train @ w.T + b, features=train, weight=w, bias=b,
                        labels=np.argmax(train @ w.T + b, 1))
    scored = Outputs(logits=test @ w.T + b, features=test, weight=w, bias=b)
    assert detector_names()[:9] == ["msp", "max_logit", "energy", "gen", "temp_scaling",
                                    "react", "ash_s", "vim", "knn"]
    for name in detector_names()[:9]:
        options = {"dim": 8} if name == "vim" else {"k": 5} if name == "knn" else {}
        detector = get_detector(name, **options)
        assert detector.name == name
        # temperature scaling on labels that are the argmax has no finite optimum
        if name == "temp_scaling":
            continue
        stats = detector.fit(fit_split)
        scores = detector.score(scored, stats)
        assert scores.shape == (50,) and np.isfinite(scores).all()
        if stats is not None:
            assert type(stats).from_dict(stats.to_dict()).to_dict() == stats.to_dict()
    with pytest.raises(ImageNetXError, match="needs the run's features"):
        get_detector("react").score(Outputs(logits=test @ w.T + b), ReActStats(1.0, 90.0))
    with pytest.raises(ImageNetXError, match=r"^Unknown OOD detector 'odin': use one of msp"):
        get_detector("odin")


def test_a_users_detector_registers_like_a_probe():
    @register_detector("neg_entropy")
    class NegEntropy(Detector):
        name = "neg_entropy"

        def score(self, outputs, stats=None):
            p = softmax(outputs.logits, axis=1)
            return np.sum(p * np.log(p), axis=1)

    try:
        assert "neg_entropy" in detector_names()
        z = np.array([[5.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
        scores = get_detector("neg-entropy").score(Outputs(logits=z))
        assert scores[0] > scores[1]  # the confident image is more in-distribution
        m = ood_metrics(scores[:1], scores[1:], resamples=0)
        assert m.auroc == 1.0
    finally:
        DETECTORS.unregister("neg_entropy")
    with pytest.raises(ImageNetXError, match="letters, digits and underscores"):
        register_detector("bad name", NegEntropy)


# --- real data: the toolkit's ResNet-50 on OpenOOD's ID test list -------------------


PREDICTIONS = SHARED / "imagenetx" / "predictions" / "ResNet50.csv"
ID_TEST = SHARED / "openood" / "benchmark_imglist" / "imagenet" / "test_imagenet.txt"


@pytest.mark.skipif(not (PREDICTIONS.exists() and ID_TEST.exists()),
                    reason="../shared/data has no ResNet-50 predictions or OpenOOD lists")
def test_resnet50_top1_on_openoods_id_test_list():
    with open(PREDICTIONS, newline="") as f:
        predicted = {row["file_name"]: int(row["predicted_class"]) for row in csv.DictReader(f)}
    right = total = 0
    for line in ID_TEST.read_text().splitlines():
        path, label = line.split()
        right += predicted[path.rsplit("/", 1)[1]] == int(label)
        total += 1
    assert total == 45000
    # OpenOOD's leaderboard: torchvision ResNet-50, ID accuracy 76.18
    assert round(100 * right / total, 2) == 76.17
