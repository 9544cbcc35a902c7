"""The output directory of a corpus run: shard files, error shards and the manifest.

Layout::

    OUT/manifest.json            config hash, versions, per-shard counts and timings, runs
    OUT/shards/<name>.jsonl      one record per document (or <name>.spacy, a DocBin)
    OUT/errors/<name>.jsonl      documents of that shard that could not be read or processed
    OUT/errors.jsonl             every error of the run's shards, rebuilt at the end of a run

Workers write shard and error files (:class:`ShardFiles`); only the driver writes the
manifest (:class:`CorpusOutput`). Every file is written to a temporary name, synced and
renamed into place, owner-only (0600) unless ``file_mode`` says otherwise: shards hold
clinical text.
"""
import errno
import json
import logging
import os
import secrets
import shutil
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from .. import __version__
from ..fileio import TEMP_SUFFIX, AtomicFile, remove_path
from ..export.ids import DocumentIds
from ..export.writers import RECORD_FORMATS, WRITERS
from .inputs import REFUSED
from .shards import Shard
from .errors import CorpusError

logger = logging.getLogger("spacy_clinchunk")

MANIFEST = "manifest.json"
SHARDS_DIR = "shards"
ERRORS_DIR = "errors"
ERRORS_FILE = "errors.jsonl"
LOCK_FILE = ".lock"
MANIFEST_VERSION = 1
DEFAULT_FILE_MODE = 0o600
# errors that mean "the output disk cannot take more", not a bug
DISK_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS}


FORMATS = tuple(WRITERS)  # every format of the one registry (export.writers)


def first_line(err: BaseException) -> str:
    return next((line.strip() for line in str(err).splitlines() if line.strip()), type(err).__name__)


@dataclass(frozen=True)
class OutputSpec:
    """What a worker needs to write a shard: directory, format, span group, hash, file mode
    and what the records index (chunks or focus spans, for the record formats)."""

    path: str
    fmt: str
    spans_key: str
    config_hash: str
    file_mode: int = DEFAULT_FILE_MODE
    index: str = "chunks"
    keep_headers: bool = False  # record formats: keep section headers (left out by default)
    # settings of the format's writer (``(("model", name),)`` of ``chroma``), as pairs: picklable
    settings: Tuple[Tuple[str, Any], ...] = ()
    # where the shards go beyond this directory (a Chroma store: ChromaTarget.store()); a shard
    # done for another store is not done for this one
    store: Optional[Tuple[str, ...]] = None

    def output_path(self, name: str) -> Path:
        return Path(self.path) / SHARDS_DIR / f"{name}{WRITERS[self.fmt].suffix}"

    def errors_path(self, name: str) -> Path:
        return Path(self.path) / ERRORS_DIR / f"{name}.jsonl"


def disk_error(path: Union[str, Path], err: OSError) -> CorpusError:
    """One clear line for a write that failed, naming the file and what to do."""
    reason = err.strerror or str(err)
    if err.errno in DISK_ERRORS:
        return CorpusError(
            f"cannot write {path}: {reason}; finished shards are intact, free space and rerun to resume"
        )
    return CorpusError(f"cannot write {path}: {reason}")


def open_atomic(path: Path, mode: int, binary: bool = False) -> AtomicFile:
    try:
        return AtomicFile(path, mode, binary)
    except OSError as err:
        raise disk_error(path, err) from err


def commit_atomic(file: AtomicFile) -> None:
    try:
        file.commit()
    except OSError as err:
        raise disk_error(file.path, err) from err


def write_atomic(path: Path, mode: int, write: Callable[[IO], None], binary: bool = False) -> None:
    file = open_atomic(path, mode, binary)
    try:
        write(file.handle)
    except OSError as err:
        file.abort()
        raise disk_error(path, err) from err
    except BaseException:
        file.abort()
        raise
    commit_atomic(file)


class PendingShard:
    """A shard's output under a temporary name until :meth:`commit` renames it into place: an
    open file (``target`` is its handle) for stream formats, a path for the writers that
    write a file or a folder themselves (Parquet, a Hugging Face dataset)."""

    def __init__(self, path: Path, mode: int, writer: type) -> None:
        self.path, self.mode, self.atomic = path, mode, None
        if writer.to_path:
            self.tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}{TEMP_SUFFIX}"
            self.target: Any = self.tmp
        else:
            self.atomic = open_atomic(path, mode, writer.binary)
            self.target = self.atomic.handle

    def commit(self) -> None:
        if self.atomic is not None:
            commit_atomic(self.atomic)
            return
        try:
            _set_modes(self.tmp, self.mode)
            if self.path.is_dir() and not self.path.is_symlink():
                shutil.rmtree(self.path)
            os.replace(self.tmp, self.path)
        except OSError as err:
            self.abort()
            raise disk_error(self.path, err) from err

    def abort(self) -> None:
        if self.atomic is not None:
            self.atomic.abort()
        else:
            remove_path(self.tmp)


def _set_modes(root: Path, mode: int) -> None:
    """``mode`` on a written file, or on every file of a written folder (folders: :func:`dir_mode`)."""
    if root.is_file():
        os.chmod(root, mode)
        return
    for folder, _dirs, files in os.walk(root):
        os.chmod(folder, dir_mode(mode))
        for name in files:
            os.chmod(os.path.join(folder, name), mode)


class ShardFiles:
    """A worker's output for one shard: records streamed in order, errors beside them."""

    def __init__(self, out: OutputSpec, shard: Shard, resolved) -> None:
        self.out = out
        self.shard = shard
        self.fingerprint = shard.fingerprint()
        self.started = time.time()
        self.cpu_started = time.process_time()
        self.thread_cpu_started = time.thread_time()  # the thread that runs the shard
        writer = WRITERS[out.fmt]
        self.file = PendingShard(out.output_path(shard.name), out.file_mode, writer)
        self.plan = resolved.with_chunks(out.spans_key)
        try:
            self.writer = writer(self.file.target, self.plan, out.index, out.keep_headers, **dict(out.settings))
        except BaseException:
            self.file.abort()
            raise
        self.errors: List[Dict[str, Any]] = []
        self.docs = 0
        self.chunks = 0
        self.records = 0  # what the writer wrote: a record format leaves section headers out
        self.seq = 0
        self.ids = DocumentIds()  # a repeated id within the shard becomes <id>#1, ...

    def add(self, doc_id: str, source: str, doc, error: Optional[str]) -> None:
        """One document: its record, or an error entry (a record that cannot be written is
        one too: the run goes on with the next document)."""
        doc_id = self.ids.take(doc, str(doc_id))
        try:
            if error is None:
                error = self._write(doc, doc_id)
            if error is not None:
                self.errors.append(
                    {"id": doc_id, "source": source, "shard": self.shard.name, "seq": self.seq, "error": error}
                )
        except OSError as err:
            self.file.abort()
            raise disk_error(self.file.path, err) from err
        self.seq += 1

    def _write(self, doc, doc_id: str) -> Optional[str]:
        """Write one document's record; ``None``, or the one-line reason it cannot be written
        (its error type and the serializer's first line: no note text)."""
        try:
            self.records += self.writer.add(doc, doc_id)
        except (TypeError, ValueError, OverflowError) as err:
            return f"{type(err).__name__}: {first_line(err)}"
        key = self.plan.chunks_key
        self.chunks += len(doc.spans[key]) if key in doc.spans else 0
        self.docs += 1
        return None

    def abort(self) -> None:
        self.file.abort()

    def commit(self) -> Dict[str, Any]:
        """Make the shard durable (errors first, then the shard) and return its manifest entry."""
        errors_file = self.out.errors_path(self.shard.name)
        try:
            if self.errors:
                lines = [json.dumps(e, ensure_ascii=False) + "\n" for e in self.errors]
                write_atomic(errors_file, self.out.file_mode, lambda out: out.writelines(lines))
            elif errors_file.exists():
                errors_file.unlink()
            self.writer.close()
        except OSError as err:
            self.file.abort()
            raise disk_error(errors_file, err) from err
        except CorpusError:
            self.file.abort()
            raise
        commit_atomic(self.file)
        root = Path(self.out.path)
        return {
            "inputs": self.shard.sources,
            **({"range": [self.shard.start, self.shard.end]} if self.shard.end is not None else {}),
            "fingerprint": self.fingerprint,
            "config_hash": self.out.config_hash,
            "format": self.out.fmt,
            **({"index": self.out.index, "keep_headers": self.out.keep_headers} if self.out.fmt in RECORD_FORMATS else {}),
            "output": self.out.output_path(self.shard.name).relative_to(root).as_posix(),
            "errors_file": errors_file.relative_to(root).as_posix() if self.errors else None,
            "docs": self.docs,
            "chunks": self.chunks,
            "records": self.records,
            "errors": len(self.errors),
            # documents refused as binary (NUL bytes, control characters): inputs.binary_reason
            "refused": sum(1 for e in self.errors if e["error"].startswith(REFUSED)),
            **({"store": list(self.out.store)} if self.out.store else {}),
            "seconds": round(time.time() - self.started, 3),
            "cpu_seconds": round(time.process_time() - self.cpu_started, 3),  # of the worker process
            # of the thread that ran the shard: the pipeline and the records, without the
            # engine's own threads (a Ray actor's core worker runs beside it in the process)
            "thread_cpu_seconds": round(time.thread_time() - self.thread_cpu_started, 3),
            "finished": _now(),
        }


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def dir_mode(file_mode: int) -> int:
    """Directory mode for a file mode: search permission wherever read permission is given."""
    return file_mode | ((file_mode & 0o444) >> 2)


def check_output_dir(path: Union[str, Path], file_mode: int = DEFAULT_FILE_MODE) -> None:
    """Create the output layout and prove it writable, before any pipeline or worker starts."""
    path = Path(path)
    try:
        for folder in (path, path / SHARDS_DIR, path / ERRORS_DIR):
            folder.mkdir(mode=dir_mode(file_mode), parents=True, exist_ok=True)
        probe = path / f".write-probe-{os.getpid()}"
        probe.write_text("ok", encoding="utf-8")
        probe.unlink()
    except OSError as err:
        raise CorpusError(f"output directory {path} is not writable: {err.strerror or err}") from err


def remove_leftovers(path: Union[str, Path]) -> List[str]:
    """Delete temporary files a killed run left behind (only one run writes a directory)."""
    removed = []
    for folder in (Path(path), Path(path) / SHARDS_DIR, Path(path) / ERRORS_DIR):
        for tmp in folder.glob(".*.tmp"):
            remove_path(tmp)
            removed.append(tmp.name)
    if removed:
        logger.info("removed %d temporary files of an interrupted run", len(removed))
    return removed


class OutputLock:
    """An exclusive lock on the output directory, so two runs never interleave their writes."""

    def __init__(self, path: Union[str, Path], file_mode: int = DEFAULT_FILE_MODE) -> None:
        self.file = Path(path) / LOCK_FILE
        self.fd: Optional[int] = None
        self.mode = file_mode

    def __enter__(self) -> "OutputLock":
        try:
            import fcntl
        except ImportError:  # not POSIX: no lock
            return self
        self.fd = os.open(self.file, os.O_RDWR | os.O_CREAT, self.mode)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.fstat(self.fd).st_ino != os.stat(self.file).st_ino:  # the run before removed it meanwhile
                raise OSError(errno.EAGAIN, "lock file replaced")
        except OSError as err:
            os.close(self.fd)
            self.fd = None
            raise CorpusError(f"another corpus run is writing to {self.file.parent}") from err
        return self

    def __exit__(self, *exc: Any) -> None:
        """Remove the lock file while still holding it, then release it: no ``.lock`` is left
        behind (a run that opened the old file meanwhile sees it replaced and refuses)."""
        if self.fd is not None:
            try:
                self.file.unlink()
            except OSError:
                pass
            os.close(self.fd)  # closing releases the lock
            self.fd = None


class CorpusOutput:
    """The driver's side of the output directory: the manifest and the run's totals."""

    def __init__(self, out: OutputSpec, source: str) -> None:
        self.spec = out
        self.path = Path(out.path)
        self.manifest = self._load_manifest()
        self.manifest.update(
            {
                "manifest_version": MANIFEST_VERSION,
                "package": "spacy-clinchunk",
                "package_version": __version__,
                "spacy_version": _spacy_version(),
                "config_hash": out.config_hash,
                "pipeline": source,
                "format": out.fmt,
                "spans_key": out.spans_key,
            }
        )
        self.manifest.setdefault("shards", {})
        self.manifest.setdefault("runs", [])

    def _load_manifest(self) -> Dict[str, Any]:
        file = self.path / MANIFEST
        if not file.is_file():
            return {}
        try:
            manifest = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            logger.warning("ignoring unreadable manifest %s (%s); every shard will be processed", file, err)
            return {}
        return manifest if isinstance(manifest, dict) else {}

    def is_finished(self, shard: Shard) -> bool:
        entry = self.manifest["shards"].get(shard.name)
        if not entry or entry.get("config_hash") != self.spec.config_hash or entry.get("format") != self.spec.fmt:
            return False
        if self.spec.fmt in RECORD_FORMATS and (entry.get("index", "chunks"), entry.get("keep_headers", False)) != (
            self.spec.index, self.spec.keep_headers
        ):
            return False
        if entry.get("fingerprint") != shard.fingerprint() or not self.spec.output_path(shard.name).exists():
            return False
        if self.spec.store is not None and entry.get("store") != list(self.spec.store):
            return False
        return not entry.get("errors") or self.spec.errors_path(shard.name).is_file()

    def record(self, name: str, entry: Dict[str, Any]) -> None:
        """Enter a finished shard (already durable on disk) in the manifest."""
        self.manifest["shards"][name] = entry
        self.save()
        logger.info("shard %s: %d docs, %d errors", name, entry["docs"], entry["errors"])

    def save(self) -> None:
        text = json.dumps(self.manifest, indent=1, ensure_ascii=False)
        write_atomic(self.path / MANIFEST, self.spec.file_mode, lambda out: out.write(text))

    def finish(self, shards: Sequence[Shard], run: Dict[str, Any]) -> None:
        """Rebuild ``errors.jsonl`` and the totals over the current shards; record the run."""
        entries = [e for e in (self.manifest["shards"].get(s.name) for s in shards) if e]
        lines: List[str] = []
        for shard in shards:
            file = self.spec.errors_path(shard.name)
            if file.is_file():
                lines.extend(file.read_text(encoding="utf-8").splitlines(keepends=True))
        write_atomic(self.path / ERRORS_FILE, self.spec.file_mode, lambda out: out.writelines(lines))
        self.manifest["totals"] = {
            "shards": len(entries),
            "docs": sum(e["docs"] for e in entries),
            "chunks": sum(e["chunks"] for e in entries),
            "records": sum(e.get("records", 0) for e in entries),
            "errors": sum(e["errors"] for e in entries),
            "refused": sum(e.get("refused", 0) for e in entries),
        }
        self.manifest["runs"].append(run)
        self.save()


def _spacy_version() -> str:
    import spacy

    return spacy.__version__
