"""The one exception type a user mistake raises, and the parameters its
message names.

A message names the library's parameters in backticks, as `` `name` `` or
`` `name=value` `` (e.g. "pass `overwrite=True` to replace it"); each
adapter renders those spans in its own terms (the command line as its
flags, the App as its form's labels) with :meth:`ImageNetXError.render`.
Other backtick spans (`` `imagenetx doctor` ``) are left as written.
"""

import re
from typing import Callable, List, NamedTuple, Optional

#: a backtick span that names a parameter: `name` or `name=value` (not
#: inside an reST ````literal````)
_PARAMETER = re.compile(r"(?<!`)`([A-Za-z_][A-Za-z0-9_]*)(?:=([^`]*))?`(?!`)")


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


class ImageNetXError(Exception):
    """A user mistake: the message names the input and how to fix it.

    The command line prints the message alone (no traceback) and exits with
    status 2. Library functions raise it before they write anything, so the
    dataset is left as it was. The message names the library's parameters
    (module docstring); :meth:`render` puts them in an adapter's terms.
    """

    @property
    def parameters(self) -> List[Parameter]:
        """The parameters the message names, in order."""
        return parameters_in(str(self))

    def render(self, term: Term) -> str:
        """The message with each parameter in ``term``'s words."""
        return render_parameters(str(self), term)


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
