"""The OOD-detection benchmarks' sample contract, as names: the fields every
sample of ImageNet-O, NINCO and OpenOOD v1.5's ImageNet-1K benchmark holds,
and the values they take. The loaders write them; ``imagenetx ood`` and the
panel read them.

-   :data:`ROLE_FIELD` (``ood_role``, str): ``"id"``, ``"near"``, ``"far"``,
    or ``"ood"`` where a benchmark does not split near from far (ImageNet-O)
-   :data:`SOURCE_FIELD` (``ood_source``, str): ``"imagenet_val"`` for the
    in-distribution images, else the OOD set (:data:`SOURCES`)
-   :data:`CLASS_FIELD` (``ood_class``, str): the OOD class (NINCO's class
    folder, ImageNet-O's WordNet id, a unit test's kind); None on ID images
-   ID images have the ground truth ``fo.Classification`` (ImageNet label
    and ``class_index``); OOD images have none
-   ``dataset.info["imagenetx"]["benchmark"]``: one of :data:`BENCHMARKS`;
    ImageNet-O adds ``info["imagenetx"]["ood"] = {"class_indices": [...]}``
    (its 200 ImageNet classes, sorted), OpenOOD ``{"id_split": "test"}``
"""

#: the field that says whether a sample is in-distribution, near or far OOD
ROLE_FIELD = "ood_role"
#: the field naming the set a sample comes from
SOURCE_FIELD = "ood_source"
#: the field naming a sample's OOD class (None on ID images)
CLASS_FIELD = "ood_class"
#: the key of ``dataset.info["imagenetx"]`` holding a benchmark's OOD facts
INFO_KEY = "ood"

ID, NEAR, FAR, OOD = "id", "near", "far", "ood"
#: the values of :data:`ROLE_FIELD`
ROLES = (ID, NEAR, FAR, OOD)
#: the roles that are out of distribution
OOD_ROLES = (NEAR, FAR, OOD)

IMAGENET_VAL = "imagenet_val"
#: the values of :data:`SOURCE_FIELD`: the ID source first, then the OOD sets
SOURCES = (IMAGENET_VAL, "imagenet_o", "ninco", "ninco_unit_tests", "ssb_hard",
           "inaturalist", "textures", "openimage_o")

#: the benchmark names written in ``dataset.info["imagenetx"]["benchmark"]``
IMAGENET_O, NINCO, OPENOOD_IMAGENET = "imagenet_o", "ninco", "openood_imagenet"
BENCHMARKS = (IMAGENET_O, NINCO, OPENOOD_IMAGENET)
