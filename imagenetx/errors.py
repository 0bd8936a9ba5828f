"""The one exception type a user mistake raises, and the parameters and
calls its message names.

A message names the library's parameters in backticks, as `` `name` `` or
`` `name=value` `` (e.g. "pass `overwrite=True` to replace it"), and the
library functions to call as `` `name()` `` or `` `name(key=value, ...)` ``
(e.g. "run `tag_dataset()` first"), each call one of :data:`CALLS`. Each
adapter renders those spans in its own terms with
:meth:`ImageNetXError.render`: the command line a parameter as its flag and
a call as its command (``imagenetx tag``), the App a parameter as its form's
label and a call as its operator's label; the library (a notebook) keeps
them as written. Other backtick spans (`` `fiftyone datasets list` ``) are
left as written.
"""

import re
from typing import Callable, Dict, List, NamedTuple, Optional, Tuple

#: a backtick span that names a parameter: `name` or `name=value` (not
#: inside an reST ````literal````)
_PARAMETER = re.compile(r"(?<!`)`([A-Za-z_][A-Za-z0-9_]*)(?:=([^`]*))?`(?!`)")

#: a backtick span that names a call: `name()`, `Class.method()` or
#: `name(key=value, ...)`
_CALL = re.compile(r"(?<!`)`([A-Za-z_][A-Za-z0-9_.]*)\(([^`()]*)\)`(?!`)")

#: one keyword argument of a call span: key=value, the value a quoted string
#: or anything up to the next comma
_ARGUMENT = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)=('[^']*'|\"[^\"]*\"|[^,]*)\s*(?:,|$)")


class Parameter(NamedTuple):
    """A parameter a message names: ``name``, and the ``value`` it asks
    for as written (None where the message names the parameter alone)."""

    name: str
    value: Optional[str] = None

    @property
    def bare_value(self) -> Optional[str]:
        """The value without the quotes of a Python string literal."""
        v = self.value
        if v is not None and len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
            return v[1:-1]
        return v


#: an adapter's words for a parameter, or None to keep the library's
Term = Callable[[Parameter], Optional[str]]


def parameters_in(text: str) -> List[Parameter]:
    """The parameters ``text`` names, in order."""
    return [Parameter(m.group(1), m.group(2)) for m in _PARAMETER.finditer(text)]


def render_parameters(text: str, term: Term) -> str:
    """``text`` with each parameter span replaced by ``term(parameter)``
    (a span ``term`` returns None for stays as written)."""

    def words(match):
        rendered = term(Parameter(match.group(1), match.group(2)))
        return match.group(0) if rendered is None else rendered

    return _PARAMETER.sub(words, text)


class Door(NamedTuple):
    """How a user reaches a library function: ``function`` (its
    ``module:name``), the ``imagenetx`` ``command`` that runs it and the
    name of the App ``operator`` that does (None where none does)."""

    function: str
    command: str
    operator: Optional[str] = None


#: the calls messages name (`` `tag_dataset()` ``), each with its command and
#: operator (tests/test_errors.py checks every one names a real function,
#: command and operator, and that every call a message names is here)
CALLS: Dict[str, Door] = {
    "tag_dataset": Door("imagenetx.benchmarks.imagenet_x.tagging:tag_dataset", "tag",
                        "load_imagenetx"),
    "Benchmark.load": Door("imagenetx.benchmarks.base:Benchmark.load", "load", "load_benchmark"),
    "ImageNetX.load": Door("imagenetx.benchmarks.imagenet_x.benchmark:ImageNetX.load",
                           "load imagenet-x", "load_benchmark"),
    "predict": Door("imagenetx.models.predict:predict", "predict", "run_model"),
    "run_embed": Door("imagenetx.models.embed:run_embed", "embed", "embed_samples"),
    "run_probe": Door("imagenetx.probes.run:run_probe", "probe"),
    "run_attack": Door("imagenetx.attacks.run:run_attack", "attack", "run_attack"),
    "edit_dataset": Door("imagenetx.edits:edit_dataset", "edit", "edit_objects"),
    "import_predictions": Door("imagenetx.models.prediction_files:import_predictions",
                               "import-predictions", "import_predictions"),
    "corruption_accuracy_of": Door("imagenetx.analysis.corruption:corruption_accuracy_of",
                                   "corruption-accuracy"),
    "score_ood": Door("imagenetx.analysis.ood_detection:score_ood", "ood"),
    "discover_slices": Door("imagenetx.analysis:discover_slices", "discover", "discover_slices"),
    "discover_error_slices": Door(
        "imagenetx.analysis.embedding_slices:discover_error_slices", "discover",
        "discover_embedding_slices"),
    "build_demo": Door("imagenetx.analysis.demo:build_demo", "demo"),
}


class Call(NamedTuple):
    """A call a message names: ``name`` (a key of :data:`CALLS`) and its
    keyword ``arguments`` as parameters, in order."""

    name: str
    arguments: Tuple[Parameter, ...] = ()

    @property
    def door(self) -> Optional[Door]:
        """Its command and operator (None for a name not in :data:`CALLS`)."""
        return CALLS.get(self.name)


#: an adapter's words for a call, or None to keep the library's
CallTerm = Callable[[Call], Optional[str]]


def _call(match) -> Call:
    return Call(match.group(1), tuple(Parameter(m.group(1), m.group(2).strip())
                                      for m in _ARGUMENT.finditer(match.group(2))))


def calls_in(text: str) -> List[Call]:
    """The calls ``text`` names, in order."""
    return [_call(m) for m in _CALL.finditer(text)]


def render_calls(text: str, term: CallTerm) -> str:
    """``text`` with each call span replaced by ``term(call)`` (a span
    ``term`` returns None for stays as written)."""

    def words(match):
        rendered = term(_call(match))
        return match.group(0) if rendered is None else rendered

    return _CALL.sub(words, text)


class ImageNetXError(Exception):
    """A user mistake: the message names the input and how to fix it.

    The command line prints the message alone (no traceback) and exits with
    status 2. Library functions raise it before they write anything, so the
    dataset is left as it was. The message names the library's parameters
    and calls (module docstring); :meth:`render` puts them in an adapter's
    terms.
    """

    @property
    def parameters(self) -> List[Parameter]:
        """The parameters the message names, in order."""
        return parameters_in(str(self))

    @property
    def calls(self) -> List[Call]:
        """The calls the message names, in order."""
        return calls_in(str(self))

    def render(self, term: Term, call_term: Optional[CallTerm] = None) -> str:
        """The message with each call in ``call_term``'s words and each
        parameter in ``term``'s."""
        text = str(self) if call_term is None else render_calls(str(self), call_term)
        return render_parameters(text, term)


def database_gone(e: BaseException) -> Optional["ImageNetXError"]:
    """The one line of a database that stopped answering (the server gone,
    a connection reset, a server-selection timeout), which ``e`` is or was
    raised from; None for any other error."""
    try:
        from pymongo.errors import ConnectionFailure
    except ImportError:  # reading without a database client
        return None
    seen = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, ConnectionFailure):
            text = (str(e).strip().splitlines() or [""])[0][:300]
            return ImageNetXError(
                f"The database stopped answering ({type(e).__name__}: {text}); what was "
                "written before is kept: when it answers again, run the same command again "
                "to resume")
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return None
