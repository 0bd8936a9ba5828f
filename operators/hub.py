"""The Hugging Face Hub operators: load a dataset (ImageNet's own shards or a
FiftyOne-format repo), push one with its results."""

import fiftyone.operators as foo
import fiftyone.operators.types as types

from .forms import (
    add_new_dataset_inputs,
    built_dataset_result,
    in_form,
    is_large,
    new_dataset_params,
    run_with_progress,
    user_errors,
)

#: the most samples whose push the form plans as it is filled in (each file
#: is looked at)
PLAN_UP_TO = 100_000


class LoadFromHub(foo.Operator):
    """Pulls a dataset from the Hugging Face Hub (ImageNet's parquet or
    webdataset shards, or a FiftyOne-format repo), tags it with ImageNet-X
    (or converts an ImageNet-D copy) and opens it. Runs delegated with the
    shards, images and images/s as progress. The token is the plugin secret
    ``HF_TOKEN``."""

    @property
    def config(self):
        return foo.OperatorConfig(
            name="load_from_hub",
            label="ImageNet-X: load a dataset from the Hugging Face Hub",
            execute_as_generator=True,
            allow_immediate_execution=True,
            allow_delegated_execution=True,
        )

    def resolve_input(self, ctx):
        inputs = types.Object()
        inputs.str("repo_id", required=True, label="Repo id",
                   description="ORG/NAME: ImageNet's shards (ILSVRC/imagenet-1k, "
                               "timm/imagenet-1k-wds) or a FiftyOne dataset")
        inputs.str("split", label="Split",
                   description="optional: val (default) or train for ImageNet shards")
        inputs.int("max_samples", label="Max samples",
                   description="optional: load at most this many")
        inputs.str("revision", label="Revision",
                   description="optional: a branch, tag or commit (empty: the main branch, "
                               "resolved to its commit when the pull starts; the result "
                               "and the dataset's info say which)")
        add_new_dataset_inputs(inputs, description="optional: imagenet-x-<split> for "
                                                   "ImageNet shards, else the repo id")
        return types.Property(inputs, view=types.View(label="Load from the Hub"))

    def execute(self, ctx):
        from imagenetx.benchmarks.imagenet_x.sources import load_hub_dataset

        def job(progress):
            return load_hub_dataset(
                ctx.params["repo_id"],
                split=ctx.params.get("split") or None,
                max_samples=ctx.params.get("max_samples"),  # 0 is refused, not "all"
                token=ctx.secrets.get("HF_TOKEN"),
                progress=progress,
                revision=(ctx.params.get("revision") or "").strip() or None,
                **new_dataset_params(ctx),
            )

        def finish(result):
            dataset, summary = result
            info = dataset.info.get("imagenetx") or {}
            pulled = info.get("source") or info.get("pulled_from") or {}
            # an ImageNet-D repo gives an ImageNetDSummary, without "annotated"
            return built_dataset_result(dataset, summary,
                                        annotated=getattr(summary, "annotated", 0),
                                        revision=pulled.get("revision"))

        return run_with_progress(ctx, job, finish)

    def resolve_output(self, ctx):
        outputs = types.Object()
        outputs.str("summary", label="Result")
        outputs.str("revision", label="Revision (commit) pulled")
        return types.Property(outputs)


class PushToHub(foo.Operator):
    """Pushes the current dataset with its prediction fields and evaluations
    to the Hub (``imagenetx push``); the token is the plugin secret
    ``HF_TOKEN``."""

    @property
    def config(self):
        return foo.OperatorConfig(
            name="push_to_hub",
            label="ImageNet-X: push results to the Hugging Face Hub",
            dynamic=True,
            allow_immediate_execution=True,
            allow_delegated_execution=True,
        )

    def resolve_input(self, ctx):
        inputs = types.Object()
        inputs.str("repo_id", required=True, label="Repo id",
                   description="USER/NAME, in your token's namespace")
        inputs.bool("private", default=False, label="Private repo")
        inputs.bool("with_media", default=False, label="Upload images from gated repos too")
        inputs.str("allow_media_outside", label="Allow media outside",
                   description="optional: folders (one per line) whose files may be "
                               "uploaded though they lie outside the folders a dataset from "
                               "the Hub got its media from")
        if is_large(lambda c: c.dataset, ctx, PLAN_UP_TO):  # the form stays quick
            inputs.view("plan", types.Notice(
                label="The push says what it uploads when it runs (and refuses media outside "
                      "the folders a dataset from the Hub got its files from)"))
        elif ctx.dataset is not None:  # what it will upload, or why it refuses
            from imagenetx.errors import ImageNetXError
            from imagenetx.present.push import cached_plan

            try:  # remembered: the form re-resolves on every keystroke
                plan = cached_plan(ctx.dataset, **_media_params(ctx))
                inputs.view("plan", types.Notice(label=str(plan)))
            except ImageNetXError as e:
                inputs.view("plan", types.Error(label=in_form(str(e), inputs)))
        return types.Property(inputs, view=types.View(label="Push to the Hub"))

    @user_errors
    def execute(self, ctx):
        from imagenetx.present.push import push_results

        summary = push_results(
            ctx.dataset, ctx.params["repo_id"], private=bool(ctx.params.get("private")),
            token=ctx.secrets.get("HF_TOKEN"), **_media_params(ctx))
        return {"summary": str(summary)}

    def resolve_output(self, ctx):
        outputs = types.Object()
        outputs.str("summary", label="Result")
        return types.Property(outputs)


def _media_params(ctx) -> dict:
    """The form's media choices as :func:`imagenetx.present.push.plan_push`
    takes them."""
    folders = (ctx.params.get("allow_media_outside") or "").splitlines()
    return {"with_media": bool(ctx.params.get("with_media")),
            "allow_media_outside": [f.strip() for f in folders if f.strip()]}
