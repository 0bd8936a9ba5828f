"""One registry shape for every kind of plug-in, and the plug-ins installed
from outside the checkout.

Each layer that offers a choice (benchmarks, model sources, attacks, probes, OOD detectors,
protocols, charts, edit kinds) keeps a :class:`Registry`: names mapped to
entries, an entry given as the object itself or as ``"module:Name"`` (or a
module's dotted name), imported the first time it is looked up, so naming a
module costs no start-up time. Each layer's ``register_*`` function is the
one way to add to its registry.

A package installed with pip adds its own through the entry-point group
``imagenetx.plugins`` (the way pytest finds its plug-ins); in its
``pyproject.toml``::

    [project.entry-points."imagenetx.plugins"]
    mymodels = "mymodels.imagenetx"

Each entry point names a module (importing it registers) or a function
(called with no arguments). They are loaded once, the first time any
registry is looked up, so the command line, the App and the library all
find them.
"""

from __future__ import annotations

import importlib
import threading
from typing import TYPE_CHECKING, Callable, Dict, Generic, Iterator, List, Optional, Tuple, TypeVar

from imagenetx.errors import ImageNetXError

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

#: the entry-point group of installed plug-ins
PLUGIN_GROUP = "imagenetx.plugins"

T = TypeVar("T")

#: None, "loading" (in the thread that holds the lock) or "loaded"
_plugins: Optional[str] = None
_plugins_lock = threading.RLock()
#: the thread that loads the plug-ins, while it does
_loader_thread: Optional[int] = None


def load_object(reference: str):
    """The object ``"module:Name"`` names (the module for a dotted name
    alone), imported now."""
    module, _, name = reference.partition(":")
    loaded = importlib.import_module(module)
    return getattr(loaded, name) if name else loaded


def load_plugins() -> None:
    """Loads the installed plug-ins (entry points of :data:`PLUGIN_GROUP`)
    once per process.

    Raises:
        ImageNetXError: naming the entry point and its package, for each
            plug-in that fails to import or to register, registers a
            built-in's name or exits (once; the others are loaded)
    """
    global _plugins, _loader_thread
    if _plugins == "loaded":
        return
    with _plugins_lock:  # another thread's look-up waits until they are loaded
        if _plugins is not None:  # loaded, or loading in this thread: a plug-in looks up
            return
        _plugins = "loading"
        # imported here: importlib.metadata costs the command line's start-up 0.1 s
        from importlib.metadata import entry_points

        errors = []
        _loader_thread = threading.get_ident()
        try:
            for point in entry_points(group=PLUGIN_GROUP):
                try:
                    _load_plugin(point)
                except ImageNetXError as e:  # the others still load
                    errors.append(str(e))
        finally:
            _loader_thread = None
        _plugins = "loaded"
    if errors:
        raise ImageNetXError("; ".join(errors))


def _load_plugin(point: "EntryPoint") -> None:
    try:
        plugin = point.load()
        if callable(plugin):
            plugin()
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # a plug-in's SystemExit is its failure, not the process's
        dist = point.dist
        package = f"{dist.name} {dist.version}" if dist is not None else "an unknown package"
        raise ImageNetXError(
            f"The imagenetx plug-in '{point.name} = {point.value}' of {package} failed to "
            f"load ({type(e).__name__}: {e}): fix it, or uninstall {dist.name if dist else 'it'}"
        ) from e


def _own(entry) -> bool:
    """Whether a registered entry is the library's own (its module is in
    ``imagenetx``)."""
    module = entry if isinstance(entry, str) else getattr(entry, "__module__", None)
    return isinstance(module, str) and module.split(":")[0].split(".")[0] == "imagenetx"


class Registry(Generic[T]):
    """Names mapped to entries of one kind, looked up lazily.

    Args:
        kind: what an entry is, for messages (``"benchmark"``, ``"probe"``)
        build: turns a loaded entry into the registered value (e.g. a
            class into its instance); once per entry
        check_name: raises ImageNetXError for a name this kind refuses
    """

    def __init__(self, kind: str, build: Optional[Callable[[object], T]] = None,
                 check_name: Optional[Callable[[str], None]] = None):
        self.kind = kind
        self._build = build
        self._check_name = check_name
        self._entries: Dict[str, object] = {}
        self._values: Dict[str, T] = {}

    def register(self, name: str, entry=None):
        """Adds ``entry`` under ``name`` (replacing one of that name, but
        for an installed plug-in a built-in's) and returns it; without ``entry``, a decorator that registers what it
        decorates.

        ``entry``: the object, or ``"module:Name"`` (a module's dotted name)
        imported on first look-up.
        """
        if entry is None:
            def decorator(obj):
                self.register(name, obj)
                return obj
            return decorator
        if self._check_name is not None:
            self._check_name(name)
        if _loader_thread == threading.get_ident():
            self._check_plugin_name(name)
        self._entries[name] = entry
        self._values.pop(name, None)
        return entry

    def _check_plugin_name(self, name: str) -> None:
        """Raises for an installed plug-in's ``name`` that is a built-in's
        (``imagenet-x`` and ``imagenet_x`` alike): a plug-in adds, it does
        not silently replace."""
        same = str(name).replace("-", "_")
        for known, entry in self._entries.items():
            if str(known).replace("-", "_") == same and _own(entry):
                raise ImageNetXError(
                    f"Cannot register {self.kind} '{name}': '{known}' is imagenetx's own; "
                    "give yours another name")

    def unregister(self, name: str) -> None:
        """Takes ``name`` out (nothing if it is not registered)."""
        self._entries.pop(name, None)
        self._values.pop(name, None)

    def names(self) -> List[str]:
        """The registered names, in registration order (installed plug-ins
        loaded first)."""
        load_plugins()
        return list(self._entries)

    def __contains__(self, name: object) -> bool:
        load_plugins()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def get(self, name: str) -> T:
        """The value registered as ``name``, its module imported on first use.

        Raises:
            ImageNetXError: for an unknown name (listing the known ones), or
                an entry whose module is not installed
        """
        if name not in self:
            raise self.unknown(name)
        if name not in self._values:
            entry = self._entries[name]
            if isinstance(entry, str):
                try:
                    entry = load_object(entry)
                except (ImportError, AttributeError) as e:
                    raise ImageNetXError(
                        f"The {self.kind} '{name}' ({self._entries[name]}) is not "
                        f"available in this installation ({e})") from e
            self._values[name] = self._build(entry) if self._build else entry
        return self._values[name]

    def items(self) -> List[Tuple[str, T]]:
        """``(name, value)`` of every entry, each loaded."""
        return [(name, self.get(name)) for name in self.names()]

    def entry(self, name: str):
        """The entry as registered (a ``"module:Name"`` string stays one)."""
        load_plugins()
        return self._entries[name]

    def unknown(self, name: str, known: Optional[List[str]] = None) -> ImageNetXError:
        """The error for an unknown ``name``: it lists the known ones
        (``known``, default: the registered names)."""
        known = self.names() if known is None else known
        return ImageNetXError(f"Unknown {self.kind} '{name}': use one of {', '.join(known)}")
