"""One writer behind the ImageNet loaders (a local folder, the Hub's
shards): a dataset of ImageNet images whose classes are known, with ground
truth, tags and ImageNet-X written in the same documents."""

from imagenetx.benchmarks.imagenet_x.tagging import (
    DEFAULT_FIELD,
    DEFAULT_GT_FIELD,
    TagSummary,
    new_sample_annotations,
)
from imagenetx.classes.imagenet import class_table
from imagenetx.memory import gc_paused
from imagenetx.store.ingest import insert_samples, new_dataset
from imagenetx.store.schema import (
    declare_classification,
    declare_imagenetx_field,
    raw_classification,
)


# paused through a whole pull too (reference counting still frees memory):
# paused per shard only, perf/hub.py fell from about 1.05x to 0.83x the raw pull
@gc_paused()
def build_imagenet_dataset(
    name: str,
    images,
    split: str = "val",
    overwrite: bool = False,
    gt_field: str = DEFAULT_GT_FIELD,
):
    """Builds a dataset of ImageNet images whose classes are known, with
    ground truth, tags and ImageNet-X in the same documents: one pass
    through the bulk ingest writer.

    Args:
        name: the dataset name
        images: ImageNet file name -> ``(path, class index)``; or an
            iterable of such dicts, each inserted (sorted by file name) as
            it comes, while the next is still being made (a pull's shards):
            the dataset then takes ``name`` only once all are in
        split ("val"): the split of every file name
        overwrite (False): whether to replace an existing dataset
        gt_field ("ground_truth"): the ground truth field to write

    Returns:
        ``(dataset, TagSummary)``
    """
    staged = not isinstance(images, dict)
    batches = images if staged else [images]
    labels = class_table().labels
    tagging = TagSummary(name, 0, 0)

    def rows():
        for batch in batches:
            file_names = sorted(batch)
            contract, part = new_sample_annotations(name, file_names, split=split)
            tagging.add(part)
            for file_name, fields in zip(file_names, contract):
                path, klass = batch[file_name]
                yield {"filepath": path,
                       gt_field: raw_classification(labels[klass], klass),
                       **(fields or {})}

    with new_dataset(name, overwrite, staged=staged) as dataset:
        declare_classification(dataset, gt_field)
        declare_imagenetx_field(dataset, DEFAULT_FIELD)
        insert_samples(dataset, rows())
    return dataset, tagging
