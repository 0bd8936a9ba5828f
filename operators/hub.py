"""The Hugging Face Hub operator that pushes a dataset with its results (a
dataset is pulled by "Load a benchmark", :mod:`.load`)."""

import fiftyone.operators as foo
import fiftyone.operators.types as types

from .forms import in_form, is_large, user_errors

#: the most samples whose push the form plans as it is filled in (each file
#: is looked at)
PLAN_UP_TO = 100_000


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
        inputs.bool("confirm_folders", default=False, label="Upload from the folders shown",
                    description="for a dataset of no Hub origin (your own files): the "
                                "folders below, checked (system folders only when named)")
        inputs.str("media_roots", label="Media folders",
                   description="optional: folders (one per line) whose files may be "
                               "uploaded: outside the folders a dataset from the Hub got its "
                               "media from, or a system folder such as /etc")
        if is_large(lambda c: c.dataset, ctx, PLAN_UP_TO):  # the form stays quick
            inputs.view("plan", types.Notice(
                label="The push says what it uploads when it runs (and refuses media outside "
                      "the folders a dataset from the Hub got its files from, or of a dataset "
                      "of no origin, outside the folders confirmed)"))
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
    folders = (ctx.params.get("media_roots") or "").splitlines()
    return {"with_media": bool(ctx.params.get("with_media")),
            "media_roots": [f.strip() for f in folders if f.strip()],
            "confirm_folders": bool(ctx.params.get("confirm_folders"))}
