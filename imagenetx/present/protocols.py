"""The protocols as a table: what each pins, in words, and the authors' line
each pin comes from (``imagenetx protocols``); a run's summary with what its
numbers compare with."""

from __future__ import annotations

from typing import Optional

from imagenetx.analysis.comparability import comparability, published_check
from imagenetx.protocols import get_protocol, list_protocols


def protocols_table(name: Optional[str] = None) -> dict:
    """``{"protocols": [{"name", "title", "default_for", "pins": [{"param",
    "value", "means", "reference"}]}]}``, of every protocol or of ``name``.

    Raises:
        ImageNetXError: for an unknown name
    """
    chosen = [get_protocol(name)] if name else list_protocols()
    out = []
    for p in chosen:
        means = p.describe()
        out.append({
            "name": p.name, "title": p.title, "default_for": list(p.benchmarks),
            "pins": [{"param": k, "value": v, "means": means[k],
                      "reference": p.references.get(k, "")}
                     for k, v in p.pins().items()]})
    return {"protocols": out}


def format_protocols(result: dict) -> str:
    """The table as text, one block per protocol."""
    lines = []
    for p in result["protocols"]:
        default = (f" (default on {', '.join(p['default_for'])} datasets)"
                   if p["default_for"] else "")
        lines.append(f"{p['name']}: {p['title']}{default}")
        for pin in p["pins"]:
            lines.append(f"  {pin['param']}: {pin['means']}")
            if pin["reference"]:
                lines.append(f"      from {pin['reference']}")
        lines.append("")
    lines.append("Pass `protocol=NAME` to predict, probe, attack or suite; settings given on "
                 "top are recorded as departures.")
    return "\n".join(lines)


def protocols_csv(result: dict) -> str:
    """One row per protocol and pin."""
    import csv
    import io

    rows = [{"protocol": p["name"], **pin} for p in result["protocols"] for pin in p["pins"]]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def run_summary(summary) -> str:
    """A predict or attack summary in words, ending with the field's
    comparability line (:func:`~imagenetx.analysis.comparability.comparability`)
    where a protocol run made it: the command line and the App's result say
    the same."""
    compared = comparability(summary.dataset, summary.field)
    checked = published_check(summary.dataset, summary.field)
    return str(summary) + (f"\nCompared with published numbers: {compared.line()}"
                           if compared is not None and compared.protocol else "") + (
        f"\nPublished accuracy: {checked.line()}" if checked is not None else "")
