"""What every command module uses: a group of commands, and printing a
result as text, JSON or CSV."""

import argparse
import sys
from typing import Callable, List, Tuple

Handler = Callable[[argparse.Namespace], int]


class CommandGroup:
    """The commands of one module, as the overview lists them.

    Args:
        subparsers: the ``imagenetx`` parser's subparsers action
        title: the group's name in the overview
    """

    def __init__(self, subparsers, title: str):
        self._subparsers = subparsers
        self.title = title
        self.commands: List[Tuple[str, str]] = []

    def add(self, name: str, handler: Handler, help: str) -> argparse.ArgumentParser:
        """Adds the command ``name``; ``handler(args)`` runs it and returns
        the exit status. Returns its parser, to add the flags to."""
        # no help= here: the top-level help lists commands by group instead
        parser = self._subparsers.add_parser(name, description=help)
        parser.set_defaults(handler=handler)
        self.commands.append((name, help))
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
