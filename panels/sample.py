"""The "ImageNet-X sample" panel of the sample modal (FiftyOne 1.21+): the
open image's factors, every prediction field's label and whether it is
right, each attack's outcome (with a button to the images it broke), and
its ImageNet-E edits."""

import fiftyone.operators as foo
import fiftyone.operators.types as types


def _mark(correct) -> str:
    return {True: "right", False: "**wrong**"}.get(correct, "-")


def _markdown(card: dict) -> str:
    lines = [f"**Ground truth:** {card['ground_truth'] or '-'}  "]
    if card["top_factor"] or card["factors"]:
        lines.append(f"**Top factor:** {card['top_factor'] or '-'}  ")
        lines.append(f"**Factors:** {', '.join(card['factors']) or '-'}  ")
        lines.append(f"**Meta-class:** {card['metaclass'] or '-'}")
    else:
        lines.append("No ImageNet-X factors on this image.")
    plain = [p for p in card["predictions"] if not p["adversarial"]]
    if plain:
        lines += ["", "| prediction field | label | confidence | |", "|---|---|---|---|"]
        for p in plain:
            conf = "-" if p["confidence"] is None else f"{p['confidence']:.2f}"
            lines.append(f"| {p['field']} | {p['label'] or '-'} | {conf} | {_mark(p['correct'])} |")
    attacks = [p for p in card["predictions"] if p["adversarial"]]
    if attacks:
        lines += ["", "| attack field | clean | adversarial | outcome |", "|---|---|---|---|"]
        for p in attacks:
            outcome = "flipped" if p["flipped"] else "held"
            lines.append(f"| {p['field']} | {p['clean_label'] or '-'} | {p['label'] or '-'} "
                         f"({_mark(p['correct'])}) | {outcome} |")
    if card["edits"]:
        lines += ["", "| edit | level | predictions |", "|---|---|---|"]
        for e in card["edits"]:
            preds = ", ".join(f"{p['field']}: {p['label'] or '-'} ({_mark(p['correct'])})"
                              for p in e["predictions"]) or "-"
            lines.append(f"| {e['edit'] or e['slice']} | {e['level'] or '-'} | {preds} |")
    return "\n".join(lines)


class ImageNetXSamplePanel(foo.Panel):
    """One image, as the project sees it."""

    @property
    def config(self):
        return foo.PanelConfig(
            name="imagenetx_sample_panel",
            label="ImageNet-X sample",
            icon="image_search",
            surfaces="modal",
            help_markdown=("This image's ImageNet-X factors, each model's prediction "
                           "and whether it is right, the attacks' outcomes and its edits."),
        )

    def on_load(self, ctx):
        self._show(ctx)

    def on_change_current_sample(self, ctx):
        self._show(ctx)

    def _show(self, ctx):
        from imagenetx.analysis.sample_card import sample_card

        if ctx.current_sample is None:
            ctx.panel.state.sample_card = None
            return
        ctx.panel.state.sample_card = sample_card(ctx.dataset, ctx.current_sample).to_dict()

    def show_broken(self, ctx):
        """The images the attack of ``field`` broke (right before, wrong after)."""
        from imagenetx.analysis.attacks import broken_view

        ctx.ops.set_view(broken_view(ctx.dataset, ctx.params["field"]))

    def render(self, ctx):
        panel = types.Object()
        card = ctx.panel.state.sample_card
        if not card:
            panel.md("Open a sample to see it here.", name="card_text")
        else:
            panel.md(_markdown(card), name="card_text")
            for p in card["predictions"]:
                if p["adversarial"]:
                    panel.btn(f"broken_{p['field']}", label=f"Images {p['field']} broke",
                              on_click=self.show_broken, params={"field": p["field"]})
        return types.Property(panel, view=types.GridView(orientation="vertical", gap=1, px=2, py=1))
