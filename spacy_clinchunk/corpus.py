"""Corpus runs: sharded, resumable chunking of many documents, locally or on Ray Data.

Layout of an output directory::

    OUT/manifest.json            config hash, versions, per-shard counts and timings, runs
    OUT/shards/<name>.jsonl      one record per document (or <name>.spacy, a DocBin)
    OUT/errors/<name>.jsonl      documents of that shard that could not be read or processed
    OUT/errors.jsonl             every error of the run's shards, rebuilt at the end of a run

One input shard (a JSONL file, or a group of ``shard_size`` .txt files of one directory)
gives one output shard. A shard is written to a temporary file and renamed into place,
then recorded in the manifest, so a killed run loses at most the shards in flight; a
rerun skips every shard whose output exists and whose manifest entry matches the config
hash and the input fingerprint.
"""
import hashlib
import json
import logging
import multiprocessing
import os
import pickle
import re
import time
from collections import deque
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Deque, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from . import __version__, attrs
from .inputs import JSONL_SUFFIXES, STDIN, InputDoc, InputError, expand_inputs, read_file

logger = logging.getLogger("spacy_clinchunk")

ENGINES = ("local", "ray")
FORMATS = ("jsonl", "docbin")
FORMAT_SUFFIX = {"jsonl": ".jsonl", "docbin": ".spacy"}
MANIFEST = "manifest.json"
SHARDS_DIR = "shards"
ERRORS_DIR = "errors"
ERRORS_FILE = "errors.jsonl"
MANIFEST_VERSION = 1
DEFAULT_SHARD_SIZE = 1000
# doc.user_data key where the corpus error handler records a component's failure
ERROR_MARK = "clinchunk_error"
# environment set for worker processes so that no library spreads over all cores
THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


class CorpusError(ValueError):
    """A corpus run cannot start or cannot go on (bad input, output, engine or pipeline)."""


# -- pipeline spec: what workers rebuild the pipeline from -------------------------------
@dataclass
class PipelineSpec:
    """Picklable recipe of a pipeline: a resolved config text or a saved pipeline directory.

    Workers call :meth:`load`; no ``Language`` object ever travels to them.
    """

    source: str
    config_text: Optional[str] = None
    overrides: Dict[str, Any] = field(default_factory=dict)
    lang: Optional[str] = None
    stage_settings: Dict[str, Any] = field(default_factory=dict)
    code: Optional[str] = None
    max_length: Optional[int] = None

    def load(self):
        import_code(self.code)
        if self.config_text is not None:
            from spacy.util import load_model_from_config
            from thinc.api import Config

            config = Config().from_str(self.config_text, interpolate=False)
            nlp = load_model_from_config(config, auto_fill=True, validate=True)
            nlp.initialize()
        else:
            from .pipeline import load_pipeline

            nlp = load_pipeline(self.source, self.overrides, lang=self.lang, stage_settings=self.stage_settings)
        if self.max_length:
            nlp.max_length = int(self.max_length)
        attrs.register_extensions()
        nlp.set_error_handler(record_component_error)
        return nlp


def import_code(path: Optional[str]) -> None:
    """Import a Python file with custom components (spaCy's ``--code``), once per process.

    Its folder goes on ``sys.path`` so that spawned processes can unpickle what it defines.
    """
    if not path:
        return
    import importlib
    import sys

    file = Path(path).resolve()
    if not file.is_file():
        raise CorpusError(f"code file not found: {path}")
    folder = str(file.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    importlib.import_module(file.stem)


def load_spec(
    config_or_path: Union[str, Path],
    overrides: Optional[Dict[str, Any]] = None,
    lang: Optional[str] = None,
    stage_settings: Optional[Dict[str, Any]] = None,
    code: Optional[str] = None,
    max_length: Optional[int] = None,
):
    """Load the pipeline once here (so a bad config fails before any worker starts).

    Returns ``(nlp, spec, config_hash)``.
    """
    from .pipeline import PipelineError, STRATEGIES, load_pipeline, strategy_config

    import_code(code)
    source = str(config_or_path)
    path = Path(source)
    if not path.exists() and source in STRATEGIES:
        try:
            path = strategy_config(source)
        except PipelineError as err:
            raise CorpusError(str(err)) from err
    try:
        nlp = load_pipeline(path, overrides, lang=lang, stage_settings=stage_settings)
    except PipelineError as err:
        raise CorpusError(str(err)) from err
    spec = PipelineSpec(
        source=str(path.resolve()) if path.exists() else source,
        overrides=dict(overrides or {}),
        lang=lang,
        stage_settings=dict(stage_settings or {}),
        code=str(Path(code).resolve()) if code else None,
        max_length=max_length,
    )
    digest = hashlib.sha256()
    if path.is_dir():
        digest.update(_directory_digest(path).encode())
        digest.update(json.dumps([spec.overrides, lang, spec.stage_settings], sort_keys=True, default=str).encode())
    else:
        spec.config_text = nlp.config.to_str()
        digest.update(spec.config_text.encode())
    if max_length:
        nlp.max_length = int(max_length)
        digest.update(f"max_length={max_length}".encode())
    attrs.register_extensions()
    nlp.set_error_handler(record_component_error)
    return nlp, spec, digest.hexdigest()[:16]


def _directory_digest(path: Path) -> str:
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(str(file.relative_to(path)).encode())
        digest.update(file.read_bytes())
    return digest.hexdigest()


# -- errors inside the pipeline ------------------------------------------------------------
_last_error: Dict[str, str] = {}


def record_component_error(proc_name, proc, docs, err) -> None:
    """Error handler for corpus runs: note the failure on the doc and keep the batch going.

    Components that catch their own errors (ours) return the doc, which then carries
    the mark; components that drop the doc after the handler are found missing later.
    """
    message = f"{proc_name or 'pipeline'}: {type(err).__name__}: {err}"
    _last_error["message"] = message
    for doc in docs or ():
        if doc is not None and ERROR_MARK not in doc.user_data:
            doc.user_data[ERROR_MARK] = message


@dataclass
class WorkItem:
    """One document on its way through the pipeline: shard, position, id and text."""

    shard: str
    seq: int
    id: str
    source: str
    text: Optional[str]
    error: Optional[str] = None


def make_doc(nlp, item: WorkItem):
    doc = nlp.make_doc(item.text)
    doc._.doc_id = item.id
    return doc


def process_items(
    nlp, items: Iterable[WorkItem], n_process: int = 1, batch_size: int = 64
) -> Iterator[Tuple[WorkItem, Any, Optional[str]]]:
    """Yield ``(item, doc, error)`` in input order; one failing document never stops a batch.

    Items that arrive with an ``error`` (unreadable input) or whose ``make_doc`` fails
    (e.g. longer than ``nlp.max_length``) are reported without entering the pipeline.
    A doc a component drops is rerun alone in this process to recover the error message.
    """
    pending: Deque[Tuple[WorkItem, Optional[str]]] = deque()

    def feed() -> Iterator[Tuple[Any, Tuple[str, int]]]:
        for item in items:
            if item.error is not None:
                pending.append((item, item.error))
                continue
            try:
                doc = make_doc(nlp, item)
            except Exception as err:
                pending.append((item, f"{type(err).__name__}: {err}"))
                continue
            pending.append((item, None))
            yield doc, (item.shard, item.seq)

    def settle(upto: Optional[Tuple[str, int]]) -> Iterator[Tuple[WorkItem, Any, Optional[str]]]:
        while pending:
            item, error = pending[0]
            if upto is not None and (item.shard, item.seq) == upto:
                return
            pending.popleft()
            if error is not None:
                yield item, None, error
            else:  # dropped by a component: find out why, here
                yield rerun_alone(nlp, item)

    stream = nlp.pipe(feed(), as_tuples=True, batch_size=max(1, batch_size), n_process=max(1, n_process))
    with picklable_extensions(n_process > 1):
        for doc, context in stream:
            yield from settle(tuple(context))
            item, _ = pending.popleft()
            error = doc.user_data.get(ERROR_MARK)
            yield item, (None if error else doc), error
    yield from settle(None)


@contextmanager
def picklable_extensions(active: bool) -> Iterator[None]:
    """Hide extension attributes that cannot be pickled while spaCy starts worker processes.

    ``nlp.pipe(n_process=N)`` sends every registered extension to its workers; medspaCy
    registers lambda getters, so a process that imported medspaCy could not start
    workers at all. The workers re-register those when they import medspaCy themselves.
    """
    if not active:
        yield
        return
    from spacy.tokens.underscore import Underscore

    hidden = []
    for table in (Underscore.doc_extensions, Underscore.span_extensions, Underscore.token_extensions):
        for name, value in list(table.items()):
            try:
                pickle.dumps(value)
            except Exception:
                hidden.append((table, name, table.pop(name)))
    try:
        yield
    finally:
        for table, name, value in hidden:
            table.setdefault(name, value)


def rerun_alone(nlp, item: WorkItem) -> Tuple[WorkItem, Any, Optional[str]]:
    _last_error.pop("message", None)
    try:
        docs = list(nlp.pipe([make_doc(nlp, item)], n_process=1))
    except Exception as err:
        return item, None, f"{type(err).__name__}: {err}"
    if docs and ERROR_MARK not in docs[0].user_data:
        return item, docs[0], None
    if docs:
        return item, None, docs[0].user_data[ERROR_MARK]
    return item, None, _last_error.get("message", "document dropped by the pipeline")


# -- shards --------------------------------------------------------------------------------
@dataclass
class Shard:
    """One input shard (a JSONL file or a group of .txt files) and its output name."""

    name: str
    sources: List[str]

    def fingerprint(self) -> str:
        digest = hashlib.sha256()
        for source in self.sources:
            try:
                stat = os.stat(source)
                digest.update(f"{os.path.abspath(source)}|{stat.st_size}|{stat.st_mtime_ns}\n".encode())
            except OSError:
                digest.update(f"{os.path.abspath(source)}|missing\n".encode())
        return digest.hexdigest()[:16]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "root"


def plan_shards(inputs: Sequence[Union[str, Path]], shard_size: int = DEFAULT_SHARD_SIZE) -> List[Shard]:
    """Input shards in a stable order: each JSONL file alone, .txt files by folder in groups."""
    if isinstance(inputs, (str, Path)):
        inputs = [inputs]
    raw = [str(p) for p in inputs]
    if STDIN in raw:
        raise CorpusError("corpus runs read files, not stdin ('-')")
    try:
        files = expand_inputs(raw)
    except InputError as err:
        raise CorpusError(str(err)) from err
    files = list(dict.fromkeys(os.path.abspath(f) for f in files))
    if not files:
        raise CorpusError(f"no input files in {' '.join(raw)}")
    root = os.path.commonpath([os.path.dirname(f) for f in files])
    shards: List[Shard] = []
    groups: Dict[str, List[str]] = {}
    for file in files:
        if Path(file).suffix.lower() in JSONL_SUFFIXES:
            shards.append(Shard(_slug(os.path.splitext(os.path.relpath(file, root))[0]), [file]))
        else:
            groups.setdefault(os.path.dirname(file), []).append(file)
    size = max(1, int(shard_size))
    for folder, members in groups.items():
        base = _slug(os.path.relpath(folder, root)) if folder != root else "txt"
        for number, start in enumerate(range(0, len(members), size)):
            shards.append(Shard(f"{base}-{number:05d}", members[start : start + size]))
    names = [s.name for s in shards]
    duplicates = {n for n in names if names.count(n) > 1}
    for shard in shards:  # e.g. a.jsonl and a.ndjson in one folder
        if shard.name in duplicates:
            shard.name = f"{shard.name}-{hashlib.sha1(shard.sources[0].encode()).hexdigest()[:6]}"
    return shards


def read_shard(shard: Shard) -> List[WorkItem]:
    items: List[WorkItem] = []
    for source in shard.sources:
        for doc in read_file(source):
            items.append(_work_item(shard.name, len(items), doc))
    return items


def _work_item(shard: str, seq: int, doc: InputDoc) -> WorkItem:
    return WorkItem(shard=shard, seq=seq, id=doc.id, source=doc.source, text=doc.text, error=doc.error)


# -- output directory ----------------------------------------------------------------------
def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _atomic_write(path: Path, write: Callable[[Any], None], binary: bool = False) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8"})) as handle:
        write(handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def serialize(doc, doc_id: str, fmt: str, spans_key: str) -> Tuple[Any, int]:
    """``(payload, number of chunks)``: a JSON record, or DocBin bytes holding the doc."""
    if fmt == "jsonl":
        from .records import doc_to_record

        record = doc_to_record(doc, spans_key, doc_id=doc_id)
        return record, len(record["chunks"])
    from spacy.tokens import DocBin

    doc.user_data.pop(ERROR_MARK, None)
    chunks = len(doc.spans[spans_key]) if spans_key in doc.spans else 0
    return DocBin(store_user_data=True, docs=[doc]).to_bytes(), chunks


@dataclass
class ShardResult:
    """What a shard produced so far; written when every document is accounted for."""

    shard: Shard
    total: Optional[int] = None
    payloads: Dict[int, Any] = field(default_factory=dict)
    errors: List[Dict[str, Any]] = field(default_factory=list)
    chunks: int = 0
    started: float = field(default_factory=time.time)

    @property
    def done(self) -> int:
        return len(self.payloads) + len(self.errors)

    @property
    def complete(self) -> bool:
        return self.total is not None and self.done >= self.total

    def add(self, seq: int, doc_id: str, source: str, payload: Any, chunks: int, error: Optional[str]) -> None:
        if error is not None:
            self.errors.append({"id": doc_id, "source": source, "shard": self.shard.name, "seq": seq, "error": error})
        else:
            self.payloads[seq] = payload
            self.chunks += chunks


def check_output_dir(path: Union[str, Path]) -> None:
    """Create the output layout and prove it writable, before any pipeline or worker starts."""
    path = Path(path)
    try:
        (path / SHARDS_DIR).mkdir(parents=True, exist_ok=True)
        (path / ERRORS_DIR).mkdir(parents=True, exist_ok=True)
        probe = path / f".write-probe-{os.getpid()}"
        probe.write_text("ok", encoding="utf-8")
        probe.unlink()
    except OSError as err:
        raise CorpusError(f"output directory {path} is not writable: {err.strerror or err}") from err


class CorpusOutput:
    """The output directory: shard files, error shards and the manifest."""

    def __init__(self, path: Union[str, Path], config_hash: str, fmt: str, spans_key: str, source: str) -> None:
        self.path = Path(path)
        self.config_hash = config_hash
        self.fmt = fmt
        self.spans_key = spans_key
        self.source = source
        self._check_writable()
        self.manifest = self._load_manifest()
        self.manifest.update(
            {
                "manifest_version": MANIFEST_VERSION,
                "package": "spacy-clinchunk",
                "package_version": __version__,
                "spacy_version": _spacy_version(),
                "config_hash": config_hash,
                "pipeline": source,
                "format": fmt,
                "spans_key": spans_key,
            }
        )
        self.manifest.setdefault("shards", {})
        self.manifest.setdefault("runs", [])

    def _check_writable(self) -> None:
        check_output_dir(self.path)

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

    def output_path(self, name: str) -> Path:
        return self.path / SHARDS_DIR / f"{name}{FORMAT_SUFFIX[self.fmt]}"

    def errors_path(self, name: str) -> Path:
        return self.path / ERRORS_DIR / f"{name}.jsonl"

    def is_finished(self, shard: Shard) -> bool:
        entry = self.manifest["shards"].get(shard.name)
        if not entry or entry.get("config_hash") != self.config_hash or entry.get("format") != self.fmt:
            return False
        if entry.get("fingerprint") != shard.fingerprint() or not self.output_path(shard.name).is_file():
            return False
        return not entry.get("errors") or self.errors_path(shard.name).is_file()

    def write(self, result: ShardResult) -> Dict[str, Any]:
        name = result.shard.name
        ordered = [result.payloads[seq] for seq in sorted(result.payloads)]
        if self.fmt == "jsonl":
            _atomic_write(
                self.output_path(name),
                lambda out: out.writelines(
                    (r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in ordered
                ),
            )
        else:
            from spacy.tokens import DocBin

            merged = DocBin(store_user_data=True)
            for payload in ordered:
                merged.merge(DocBin(store_user_data=True).from_bytes(payload))
            data = merged.to_bytes()
            _atomic_write(self.output_path(name), lambda out: out.write(data), binary=True)
        errors_file = self.errors_path(name)
        errors = sorted(result.errors, key=lambda e: e["seq"])
        if errors:
            _atomic_write(errors_file, lambda out: out.writelines(json.dumps(e, ensure_ascii=False) + "\n" for e in errors))
        elif errors_file.exists():
            errors_file.unlink()
        entry = {
            "inputs": result.shard.sources,
            "fingerprint": result.shard.fingerprint(),
            "config_hash": self.config_hash,
            "format": self.fmt,
            "output": str(self.output_path(name).relative_to(self.path)),
            "errors_file": str(errors_file.relative_to(self.path)) if errors else None,
            "docs": len(ordered),
            "chunks": result.chunks,
            "errors": len(errors),
            "seconds": round(time.time() - result.started, 3),
            "finished": _now(),
        }
        self.manifest["shards"][name] = entry
        self.save()
        logger.info("shard %s: %d docs, %d errors", name, len(ordered), len(errors))
        return entry

    def save(self) -> None:
        text = json.dumps(self.manifest, indent=1, ensure_ascii=False)
        _atomic_write(self.path / MANIFEST, lambda out: out.write(text))

    def finish(self, shards: Sequence[Shard], run: Dict[str, Any]) -> None:
        """Rebuild ``errors.jsonl`` and the totals over the current shards; record the run."""
        entries = [self.manifest["shards"].get(s.name) for s in shards]
        entries = [e for e in entries if e]
        lines: List[str] = []
        for shard in shards:
            file = self.errors_path(shard.name)
            if file.is_file():
                lines.extend(file.read_text(encoding="utf-8").splitlines(keepends=True))
        _atomic_write(self.path / ERRORS_FILE, lambda out: out.writelines(lines))
        self.manifest["totals"] = {
            "shards": len(entries),
            "docs": sum(e["docs"] for e in entries),
            "chunks": sum(e["chunks"] for e in entries),
            "errors": sum(e["errors"] for e in entries),
        }
        self.manifest["runs"].append(run)
        self.save()


def _spacy_version() -> str:
    import spacy

    return spacy.__version__


# -- the run -------------------------------------------------------------------------------
@dataclass
class CorpusRun:
    """What :func:`run_corpus` did: shards written and skipped, counts and the manifest."""

    output_dir: Path
    processed: List[str]
    skipped: List[str]
    docs: int
    errors: int
    seconds: float
    manifest: Dict[str, Any]
    worker_stats: Dict[str, Any] = field(default_factory=dict)

    @property
    def docs_per_second(self) -> float:
        return self.docs / self.seconds if self.seconds > 0 else 0.0


def run_corpus(
    config_or_path: Union[str, Path],
    inputs: Union[str, Path, Sequence[Union[str, Path]]],
    output_dir: Union[str, Path],
    engine: str = "local",
    *,
    workers: int = 1,
    batch_size: int = 64,
    fmt: str = "jsonl",
    spans_key: str = attrs.CHUNKS_KEY,
    shard_size: int = DEFAULT_SHARD_SIZE,
    resume: bool = True,
    overrides: Optional[Dict[str, Any]] = None,
    lang: Optional[str] = None,
    stage_settings: Optional[Dict[str, Any]] = None,
    code: Optional[str] = None,
    max_length: Optional[int] = None,
    ray_address: Optional[str] = None,
    cpus_per_worker: float = 1.0,
    gpus_per_worker: Optional[float] = None,
    connect_timeout: float = 10.0,
) -> CorpusRun:
    """Chunk a corpus into ``output_dir``: one output shard per input shard, plus a manifest.

    ``config_or_path``: a ``.cfg`` file, a saved pipeline directory or a strategy name.
    ``engine="local"`` runs ``nlp.pipe(n_process=workers)`` (spawned processes, one thread
    each); ``engine="ray"`` runs Ray Data ``map_batches`` with ``workers`` actors, on the
    cluster at ``ray_address`` (``auto``, ``host:port``, ``ray://host:port``) or a local one.
    """
    if engine not in ENGINES:
        raise CorpusError(f"unknown engine '{engine}'; choose {' or '.join(ENGINES)}")
    if fmt not in FORMATS:
        raise CorpusError(f"unknown format '{fmt}'; choose {' or '.join(FORMATS)}")
    if int(workers) < 1:
        raise CorpusError("workers must be at least 1")
    started = time.time()
    check_output_dir(output_dir)
    shards = plan_shards(inputs if not isinstance(inputs, (str, Path)) else [inputs], shard_size)
    nlp, spec, config_hash = load_spec(config_or_path, overrides, lang, stage_settings, code, max_length)
    output = CorpusOutput(output_dir, config_hash, fmt, spans_key, spec.source)
    todo = [s for s in shards if not (resume and output.is_finished(s))]
    skipped = [s.name for s in shards if s not in todo]
    logger.info("corpus: %d shards, %d to process, %d already done", len(shards), len(todo), len(skipped))
    counts = {"docs": 0, "errors": 0}
    worker_stats: Dict[str, Any] = {}

    def on_written(entry: Dict[str, Any]) -> None:
        counts["docs"] += entry["docs"]
        counts["errors"] += entry["errors"]

    if todo and engine == "local":
        run_local(nlp, todo, output, workers=int(workers), batch_size=batch_size, on_written=on_written)
        worker_stats = {"main": {"max_rss_mb": _max_rss_mb()}}
    elif todo:
        from .ray_engine import run_ray

        worker_stats = run_ray(
            spec,
            todo,
            output,
            workers=int(workers),
            batch_size=batch_size,
            address=ray_address,
            cpus_per_worker=cpus_per_worker,
            gpus_per_worker=gpus_per_worker,
            connect_timeout=connect_timeout,
            on_written=on_written,
        )
    seconds = time.time() - started
    run = {
        "engine": engine,
        "workers": int(workers),
        "batch_size": batch_size,
        "started": datetime.fromtimestamp(started, timezone.utc).isoformat(timespec="seconds"),
        "seconds": round(seconds, 3),
        "shards_processed": len(todo),
        "shards_skipped": len(skipped),
        "docs": counts["docs"],
        "errors": counts["errors"],
        "docs_per_second": round(counts["docs"] / seconds, 2) if seconds > 0 else None,
        "workers_stats": worker_stats,
    }
    output.finish(shards, run)
    return CorpusRun(
        output_dir=output.path,
        processed=[s.name for s in todo],
        skipped=skipped,
        docs=counts["docs"],
        errors=counts["errors"],
        seconds=seconds,
        manifest=output.manifest,
        worker_stats=worker_stats,
    )


def _max_rss_mb() -> float:
    import resource

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


@contextmanager
def worker_environment(threads: int = 1, spawn: bool = True) -> Iterator[None]:
    """Spawn start method and one thread per library for the processes started inside."""
    saved_env = {name: os.environ.get(name) for name in (*THREAD_ENV, "TOKENIZERS_PARALLELISM")}
    saved_method = multiprocessing.get_start_method(allow_none=True)
    for name in THREAD_ENV:
        os.environ[name] = str(threads)
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    if spawn:
        multiprocessing.set_start_method("spawn", force=True)
    try:
        yield
    finally:
        if spawn:
            multiprocessing.set_start_method(saved_method, force=True)
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def run_local(
    nlp,
    shards: Sequence[Shard],
    output: CorpusOutput,
    *,
    workers: int = 1,
    batch_size: int = 64,
    on_written: Optional[Callable[[Dict[str, Any]], None]] = None,
) -> None:
    """``nlp.pipe(n_process=workers)`` over every shard; each shard is written once complete."""
    results: Dict[str, ShardResult] = {}

    def items() -> Iterator[WorkItem]:
        for shard in shards:
            shard_items = read_shard(shard)
            result = results[shard.name] = ShardResult(shard, total=len(shard_items))
            if result.complete:  # an empty shard
                _flush(result)
            yield from shard_items

    def _flush(result: ShardResult) -> None:
        entry = output.write(result)
        results.pop(result.shard.name, None)
        if on_written is not None:
            on_written(entry)

    # one process: leave threads alone; several: spawned workers with one thread each
    with worker_environment(threads=1) if workers > 1 else nullcontext():
        for item, doc, error in process_items(nlp, items(), n_process=workers, batch_size=batch_size):
            result = results[item.shard]
            payload, chunks = (None, 0) if doc is None else serialize(doc, item.id, output.fmt, output.spans_key)
            result.add(item.seq, item.id, item.source, payload, chunks, error)
            if result.complete:
                _flush(result)
    if results:  # cannot happen unless a document went missing without a trace
        raise CorpusError(f"incomplete shards after the run: {', '.join(sorted(results))}")

