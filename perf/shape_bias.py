"""Shape bias of 20 prediction fields over the 1,280 cue-conflict stimuli
(target: under 0.2 s warm), against model-vs-human's own computation in
the same run.

The baseline is model-vs-human's ``ShapeBias.analysis`` (pandas: the
texture category parsed from each image name with ``apply``, rows
filtered, responses compared) run per field over a DataFrame of the same
responses, read from the dataset with one ``values()`` call; it computes
the 20 overall shape biases only. ``shape_bias`` also computes the 16
per-category biases of each field, the pooled humans, and 1,000-resample
bootstrap intervals for all of them. Both are timed warm (a first call
first), best of ``--repeats``.

Usage: shape_bias.py [--dir ../shared/data/cue-conflict] [--repeats 5]
"""

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _env  # noqa: E402,F401

import pandas as pd  # noqa: E402

from imagenetx.analysis.shape_bias import shape_bias  # noqa: E402
from imagenetx.benchmarks.cue_conflict import load_cue_conflict  # noqa: E402
from imagenetx.benchmarks.cue_conflict.responses import import_responses  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "cue-conflict"
FIELDS = 20


def model_vs_human(df: pd.DataFrame, field: str) -> float:
    """model-vs-human's ShapeBias.analysis on one subject's responses."""
    df = df.copy()
    df["correct_texture"] = df["imagename"].apply(
        lambda name: "".join(c for c in name.split("_")[-1].split(".")[0].split("-")[-1]
                             if not c.isdigit()))
    df["correct_shape"] = df["category"]
    df2 = df.loc[df.correct_shape != df.correct_texture]
    shape = len(df2.loc[df2[field] == df2.correct_shape]) / len(df)
    texture = len(df2.loc[df2[field] == df2.correct_texture]) / len(df)
    return shape / (shape + texture)


def baseline(dataset, fields):
    names, shapes, *labels = dataset.values(
        ["filepath", "shape", *(f"{f}.label" for f in fields)])
    df = pd.DataFrame({"imagename": [os.path.basename(p) for p in names],
                       "category": shapes, **dict(zip(fields, labels))})
    return {f: model_vs_human(df, f) for f in fields}


def best(fn, repeats):
    fn()  # warm
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", default=str(SHARED))
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    _env.drop_database_at_exit()

    root = Path(args.dir)
    dataset, _ = load_cue_conflict(str(root / "images"), name="bench-cue", overwrite=True)
    import_responses(dataset, sorted((root / "responses").glob("*.csv")))
    fields = [f for f in dataset.get_field_schema() if f.startswith(("subject_", "resnet50",
              "alexnet", "vgg", "googlenet"))]
    for i in range(FIELDS - len(fields)):  # copies up to 20 fields
        dataset.clone_sample_field(fields[i], f"copy_{i}")
    fields = fields + [f"copy_{i}" for i in range(FIELDS - len(fields))]

    t_base, expected = best(lambda: baseline(dataset, fields), args.repeats)
    t_ours, result = best(lambda: shape_bias(dataset, fields), args.repeats)
    for f in fields:
        assert abs(result.models[f][0].shape_bias - expected[f]) < 1e-12, f
    print(f"{len(fields)} fields x {len(dataset):,} images, warm, best of {args.repeats}")
    print(f"model-vs-human ShapeBias (pandas, overall only): {t_base * 1000:.1f} ms")
    print(f"imagenetx shape_bias (+16 categories, humans, intervals): {t_ours * 1000:.1f} ms")
    print(f"ratio ours / baseline: {t_ours / t_base:.2f}; target < 0.2 s -> "
          f"{'met' if t_ours < 0.2 else 'NOT met'}")


if __name__ == "__main__":
    main()
