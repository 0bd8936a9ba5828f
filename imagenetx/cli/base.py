"""What every command module uses: a group of commands, printing a
result as text, JSON or CSV, and the library's parameters as flags."""

import argparse
import sys
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Tuple

from imagenetx.errors import Call, Parameter, render_calls, render_parameters

Handler = Callable[[argparse.Namespace], int]


class _Unbuilt:
    """Takes the flags of a command that is not being run and drops them:
    argparse checks every flag as it is added, which costs start-up time."""

    def add_argument(self, *args, **kwargs):
        return None

    def add_mutually_exclusive_group(self, *args, **kwargs):
        return self

    add_argument_group = add_mutually_exclusive_group

    def set_defaults(self, **kwargs):
        return None


class Names:
    """A registry's names as argparse ``choices``, read only when a value is
    checked or the help is shown: the installed plug-ins (which may add
    names) load for the command that runs, not for every command."""

    def __init__(self, names: Callable[[], Iterable[str]]):
        self._names = names

    def __contains__(self, name: object) -> bool:
        return name in self._names()

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())


class CommandGroup:
    """The commands of one module, as the overview lists them.

    Args:
        subparsers: the ``imagenetx`` parser's subparsers action
        title: the group's name in the overview
        only: build the flags of this command only (None: of every command)
    """

    def __init__(self, subparsers, title: str, only: Optional[str] = None):
        self._subparsers = subparsers
        self.title = title
        self.only = only
        self.commands: List[Tuple[str, str]] = []

    def add(self, name: str, handler: Handler, help: str,
            database: bool = True) -> argparse.ArgumentParser:
        """Adds the command ``name``; ``handler(args)`` runs it and returns
        the exit status; ``database``: whether it uses FiftyOne's database
        (connected before the handler runs). Returns its parser, to add the
        flags to."""
        # no help= here: the top-level help lists commands by group instead
        parser = self._subparsers.add_parser(name, description=help)
        self.commands.append((name, help))
        if self.only is not None and name != self.only:
            return _Unbuilt()
        parser.set_defaults(handler=handler, database=database, command_parser=parser)
        return parser


def print_text(args, text: str, file=None) -> None:
    """Prints a library text (a summary, a note) with the parameters it
    names as the command's flags (:func:`in_flags`)."""
    print(in_flags(str(text), getattr(args, "command_parser", None),
                   getattr(args, "command_of", None)), file=file)


def print_result(args, result: dict, text, csv=None) -> int:
    """Prints a result dict as one JSON object (``--json``), CSV
    (``--csv``, with ``csv(result)``) or text (``text(result)``)."""
    import json

    if getattr(args, "json", False):
        print(json.dumps(result, allow_nan=False))
    elif getattr(args, "csv", False):
        sys.stdout.write(csv(result))
    else:
        print_text(args, text(result))
    return 0


def csv_text(rows: list) -> str:
    """Rows of dicts as CSV text, the first row's keys as the header."""
    import csv
    import io

    buffer = io.StringIO()
    if rows:
        writer = csv.DictWriter(buffer, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return buffer.getvalue()


def _actions(parser: argparse.ArgumentParser) -> Dict[str, argparse.Action]:
    """The parser's arguments by destination (the library parameter each
    one sets); argparse lists them only in ``_actions``."""
    actions: Dict[str, argparse.Action] = {}
    for action in getattr(parser, "_actions", ()):
        if action.dest not in (argparse.SUPPRESS, "help"):
            actions.setdefault(action.dest, action)
    return actions


def flag_for(action: argparse.Action, parameter: Parameter) -> Optional[str]:
    """``parameter`` as the argument ``action`` reads it: ``overwrite=True``
    as ``--overwrite``, ``eps=4/255`` as ``--eps 4/255``, ``field`` as
    ``--field``, a positional's value as itself; None where the flag cannot
    say the value (``overwrite=False``)."""
    longs = [o for o in action.option_strings if o.startswith("--")]
    option = (longs or action.option_strings or [None])[0]
    value = parameter.bare_value
    if option is None:  # a positional: its value, else its placeholder
        return value if value is not None else (action.metavar or action.dest.upper())
    if value is None:
        return option
    if action.nargs == 0:  # store_true, store_false, store_const
        return option if value == repr(action.const) or value == str(action.const) else None
    return f"{option} {value}"


def in_flags(text: str, parser: Optional[argparse.ArgumentParser],
             command_of: Optional[Callable[[str], argparse.ArgumentParser]] = None) -> str:
    """``text`` (a library error or summary) with each call it names
    (:mod:`imagenetx.errors`) as its command (:func:`command_for`, its
    arguments as the flags of the parser ``command_of(command)`` builds) and
    each parameter as ``parser``'s flag; a parameter the command has no flag
    for keeps the library's words."""
    text = render_calls(text, lambda call: command_for(call, command_of))
    if parser is None:
        return text
    actions = _actions(parser)

    def term(parameter: Parameter) -> Optional[str]:
        action = actions.get(parameter.name)
        return None if action is None else flag_for(action, parameter)

    return render_parameters(text, term)


def command_for(call: Call,
                command_of: Optional[Callable[[str], argparse.ArgumentParser]] = None
                ) -> Optional[str]:
    """The command that makes ``call``: `` `predict(field='r', logits=True)` ``
    as `` `imagenetx predict --field r --logits` `` (positionals first); an
    argument the command has no flag for, or any without ``command_of``,
    keeps the library's ``key=value``. None for a call no command makes."""
    door = call.door
    if door is None:
        return None
    words = door.command.split()  # the command, and any positional it fixes
    actions = _actions(command_of(words[0])) if command_of and call.arguments else {}
    positionals, options = [], []
    for parameter in call.arguments:
        action = actions.get(parameter.name)
        flag = None if action is None else flag_for(action, parameter)
        if flag is None:
            options.append(f"{parameter.name}={parameter.value}")
        else:
            (options if action.option_strings else positionals).append(flag)
    return "`" + " ".join(["imagenetx", *words, *positionals, *options]) + "`"
