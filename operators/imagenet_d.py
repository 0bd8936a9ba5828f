"""The "Load ImageNet-D" operator."""

from .forms import LoadReleaseFolder


class LoadImageNetD(LoadReleaseFolder):
    """Builds a dataset from the ImageNet-D release folder on the server
    and opens it."""

    OPERATOR = "load_imagenet_d"
    LABEL = "ImageNet-D: load the release folder"
    DESCRIPTION = ("ImageNet-D/{background,texture,material}/<class>/<id>.png "
                   "as a dataset: ground truth with ImageNet-1k indices, nuisance")
    FORM_TITLE = "Load ImageNet-D"
    FOLDER_HELP = "path on the server of ImageNet-D/"
    DEFAULT_NAME = "imagenet-d"

    def load(self, ctx, folder, **dataset_params):
        from imagenetx.benchmarks.imagenet_d import load_imagenet_d_dir

        return load_imagenet_d_dir(folder, **dataset_params)
