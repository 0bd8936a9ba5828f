"""The 16 ImageNet-X factors of variation."""

#: the 16 factors of variation, in the original toolkit's order
FACTORS = (
    "pose",
    "background",
    "pattern",
    "color",
    "smaller",
    "shape",
    "partial_view",
    "subcategory",
    "texture",
    "larger",
    "darker",
    "object_blocking",
    "person_blocking",
    "style",
    "brighter",
    "multiple_objects",
)
