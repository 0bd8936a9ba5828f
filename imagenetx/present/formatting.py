"""Readable text and CSV of :func:`imagenetx.analysis.compute_ratios`
results (what ``imagenetx ratios`` prints)."""

import csv
import io

from imagenetx.classes.imagenet import METACLASSES
from imagenetx.benchmarks.imagenet_x.factors import FACTORS

CSV_COLUMNS = (
    "model", "metaclass", "factor", "n", "correct", "accuracy",
    "error_ratio", "ci_low", "ci_high", "few_images",
)


def _num(value, spec: str, missing: str = "-") -> str:
    return missing if value is None else format(value, spec)


def _interval(entry) -> str:
    if entry.get("ci_low") is None or entry.get("ci_high") is None:
        return "-"
    return f"[{entry['ci_low']:.2f}, {entry['ci_high']:.2f}]"


def describe_settings(result: dict) -> str:
    """One line naming the settings of a result."""
    parts = [
        f"{result['which']} factor",
        f"correct = {result['correct']}"
        + (f" ({result['real_mode']})" if result["correct"] == "real" else ""),
        "prototypes kept" if result["include_prototypes"] else "prototypes left out",
    ]
    if result.get("metaclass"):
        parts.append(f"meta-class {result['metaclass']}")
    interval = result.get("interval")
    if interval:
        parts.append(
            f"{interval['level']:.0%} bootstrap intervals "
            f"({interval['resamples']} resamples, seed {interval['seed']})"
        )
    return f"Dataset '{result['dataset']}': " + ", ".join(parts)


def format_ratios(result: dict) -> str:
    """A readable table: one row per factor (sorted by the first model's
    error ratio), per model its error ratio and interval; then accuracy,
    worst factor and worst-100-classes accuracy. With meta-classes, one
    meta-class x factor matrix of error ratios per model follows."""
    models = result["models"]
    names = list(models)
    first = models[names[0]]
    col = 24
    lines = [describe_settings(result), ""]
    header = f"{'factor':<18}{'images':>8}   " + "".join(
        f"{name[:col - 2]:<{col}}" for name in names
    )
    lines += [header, f"{'':<29}" + f"{'error ratio  interval':<{col}}" * len(names)]

    def key(factor):
        ratio = first["factors"][factor]["error_ratio"]
        return -(ratio if ratio is not None else float("-inf"))

    for factor in sorted(FACTORS, key=key):
        entry = first["factors"][factor]
        cells = []
        for name in names:
            e = models[name]["factors"][factor]
            flag = "*" if e["few_images"] else " "
            cells.append(
                f"{_num(e['error_ratio'], '.2f'):>6}{flag} {_interval(e):<{col - 8}}"
            )
        lines.append(f"{factor:<18}{entry['n']:>8,}   " + "".join(cells))
    lines.append("")
    lines.append(f"{'all images':<18}{first['n']:>8,}   " + "".join(
        f"{'accuracy ' + _num(models[n]['accuracy'], '.4f'):<{col}}" for n in names
    ))
    lines.append(f"{'worst factor':<29}" + "".join(
        f"{(models[n]['worst_factor'] or '-') + ' ' + _num(models[n]['worst_factor_accuracy'], '.3f'):<{col}}"
        for n in names
    ))
    lines.append(f"{'worst 100 classes':<29}" + "".join(
        f"{_num(models[n].get('worst_100_classes'), '.4f'):<{col}}" for n in names
    ))
    lines.append(f"{'calibration (ECE)':<29}" + "".join(
        f"{_num(models[n].get('ece'), '.4f'):<{col}}" for n in names
    ))
    if len({models[n]["n"] for n in names}) > 1:
        lines.append(
            "images per model differ (missing predictions): "
            + ", ".join(f"{n} {models[n]['n']:,}" for n in names)
        )
    lines.append(
        f"* fewer than {result['min_reliable_n']} images: do not trust this ratio"
    )

    for name in names:
        if "metaclasses" in models[name]:
            lines += ["", *_metaclass_matrix(name, models[name]["metaclasses"])]
    return "\n".join(lines)


def _metaclass_matrix(name: str, metaclasses: dict) -> list:
    width = 7
    lines = [
        f"{name}: error ratio per meta-class and factor "
        "(* fewer than 50 images, - none)",
        f"{'meta-class':<16}{'images':>7}{'acc':>7} "
        + "".join(f"{f[:width - 1]:>{width}}" for f in FACTORS),
    ]
    for mc in METACLASSES:
        t = metaclasses[mc]
        cells = []
        for f in FACTORS:
            e = t["factors"][f]
            if e["error_ratio"] is None:
                cells.append(f"{'-':>{width}}")
            else:
                flag = "*" if e["few_images"] else ""
                cells.append(f"{format(e['error_ratio'], '.2f') + flag:>{width}}")
        lines.append(
            f"{mc:<16}{t['n']:>7,}{_num(t['accuracy'], '.3f'):>7} " + "".join(cells)
        )
    return lines


def ratios_rows(result: dict) -> list:
    """Long-format rows (dicts with :data:`CSV_COLUMNS`): per model, one
    ``factor="all"`` row and one row per factor, overall
    (``metaclass="all"``) and per meta-class when present."""
    rows = []

    def add(model, scope, table):
        wrong = table["n"] - table["correct"]
        rows.append({
            "model": model, "metaclass": scope, "factor": "all",
            "n": table["n"], "correct": table["correct"],
            "accuracy": table["accuracy"], "error_ratio": 1.0 if wrong else None,
            "ci_low": None, "ci_high": None,
            "few_images": table["n"] < result["min_reliable_n"],
        })
        for f in FACTORS:
            e = table["factors"][f]
            rows.append({"model": model, "metaclass": scope, "factor": f,
                         **{k: e[k] for k in CSV_COLUMNS[3:]}})

    for model, table in result["models"].items():
        add(model, "all", table)
        for mc, sub in table.get("metaclasses", {}).items():
            add(model, mc, sub)
    return rows


def ratios_csv(result: dict) -> str:
    """:func:`ratios_rows` as CSV text (empty cells for undefined values)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in ratios_rows(result):
        writer.writerow({k: "" if v is None else v for k, v in row.items()})
    return out.getvalue()
