"""Options shared by the commands that read ground truth (``voronoi``, ``evaluate``, ``convert``)."""
import argparse
import sys
from pathlib import Path
from typing import Any, List, Optional, Sequence

from ..groundtruth.model import FORMATS, SNIPPET_POLICIES, UNLOCATED_POLICIES, AnnotationError, ReadPolicy
from . import CLIError


def add_choice(parser: argparse.ArgumentParser, flag: str, choices: Sequence[str], help: str) -> None:
    """An option with fixed choices, the first of them its default."""
    parser.add_argument(flag, choices=choices, default=choices[0], help=help)


def add_reading_arguments(parser: argparse.ArgumentParser) -> None:
    add_choice(parser, "--format", FORMATS, "input format (default: by extension: .json ours or BioC, .ann/.txt brat, .xml BioC)")
    add_choice(
        parser, "--unlocated", UNLOCATED_POLICIES,
        "annotations without evidence spans: keep on the document (no territory), drop, or fail the file",
    )
    add_choice(
        parser, "--snippet-mismatch", SNIPPET_POLICIES,
        "snippet text that differs from the text (beyond whitespace/case): keep with a warning, "
        "drop that annotation, or fail the file",
    )


def policy_of(args: argparse.Namespace) -> ReadPolicy:
    return ReadPolicy(args.unlocated, args.snippet_mismatch)


def input_files(path: str, pattern: Optional[str], format: str) -> List[Path]:
    """Files of a corpus directory (or one file), refusing an empty selection."""
    from ..groundtruth.formats import annotated_files  # the readers import spaCy: on first use

    try:
        files = annotated_files(path, pattern, format)
    except AnnotationError as err:
        raise CLIError(str(err)) from err
    if not files:
        raise CLIError(f"no files match {pattern or format + ' files'} under {path}")
    return files


def say(message: str, progress: Any = None, stream: Any = None) -> None:
    stream = stream or sys.stderr
    if progress is not None:
        progress.write(message, file=stream)
    else:
        print(message, file=stream)


def report_notes(origin: str, notes: List[str], progress: Any = None) -> None:
    """Per-annotation notes of a file on stderr (they never hold note text)."""
    for note in notes:
        say(f"note: {origin}: {note}", progress)

