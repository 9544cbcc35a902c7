"""Files we write hold note text or what derives from it: one module writes them all.

* :class:`AtomicFile` (corpus shards, manifests) and :func:`atomic_write` (ground truth,
  converted annotations), :func:`open_private`
  (records, the HTML view), :func:`make_private` (saved datasets, cached models);
* :func:`cache_root`, the one folder our caches live in;
* :func:`warn_once`, a misconfiguration warning given once per process.

Atomic writes are safe: atomic, owner-only when new, through symlinks, no temp litter.

* A write goes to a temp file in the target's folder, is synced, then ``os.replace``-d
  over the target: a killed run leaves the old file or the new one, never half of one.
* A symlink is written *through*: the link's target is replaced and the link stays.
* A new file is created owner-only (0600): it holds note text. A file rewritten in
  place keeps its mode (the same text was already readable with that mode; we never
  widen it, and set-id bits are dropped).
* Temp files are named ``.<name>.<8 chars>.clinchunk.tmp``; the next write of the
  same file removes any a killed run left behind (:func:`remove_stale_temps`).
"""
import os
import re
import secrets
import shutil
import stat
import warnings
from pathlib import Path
from typing import IO, Any, List, Set, Union

PRIVATE_MODE = 0o600
PRIVATE_DIR_MODE = 0o700
TEMP_SUFFIX = ".clinchunk.tmp"
CACHE_ENV = "SPACY_CLINCHUNK_CACHE"
_warned: Set[str] = set()


def _temp_pattern(name: str) -> "re.Pattern[str]":
    """Our temp names, and those of the earlier ``mkstemp`` writer (``.<name>.<8 chars>.tmp``)."""
    return re.compile(rf"^\.{re.escape(name)}\.[A-Za-z0-9_]{{8}}(\.clinchunk)?\.tmp$")


def remove_stale_temps(target: Path) -> List[Path]:
    """Remove temp files an interrupted write of ``target`` left in its folder; returns them."""
    pattern = _temp_pattern(target.name)
    removed = []
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return removed
    for entry in entries:
        if pattern.match(entry.name) and entry.is_file(follow_symlinks=False):
            try:
                os.unlink(entry.path)
                removed.append(Path(entry.path))
            except OSError:
                pass
    return removed


def resolve_target(path: Path) -> Path:
    """The file a write of ``path`` must replace: the final target of a symlink chain."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


class AtomicFile:
    """A file written under a temporary name in its folder, synced, then renamed over ``path``.

    A killed run leaves the old file or the new one, never half of one; the temp file is
    created with exactly ``mode`` (whatever the umask) and named so that
    :func:`remove_stale_temps` and the corpus leftovers sweep find it.
    """

    def __init__(self, path: Union[str, Path], mode: int = PRIVATE_MODE, binary: bool = False) -> None:
        self.path = Path(path)
        self.tmp = self.path.parent / f".{self.path.name}.{secrets.token_hex(4)}{TEMP_SUFFIX}"
        fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        try:
            if hasattr(os, "fchmod"):
                os.fchmod(fd, mode)
            self.handle: IO[Any] = os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8"}))
        except BaseException:
            os.close(fd)
            self._unlink()
            raise

    def commit(self) -> None:
        """Flush, sync and rename into place; on any failure (an interrupt too) the temp file goes."""
        try:
            self.handle.flush()
            os.fsync(self.handle.fileno())
            self.handle.close()
            os.replace(self.tmp, self.path)
        except BaseException:
            self.abort()
            raise

    def abort(self) -> None:
        try:
            self.handle.close()
        except OSError:
            pass
        self._unlink()

    def _unlink(self) -> None:
        try:
            os.unlink(self.tmp)
        except OSError:
            pass


def atomic_write(path: Union[str, Path], data: Union[str, bytes]) -> Path:
    """Write ``data`` (str as UTF-8, newlines untouched) to ``path`` atomically; returns the file written."""
    target = resolve_target(Path(path))
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode) & 0o777
    except FileNotFoundError:
        mode = PRIVATE_MODE
    remove_stale_temps(target)
    file = AtomicFile(target, mode, binary=True)
    try:
        file.handle.write(payload)
    except BaseException:
        file.abort()
        raise
    file.commit()
    return target


def open_private(path: Union[str, Path], mode: str = "w") -> IO[Any]:
    """Open ``path`` for writing, readable by its owner only (an existing file is narrowed too)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_MODE)
    os.chmod(path, PRIVATE_MODE)  # an existing file keeps its old mode otherwise
    return os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"}))


def remove_path(path: Union[str, Path]) -> None:
    """Remove a file or a folder tree (a temporary output); a missing one is no error."""
    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            os.unlink(path)
        except OSError:
            pass


def make_private(root: Union[str, Path]) -> None:
    """Narrow a folder tree written by another library to its owner (0700 folders, 0600 files)."""
    for dirpath, _dirs, files in os.walk(root):
        os.chmod(dirpath, PRIVATE_DIR_MODE)
        for name in files:
            os.chmod(os.path.join(dirpath, name), PRIVATE_MODE)


def cache_root() -> Path:
    """``$SPACY_CLINCHUNK_CACHE``, else ``$XDG_CACHE_HOME/spacy_clinchunk`` or
    ``~/.cache/spacy_clinchunk``; created owner-only. Every cache of the package lives here."""
    env = os.environ.get(CACHE_ENV)
    if env:
        root = Path(env).expanduser()
    else:
        base = os.environ.get("XDG_CACHE_HOME")
        root = (Path(base).expanduser() if base else Path.home() / ".cache") / "spacy_clinchunk"
    root.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
    return root


def warn_once(message: str, category: type = UserWarning, stacklevel: int = 3) -> None:
    """``warnings.warn`` the first time this exact message comes up in the process."""
    if message in _warned:
        return
    _warned.add(message)
    warnings.warn(message, category, stacklevel=stacklevel)
