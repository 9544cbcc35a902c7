"""Writing ground-truth files safely: atomic, owner-only when new, through symlinks, no temp litter.

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
import stat
from pathlib import Path
from typing import List, Union

PRIVATE_MODE = 0o600
TEMP_SUFFIX = ".clinchunk.tmp"


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


def atomic_write(path: Union[str, Path], data: Union[str, bytes]) -> Path:
    """Write ``data`` (str as UTF-8, newlines untouched) to ``path`` atomically; returns the file written."""
    target = resolve_target(Path(path))
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode) & 0o777
    except FileNotFoundError:
        mode = PRIVATE_MODE
    remove_stale_temps(target)
    temp = target.parent / f".{target.name}.{secrets.token_hex(4)}{TEMP_SUFFIX}"
    handle = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_MODE)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(payload)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp, mode)
        os.replace(temp, target)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
    return target
