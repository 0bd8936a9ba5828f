"""Readable text and CSV of :func:`imagenetx.analysis.compute_ratios`
results (what ``imagenetx ratios`` prints). Input is the result's
``.to_dict()``."""

import csv
import io
import re

CSV_COLUMNS = (
    "model", "group", "slice", "n", "correct", "accuracy",
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
        f"{result['benchmark']}, by {result['slicing']}",
        f"correct = {result['correct']}"
        + (f" ({result['real_mode']})" if result["correct"] == "real" else ""),
    ]
    if result["benchmark"] == "imagenet_x":
        parts.append("prototypes kept" if result["include_prototypes"]
                     else "prototypes left out")
    if result.get("within"):
        parts.append("only {} {}".format(*result["within"]))
    interval = result.get("interval")
    if interval:
        parts.append(
            f"{interval['level']:.0%} bootstrap intervals "
            f"({interval['resamples']} resamples, seed {interval['seed']})"
        )
    return f"Dataset '{result['dataset']}': " + ", ".join(parts)


def format_ratios(result: dict) -> str:
    """A readable table: one row per slice (sorted by the first model's
    error ratio), per model its error ratio and interval; then accuracy,
    worst slice and worst-100-classes accuracy. With groups (``by``), one
    group x slice matrix of error ratios per model follows."""
    models = result["models"]
    names = list(models)
    first = models[names[0]]
    title = result["slice_title"]
    width = max([18, *(len(str(v)) + 2 for v in result["slices"])])
    col = 24
    lines = [describe_settings(result), ""]
    header = f"{title:<{width}}{'images':>8}   " + "".join(
        f"{name[:col - 2]:<{col}}" for name in names
    )
    lines += [header,
              f"{'':<{width + 11}}" + f"{'error ratio  interval':<{col}}" * len(names)]

    def key(value):
        ratio = first["slices"][value]["error_ratio"]
        return -(ratio if ratio is not None else float("-inf"))

    for value in sorted(result["slices"], key=key):
        entry = first["slices"][value]
        cells = []
        for name in names:
            e = models[name]["slices"][value]
            flag = "*" if e["few_images"] else " "
            cells.append(
                f"{_num(e['error_ratio'], '.2f'):>6}{flag} {_interval(e):<{col - 8}}"
            )
        lines.append(f"{str(value):<{width}}{entry['n']:>8,}   " + "".join(cells))
    lines.append("")
    label = width + 11
    lines.append(f"{'all images':<{width}}{first['n']:>8,}   " + "".join(
        f"{'accuracy ' + _num(models[n]['accuracy'], '.4f'):<{col}}" for n in names
    ))
    lines.append(f"{'worst ' + title:<{label}}" + "".join(
        f"{str(models[n]['worst_slice'] or '-') + ' ' + _num(models[n]['worst_slice_accuracy'], '.3f'):<{col}}"
        for n in names
    ))
    lines.append(f"{'worst 100 classes':<{label}}" + "".join(
        f"{_num(models[n].get('worst_100_classes'), '.4f'):<{col}}" for n in names
    ))
    lines.append(f"{'calibration (ECE)':<{label}}" + "".join(
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
        if models[name].get("groups") is not None:
            lines += ["", *_group_matrix(name, result, models[name]["groups"])]
    if result.get("readouts"):
        lines += ["", *readout_lines(result["readouts"])]
    return "\n".join(lines)


def readout_lines(readouts: dict) -> list:
    """``FIELD: LINE`` per field and line of
    :func:`~imagenetx.analysis.readouts.readout_notes` (which images the
    numbers count, what they may be compared with)."""
    return [f"{field}: {line}" for field, lines in readouts.items() for line in lines]


def code_span(text, in_table: bool = True) -> str:
    """A user string as one Markdown code span, shown as written and never
    read as Markdown or HTML: a fence longer than any run of backticks in
    it, newlines as spaces, and (in a table row) pipes escaped, as GitHub's
    tables need even inside code spans."""
    text = " ".join(str(text).splitlines())
    if in_table:
        text = text.replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def readout_markdown(readouts: dict) -> str:
    """The same lines as markdown bullets."""
    return "\n".join(f"- {code_span(field, False)}: {line}"
                     for field, lines in readouts.items() for line in lines)


def _group_matrix(name: str, result: dict, groups: dict) -> list:
    width = 7
    lines = [
        f"{name}: error ratio per {result['group_title']} and {result['slice_title']} "
        f"(* fewer than {result['min_reliable_n']} images, - none)",
        f"{result['group_title']:<16}{'images':>7}{'acc':>7} "
        + "".join(f"{str(v)[:width - 1]:>{width}}" for v in result["slices"]),
    ]
    for group, t in groups.items():
        cells = []
        for v in result["slices"]:
            e = t["slices"][v]
            if e["error_ratio"] is None:
                cells.append(f"{'-':>{width}}")
            else:
                flag = "*" if e["few_images"] else ""
                cells.append(f"{format(e['error_ratio'], '.2f') + flag:>{width}}")
        lines.append(
            f"{str(group):<16}{t['n']:>7,}{_num(t['accuracy'], '.3f'):>7} " + "".join(cells)
        )
    return lines


def ratios_rows(result: dict) -> list:
    """Long-format rows (dicts with :data:`CSV_COLUMNS`): per model, one
    ``slice="all"`` row and one row per slice, over all images
    (``group="all"``) and per group when present."""
    rows = []

    def add(model, scope, table):
        wrong = table["n"] - table["correct"]
        rows.append({
            "model": model, "group": scope, "slice": "all",
            "n": table["n"], "correct": table["correct"],
            "accuracy": table["accuracy"], "error_ratio": 1.0 if wrong else None,
            "ci_low": None, "ci_high": None,
            "few_images": table["n"] < result["min_reliable_n"],
        })
        for v in result["slices"]:
            e = table["slices"][v]
            rows.append({"model": model, "group": scope, "slice": v,
                         **{k: e[k] for k in CSV_COLUMNS[3:]}})

    for model, table in result["models"].items():
        add(model, "all", table)
        for group, sub in (table.get("groups") or {}).items():
            add(model, group, sub)
    return rows


def ratios_csv(result: dict) -> str:
    """:func:`ratios_rows` as CSV text (empty cells for undefined values)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in ratios_rows(result):
        writer.writerow({k: "" if v is None else v for k, v in row.items()})
    return out.getvalue()


def format_discovery(result: dict) -> str:
    """A readable table of :func:`imagenetx.analysis.discover_slices`
    results (its ``.to_dict()``): one row per slice found, best first."""
    score = ("bound on the error ratio, Bonferroni over "
             f"{result['family']:,} conjunctions" if result["score"] == "bound"
             else f"SliceLine score, alpha {result['alpha']}")
    head = (f"Dataset '{result['dataset']}', field '{result['pred_field']}': "
            f"conjunctions of {' x '.join(result['slicings'])} (up to "
            f"{result['max_order']}, at least {result['min_support']:,} images), "
            f"correct = {result['correct']}")
    lines = [head,
             f"{result['n']:,} images, error {_num(result['error'], '.4f')}; "
             f"ranked by {score}", ""]
    if not result["slices"]:
        lines.append("No slice errs significantly above average"
                     if result["score"] == "bound" else "No slice scores above 0")
        return "\n".join(lines)
    width = max(24, *(len(s["slice"]) + 2 for s in result["slices"]))
    lines.append(f"{'#':>3}  {'slice':<{width}}{'images':>8}{'errors':>8}"
                 f"{'error':>8}{'ratio':>8}  {'interval':<15}{'score':>7}{'p adj.':>10}")
    for i, s in enumerate(result["slices"], 1):
        lines.append(
            f"{i:>3}  {s['slice']:<{width}}{s['n']:>8,}{s['errors']:>8,}"
            f"{s['error']:>8.3f}{_num(s['error_ratio'], '.2f'):>8}  "
            f"{_interval(s):<15}{_num(s['score'], '.2f'):>7}"
            f"{_num(s['p_adjusted'], '.1e'):>10}")
    return "\n".join(lines)


def format_error_slices(result: dict) -> str:
    """A readable table of
    :func:`imagenetx.analysis.embedding_slices.discover_error_slices`
    results (its ``.to_dict()``): one row per slice, best first."""
    lines = [f"Dataset '{result['dataset']}', field '{result['pred_field']}': slices of "
             f"embeddings '{result['embeddings']}' ({result['components']} mixture components "
             f"over {result['dimensions']} dimensions"
             + (f", and over {result.get('across_dimensions')} without class terms"
                if result.get("across_classes") else "")
             + f"), correct = {result['correct']}",
             f"{result['n']:,} samples, accuracy {_num(result['accuracy'], '.4f')}"
             + (f"; stored as slicing '{result['key']}'" if result["key"] else "")
             + (f", drawn as brain key '{result['map']}'" if result.get("map") else ""),
             _split_line(result), ""]
    if not result["slices"]:
        lines.append("No slice errs above average")
        return "\n".join(lines)
    lines.append(f"{'#':>3}  {'slice':<10}{'samples':>9}{'accuracy':>10}{'ratio':>8}  "
                 f"{'interval':<17}{'members':>8}"
                 + ("  found" if result.get("across_classes") else ""))
    for s in result["slices"]:
        low, high = s["interval"]
        lines.append(f"{s['rank']:>3}  {s['name']:<10}{s['size']:>9,}"
                     f"{_num(s['accuracy'], '.3f'):>10}{_num(s['error_ratio'], '.2f'):>8}  "
                     f"{'[' + _num(low, '.3f') + ', ' + _num(high, '.3f') + ']':<17}"
                     f"{s.get('members', s['size']):>8,}"
                     + (("  across classes" if s.get("across_classes") else "  by class")
                        if result.get("across_classes") else ""))
        for d in s.get("descriptions") or ():
            lines.append(f"{'':5}'{d['text']}' (similarity {d['similarity']:.3f})")
    return "\n".join(lines)


def _split_line(result: dict) -> str:
    """Where an error slicing's numbers come from."""
    split = result.get("split") or {}
    if not result.get("held_out"):
        return ("Fitted on all samples: each slice's numbers are measured on the samples "
                "that chose it (optimistic)")
    return (f"Fitted on {split['fit']:,} samples (share {split['fit_share']}, seed "
            f"{split['seed']}); samples, accuracy and interval are of the {split['held_out']:,} "
            "held-out samples; members counts every sample")


def discovery_rows(result: dict) -> list:
    """One flat dict per slice of a :func:`imagenetx.analysis.discover_slices`
    result's ``.to_dict()``, best first (for CSV and HTML tables)."""
    keys = ("slice", "n", "errors", "error", "error_ratio", "ci_low",
            "ci_high", "score", "p_adjusted")
    return [{k: s[k] for k in keys} for s in result["slices"]]


SHAPE_BIAS_COLUMNS = (
    "model", "human", "category", "n", "shape", "texture", "shape_bias",
    "shape_accuracy", "texture_accuracy", "ci_low", "ci_high",
)


def _shape_bias_entries(result: dict):
    """``(name, human, entry)`` of each model, then the pooled humans."""
    for name, entry in result["models"].items():
        yield name, entry.get("human", False), entry
    if result.get("humans"):
        yield "humans (pooled)", True, result["humans"]


def format_shape_bias(result: dict) -> str:
    """Text of :meth:`imagenetx.analysis.shape_bias.ShapeBiasResults.to_dict`:
    one line per decision maker, then per-category shape biases."""
    lines = [f"Shape bias on '{result['dataset']}' (cue-conflict images; "
             "shape / (shape + texture) decisions, 95% bootstrap interval)",
             f"{'model':<20} {'shape bias':>10} {'interval':>14} {'shape':>6} "
             f"{'texture':>7} {'n':>5}  {'shape acc':>9} {'texture acc':>11}"]
    entries = list(_shape_bias_entries(result))
    for name, _, e in entries:
        lines.append(
            f"{name:<20} {_num(e['shape_bias'], '.4f'):>10} {_interval(e):>14} "
            f"{e['shape']:>6} {e['texture']:>7} {e['n']:>5}  "
            f"{_num(e['shape_accuracy'], '.4f'):>9} {_num(e['texture_accuracy'], '.4f'):>11}")
    names = [n for n, _, _ in entries]
    lines += ["", "Shape bias per shape category",
              f"{'category':<10} " + " ".join(f"{n[:10]:>10}" for n in names)]
    for c in result["categories"]:
        lines.append(f"{c:<10} " + " ".join(
            f"{_num(e['categories'][c]['shape_bias'], '.3f'):>10}" for _, _, e in entries))
    return "\n".join(lines)


def shape_bias_csv(result: dict) -> str:
    """Long-format CSV: one row per decision maker and category (``all``
    for the overall row)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=SHAPE_BIAS_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for name, human, e in _shape_bias_entries(result):
        for category, row in [("all", e), *e["categories"].items()]:
            writer.writerow({"model": name, "human": human, "category": category,
                             **{k: "" if row.get(k) is None else row[k]
                                for k in SHAPE_BIAS_COLUMNS[3:]}})
    return out.getvalue()


def format_published(result: dict) -> str:
    """Text of :meth:`imagenetx.analysis.published.PublishedComparison.
    to_dict`: Kendall's tau of shape bias and each measure over the
    published models, then where each field's shape bias ranks."""
    n = result["n_models"]
    lines = [f"Among Gavrikov & Keuper's published models: {n} models, "
             f"{result['population_title']}",
             "Kendall's tau of shape bias and each measure over those models",
             f"{'measure':<28} {'tau':>7} {'p':>10} {'models':>7}"]
    for name, m in result["measures"].items():
        lines.append(f"{name[:28]:<28} {_num(m['tau'], '+.3f'):>7} "
                     f"{_num(m['p_value'], '.2g'):>10} {m['n']:>7}")
    lines += ["", "Where each shape bias ranks among theirs (rank 1 = most shape-biased; "
                  "percentile = share of published models below)",
              f"{'model':<20} {'shape bias':>10} {'rank':>10} {'percentile':>10}"]
    rows = list(result["fields"].items())
    if result.get("humans"):
        rows.append(("humans (pooled)", result["humans"]))
    for name, e in rows:
        rank = "-" if e["rank"] is None else f"{e['rank']} of {e['of']}"
        note = f"  (published as {e['published_model']})" if e["published_model"] else ""
        lines.append(f"{name:<20} {_num(e['shape_bias'], '.4f'):>10} {rank:>10} "
                     f"{_num(e['percentile'], '.1f'):>10}{note}")
    return "\n".join(lines)


def _correct_label(result: dict) -> str:
    return result["correct"] + (" (paper mode)" if result["correct"] == "real" else "")


def context_rows(result: dict) -> list:
    """Long-format rows of a :func:`imagenetx.analysis.context.reference_cloud`
    result (``.to_dict()``): per field and factor its accuracy, the trend's
    accuracy at its overall accuracy, the residual, z, and the cloud's
    spread and rank correlation."""
    rows = []
    for field, u in result["users"].items():
        for f in result["factors"]:
            e, t = u["factors"][f], result["trends"][f]
            rows.append({
                "model": field, "factor": f, "accuracy": e["accuracy"],
                "overall_accuracy": u["accuracy"], "expected": e["expected"],
                "residual": e["residual"], "z": e["z"],
                "spread_logit": t["spread"], "reference_models": t["n"],
                "spearman": t["spearman"],
            })
    return rows


def _csv(rows: list) -> str:
    out = io.StringIO()
    if rows:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: "" if v is None else v for k, v in row.items()})
    return out.getvalue()


def context_csv(result: dict) -> str:
    """:func:`context_rows` as CSV text."""
    return _csv(context_rows(result))


def format_context(result: dict) -> str:
    """A readable table: per factor the cloud's rank correlation and
    spread, and per field its factor accuracy and z; then each field's
    unusual factors (|z| at least ``unusual_z``)."""
    users = result["users"]
    names = list(users)
    col = 20
    ref = result["reference"]
    within = f", meta-class {result['within']}" if result["within"] else ""
    lines = [
        f"Dataset '{result['dataset']}' against {len(ref['models'])} published "
        f"models ({', '.join(result['groups'])}): {result['which']} factor, "
        f"correct = {_correct_label(result)}{within}",
        "Trend per factor: a line in logit space through the published models; "
        "z = the model's residual in units of the models' spread.",
        "",
        f"{'factor':<18}{'rho':>7}{'spread':>8}   "
        + "".join(f"{n[:col - 2]:<{col}}" for n in names),
        f"{'':<36}" + f"{'accuracy    z':<{col}}" * len(names),
    ]
    for f in result["factors"]:
        t = result["trends"][f]
        cells = "".join(
            f"{_num(users[n]['factors'][f]['accuracy'], '.3f'):>7}"
            f"{_num(users[n]['factors'][f]['z'], '+.2f'):>7}{'':<{col - 14}}"
            for n in names)
        lines.append(f"{f:<18}{_num(t['spearman'], '.3f'):>7}"
                     f"{_num(t['spread'], '.3f'):>8}   {cells}")
    lines.append(f"{'overall':<36}" + "".join(
        f"{_num(users[n]['accuracy'], '.3f'):>7}{'':<{col - 7}}" for n in names))
    lines.append("")
    for n in names:
        unusual = sorted(
            ((f, e["z"]) for f, e in users[n]["factors"].items()
             if e["z"] is not None and abs(e["z"]) >= result["unusual_z"]),
            key=lambda x: x[1])
        if unusual:
            lines.append(f"{n}: for its accuracy, unusually " + "; ".join(
                f"{'weak' if z < 0 else 'strong'} on {f} (z {z:+.1f})"
                for f, z in unusual))
        else:
            lines.append(f"{n}: no factor beyond |z| {result['unusual_z']:g} "
                         "of the trend")
    return "\n".join(lines)


def spillover_csv(result: dict) -> str:
    """The trend rows of a :func:`imagenetx.analysis.spillover.spillover`
    result (``.to_dict()``) as CSV text."""
    return _csv(result["trends"])


def format_spillover(result: dict) -> str:
    """A readable table per measure: each factor's trend statistic,
    Holm-corrected p-value, the measure at the weakest and strongest
    strength, and the direction (+ rises, - falls, blank: not significant)."""
    strengths = sorted(set(result["strengths"]))
    test = {"spearman": "Spearman's rho", "ols": "OLS slope t"}[result["method"]]
    lines = [
        f"Sweep '{result['sweep']}' ({result['strength_title']}): "
        f"{len(result['runs'])} runs, strengths {strengths[0]:g}-{strengths[-1]:g} "
        f"({len(strengths)} settings); {result['which']} factor, "
        f"correct = {_correct_label(result)}",
        f"Trend test: {test} across runs, Holm-corrected over the 16 factors, "
        f"alpha {result['alpha']:g}",
    ]
    if result["unparsable"]:
        lines.append(f"runs without a strength in their name ({len(result['unparsable'])}): "
                     + ", ".join(result["unparsable"]))
    if result["sparse"]:
        lines.append(
            f"left out, fewer than {result['min_runs_per_strength']} runs at their "
            "strength: " + ", ".join(f"{r} ({s:g})" for r, s in result["sparse"]))
    if len(strengths) < 2:
        lines.append("one strength only: no trend to test")
    for measure in ("prevalence_shift", "error_ratio"):
        rows = [r for r in result["trends"] if r["measure"] == measure]
        lines += ["", f"{measure.replace('_', ' ')}",
                  f"{'factor':<18}{'statistic':>10}{'p (Holm)':>11}"
                  f"{'weakest':>9}{'strongest':>10}  trend"]
        for r in sorted(rows, key=lambda r: -(r["statistic"] or 0)):
            mark = {1: "+ rises", -1: "- falls", 0: ""}[r["direction"]]
            lines.append(
                f"{r['factor']:<18}{_num(r['statistic'], '+.3f'):>10}"
                f"{_num(r['p_holm'], '.2g'):>11}{_num(r['weakest'], '+.3f'):>9}"
                f"{_num(r['strongest'], '+.3f'):>10}  {mark}")
    return "\n".join(lines)


PAIRED_KEYS = ("n", "top1_original", "top1", "drop", "ci_low", "ci_high", "flip_rate",
               "broken", "fixed", "p", "p_holm")


def paired_rows(result: dict) -> list:
    """Long-format rows of :meth:`imagenetx.analysis.paired.PairedResults.
    to_dict`: one per model and slice (``factor`` empty), then one per
    model, slice and factor."""
    edits = {s["slice"]: s for s in result["slices"]}
    rows = []
    for model, m in result["models"].items():
        for kind, tables in (("slices", {"": m["slices"]}), ("factors", m["factors"])):
            for outer, table in tables.items():
                for key, row in table.items():
                    slice_name, factor = (key, "") if kind == "slices" else (outer, key)
                    rows.append({"model": model, "slice": slice_name,
                                 "edit": edits[slice_name]["edit"],
                                 "edit_level": edits[slice_name]["edit_level"],
                                 "factor": factor, **{k: row[k] for k in PAIRED_KEYS}})
    return rows


def paired_csv(result: dict) -> str:
    """:func:`paired_rows` as CSV text."""
    return _csv(paired_rows(result))


def format_paired(result: dict) -> str:
    """Text of paired scores: per model, one line per edited slice, then
    (when computed) the drop per factor of the source image and slice."""
    def drop_interval(e):
        if e["ci_low"] is None:
            return "-"
        return f"[{e['ci_low'] * 100:+.1f}, {e['ci_high'] * 100:+.1f}]"

    lines = [f"Paired scores on '{result['dataset']}': each slice against the same "
             f"groups' '{result['original']}' ({result['groups']:,} groups); drop = "
             "top-1 original - top-1 edit, in points, paired 95% bootstrap interval; "
             "p: McNemar's exact test"]
    for model, m in result["models"].items():
        lines += ["", f"{model}",
                  f"  {'slice':<12} {'edit':<11} {'level':<11} {'n':>6} {'top-1 ori':>9} "
                  f"{'top-1':>7} {'drop':>6} {'interval':>15} {'flips':>6} {'p':>8}"]
        for s in result["slices"]:
            e = m["slices"][s["slice"]]
            lines.append(
                f"  {s['slice']:<12} {str(s['edit']):<11} {str(s['edit_level']):<11} "
                f"{e['n']:>6,} {_num(e['top1_original'], '.2%'):>9} {_num(e['top1'], '.2%'):>7} "
                f"{_num(None if e['drop'] is None else e['drop'] * 100, '+.1f'):>6} "
                f"{drop_interval(e):>15} {_num(e['flip_rate'], '.1%'):>6} "
                f"{_num(e['p'], '.2g'):>8}")
        if m["factors"]:
            slices = [s["slice"] for s in result["slices"]]
            factors = list(next(iter(m["factors"].values())))
            lines += ["", f"  drop per {result['factor_slicing']} of the source image "
                          "(points; n pairs in the first column's slice)",
                      f"  {'factor':<17} " + " ".join(f"{s[:9]:>9}" for s in slices)]
            for f in factors:
                cells = []
                for s in slices:
                    d = m["factors"][s][f]["drop"]
                    cells.append(_num(None if d is None else d * 100, "+.1f"))
                lines.append(f"  {f:<17} " + " ".join(f"{c:>9}" for c in cells))
    return "\n".join(lines)


def paired_factor_table(result: dict, model: str) -> str:
    """A markdown table of one model's drop (points) per factor of the
    source image (rows) and edited slice (columns)."""
    m = result["models"][model]
    slices = [s["slice"] for s in result["slices"]]
    factors = list(next(iter(m["factors"].values()))) if m["factors"] else []
    lines = ["| factor | " + " | ".join(slices) + " |",
             "|---|" + "---:|" * len(slices)]
    for f in factors:
        cells = []
        for s in slices:
            d = m["factors"][s][f]
            cells.append("-" if d["drop"] is None else f"{d['drop'] * 100:+.1f} ({d['n']})")
        lines.append(f"| {f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)




def ood_rows(result: dict) -> list:
    """Long-format rows of :meth:`imagenetx.analysis.ood_detection.OODScores.
    to_dict`: per detector, one row for all OOD images (``set`` ``all``),
    one per role and one per OOD source."""
    rows = []
    for name, det in result["detectors"].items():
        parts = [("all", "all", det)] + [("role", k, m) for k, m in det["roles"].items()] \
            + [("source", k, m) for k, m in det["sources"].items()]
        for kind, key, m in parts:
            iv = m.get("intervals") or {}
            rows.append({"detector": name, "kind": kind, "set": key, "n_id": m["n_id"],
                         "n_ood": m["n_ood"], "auroc": m["auroc"],
                         "auroc_low": (iv.get("auroc") or [None])[0],
                         "auroc_high": (iv.get("auroc") or [None, None])[1],
                         "fpr95": m["fpr95"], "aupr_in": m["aupr_in"],
                         "aupr_out": m["aupr_out"]})
    return rows


def ood_csv(result: dict) -> str:
    """:func:`ood_rows` as CSV text."""
    return _csv(ood_rows(result))


def _headline_text(headline) -> str:
    if not headline:
        return "-"
    return ", ".join(f"{k} {v:.2%}" for k, v in headline["values"].items() if v is not None)


def format_ood(result: dict) -> str:
    """Text of OOD detection scores: per detector, its metrics against each
    role and OOD source (percent), and the benchmark's headline."""
    first = next(iter(result["detectors"].values()))
    lines = [f"OOD detection on '{result['dataset']}' ({result['benchmark'] or 'no benchmark'}) "
             f"from the logits of '{result['pred_field']}': {result['convention']} convention "
             f"(FPR@95 with {first['positive'].upper()} positive, AUPR by {first['aupr']}); "
             "higher score = more in-distribution"]
    current = None
    for r in ood_rows(result):
        if r["detector"] != current:
            current = r["detector"]
            det = result["detectors"][current]
            lines += ["", f"{current}" + (f" -> {det['field']}" if det["field"] else "")
                      + (f" (fitted on {det['n_fit']:,} held-out ID images)"
                         if det["n_fit"] else ""),
                      f"  {'set':<18} {'n_ood':>7} {'AUROC':>7} {'interval':>17} "
                      f"{'FPR@95':>7} {'AUPR-In':>8} {'AUPR-Out':>8}"]
        interval = ("-" if r["auroc_low"] is None
                    else f"[{r['auroc_low']:.2%}, {r['auroc_high']:.2%}]")
        label = r["set"] if r["kind"] != "role" else f"{r['set']} (role)"
        lines.append(f"  {label:<18} {r['n_ood']:>7,} {r['auroc']:>7.2%} {interval:>17} "
                     f"{r['fpr95']:>7.2%} {r['aupr_in']:>8.2%} {r['aupr_out']:>8.2%}")
    lines += ["", "headline (as the benchmark's authors compute it):"]
    for name, det in result["detectors"].items():
        lines.append(f"  {name:<14} {_headline_text(det['headline'])}"
                     + (f"  ({det['note']})" if det.get("note") else ""))
    return "\n".join(lines)
