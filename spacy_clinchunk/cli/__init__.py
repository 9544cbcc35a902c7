"""Command line: ``python -m spacy_clinchunk <command> ...``.

Each sub-command lives in its own module exposing ``add_parser(subparsers)`` and
``run(args, extra) -> int``. Errors are one line on stderr and a non-zero exit.
"""
import argparse
import sys
from importlib import import_module
from typing import List, Optional

from ..logs import quiet_third_party_logging
from .. import __version__

COMMANDS = {
    "chunk": "spacy_clinchunk.cli.chunk",
    "voronoi": "spacy_clinchunk.cli.voronoi",
    "evaluate": "spacy_clinchunk.cli.evaluate",
    "view": "spacy_clinchunk.cli.view",
    "convert": "spacy_clinchunk.cli.convert",
}


class CLIError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m spacy_clinchunk",
        description="Retrieval-ready, assertion-aware chunks of clinical text.",
    )
    parser.add_argument("--version", action="version", version=f"spacy-clinchunk {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for module_name in COMMANDS.values():
        try:
            module = import_module(module_name)
        except ModuleNotFoundError as err:
            if err.name == module_name:
                continue  # command not installed in this build
            raise
        module.add_parser(subparsers)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    quiet_third_party_logging()
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    try:
        return int(args.func(args, extra) or 0)
    except CLIError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except ModuleNotFoundError as err:  # an extra the command needs is not installed: name it
        from ..extras import missing_extra_message

        message = missing_extra_message(err, f"'{args.command}'")
        if message is None:
            raise
        print(f"error: {message}", file=sys.stderr)
        return 2
