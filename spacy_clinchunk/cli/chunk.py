"""``chunk``: run a pipeline over documents and print or write their chunks."""
import argparse
import logging
import sys
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple

from . import CLIError
from .pending import PendingOutput
from .source import add_encoding_argument, add_source_arguments, encoding_of, pipeline_spec, resolve


def add_parser(subparsers: Any) -> None:
    from ..export.writers import WRITERS

    parser = subparsers.add_parser(
        "chunk",
        help="chunk documents with a pipeline",
        description="Chunk .txt files, directories, JSONL ({'id', 'text'}) or stdin ('-'). "
        "Extra --section.key value pairs override the config, as in spaCy's CLI.",
    )
    parser.add_argument("paths", nargs="*", default=["-"], help="files, directories, globs or - for stdin")
    add_source_arguments(
        parser,
        strategy_help="named pipeline: simple | punct_conj_cleaned | retrieval | default | span_finder | ...",
        spans_key_help="span group to print (default: the group the pipeline writes its chunks to)",
    )
    parser.add_argument(
        "--format",
        choices=("table", *WRITERS),
        default=None,
        help="table (the default; not for corpus runs) | jsonl (one document per JSON line; the corpus default) | "
        "docbin (a DocBin file) | records (one chunk per JSON line) | parquet | hf (a Hugging Face dataset "
        "directory) | chroma (corpus runs: upsert into a persistent Chroma collection, see --chroma-path): "
        "every format but table for corpus runs too",
    )
    parser.add_argument(
        "--index",
        choices=("chunks", "focus", "blocks"),
        default=None,
        help="records | parquet | hf: one record per chunk (default; parent_id: its section block), per focus "
        "span of clin_focus (parent_id: its chunk) or per section block (the passage an LLM reads)",
    )
    parser.add_argument(
        "--keep-headers",
        action="store_true",
        help="records | parquet | hf: keep section-header chunks (is_header: true), left out by default",
    )
    parser.add_argument(
        "--output", "-o", default=None, help="write here instead of stdout (with --engine: the output directory)"
    )
    add_encoding_argument(parser)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--no-progress", action="store_true", help="never show a progress bar")
    parser.add_argument(
        "--max-length", type=int, default=None, help="longest note in characters (nlp.max_length; default 1,000,000)"
    )
    parser.add_argument(
        "--file-mode", default="600", help="octal mode of files written (default 600: owner-only, they hold note text)"
    )
    corpus = parser.add_argument_group(
        "corpus runs (--engine)", "sharded, resumable output: OUT/shards/*, OUT/errors.jsonl, OUT/manifest.json"
    )
    corpus.add_argument("--engine", choices=("local", "ray"), default=None, help="run as a corpus job on this engine")
    corpus.add_argument("--workers", type=int, default=None, help="processes (local) or actors (ray); default 1 / 2")
    corpus.add_argument("--ray-address", default=None, help="auto | host:port | ray://host:port (default: start Ray here)")
    corpus.add_argument("--cpus-per-worker", type=float, default=1.0, help="CPUs (and torch threads) per Ray actor")
    corpus.add_argument(
        "--gpus-per-worker", type=float, default=None, help="GPUs per Ray actor (default: 1 when the cluster has GPUs)"
    )
    corpus.add_argument("--shard-size", type=int, default=None, help=".txt files per input shard (default 1000)")
    corpus.add_argument(
        "--split-bytes", type=int, default=None, help="JSONL files larger than this become sub-shards (default 8 MiB)"
    )
    corpus.add_argument("--no-resume", action="store_true", help="reprocess shards that are already done")
    corpus.add_argument("--connect-timeout", type=float, default=10.0, help="seconds to wait for a Ray address")
    corpus.add_argument(
        "--chroma-path", default=None, help="--format chroma: persistent Chroma directory (default OUT/chroma)"
    )
    corpus.add_argument("--collection", default=None, help="--format chroma: collection name (default clinchunk)")
    corpus.add_argument(
        "--embedder", choices=("sentence-transformers", "static"), default=None,
        help="--format chroma: sentence-transformers (default: the bundled all-MiniLM-L6-v2) | static (model2vec "
        "vectors distilled once from it: far cheaper on CPU, a little less exact; extra 'static')",
    )
    corpus.add_argument(
        "--embed-model", default=None,
        help="--format chroma: the embedder's model: a sentence-transformers name or path, or with --embedder static "
        "a directory saved by model2vec (default: the bundled all-MiniLM-L6-v2, offline, or its distillation)",
    )
    parser.set_defaults(func=run)


CORPUS_ONLY = (
    "workers", "ray_address", "gpus_per_worker", "shard_size", "split_bytes", "chroma_path", "collection", "embed_model",
    "embedder",
)


def run(args: argparse.Namespace, extra: List[str]) -> int:
    if args.engine is not None:
        return run_corpus_command(args, extra)
    _refuse_given(args, CORPUS_ONLY, "--engine local|ray (a corpus run)")
    from ..export.writers import RECORD_FORMATS

    args.format = args.format or "table"
    if args.format == "chroma":
        raise CLIError("--format chroma is a corpus run: add --engine local (and --output OUT)")
    if args.index is not None and args.format not in RECORD_FORMATS:
        raise CLIError(f"--index goes with --format {' | '.join(RECORD_FORMATS)}, not {args.format}")
    files = _input_files(args.paths)
    args.encoding = encoding_of(args)
    resolved = resolve(pipeline_spec(args, extra))
    if args.index == "focus" and resolved.focus_key is None:
        raise CLIError(f"--index focus needs clin_focus on the chunks of '{resolved.chunks_key}'; this pipeline has none")
    output = PendingOutput(args.output, _file_mode(args), as_path=args.format not in ("table", "jsonl", "records"))
    counts = {"read": 0, "failed": 0, "refused": 0, "written": 0}
    usages: List[Dict[str, Any]] = []  # Doc._.clin_llm_usage of clin_llm_context, summed at the end
    try:
        writer = _writer(args, output, resolved)
        try:
            _chunk_files(args, resolved, files, writer, output.stream, counts, usages)
        finally:
            if writer is not None:
                writer.close()
    except BaseException:
        output.abort()
        raise
    if counts["written"]:
        output.commit()
    else:
        output.abort()
    if not counts["read"]:
        raise CLIError(f"no input documents in {' '.join(args.paths)}")
    if usages:
        _print_llm_usage(usages)
    if counts["failed"]:
        unwritten = f"; nothing written to {args.output}" if args.output and not counts["written"] else ""
        binary = f" ({counts['refused']} refused as binary: NUL bytes or control characters)" if counts["refused"] else ""
        print(f"error: {counts['failed']} document(s) failed{binary}{unwritten}", file=sys.stderr)
        return 1
    return 0


def _chunk_files(args, resolved, files, writer, out, counts, usages) -> None:
    """Chunk every input document and write it; ``counts`` and ``usages`` tell what happened.
    Ids are unique over the whole run: a repeated one (two JSONL files that both hold id
    ``x``) becomes ``x#1``, as in every export (:class:`DocumentIds`)."""
    from ..corpus.inputs import REFUSED
    from ..export.ids import DocumentIds
    from ..export.records import RecordError
    from .table import write_table

    spans_key = resolved.chunks_key
    progress, ids = _progress(args, files), DocumentIds()
    for item, doc, error in process(resolved.nlp, files, args.batch_size, args.encoding):
        counts["read"] += 1
        if progress is not None:
            progress.update(1)
        if error is not None:
            counts["failed"] += 1
            counts["refused"] += error.startswith(REFUSED)
            print(f"error: {item.id}: {error}", file=sys.stderr)
            continue
        if spans_key not in doc.spans:  # a pipeline that declares no groups (a host's own components)
            present = ", ".join(sorted(doc.spans.keys())) or "none"
            raise CLIError(f"--spans-key '{spans_key}': the pipeline wrote no such group (it wrote: {present})")
        doc_id = ids.take(doc, item.id)
        if writer is None:
            write_table(out, doc_id, doc, spans_key, resolved.focus_key, resolved.fields)
        else:
            try:
                writer.add(doc, doc_id)
            except RecordError as err:
                raise CLIError(str(err)) from err
        counts["written"] += 1
        if doc.has_extension("clin_llm_usage") and doc._.clin_llm_usage:
            usages.append(doc._.clin_llm_usage)
    if progress is not None:
        progress.close()


def _input_files(paths: List[str]):
    """The files to read, or one line: missing paths, or nothing we read."""
    from ..corpus.inputs import READ_SUFFIXES, InputError, expand_input_files

    try:
        files = expand_input_files(paths)
    except InputError as err:
        raise CLIError(str(err)) from err
    if not files:
        kinds = ", ".join(sorted(READ_SUFFIXES))
        raise CLIError(f"no input documents in {' '.join(paths)} (read: {kinds})")
    return files


def _file_mode(args: argparse.Namespace) -> int:
    try:
        mode = int(args.file_mode, 8)
    except (TypeError, ValueError) as err:
        raise CLIError(f"--file-mode takes an octal mode such as 600 or 644, not {args.file_mode!r}") from err
    if not 0 <= mode <= 0o777:
        raise CLIError(f"--file-mode takes an octal mode such as 600 or 644, not {args.file_mode!r}")
    return mode


def _progress(args: argparse.Namespace, files: List[Any]):
    if args.no_progress or not sys.stderr.isatty():
        return None
    if len(files) < 20 and not any(f.path.endswith((".jsonl", ".ndjson", ".json")) for f in files):
        return None
    from tqdm import tqdm

    return tqdm(unit="doc", file=sys.stderr, desc="chunking")


def _writer(args: argparse.Namespace, output: PendingOutput, resolved):
    """The writer of ``--format`` (:data:`~spacy_clinchunk.export.writers.WRITERS`), or None for
    the table; it writes to the pending output (a temp file or path), never to the target itself."""
    from ..export.records import RecordError
    from ..export.writers import open_writer

    if args.format == "table":
        return None
    try:
        target = output.path if output.path is not None else output.stream
        return open_writer(args.format, target, resolved, args.index or "chunks", args.keep_headers)
    except (RecordError, OSError) as err:
        raise CLIError(str(err)) from err


def process(
    nlp, files: Iterable[Any], batch_size: int, encoding: str = "utf-8"
) -> Iterator[Tuple[Any, Any, Optional[str]]]:
    """Yield ``(item, doc, error)`` with the corpus runs' own processing and error handling."""
    from ..corpus.inputs import read_file
    from ..pipeline import process_items

    docs = (doc for file in files for doc in read_file(file, encoding))
    yield from process_items(nlp, docs, batch_size=batch_size)


def _print_llm_usage(usages: List[Dict[str, Any]]) -> None:
    """One stderr line: what clin_llm_context cost over the whole run."""
    from ..components.llm_context import sum_usage

    total = sum_usage(usages)
    fields = ("calls", "cache_hits", "prompt_tokens", "completion_tokens", "failures", "skipped", "seconds")
    print("llm usage: " + " ".join(f"{name}={total[name]}" for name in fields), file=sys.stderr)


def run_corpus_command(args: argparse.Namespace, extra: List[str]) -> int:
    """``--engine local|ray``: sharded, resumable corpus run into the ``--output`` directory."""
    from ..corpus import DEFAULT_SHARD_SIZE, DEFAULT_SPLIT_BYTES, CorpusError, CorpusOptions, RayOptions, run_corpus
    from ..corpus.chroma import DEFAULT_COLLECTION, DEFAULT_EMBEDDER

    if not args.output:
        raise CLIError("--engine needs --output OUT_DIR")
    if args.format == "table":
        raise CLIError("corpus runs write files: --format jsonl | docbin | records | parquet | hf, not table")
    if args.paths == ["-"] or "-" in args.paths:
        raise CLIError("corpus runs read files, directories or globs, not stdin")
    _input_files(args.paths)
    _chroma_settings_need_chroma(args)
    workers = args.workers if args.workers is not None else (2 if args.engine == "ray" else 1)
    options = CorpusOptions(
        batch_size=args.batch_size,
        fmt=args.format or "jsonl",
        index=args.index or "chunks",
        keep_headers=bool(args.keep_headers),
        shard_size=args.shard_size or DEFAULT_SHARD_SIZE,
        split_bytes=args.split_bytes or DEFAULT_SPLIT_BYTES,
        resume=not args.no_resume,
        file_mode=_file_mode(args),
        encoding=encoding_of(args),
        chroma_path=args.chroma_path,
        collection=args.collection or DEFAULT_COLLECTION,
        embed_model=args.embed_model,
        embedder=args.embedder or DEFAULT_EMBEDDER,
    )
    # Ray's console chatter is the application's to quiet: the CLI asks for WARNING
    ray = RayOptions(
        args.ray_address, args.cpus_per_worker, args.gpus_per_worker, args.connect_timeout, logging_level=logging.WARNING
    )
    bar = ShardProgress(enabled=not args.no_progress and sys.stderr.isatty())
    try:
        result = run_corpus(
            pipeline_spec(args, extra),
            args.paths,
            args.output,
            engine=args.engine,
            workers=workers,
            options=options,
            ray=ray,
            on_progress=bar.update,
        )
    except CorpusError as err:
        raise CLIError(str(err)) from err
    except KeyboardInterrupt:
        bar.close()
        print(f"interrupted: finished shards in {args.output} are kept; rerun the same command to resume", file=sys.stderr)
        return 130
    finally:
        bar.close()
    for note in result.notes:
        print(note, file=sys.stderr)
    totals = result.manifest.get("totals", {})
    failed = int(totals.get("errors", result.errors))  # shards skipped as done too
    refused = int(totals.get("refused", 0))
    earlier = f" ({failed} in all shards)" if failed != result.errors else ""
    print(
        f"{result.docs} docs in {len(result.processed)} shards ({len(result.skipped)} already done), "
        f"{result.errors} errors{earlier}, {result.seconds:.1f} s -> {result.output_dir}",
        file=sys.stderr,
    )
    if failed:
        binary = f" ({refused} refused as binary: NUL bytes or control characters)" if refused else ""
        print(f"error: {failed} document(s) failed{binary}; see {result.output_dir / 'errors.jsonl'}", file=sys.stderr)
        return 1
    return 0


CHROMA_ONLY = ("chroma_path", "collection", "embedder", "embed_model")


def _refuse_given(args: argparse.Namespace, names: Iterable[str], needed: str) -> None:
    """One line naming the options of ``names`` given, which need ``needed``: without it they
    would be ignored silently."""
    given = [f"--{name.replace('_', '-')}" for name in names if getattr(args, name) is not None]
    if given:
        verb = "needs" if len(given) == 1 else "need"
        raise CLIError(f"{', '.join(given)} {verb} {needed}")


def _chroma_settings_need_chroma(args: argparse.Namespace) -> None:
    """A Chroma setting (``--embedder static``) with another format is one line, not ignored."""
    if args.format != "chroma":
        _refuse_given(args, CHROMA_ONLY, f"--format chroma, not {args.format or 'jsonl'}")


class ShardProgress:
    """A tqdm bar over shards (total and ETA) with the document count, on a terminal only."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.bar = None

    def update(self, progress) -> None:
        if not self.enabled:
            return
        if self.bar is None:
            from tqdm import tqdm

            # the first call comes before any work: the bar (and its ETA) covers this run's shards
            self.bar = tqdm(total=progress.shards_total - progress.shards_done, unit="shard", desc="corpus", file=sys.stderr)
        else:
            self.bar.update(1)
        self.bar.set_postfix(docs=progress.docs, errors=progress.errors, refresh=False)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
