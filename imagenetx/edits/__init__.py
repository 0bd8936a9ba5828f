"""The object editor: ImageNet-E's attribute edits (size, position,
direction, background) on any dataset with object masks, as group slices
of the originals.

-   :mod:`~imagenetx.edits.operations`: the edits on one image (numpy, OpenCV)
-   :mod:`~imagenetx.edits.specs`: edit kinds, levels, slice names
-   :mod:`~imagenetx.edits.masks`: object masks from FiftyOne labels
-   :mod:`~imagenetx.edits.apply`: a dataset's edits as a grouped dataset
"""

from imagenetx.edits.apply import EditSummary, edit_dataset
from imagenetx.edits.specs import EDIT_KINDS, Edit, EditKind, parse_edits, register_edit_kind


__all__ = ["EDIT_KINDS", "Edit", "EditKind", "EditSummary", "edit_dataset", "parse_edits",
           "register_edit_kind"]
