"""The "Edit objects" operator: a form over
:func:`imagenetx.edits.apply.edit_dataset`."""

import fiftyone.operators as foo
import fiftyone.operators.types as types

from .forms import add_delegate_input, delegation, is_large, progress_reporter

#: datasets with more originals than this are edited as delegated operations
#: unless the form says otherwise (about 10 images a second per core)
DELEGATE_ABOVE = 200

#: edit specs offered when the form opens (ImageNet-E's toolkit-made edits)
DEFAULT_EDITS = "size:0.1,0.08,0.05 position direction:30,90 background:random"


class EditObjects(foo.Operator):
    """Edits the masked objects of the current dataset (size, position,
    direction, background) and adds the edits as group slices of their
    originals; a non-grouped dataset is copied into a grouped one first."""

    @property
    def config(self):
        return foo.OperatorConfig(
            name="edit_objects",
            label="ImageNet-E: edit objects into group slices",
            description=(
                "Resize, move, rotate or re-background the masked object of "
                "every image (ImageNet-E's classical edits) and show each "
                "original beside its edits"
            ),
            dynamic=True,
            allow_immediate_execution=True,
            allow_delegated_execution=True,
        )

    def resolve_input(self, ctx):
        from imagenetx.edits.masks import mask_fields

        inputs = types.Object()
        fields = mask_fields(ctx.dataset) if ctx.dataset else []
        if not fields:
            prop = inputs.view("none", types.Error(
                label="No mask field",
                description="Edits need a fo.Segmentation field or "
                            "fo.Detection(s) with instance masks."))
            prop.invalid = True
            return types.Property(inputs)
        inputs.enum("mask_field", fields, default=fields[0], required=True,
                    label="Mask field", view=types.DropdownView())
        inputs.str("edits", default=DEFAULT_EDITS, required=True, label="Edits",
                   description="space-separated: size:RATIO,..., position, "
                               "direction:DEGREES,..., background:random or "
                               "background:IMAGE_PATH")
        inputs.int("seed", default=0, label="Seed")
        inputs.str("object_label", label="Object (optional)",
                   description="a segmentation's pixel value or label, a "
                               "detection label; empty: all non-zero pixels / "
                               "the largest box")
        if ctx.dataset.media_type != "group":
            inputs.str("name", default=f"{ctx.dataset.name}-edits",
                       label="Grouped copy's name")
        inputs.enum("inpaint", ["telea", "ns"], default="telea",
                    label="Inpainting", view=types.RadioGroup())
        inputs.bool("skip_failed", default=False, label="Skip edits an image does not allow")
        add_delegate_input(ctx, inputs, _large(ctx), DELEGATE_ABOVE, "images")
        _check_edits(ctx, inputs)
        return types.Property(inputs, view=types.View(label="Edit objects"))

    def resolve_delegation(self, ctx):
        return delegation(ctx, _large(ctx))

    def execute(self, ctx):
        from imagenetx.edits import edit_dataset

        p = ctx.params

        dataset, summary = edit_dataset(
            ctx.dataset,
            p["mask_field"],
            (p.get("edits") or "").split(),
            seed=p.get("seed") or 0,
            name=p.get("name") or None,
            object_label=p.get("object_label") or None,
            inpaint=p.get("inpaint") or "telea",
            skip_failed=bool(p.get("skip_failed")),
            progress=progress_reporter(ctx),
        )
        if not ctx.delegated:
            if dataset.name == ctx.dataset.name:
                ctx.trigger("reload_dataset")
            else:
                ctx.ops.open_dataset(dataset.name)
        return {"dataset": dataset.name, "summary": str(summary),
                "added": sum(summary.added.values())}

    def resolve_output(self, ctx):
        outputs = types.Object()
        outputs.str("summary", label="Result")
        return types.Property(outputs)


def _large(ctx) -> bool:
    return is_large(lambda c: c.dataset, ctx, DELEGATE_ABOVE)


def _check_edits(ctx, inputs):
    from imagenetx.edits import parse_edits
    from imagenetx.errors import ImageNetXError

    try:
        parse_edits((ctx.params.get("edits") or DEFAULT_EDITS).split())
    except ImageNetXError as e:
        prop = inputs.view("edits_error", types.Error(label=str(e)))
        prop.invalid = True
