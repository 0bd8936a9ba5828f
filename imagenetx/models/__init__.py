"""Models: one model interface and the run that puts it to work.

-   ``classifier``: the interface (:class:`~imagenetx.models.classifier.Classifier`:
    preprocessing + logits over named output classes)
-   ``sources/``: specs -> classifiers (``timm:``, ``torchvision:``,
    ``checkpoint:``, ``open_clip:``, ``hf:``, ``zoo:``), ``zeroshot``: zero-shot
    heads, ``preprocess``: preprocessing from each library's configuration,
    ``catalog``: specs to suggest
-   the model run: ``run`` (the setup every run shares and the task
    contract), ``config`` (the validated options objects), ``device``
    (placement: ranks, device, autocast, sizes; the model on its device),
    ``loader`` (decoding), ``writer`` (the background writer),
    ``distributed`` (torchrun shards), ``protocol_run`` (a protocol applied)
-   ``predict``: the classify task and ``predict``; probes and attacks are
    the other tasks (:mod:`imagenetx.probes.run`, :mod:`imagenetx.attacks.run`)
-   ``prediction_files``: prediction files; ``specs``: the earlier entry points
"""
