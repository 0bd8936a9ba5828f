"""The ``imagenetx`` command: a thin layer over the library.

One module per command group; each has a ``TITLE`` and a
``register(group)`` that adds its commands, their flags and their
handlers. Flags several commands share are in :mod:`imagenetx.cli.flags`.
Building the parser imports nothing heavy: handlers import the library
(FiftyOne, torch, scipy) when they run.
"""

# lazy imports: start-up (the parser is built, and --help shown, without FiftyOne, torch or scipy)

import argparse
import os
import sys
import textwrap
from typing import List, Optional

from imagenetx import __version__
from imagenetx.cli import analysis, app, cache, load, predict, published, report
from imagenetx.cli.base import CommandGroup, in_flags

#: the command groups, in the order ``imagenetx`` lists them
GROUPS = (load, predict, analysis, published, report, app, cache)

DESCRIPTION = "ImageNet-X factors of variation on FiftyOne datasets."


def build_parser(only: Optional[str] = None) -> argparse.ArgumentParser:
    """The ``imagenetx`` parser; its help lists the commands by group.

    Args:
        only: build the flags of this command only (None: of every command)
    """
    parser = argparse.ArgumentParser(
        prog="imagenetx", usage="imagenetx COMMAND [options]", description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"imagenetx {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                prog="imagenetx", help="one of the commands below")
    groups = []
    for module in GROUPS:
        group = CommandGroup(sub, module.TITLE, only)
        module.register(group)
        groups.append(group)
    parser.epilog = _overview(groups)
    parser.set_defaults(command_of=command_parser)
    return parser


def command_parser(name: str) -> argparse.ArgumentParser:
    """The parser of the command ``name`` alone (its flags name a call's
    arguments: :func:`imagenetx.cli.base.command_for`)."""
    return build_parser(only=name)._subparsers._group_actions[0].choices[name]


def _overview(groups: List[CommandGroup]) -> str:
    width = max(len(name) for g in groups for name, _ in g.commands) + 4
    lines = []
    for group in groups:
        lines.append(f"{group.title}:")
        for name, help in group.commands:
            lines += textwrap.wrap(help, 79, initial_indent=f"  {name:<{width - 2}}",
                                   subsequent_indent=" " * width)
        lines.append("")
    lines.append("`imagenetx COMMAND --help` lists a command's options.")
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    """Runs the command line; returns the exit status."""
    argv = sys.argv[1:] if argv is None else argv
    from imagenetx.disk import user_error_of
    from imagenetx.errors import ImageNetXError

    try:
        # the first word that is no option names the command (the top level has
        # only --help): only its flags are built
        parser = build_parser(only=next((a for a in argv if not a.startswith("-")), ""))
        if not argv:
            parser.print_help()
            return 0
        args = parser.parse_args(argv)
    except ImageNetXError as e:  # a broken plug-in, loaded to check a registry's names
        print(f"imagenetx: error: {e}", file=sys.stderr)
        return 2
    os.environ.setdefault("FIFTYONE_DATABASE_VALIDATION", "false")
    try:
        if args.database:
            from imagenetx.store.service import connect

            connect()
        return args.handler(args)
    except Exception as e:  # a user mistake, or a full disk met anywhere: one line
        error = user_error_of(e)
        if error is None:
            raise
        message = in_flags(str(error), args.command_parser, command_parser)
        print(f"imagenetx {args.command}: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
