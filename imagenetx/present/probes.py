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
    """What ``imagenetx corruption-errors`` prints."""
    head = (f"Dataset '{result['dataset']}', field '{result['field']}': top-1 error per "
            "ImageNet-C corruption and severity")
    return "\n".join([head, *corruption_lines(result)])


def corruption_csv(result: dict) -> str:
    """One row per corruption and severity: ``error``, with the
    corruption's ``ce`` and ``relative_ce``."""
    return _csv([{"field": result["field"], "corruption": name, "severity": int(s),
                  "error": e, "ce": row["ce"], "relative_ce": row["relative_ce"]}
                 for name, row in result["corruptions"].items()
                 for s, e in row["errors"].items()])
