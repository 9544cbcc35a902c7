"""Options shared by the commands that read ground truth (``voronoi``, ``evaluate``, ``convert``)."""
import argparse
import sys
from pathlib import Path
from typing import Any, List, Optional

from . import CLIError


def add_reading_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format",
        choices=("auto", "json", "brat", "bioc"),
        default="auto",
        help="input format (default: by extension: .json ours or BioC, .ann/.txt brat, .xml BioC)",
    )
    parser.add_argument(
        "--unlocated",
        choices=("keep", "skip", "error"),
        default="keep",
        help="annotations without evidence spans: keep on the document (no territory), drop, or fail the file",
    )
    parser.add_argument(
        "--snippet-mismatch",
        choices=("warn", "skip-annotation", "error"),
        default="warn",
        help="snippet text that differs from the text (beyond whitespace/case): keep with a warning, "
        "drop that annotation, or fail the file",
    )


def policy_of(args: argparse.Namespace) -> Any:
    from ..groundtruth.annotations import ReadPolicy

    return ReadPolicy(args.unlocated, args.snippet_mismatch)


def input_files(path: str, pattern: Optional[str], format: str) -> List[Path]:
    """Files of a corpus directory (or one file), refusing an empty selection."""
    from ..groundtruth.annotations import AnnotationError, annotated_files

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

