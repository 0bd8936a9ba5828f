"""Models: one model interface and the pipeline that runs it.

-   ``classifier``: the interface (:class:`~imagenetx.models.classifier.Classifier`:
    preprocessing + logits over named output classes)
-   ``sources/``: specs -> classifiers (``timm:``, ``torchvision:``,
    ``checkpoint:``, ``open_clip:``, ``hf:``, ``zoo:``), ``zeroshot``: zero-shot
    heads, ``preprocess``: preprocessing from each library's configuration,
    ``catalog``: specs to suggest
-   the pipeline, stage by stage: ``options`` (one validated options object),
    ``pipeline`` (placement and the batch loop), ``loader`` (decoding),
    ``engine`` (device, autocast, logits), ``classify`` (the classify task),
    ``writer`` (the background writer), ``inference`` (``predict``),
    ``distributed`` (torchrun shards)
-   ``predictions``: prediction files; ``specs``: the earlier entry points
"""
