"""What a user needs to know before filing a bug, line by line.

:func:`diagnose` checks the versions of the pieces the project runs on, the
plugin (where it is, whether FiftyOne registers it), the database, the
caches and the optional pieces, and returns one :class:`Line` per finding.
It works when a piece is missing: that is a line too, with the command that
installs it. ``imagenetx doctor`` prints them.
"""

import importlib
import importlib.metadata
import importlib.util
import os
import sys
from typing import Callable, List, NamedTuple, Optional, Tuple

from imagenetx import __version__
from imagenetx.disk import format_size

# lazy imports: start-up (each check imports what it inspects, so the others still run where
# FiftyOne, torch or a model library is missing)

DISTRIBUTION = "imagenetx-fiftyone"


class Line(NamedTuple):
    """One finding: ``ok`` False for a problem, ``core`` True when the
    project cannot run without it."""

    topic: str
    text: str
    ok: bool = True
    core: bool = False

    def __str__(self) -> str:
        return f"{'ok ' if self.ok else ('ERR' if self.core else '-- ')} {self.topic:<13}{self.text}"


#: (topic, distribution, import name, what it is for) of the pieces the core needs
CORE = [
    ("FiftyOne", "fiftyone", "fiftyone", None),
    ("torch", "torch", "torch", None),
    ("torchvision", "torchvision", "torchvision", None),
    ("timm", "timm", "timm", None),
    ("numpy", "numpy", "numpy", None),
    ("scipy", "scipy", "scipy", None),
    ("annotations", "imagenet-x", "imagenet_x", None),
]
#: the pieces only some features need: (topic, distribution, import name, what for)
OPTIONAL = [
    ("open_clip", "open_clip_torch", "open_clip", "zero-shot CLIP / SigLIP models"),
    ("transformers", "transformers", "transformers", "Hugging Face models"),
    ("foolbox", "foolbox", "foolbox", "attacks (PGD, FGSM)"),
    ("AutoAttack", "pyautoattack", "pyautoattack", "AutoAttack"),
    # imagecorruptions-imaug's code, carried in the library: its OpenCV is the headless build
    ("corruptions", "opencv-python-headless", "imagenetx.probes.imagecorruptions",
     "ImageNet-C probes"),
]


def _version(distribution: str, module: str) -> Optional[str]:
    """The installed version, or None when the module does not import."""
    try:
        importlib.import_module(module)
    except Exception:  # a broken install counts as missing
        return None
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return getattr(sys.modules[module], "__version__", "?")


def _installed(distribution: str) -> Optional[str]:
    """The installed version, without importing it (None: not installed)."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _requirement(distribution: str) -> str:
    """The requirement ``pyproject.toml`` declares for a distribution."""
    from packaging.requirements import Requirement

    try:
        for req in importlib.metadata.requires(DISTRIBUTION) or ():
            if Requirement(req).name.lower() == distribution.lower():
                return req
    except importlib.metadata.PackageNotFoundError:
        pass
    return distribution


def versions(import_fiftyone: bool = True) -> List[Line]:
    """imagenetx, Python, the core pieces (FiftyOne checked against the
    supported range), CUDA and its devices, and the optional pieces.
    ``import_fiftyone=False`` reads FiftyOne's version without importing it
    (its import waits half a minute for a database that does not answer)."""
    here = os.path.dirname(os.path.abspath(__file__))
    lines = [Line("imagenetx", f"{__version__} ({here})"),
             Line("Python", f"{sys.version.split()[0]} ({sys.executable})")]
    for topic, dist, module, _ in CORE:
        version = (_version(dist, module) if import_fiftyone or dist != "fiftyone"
                   else _installed(dist))
        if version is None:
            lines.append(Line(topic, f"missing: pip install '{_requirement(dist)}'", False, True))
            continue
        text, ok = version, True
        if dist == "fiftyone":
            from packaging.requirements import Requirement

            wanted = Requirement(_requirement("fiftyone")).specifier
            ok = not wanted or version in wanted
            text += "" if ok else (f": not in the supported range {wanted}: "
                                   f"pip install 'fiftyone{wanted}'")
        lines.append(Line(topic, text, ok, True))
    lines.append(_cuda())
    for topic, dist, module, what in OPTIONAL:
        version = _version(dist, module)
        lines.append(Line(topic, version) if version else Line(
            topic, f"missing (for {what}): pip install '{_requirement(dist)}'", False))
    gui = _gui_opencv()
    if gui:
        lines.append(Line("corruptions", gui, False))
    return lines


def _gui_opencv() -> Optional[str]:
    """A line when the GUI OpenCV is installed beside the headless one (both
    install ``cv2/``; the later install wins)."""
    try:
        gui = importlib.metadata.version("opencv-python")
    except importlib.metadata.PackageNotFoundError:
        return None
    return (f"opencv-python {gui} (the GUI build) is installed beside opencv-python-headless: "
            "both write cv2/, and on a server without libGL `import cv2` fails; pip uninstall "
            "opencv-python imagecorruptions-imaug, then pip install --force-reinstall "
            "--no-deps opencv-python-headless")


def _cuda() -> Line:
    if "torch" not in sys.modules:
        return Line("CUDA", "unknown: torch does not import", False)
    import torch

    if not torch.cuda.is_available():
        return Line("CUDA", f"not available (torch built for CUDA {torch.version.cuda}); "
                            "models run on the CPU")
    names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return Line("CUDA", f"{torch.version.cuda}, {len(names)} device(s): {', '.join(names)}")


def plugin() -> List[Line]:
    """Where the plugin is and whether FiftyOne registers it (FiftyOne's own
    error when it does not)."""
    import fiftyone as fo
    from fiftyone.operators.registry import OperatorRegistry

    from imagenetx.app.install import PLUGIN_NAME, PLUGIN_ROOT, registered_plugin_dir

    found = registered_plugin_dir()
    if not found:
        return [Line("plugin", f"not installed in FiftyOne's plugins folder "
                               f"({fo.config.plugins_dir}): imagenetx plugin install", False)]
    lines = [Line("plugin", f"{PLUGIN_NAME} at {found}" + (
        f" -> {os.path.realpath(found)}" if os.path.realpath(found) != found else ""))]
    if os.path.realpath(found) != os.path.realpath(PLUGIN_ROOT):
        lines.append(Line("plugin", f"not this library's plugin ({PLUGIN_ROOT}): imagenetx "
                                    "plugin install links it", False))
    registry = OperatorRegistry()
    ours = [op for op in registry.list_operators() if op.plugin_name == PLUGIN_NAME]
    errors = [e for ctx in registry.plugin_contexts if ctx.name == PLUGIN_NAME
              for e in ctx.errors]
    if errors:
        last = errors[0].strip().splitlines()[-1]
        lines.append(Line("plugin", f"FiftyOne does not register it: {last}", False))
    else:
        lines.append(Line("plugin", f"FiftyOne registers it: {len(ours)} operators and panels"))
    return lines


def plugins() -> List[Line]:
    """The installed imagenetx plug-ins (entry points of ``imagenetx.plugins``),
    loaded as a registry look-up loads them: a broken one is a problem."""
    from importlib.metadata import entry_points

    from imagenetx.errors import ImageNetXError
    from imagenetx.registry import PLUGIN_GROUP, load_plugins

    points = entry_points(group=PLUGIN_GROUP)
    if not points:
        return [Line("plug-ins", f"none installed (entry points of {PLUGIN_GROUP})")]
    lines = [Line("plug-ins", f"{p.name} = {p.value}" + (
        f" ({p.dist.name} {p.dist.version})" if p.dist else "")) for p in points]
    try:
        load_plugins()
    except ImageNetXError as e:
        lines.append(Line("plug-ins", str(e), False))
    return lines


def connect() -> Optional[str]:
    """Points this process at the database the commands share, as every
    command does, before FiftyOne is imported; returns why it could not."""
    from imagenetx.store import service

    try:
        service.connect()
    except Exception as e:  # reported by :func:`database`
        return str(e).splitlines()[0]
    return None


def database(connect_error: Optional[str] = None) -> List[Line]:
    """The database service, its URI and whether it answers."""
    from imagenetx.store import service

    lines = [Line("database", line) for line in service.status().splitlines()]
    if connect_error:
        return lines + [Line("database", f"not reachable: {connect_error} (database "
                                         f"'{service.database_name()}')", False, True)]
    try:
        import fiftyone.core.odm as foodm

        foodm.get_db_client().admin.command("ping")
        uri = os.environ.get("FIFTYONE_DATABASE_URI") or "FiftyOne's own database"
        lines.append(Line("database", f"reachable: {service._redact(uri)}, database "
                          f"'{service.database_name()}'", True, True))
    except Exception as e:  # any failure to reach it is the finding
        lines.append(Line("database", f"not reachable: {str(e).splitlines()[0]}", False, True))
    return lines


def _size(folder: str) -> str:
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return format_size(total)


def caches(pulls: bool = True) -> List[Line]:
    """The folders the project writes: zero-shot heads, downloads, reports,
    and the Hub pulls. ``pulls=False`` when the database does not answer:
    the reports folder (a FiftyOne setting) and which datasets use the pulls
    need FiftyOne, whose import then waits for the database."""
    from imagenetx.store.downloads import cache_root

    root = str(cache_root())
    folders = [("heads", os.path.join(root, "zero_shot")), ("downloads", root)]
    if pulls:
        from imagenetx.app.report_folder import reports_dir

        folders.append(("reports", reports_dir()))
    lines = [Line(topic, f"{folder}: {_size(folder)}" if os.path.isdir(folder)
                  else f"{folder}: empty (not made yet)") for topic, folder in folders]
    if not pulls:
        return lines + [
            Line("reports", "not checked: its folder is a FiftyOne setting, and FiftyOne "
                            "is not imported while the database is not reachable", False),
            Line("Hub pulls", "not checked: which datasets use them is in the database, "
                              "which is not reachable", False)]
    from imagenetx.benchmarks.imagenet_x.pull_cache import cached_pulls

    pulls = cached_pulls()
    unused = [p for p in pulls if p.unused]
    text = (f"{len(pulls)} on disk, {format_size(sum(p.size for p in pulls))}"
            + (f"; {len(unused)} no dataset uses ({format_size(sum(p.size for p in unused))}): "
               "`imagenetx cache clear` removes them" if unused else ""))
    return lines + [Line("Hub pulls", text)]


def indexes() -> List[Line]:
    """The indexes the project made on each dataset (what the panels and
    views query: tags, slicing fields, prediction labels, correctness)."""
    from imagenetx.store.indexes import indexes_by_dataset

    found = indexes_by_dataset()
    if not found:
        return [Line("indexes", "none beyond FiftyOne's own (no dataset tagged or evaluated yet)")]
    return [Line("indexes", f"{name}: {', '.join(paths)}") for name, paths in sorted(found.items())]


def published_tables() -> List[Line]:
    """Which published-accuracy tables the package carries (a run's clean
    top-1 is printed beside its model's published one from them)."""
    from imagenetx.protocols.published import TABLES, tables_present

    present = tables_present()
    have = [name for name, ok in present.items() if ok]
    lines = [Line("published", f"accuracy tables: {', '.join(have) or 'none'} ({TABLES}); "
                               "torchvision's from its weights' metadata")]
    missing = [name for name, ok in present.items() if not ok]
    if missing:
        lines.append(Line("published", f"missing: {', '.join(missing)} (reinstall "
                                       f"{DISTRIBUTION}): those models' runs are not checked "
                                       "against their published accuracy", False))
    return lines


def diagnose() -> List[Line]:
    """Every line, in order; the FiftyOne-dependent ones only when FiftyOne
    imports, and those that need the database only when it answers."""
    connect_error = connect() if importlib.util.find_spec("fiftyone") else None
    lines = versions(import_fiftyone=connect_error is None)
    if any(l.topic == "FiftyOne" and l.text.startswith("missing") for l in lines):
        return lines
    unchecked = "not checked: it needs the database, which is not reachable (below)"
    steps: List[Tuple[str, Callable[[], List[Line]]]] = [
        ("plugin", plugin if connect_error is None else
         lambda: [Line("plugin", unchecked, False)]),
        ("plug-ins", plugins),
        ("database", lambda: database(connect_error)),
        ("caches", lambda: caches(pulls=connect_error is None)),
        ("published", published_tables)]
    steps.append(("indexes", indexes if connect_error is None else
                  lambda: [Line("indexes", unchecked, False)]))
    for name, step in steps:
        try:
            lines += step()
        except Exception as e:  # one broken check must not hide the others
            lines.append(Line(name, f"check failed: {type(e).__name__}: {e}", False))
    return lines


def healthy(lines: List[Line]) -> bool:
    """Whether everything the core needs is there."""
    return all(l.ok for l in lines if l.core)
