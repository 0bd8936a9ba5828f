"""The attack's chart in the App's panel, offered once a dataset holds an
adversarial field: the attack's success per slice (which factors it breaks
most easily); a click shows the images of that slice it broke."""

from imagenetx.analysis.attacks import attack_fields, attack_success, broken_view
from imagenetx.attacks.budget import AttackSettings
from imagenetx.errors import ImageNetXError
from imagenetx.present.charts import Chart, Drill
from imagenetx.present.figures import attack_success_chart


def _has_attack_fields(dataset) -> bool:
    return bool(attack_fields(dataset))


def _attack_fields(view, fields):
    chosen = attack_fields(view, fields)
    if not chosen:
        raise ImageNetXError(
            "None of the fields turned on was written by an attack: turn on an "
            "adversarial field (`run_attack()`), or pick another chart")
    return chosen


def _compute(view, fields, settings):
    return attack_success(view, fields, **settings)


def attack_summary(result: dict) -> str:
    """Per field: the attack, clean and robust accuracy (over every attacked
    image), its overall success and the slice it breaks most easily (over
    those with the slicing's labels; the panel adds the population line
    where the two differ)."""
    lines = []
    for field, m in result["models"].items():
        rated = [(v, r) for v, r in m["slices"].items() if r["success_rate"] is not None]
        rates = {v: r["success_rate"] for v, r in rated}
        top = [v for v, rate in rates.items() if rate == max(rates.values(), default=None)]
        where = (f"most easily in {result['slice_title']} **{top[0]}**" if len(top) == 1
                 else f"as easily in each of {', '.join(f'**{v}**' for v in top)}")
        name = _describe(m["attack"])
        head = (f"- **{field}** ({name}): accuracy {m['clean_accuracy']:.1%} clean, "
                f"{m['robust_accuracy']:.1%} robust on {m['evaluated']:,} images")
        if not m["clean_right"]:
            lines.append(head + "; none of them was right before the attack, so it "
                         "broke nothing")
            continue
        lines.append(
            head + f"; of the {m['n']:,} counted per {result['slice_title']}, it broke "
            f"{m['broken']:,} of the {m['clean_right']:,} right ones "
            f"({m['success_rate']:.1%}), {where}")
    return "\n".join(lines)


def _describe(attack: dict) -> str:
    """The attack's settings in words, as its run record keeps them."""
    try:
        return AttackSettings(**attack).describe()
    except TypeError:  # a record of other settings
        return "attack"


def _broken(view, field, value, settings) -> Drill:
    shown = broken_view(view, field, value, **settings)
    return Drill(shown, len(shown), what="gets right before the attack and wrong after it")


ATTACK_SUCCESS = Chart(
    name="attack success",
    compute=_compute,
    figure=attack_success_chart,
    summary=attack_summary,
    click=_broken,
    hint="Bars: per {slice}, the share of the images right before the attack that it "
         "made wrong. Click a bar to show the images it broke there.",
    fields=_attack_fields,
    offered=_has_attack_fields,
)
