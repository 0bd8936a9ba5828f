"""What every command module uses: a group of commands, and printing a
result as text, JSON or CSV."""

import argparse
import sys
from typing import Callable, Iterable, Iterator, List, Optional, Tuple

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
        parser.set_defaults(handler=handler, database=database)
        return parser


def print_result(args, result: dict, text, csv=None) -> int:
    """Prints a result dict as one JSON object (``--json``), CSV
    (``--csv``, with ``csv(result)``) or text (``text(result)``)."""
    import json

    if getattr(args, "json", False):
        print(json.dumps(result, allow_nan=False))
    elif getattr(args, "csv", False):
        sys.stdout.write(csv(result))
    else:
        print(text(result))
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
