"""Run ``python -m spacy_clinchunk ...`` in this process, with its own stdin, stdout and stderr.

A subprocess costs a fresh interpreter and every import (seconds per call on a busy machine);
each command keeps exactly one subprocess smoke test (``test_*_in_a_subprocess``), and the
rest call ``main`` here, which is the same code path after ``sys.exit``.
"""
import io
import subprocess
import sys
from typing import Optional, Sequence

from spacy_clinchunk.cli import main


class _Text(io.TextIOWrapper):
    """A text stream over bytes that says it is not a terminal (like a pipe)."""

    def __init__(self, data: bytes = b""):
        super().__init__(io.BytesIO(data), encoding="utf-8", newline="")

    def isatty(self) -> bool:
        return False

    def getvalue(self) -> str:
        self.flush()
        return self.buffer.getvalue().decode("utf-8")


def run_cli(*args: object, stdin: Optional[str] = None) -> "subprocess.CompletedProcess[str]":
    """``main([...])`` with captured streams; the result reads like ``subprocess.run``'s."""
    argv: Sequence[str] = [str(a) for a in args]
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin = _Text((stdin or "").encode("utf-8"))
    sys.stdout, sys.stderr = _Text(), _Text()
    try:
        try:
            code = main(list(argv))
        except SystemExit as exit_:  # argparse errors, --version
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
        out, err = sys.stdout.getvalue(), sys.stderr.getvalue()
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
    return subprocess.CompletedProcess(["spacy_clinchunk", *argv], code, out, err)
