"""Text and CSV of :class:`imagenetx.analysis.probes.ProbeResults` (what
``imagenetx probe-results`` prints). Input is the result's ``.to_dict()``."""

from imagenetx.present.formatting import _csv, _num


def format_probe(result: dict) -> str:
    """Accuracy per level, then the probe's summary."""
    lines = [f"Dataset '{result['dataset']}', field '{result['field']}', probe "
             f"'{result['probe']}' ({result['probe_field']}), model {result['model']}",
             f"{'level':<22} {'n':>7} {'correct':>8} {'accuracy':>9} {'of clean':>9}"]
    for row in result["levels"]:
        lines.append(f"{row['level'][:22]:<22} {row['n']:>7,} {row['correct']:>8,} "
                     f"{_num(row['accuracy'], '.4f'):>9} "
                     f"{_num(row['fraction_of_clean'], '.4f'):>9}")
    s = result.get("spectral")
    if s:
        lines.append(
            f"\nLow-pass proficiency LPP {_num(s['lpp'], '.4f')}, high-pass "
            f"proficiency HPP {_num(s['hpp'], '.4f')}, spectral bias HPP/(LPP+HPP) "
            f"{_num(s['spectral_bias'], '.4f')} (cutoffs 0.1-0.5)")
    cb = result.get("critical_band")
    if cb:
        lines.append(
            f"\nCritical band (accuracy as a fraction of clean, criterion "
            f"{cb['criterion']}): thresholds per band 0-6 {cb['thresholds']}; centre "
            f"{_num(cb['center_frequency'], '.2f')} cycles/image, bandwidth "
            f"{_num(cb['bandwidth_octaves'], '.2f')} octaves, peak noise sensitivity "
            f"{_num(cb['peak_sensitivity'], '.3f')}"
            + (" (flat thresholds: no band)" if cb["degenerate"] else ""))
    elif result["probe"] == "critical_band":
        lines.append("\nCritical band: the fit needs every level run and a clean accuracy "
                     "above 0")
    c = result.get("corruption")
    if c:
        lines.append("")
        lines.extend(corruption_lines(c))
    return "\n".join(lines)


def probe_csv(result: dict) -> str:
    """One row per level: ``level, n, correct, accuracy,
    fraction_of_clean``, then the corruption's ``error, ce, relative_ce``
    where the probe is a corruption."""
    c = (result.get("corruption") or {}).get("corruptions", {})
    rows = []
    for row in result["levels"]:
        name, _, _ = row["level"].partition(":")
        out = {"field": result["field"], "probe": result["probe"], **row}
        if result["probe"] == "corruption":
            e = c.get(name, {})
            out.update(error=None if row["accuracy"] is None else 1 - row["accuracy"],
                       ce=e.get("ce"), relative_ce=e.get("relative_ce"))
        rows.append(out)
    return _csv(rows)


def corruption_lines(c: dict) -> list:
    """The corruption table: error per severity, mean, CE and relative CE per
    corruption, then mCE; ``c`` is :class:`~imagenetx.metrics.corruption.
    CorruptionErrors` as ``.to_dict()``."""
    lines = []
    lines.append(f"{'corruption':<18} " + " ".join(f"{'s' + str(k):>6}" for k in range(1, 6))
                 + f" {'mean':>6} {'CE':>6} {'rel CE':>7}")
    for name, e in c["corruptions"].items():
        lines.append(f"{name[:18]:<18} " + " ".join(
            f"{_num(e['errors'][str(k)], '.3f'):>6}" for k in range(1, 6))
            + f" {_num(e['mean_error'], '.3f'):>6} {_num(e['ce'], '.3f'):>6}"
            f" {_num(e['relative_ce'], '.3f'):>7}")
    over = len(c["mce_over"])
    note = "" if c["all_15"] else f" (over {over} of the 15 corruptions: not comparable to published mCE)"
    lines.append(
        f"Clean error {_num(c['clean_error'], '.4f')}; errors are top-1 errors; CE is "
        "normalized by AlexNet's published errors (1.0 = AlexNet)")
    lines.append(f"mCE {_num(c['mce'], '.4f')}, relative mCE "
                 f"{_num(c['relative_mce'], '.4f')}{note}")
    return lines


def format_corruption_errors(result: dict) -> str:
    """What ``imagenetx corruption-errors`` prints: the CE table, then the
    plain mean top-1 accuracy over every corruption the dataset has."""
    head = (f"Dataset '{result['dataset']}', field '{result['field']}': top-1 error per "
            "ImageNet-C corruption and severity")
    lines = [head, *corruption_lines(result)]
    acc = result.get("accuracy")
    if acc:
        over = len(acc["corruptions"])
        lines.append(
            f"Mean top-1 accuracy over {over} corruptions x 5 severities "
            f"({acc['cells']} of {acc['of_cells']} cells, unweighted; Gavrikov & Keuper's "
            f"top1_acc/imagenet-c over 19 x 5): {_num(acc['mean_top1'], '.4f')}")
    return "\n".join(lines)


def format_corruption_accuracy(result: dict) -> str:
    """What ``imagenetx corruption-accuracy`` prints: top-1 (and top-5)
    per corruption and severity, the row means and the mean over the
    cells; ``result`` is :class:`~imagenetx.analysis.corruption.
    CorruptionAccuracyResult` as ``.to_dict()``."""
    lines = [f"Dataset '{result['dataset']}', field '{result['field']}': {result['title']} "
             "accuracy per corruption and severity"]
    head = " ".join(f"{'s' + str(k):>6}" for k in range(1, 6))
    for key, label in (("top1", "top-1"), ("top5", "top-5")):
        if result[f"mean_{key}"] is None:
            continue
        lines.append(f"{label + ' accuracy':<26} {head} {'mean':>6}")
        for name, row in result["corruptions"].items():
            lines.append(f"{name[:26]:<26} " + " ".join(
                f"{_num(row[key][str(k)], '.3f'):>6}" for k in range(1, 6))
                + f" {_num(row['mean_' + key], '.3f'):>6}")
    lines.append(
        f"Mean over the cells (unweighted): top-1 {_num(result['mean_top1'], '.4f')}, "
        f"top-5 {_num(result['mean_top5'], '.4f')}; {result['column']} = "
        f"{_num(result['column_value'], '.2f')} (percent, as {result['table']})")
    lines.extend(f"Note: {n}" for n in result["notes"])
    return "\n".join(lines)


def corruption_accuracy_csv(result: dict) -> str:
    """One row per corruption and severity: ``n``, ``top1``, ``top5``."""
    return _csv([{"field": result["field"], "benchmark": result["benchmark"],
                  "corruption": name, "severity": int(s), "n": n,
                  "top1": row["top1"][s], "top5": (row["top5"] or {}).get(s)}
                 for name, row in result["corruptions"].items()
                 for s, n in row["n"].items()])


def corruption_csv(result: dict) -> str:
    """One row per corruption and severity: ``error``, with the
    corruption's ``ce`` and ``relative_ce``."""
    return _csv([{"field": result["field"], "corruption": name, "severity": int(s),
                  "error": e, "ce": row["ce"], "relative_ce": row["relative_ce"]}
                 for name, row in result["corruptions"].items()
                 for s, e in row["errors"].items()])
