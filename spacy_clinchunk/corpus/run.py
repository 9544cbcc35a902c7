"""``run_corpus``: plan shards, skip finished ones, dispatch to an engine, record the run."""
import codecs
import logging
import time
from dataclasses import dataclass, field, fields, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from ..embed.embedders import EmbedderError
from ..embed.kinds import EMBEDDER_KINDS
from ..pipeline import PipelineError, PipelineSpec, ResolvedPipeline, resolve_pipeline
from .errors import CorpusError
from .local import MAX_ATTEMPTS, run_in_driver, run_pool
from .output import (
    DEFAULT_FILE_MODE,
    FORMATS,
    CorpusOutput,
    OutputLock,
    OutputSpec,
    check_output_dir,
    remove_leftovers,
)
from .chroma import DEFAULT_COLLECTION, DEFAULT_EMBEDDER, ChromaSink, ChromaTarget, private_store
from .ray_engine import RayOptions
from .shards import DEFAULT_SHARD_SIZE, DEFAULT_SPLIT_BYTES, Shard, fit_to_workers, plan_shards

logger = logging.getLogger("spacy_clinchunk")

ENGINES = ("local", "ray")


@dataclass
class CorpusOptions:
    """How a corpus is read, batched and written (the same for every engine)."""

    batch_size: int = 64  # documents per nlp.pipe batch inside a worker
    fmt: str = "jsonl"  # output format: any of export.writers.WRITERS (jsonl, docbin, records, parquet, hf, chroma)
    index: str = "chunks"  # records | parquet | hf | chroma: one record per chunk, or per focus span ("focus")
    keep_headers: bool = False  # record formats: keep section headers (left out of the records by default)
    spans_key: Optional[str] = None  # the group written out; None: the one the pipeline writes its chunks to
    shard_size: int = DEFAULT_SHARD_SIZE  # .txt files per shard
    split_bytes: int = DEFAULT_SPLIT_BYTES  # JSONL files larger than this are split into sub-shards
    resume: bool = True  # skip shards finished with the same config and inputs
    file_mode: int = DEFAULT_FILE_MODE  # of every file written; 0o600: owner-only (clinical text)
    encoding: str = "utf-8"  # of the input notes (latin-1, cp1252 for older exports)
    # fmt="chroma": the persistent Chroma directory (default OUT/chroma), the collection, the
    # embedder's kind (sentence-transformers | static: model2vec vectors, far cheaper on CPU) and
    # its model (a sentence-transformers name or path, a model2vec directory; default the
    # bundled MiniLM, or for static the MiniLM distilled once)
    chroma_path: Optional[str] = None
    collection: str = DEFAULT_COLLECTION
    embed_model: Optional[str] = None
    embedder: str = DEFAULT_EMBEDDER


@dataclass
class Progress:
    """What a progress callback gets after each shard: shards and documents so far."""

    shards_done: int
    shards_total: int
    docs: int
    errors: int


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
    startup_seconds: float = 0.0
    refused: int = 0  # of ``errors``: documents refused as binary (NUL bytes, control characters)
    notes: List[str] = field(default_factory=list)  # one line each, for the user (the shard size adapted)

    @property
    def docs_per_second(self) -> float:
        return self.docs / self.seconds if self.seconds > 0 else 0.0


def make_options(options: Optional[CorpusOptions], settings: Dict[str, Any]) -> CorpusOptions:
    """``options`` with keyword ``settings`` (``fmt="docbin"``, ``batch_size=16``) applied."""
    known = {f.name for f in fields(CorpusOptions)}
    unknown = sorted(set(settings) - known)
    if unknown:
        raise CorpusError(f"unknown corpus setting(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    merged = replace(options or CorpusOptions(), **settings)
    if merged.fmt not in FORMATS:
        raise CorpusError(f"unknown format '{merged.fmt}'; choose {', '.join(FORMATS)}")
    if merged.embedder not in EMBEDDER_KINDS:
        raise CorpusError(f"unknown embedder '{merged.embedder}'; choose {' or '.join(EMBEDDER_KINDS)}")
    if merged.index not in ("chunks", "focus"):
        raise CorpusError(f"unknown index '{merged.index}'; choose chunks or focus")
    try:
        merged.encoding = codecs.lookup(merged.encoding).name
    except LookupError as err:
        raise CorpusError(f"unknown encoding {merged.encoding!r} (e.g. utf-8, latin-1, cp1252)") from err
    return merged


def run_corpus(
    config_or_path: Union[str, Path, PipelineSpec],
    inputs: Union[str, Path, Sequence[Union[str, Path]]],
    output_dir: Union[str, Path],
    engine: str = "local",
    *,
    workers: int = 1,
    overrides: Optional[Dict[str, Any]] = None,
    lang: Optional[str] = None,
    stage_settings: Optional[Dict[str, Any]] = None,
    code: Optional[str] = None,
    max_length: Optional[int] = None,
    options: Optional[CorpusOptions] = None,
    ray: Optional[RayOptions] = None,
    on_progress: Optional[Callable[[Progress], None]] = None,
    **settings: Any,
) -> CorpusRun:
    """Chunk a corpus into ``output_dir``: one output shard per input shard, plus a manifest.

    ``config_or_path``: a ``.cfg`` file, a saved pipeline directory, a strategy name or a
    :class:`~spacy_clinchunk.pipeline.PipelineSpec`; the pipeline settings (``overrides`` ...
    ``max_length``) are those of the spec. Every worker resolves the same (pinned) spec.
    ``engine="local"`` runs ``workers`` spawned processes (one: the calling process);
    ``engine="ray"`` runs ``workers`` Ray actors set up by ``ray`` (:class:`RayOptions`).
    Fields of :class:`CorpusOptions` may be given as keywords (``fmt="docbin"``).
    """
    opts = make_options(options, settings)
    if engine not in ENGINES:
        raise CorpusError(f"unknown engine '{engine}'; choose {' or '.join(ENGINES)}")
    if int(workers) < 1:
        raise CorpusError("workers must be at least 1")
    started = time.time()
    check_output_dir(output_dir, opts.file_mode)
    shards = plan_shards(inputs, opts.shard_size, opts.split_bytes)
    loading = time.time()
    if not isinstance(config_or_path, (str, Path, PipelineSpec)):
        raise CorpusError("a corpus run needs a config file, a saved pipeline or a strategy name: each worker loads its own")
    spec = PipelineSpec.of(
        config_or_path, overrides=overrides, lang=lang, stage_settings=stage_settings, code=code,
        max_length=max_length, spans_key=opts.spans_key,
    )
    resolved = resolve_for_corpus(spec)
    load_seconds = round(time.time() - loading, 3)
    if opts.index == "focus" and resolved.focus_key is None:
        raise CorpusError(f"index 'focus' needs clin_focus on the chunks of '{resolved.chunks_key}'; this pipeline has none")
    target = chroma_target(opts, output_dir)
    out = OutputSpec(
        str(Path(output_dir).resolve()), opts.fmt, resolved.chunks_key, resolved.config_hash, opts.file_mode, opts.index,
        keep_headers=opts.keep_headers, settings=writer_settings(target), store=tuple(target.store()) if target else None,
    )
    notes: List[str] = []
    with OutputLock(out.path, opts.file_mode):
        remove_leftovers(out.path)
        output = CorpusOutput(out, resolved.spec.source)
        asked = [opts.shard_size, opts.split_bytes]
        recorded = output.manifest.get("plan") if opts.resume else None
        if recorded and recorded.get("asked") == asked:  # a resumed run keeps the plan it resumes
            shards = plan_shards(inputs, recorded["shard_size"], recorded["split_bytes"])
        else:
            shards, sizes, note = fit_to_workers(inputs, shards, int(workers), opts.shard_size, opts.split_bytes)
            output.manifest["plan"] = {"asked": asked, "shard_size": sizes[0], "split_bytes": sizes[1]}
            if note:
                notes.append(note)
                logger.info("%s", note)
        for shard in shards:
            shard.encoding = opts.encoding
        sink = ChromaSink(target) if target else None
        todo = [s for s in shards if not (opts.resume and output.is_finished(s))]
        skipped = [s.name for s in shards if s not in todo]
        logger.info("corpus: %d shards, %d to process, %d already done", len(shards), len(todo), len(skipped))
        counts = {"docs": 0, "errors": 0, "shards": len(skipped)}

        def on_entry(name: str, entry: Dict[str, Any]) -> None:
            if sink is not None:  # upserted before the manifest says the shard is done
                cpu = time.process_time()
                entry["upserted"] = sink.upsert(Path(out.path) / entry["output"])
                entry["upsert_cpu_seconds"] = round(time.process_time() - cpu, 3)  # the driver's, Chroma's writes
            output.record(name, entry)
            counts["docs"] += entry["docs"]
            counts["errors"] += entry["errors"]
            counts["shards"] += 1
            if on_progress is not None:
                on_progress(Progress(counts["shards"], len(shards), counts["docs"], counts["errors"]))

        if on_progress is not None:
            on_progress(Progress(counts["shards"], len(shards), 0, 0))
        stats = _dispatch(engine, resolved, schedule(todo), out, int(workers), opts, ray or RayOptions(), on_entry)
        seconds = time.time() - started
        run = {
            "engine": engine,
            "workers": int(workers),
            "batch_size": opts.batch_size,
            "started": datetime.fromtimestamp(started, timezone.utc).isoformat(timespec="seconds"),
            "seconds": round(seconds, 3),
            "load_seconds": load_seconds,  # the driver's own pipeline (a check before any worker starts)
            "startup_seconds": stats.get("startup_seconds", 0.0),  # workers started, each with its pipeline
            "shards_processed": len(todo),
            "shards_skipped": len(skipped),
            "docs": counts["docs"],
            "errors": counts["errors"],
            "docs_per_second": round(counts["docs"] / seconds, 2) if seconds > 0 else None,
            "workers_stats": stats.get("workers", {}),
        }
        output.finish(shards, run)
        if target is not None:
            private_store(target.path, opts.file_mode)
    if stats.get("lost"):
        raise CorpusError(
            f"shard(s) {', '.join(stats['lost'])} not written: their worker died {MAX_ATTEMPTS} times "
            f"(out of memory on a huge note?); rerun to retry them"
        )
    return CorpusRun(
        output_dir=Path(out.path),
        processed=[s.name for s in todo],
        skipped=skipped,
        docs=counts["docs"],
        errors=counts["errors"],
        seconds=seconds,
        manifest=output.manifest,
        worker_stats=stats.get("workers", {}),
        startup_seconds=stats.get("startup_seconds", 0.0),
        refused=int(output.manifest["totals"].get("refused", 0)),
        notes=notes,
    )


def chroma_target(opts: CorpusOptions, output_dir: Union[str, Path]) -> Optional[ChromaTarget]:
    """The Chroma store of a ``chroma`` run (default ``OUT/chroma``), else ``None``."""
    if opts.fmt != "chroma":
        return None
    path = Path(opts.chroma_path) if opts.chroma_path else Path(output_dir) / "chroma"
    target = ChromaTarget(str(path.expanduser().resolve()), opts.collection, opts.embed_model, opts.embedder)
    target.check_embedder()
    return target


def writer_settings(target: Optional[ChromaTarget]) -> Tuple[Tuple[str, Any], ...]:
    """What the ``chroma`` writer of every worker gets: the embedder's kind and the model it
    loads (the static distillation resolved, and made if absent, here in the driver, once)."""
    if target is None:
        return ()
    try:
        return (("model", target.worker_model()), ("embedder", target.embedder))
    except EmbedderError as err:
        raise CorpusError(str(err)) from err


def resolve_for_corpus(spec: PipelineSpec) -> ResolvedPipeline:
    """The driver resolves the spec once, so a bad config (or a chunks group the pipeline does
    not write) fails before any worker starts; the workers get the spec pinned (absolute paths,
    the config text as read here) and resolve it the same way."""
    from dataclasses import replace as replace_field

    try:
        resolved = resolve_pipeline(spec)
        return replace_field(resolved, spec=resolved.spec.pinned())
    except PipelineError as err:
        raise CorpusError(str(err)) from err
    except OSError as err:
        raise CorpusError(f"cannot read {spec.source}: {err.strerror or err}") from err


def schedule(shards: Sequence[Shard]) -> List[Shard]:
    """Largest shards first, so a big one does not start last and hold up the end of the run."""
    return sorted(shards, key=lambda s: -s.size())


def _dispatch(engine, resolved, shards, out, workers, opts, ray_options, on_entry) -> Dict[str, Any]:
    if not shards:
        return {}
    if engine == "ray":
        from .ray_engine import run_ray

        return run_ray(resolved.spec, shards, out, workers, opts.batch_size, ray_options, on_entry)
    if workers == 1:
        return run_in_driver(resolved, shards, out, opts.batch_size, on_entry)
    return run_pool(resolved.spec, shards, out, workers, opts.batch_size, on_entry)
