"""One settings object for every analysis function."""

from dataclasses import dataclass, fields, replace
from typing import Optional, Tuple

from imagenetx.errors import ImageNetXError
from imagenetx.metrics.stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, INTERVAL_LEVEL
from imagenetx.options import REAL_MODES


@dataclass(frozen=True)
class Settings:
    """What to slice by, what counts as correct, and which images count.

    Attributes:
        slicing: a slicing of the dataset's benchmark (ImageNet-X:
            ``top_factor``, ``factors``, ``metaclass``; ImageNet-D:
            ``nuisance``, ``nuisance_value``, ``class``) or any categorical
            field path (``tags``, ``my_field``); None: the benchmark's default
        correct: a label space of the benchmark (ImageNet-X: ``class``,
            ``metaclass``, ``real``); None: the benchmark's default
        real_mode: for ``real``: ``clean`` leaves images with an empty ReaL
            set out; ``paper`` counts them wrong (the toolkit)
        include_prototypes: keep ImageNet-X's 3,000 prototype images
        gt_field: the ground truth field
        field_name: the ImageNet-X field
        within: ``(slicing, value)``: only the images in that slice, e.g.
            ``("metaclass", "dog")``
        by: a single-valued slicing: add per-group tables (e.g.
            ``"metaclass"``)
        intervals: compute bootstrap intervals on the error ratios
        resamples, seed, level: the bootstrap settings
        benchmark: the benchmark's name; None: detected from the dataset
    """

    slicing: Optional[str] = None
    correct: Optional[str] = None
    real_mode: str = "clean"
    include_prototypes: bool = False
    gt_field: str = "ground_truth"
    field_name: str = "imagenetx"
    within: Optional[Tuple[str, str]] = None
    by: Optional[str] = None
    intervals: bool = True
    resamples: int = BOOTSTRAP_RESAMPLES
    seed: int = BOOTSTRAP_SEED
    level: float = INTERVAL_LEVEL
    benchmark: Optional[str] = None

    @classmethod
    def create(cls, settings: "Settings" = None, **kwargs) -> "Settings":
        """Settings from an optional base and keyword overrides.

        Raises:
            ImageNetXError: for an unknown keyword or choice
        """
        if settings is not None and not isinstance(settings, Settings):
            raise ImageNetXError(
                f"{settings!r} is not a Settings: pass options by keyword, e.g. "
                "correct='real' or slicing='factors'")
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(kwargs) - names)
        if unknown:
            raise ImageNetXError(
                f"Unknown analysis setting(s) {', '.join(unknown)}: use "
                f"{', '.join(sorted(names))}")
        out = replace(settings or cls(), **kwargs)
        if out.real_mode not in REAL_MODES:
            raise ImageNetXError(
                f"Unknown ReaL mode '{out.real_mode}': use one of "
                f"{', '.join(REAL_MODES)}")
        if out.within is not None:
            if len(out.within) != 2:
                raise ImageNetXError(
                    f"within={out.within!r} must be a (slicing, value) pair")
            out = replace(out, within=tuple(out.within))
        return out
