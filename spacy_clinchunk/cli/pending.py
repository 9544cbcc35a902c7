"""Where a single run writes: stdout, or a file (or dataset folder) that appears only on success.

A run that fails (no document chunked, a fatal error, Ctrl-C) must not leave an empty or
half-written output behind, nor clobber the one a previous run wrote. So the output is
written under a temporary name in the target's folder and renamed over the target only
by :meth:`PendingOutput.commit`; :meth:`PendingOutput.abort` removes it.
"""
import os
import secrets
import shutil
import sys
from pathlib import Path
from typing import Optional, TextIO

from ..fileio import TEMP_SUFFIX, AtomicFile, remove_path, remove_stale_temps, resolve_target
from . import CLIError


class PendingOutput:
    """``stream`` (stdout or a temp file) for text formats; ``path`` (a temp path) for writers
    that open their target themselves (Parquet, a Hugging Face dataset folder)."""

    def __init__(self, path: Optional[str], mode: int, as_path: bool = False) -> None:
        self.stream: Optional[TextIO] = None
        self.path: Optional[str] = None
        self._file: Optional[AtomicFile] = None
        self._target: Optional[Path] = None
        if path is None:
            self.stream = sys.stdout
            return
        try:
            self._target = resolve_target(Path(path))
            self._target.parent.mkdir(parents=True, exist_ok=True)
            remove_stale_temps(self._target)
            if as_path:
                name = f".{self._target.name}.{secrets.token_hex(4)}{TEMP_SUFFIX}"
                self.path = str(self._target.parent / name)
            else:
                self._file = AtomicFile(self._target, mode)
                self.stream = self._file.handle
        except OSError as err:
            raise CLIError(f"cannot write {path}: {err.strerror or err}") from err

    @property
    def target(self) -> Optional[Path]:
        return self._target

    def commit(self) -> None:
        """Put the output in place (a run that chunked at least one document)."""
        try:
            if self._file is not None:
                self._file.commit()
            elif self.path is not None:
                _replace(Path(self.path), self._target)
        except OSError as err:
            self.abort()
            raise CLIError(f"cannot write {self._target}: {err.strerror or err}") from err

    def abort(self) -> None:
        """Leave the target as it was: the temp file or folder goes."""
        if self._file is not None:
            self._file.abort()
        elif self.path is not None:
            remove_path(Path(self.path))


def _replace(written: Path, target: Path) -> None:
    """``os.replace`` for a file; a folder (an older dataset) is moved aside first, then removed."""
    if target.is_dir() and not target.is_symlink():
        aside = target.parent / f".{target.name}.{secrets.token_hex(4)}{TEMP_SUFFIX}"
        os.replace(target, aside)
        os.replace(written, target)
        shutil.rmtree(aside, ignore_errors=True)
    else:
        os.replace(written, target)
