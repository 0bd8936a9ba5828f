"""The "Load ImageNet-E" operator."""

from .forms import LoadReleaseFolder


class LoadImageNetE(LoadReleaseFolder):
    """Builds a grouped dataset from the ImageNet-E release folder on the
    server and opens it."""

    OPERATOR = "load_imagenet_e"
    LABEL = "ImageNet-E: load the release folder"
    DESCRIPTION = ("labels.txt, ori/ and the edit folders (20_adv/, 01/, rp/, ...) as a "
                   "grouped dataset: one group per source image, one slice per edit")
    FORM_TITLE = "Load ImageNet-E"
    FOLDER_HELP = "path on the server of the folder holding labels.txt and ori/"
    DEFAULT_NAME = "imagenet-e"

    def load(self, ctx, folder, **dataset_params):
        from imagenetx.benchmarks.imagenet_e import load_imagenet_e

        return load_imagenet_e(folder, **dataset_params)

    def counts(self, summary) -> dict:
        return {"samples": summary.samples_total, "groups": summary.groups}
