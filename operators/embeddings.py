"""The embedding operators: "Embed samples" (a form over
:func:`imagenetx.models.embed.run_embed`) and "Discover slices in
embeddings" (a form over
:func:`imagenetx.analysis.embedding_slices.discover_error_slices`)."""

import fiftyone.operators as foo
import fiftyone.operators.types as types

from .forms import add_pred_field_input, delegate_above, delegation, user_errors
from .models import (
    add_device_inputs,
    add_model_inputs,
    add_protocol_input,
    add_samples_inputs,
    run_model,
    target_is_large,
)

#: views larger than this are embedded as delegated operations unless the
#: form says otherwise
DELEGATE_ABOVE = 2000


class EmbedSamples(foo.Operator):
    """Writes each sample's embedding by a model to a field."""

    @property
    def config(self):
        return foo.OperatorConfig(
            name="embed_samples",
            label="ImageNet-X: embed samples",
            description="Write each sample's embedding by a model (its penultimate "
                        "features, or an open_clip image tower's) to a field, with its "
                        "predictions beside it",
            dynamic=True,
            execute_as_generator=True,
            allow_immediate_execution=True,
            allow_delegated_execution=True,
        )

    def resolve_input(self, ctx):
        inputs = types.Object()
        add_model_inputs(ctx, inputs)
        add_device_inputs(inputs)
        add_protocol_input(inputs, ctx=ctx)
        add_samples_inputs(ctx, inputs, "embed", "an embedding",
                           delegate_default=DELEGATE_ABOVE)
        return types.Property(inputs, view=types.View(label="Embed samples"))

    def resolve_delegation(self, ctx):
        return delegation(ctx, target_is_large(ctx, delegate_above(DELEGATE_ABOVE)))

    def execute(self, ctx):
        from imagenetx.models.embed import run_embed

        return run_model(ctx, run_embed, lambda s: {"already_predicted": s.already_predicted})

    def resolve_output(self, ctx):
        outputs = types.Object()
        outputs.str("summary", label="Result")
        return types.Property(outputs)


class DiscoverEmbeddingSlices(foo.Operator):
    """Finds the slices of an embeddings field where a model errs most,
    stores them as a slicing and shows the first slice's saved view."""

    @property
    def config(self):
        return foo.OperatorConfig(
            name="discover_embedding_slices",
            label="ImageNet-X: discover slices in embeddings",
            dynamic=True,
            allow_immediate_execution=True,
            allow_delegated_execution=True,
        )

    def resolve_input(self, ctx):
        import fiftyone as fo

        inputs = types.Object()
        if not add_pred_field_input(ctx, inputs):
            return types.Property(inputs)
        vectors = sorted(ctx.dataset.get_field_schema(ftype=fo.VectorField)) + sorted(
            ctx.dataset.list_brain_runs(type="similarity"))
        if not vectors:
            inputs.view("none", types.Warning(
                label="No embeddings field: run 'ImageNet-X: embed samples' first"))
            return types.Property(inputs)
        inputs.enum("embeddings", vectors, required=True, default=vectors[0],
                    label="Embeddings field or similarity index", view=types.DropdownView())
        inputs.int("k", default=5, label="Slices to find")
        inputs.str("key", required=True, default=f"{ctx.params.get('pred_field')}_slices",
                   label="Store as", description="the slicing's name (a field and saved views)")
        inputs.bool("overwrite", default=False, label="Overwrite",
                    description="replace the slices stored under that name")
        inputs.bool("map", default=False, label="Draw in the Embeddings panel",
                    description="a FiftyOne Brain visualization (PCA) under the brain key "
                                "NAME_map, coloured by the slices")
        return types.Property(inputs, view=types.View(label="Discover slices in embeddings"))

    def resolve_delegation(self, ctx):
        return bool(ctx.params.get("delegate"))

    @user_errors
    def execute(self, ctx):
        from imagenetx.analysis.embedding_slices import discover_error_slices
        from imagenetx.present.formatting import format_error_slices

        p = ctx.params
        result = discover_error_slices(
            ctx.target_view(), p["pred_field"], p["embeddings"], k=p.get("k") or 5,
            key=p["key"], overwrite=bool(p.get("overwrite")),
            map_method="pca" if p.get("map") else None).to_dict()
        if result["slices"] and not ctx.delegated:  # the first slice, as the App's view
            ctx.ops.set_view(ctx.dataset.load_saved_view(result["slices"][0]["saved_view"]))
        return {"summary": format_error_slices(result)}

    def resolve_output(self, ctx):
        outputs = types.Object()
        outputs.str("summary", label="Result")
        return types.Property(outputs)
