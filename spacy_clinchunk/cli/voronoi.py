"""``voronoi``: add ``chunk_variants.voronoi_v1`` to annotated documents.

Our JSON files are augmented in place: every other field and the key order are kept;
the file's JSON layout (indent, ASCII escaping, final newline) is reproduced; writes are
atomic, go through symlinks to their target, and keep the file's mode
(:mod:`spacy_clinchunk.fileio`); a re-run with the same parameters leaves the
file byte-identical. With ``--output-dir`` (required for brat and BioC input) each
document is written there as ``<doc_id>.json`` in our schema, owner-only when new.
``SOURCE_DATE_EPOCH``, when set, fixes ``generated_at`` (reproducible output).

Each file ends as updated, unchanged, skipped or error, with a reason; the run goes on
after a bad file and exits 1 when any file ended in error.
"""
import argparse
import json
import os
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from ..groundtruth.voronoi import OVERLAP_POLICIES
from . import CLIError
from .reading import add_choice, add_reading_arguments, policy_of, report_notes, say

DEFAULT_PATTERN = "**/*.json"

# outcomes of one file
UPDATED, UNCHANGED, SKIPPED, FAILED = "updated", "unchanged", "skipped", "error"


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "voronoi",
        help="add Voronoi ground-truth chunk variants to annotated JSON files",
        description="Augment annotated documents in place with chunk_variants.voronoi_v1 "
        "(territories at the midpoints between annotations, word-aligned expansion variants).",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--input", help="one annotated file (JSON, brat .ann, BioC .xml/.json)")
    source.add_argument("--input-dir", help="a directory of annotated files")
    parser.add_argument(
        "--pattern", default=None, help=f"glob under --input-dir (default {DEFAULT_PATTERN} in place; by --format with --output-dir)"
    )
    add_reading_arguments(parser)
    parser.add_argument("--output-dir", default=None, help="write <doc_id>.json here instead of augmenting in place")
    parser.add_argument(
        "--expansion-ratios", nargs="+", type=float, default=[0.0, 0.5, 1.0], metavar="R", help="ratios in [0, 1]"
    )
    add_choice(
        parser, "--on-overlap", OVERLAP_POLICIES,
        "overlapping annotations: share one territory (merge), skip the file, or fail it",
    )
    parser.add_argument(
        "--multi-span-gap",
        type=int,
        default=3,
        help="evidence spans of one annotation this close (non-word characters only) form one part",
    )
    parser.add_argument("--dry-run", action="store_true", help="write nothing; print what would change")
    parser.add_argument("--no-progress", action="store_true", help="never show a progress bar")
    parser.set_defaults(func=run)


def now_utc() -> str:
    """UTC time for ``generated_at``; ``SOURCE_DATE_EPOCH`` (seconds) fixes it for reproducible output."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    moment = datetime.now(timezone.utc)
    if epoch.isdigit():
        moment = datetime.fromtimestamp(int(epoch), timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def json_layout(raw: str, record: Any) -> Tuple[Optional[int], bool]:
    """``(indent, ensure_ascii)`` that reproduce ``raw`` from ``record``, else a close guess."""
    body = raw.lstrip("\ufeff").rstrip("\n")
    indent: Optional[int] = None
    if body.startswith("{\n") or body.startswith("[\n"):
        line = body[2:].split("\n", 1)[0]
        indent = len(line) - len(line.lstrip(" "))
    for ensure_ascii in (False, True):
        if json.dumps(record, indent=indent, ensure_ascii=ensure_ascii) == body:
            return indent, ensure_ascii
    return indent, not any(ord(c) > 127 for c in raw)


def serialize(record: Any, raw: str) -> str:
    indent, ensure_ascii = json_layout(raw, record)
    return json.dumps(record, indent=indent, ensure_ascii=ensure_ascii) + ("\n" if raw.endswith("\n") else "")


def document_block(document: Any, params: Dict[str, Any]) -> Dict[str, Any]:
    """``voronoi_v1`` of a loaded document: located annotations get territories; unlocated ones are listed."""
    from ..groundtruth.voronoi import voronoi_block

    located = {
        "full_text": document.text,
        "annotations": [
            {"hpo_id": a.hpo_id, "evidence_spans": [{"start_char": s, "end_char": e} for s, e in a.spans]}
            for a in document.annotations
        ],
    }
    block = voronoi_block(located, **params)
    if document.unlocated:
        block["unlocated_annotations"] = [{"hpo_id": a.hpo_id, "label": a.label} for a in document.unlocated]
    return block


class Outcome:
    """One file's end: outcome, detail, and the document notes and counts behind it."""

    def __init__(self, outcome: str, detail: str, documents: Optional[List[Any]] = None, stale: int = 0) -> None:
        self.outcome, self.detail, self.documents, self.stale = outcome, detail, documents or [], stale


def augment_file(path: Path, params: Dict[str, Any], dry_run: bool, policy: Any = None) -> Outcome:
    """Augment one JSON file of our schema in place."""
    from ..fileio import atomic_write, remove_stale_temps, resolve_target
    from ..groundtruth.json_format import document_from_record, is_annotated_record
    from ..groundtruth.model import AnnotationError, parse_bytes
    from ..groundtruth.voronoi import VARIANTS_FIELD, VARIANTS_NAME, OverlapError, VoronoiError, same_block

    stale = 0 if dry_run else len(remove_stale_temps(resolve_target(path)))
    try:
        data = path.read_bytes()
    except OSError as err:
        return Outcome(FAILED, f"{path}: cannot read: {err.strerror or err}", stale=stale)
    try:
        record = parse_bytes(data, str(path))
        if isinstance(record, dict) and not is_annotated_record(record):
            reason = "BioC collection (give --output-dir)" if "documents" in record else "not an annotated document"
            return Outcome(SKIPPED, reason, stale=stale)
        document = document_from_record(record, str(path), policy)
        block = document_block(document, params)
    except OverlapError as err:
        if params["on_overlap"] == "skip":
            return Outcome(SKIPPED, f"overlap: {err}", stale=stale)
        return Outcome(FAILED, f"{path}: {err}", stale=stale)
    except (AnnotationError, VoronoiError) as err:
        return Outcome(FAILED, str(err), stale=stale)
    variants = record.get(VARIANTS_FIELD)
    if variants is not None and not isinstance(variants, dict):
        return Outcome(FAILED, f"{path}: field '{VARIANTS_FIELD}' must be an object", stale=stale)
    old = (variants or {}).get(VARIANTS_NAME)
    if same_block(old, block):
        return Outcome(UNCHANGED, "up to date", [document], stale)
    block["provenance"]["generated_at"] = now_utc()
    what = "replace" if old is not None else "add"
    detail = f"{what} {VARIANTS_FIELD}.{VARIANTS_NAME}: {len(block['chunks'])} chunks"
    if dry_run:
        return Outcome(UPDATED, detail, [document])
    if variants is None:
        record[VARIANTS_FIELD] = {VARIANTS_NAME: block}
    else:
        variants[VARIANTS_NAME] = block  # an existing key keeps its position
    raw = data.decode("utf-8")
    text = serialize(record, raw)
    if raw.startswith("\ufeff"):
        text = "\ufeff" + text
    try:
        atomic_write(path, text)
    except OSError as err:
        return Outcome(FAILED, f"{path}: cannot write: {err.strerror or err}", stale=stale)
    return Outcome(UPDATED, detail, [document], stale)


def safe_name(doc_id: str) -> str:
    """A file name for a document id (path separators and leading dots replaced)."""
    name = "".join("_" if c in '/\\\0' or ord(c) < 32 else c for c in doc_id).lstrip(".")
    return name[:200] or "document"


def write_documents(
    path: Path, folder: Path, params: Dict[str, Any], dry_run: bool, policy: Any, format: str, taken: Dict[str, Path]
) -> Outcome:
    """Write each document of one file (any format) to ``folder/<doc_id>.json`` with its block."""
    from ..groundtruth.reader import FAILED as READ_FAILED
    from ..groundtruth.reader import SKIPPED as READ_SKIPPED
    from ..groundtruth.reader import read_corpus_file
    from ..groundtruth.voronoi import OverlapError, VoronoiError

    result = read_corpus_file(path, format, policy)
    if result.outcome == READ_SKIPPED:
        return Outcome(SKIPPED, result.reason)
    if result.outcome == READ_FAILED:
        return Outcome(FAILED, result.reason)
    written, stale = 0, 0
    for document in result.documents:
        name = safe_name(document.doc_id) + ".json"
        if taken.setdefault(name, path) != path:
            return Outcome(FAILED, f"{path}: document id {document.doc_id!r} also comes from {taken[name]}", result.documents)
        try:
            block = document_block(document, params)
        except OverlapError as err:
            if params["on_overlap"] == "skip":
                return Outcome(SKIPPED, f"overlap: {err}", result.documents)
            return Outcome(FAILED, f"{path}: {err}", result.documents)
        except VoronoiError as err:
            return Outcome(FAILED, f"{path}: {err}", result.documents)
        try:
            changed, removed = _write_record(folder / name, document, block, dry_run)
        except OSError as err:
            return Outcome(FAILED, f"{folder / name}: cannot write: {err.strerror or err}", result.documents, stale)
        written += changed
        stale += removed
    if not written:
        return Outcome(UNCHANGED, "up to date", result.documents, stale)
    return Outcome(UPDATED, f"write {written} document(s) to {folder}", result.documents, stale)


def _write_record(target: Path, document: Any, block: Dict[str, Any], dry_run: bool) -> Tuple[bool, int]:
    """Write ``document`` with ``block`` to ``target`` unless it holds the same already: ``(written, stale temps removed)``."""
    from ..fileio import atomic_write, remove_stale_temps
    from ..groundtruth.json_format import document_to_record
    from ..groundtruth.model import AnnotationError, parse_bytes
    from ..groundtruth.voronoi import VARIANTS_FIELD, VARIANTS_NAME, same_block

    removed = 0 if dry_run else len(remove_stale_temps(target))
    old_raw = target.read_bytes() if target.is_file() else None
    old = None
    if old_raw is not None:
        try:
            old = (parse_bytes(old_raw, str(target)).get(VARIANTS_FIELD) or {}).get(VARIANTS_NAME)
        except (AnnotationError, AttributeError):
            old = None
    keep_time = isinstance(old, dict) and same_block(old, block)
    block["provenance"]["generated_at"] = old["provenance"].get("generated_at", "") if keep_time else now_utc()
    record = document_to_record(document)
    record[VARIANTS_FIELD] = {VARIANTS_NAME: block}
    text = json.dumps(record, indent=2, ensure_ascii=False) + "\n"
    if old_raw is not None and old_raw == text.encode("utf-8"):
        return False, removed
    if not dry_run:
        atomic_write(target, text)
    return True, removed


def list_files(args: argparse.Namespace) -> List[Path]:
    from .reading import input_files

    if args.input:
        path = Path(args.input)
        if not path.is_file():
            raise CLIError(f"no such file: {args.input}")
        return [path]
    if not Path(args.input_dir).is_dir():
        raise CLIError(f"no such directory: {args.input_dir}")
    pattern = args.pattern or (None if args.output_dir else DEFAULT_PATTERN)
    return input_files(args.input_dir, pattern, args.format)


def run(args: argparse.Namespace, extra: List[str]) -> int:
    from ..groundtruth.reader import annotation_summary
    from ..groundtruth.voronoi import VoronoiError, validate_ratios

    if extra:
        raise CLIError(f"unrecognized arguments: {' '.join(extra)}")
    try:
        ratios = list(validate_ratios(args.expansion_ratios))
    except VoronoiError as err:
        raise CLIError(str(err)) from err
    if args.multi_span_gap < 0:
        raise CLIError("--multi-span-gap must be >= 0")
    if args.format in ("brat", "bioc") and not args.output_dir:
        raise CLIError(f"{args.format} files cannot be augmented in place; give --output-dir")
    policy = policy_of(args)
    params = {"ratios": ratios, "on_overlap": args.on_overlap, "multi_span_gap": args.multi_span_gap}
    files = list_files(args)
    folder = Path(args.output_dir) if args.output_dir else None
    if folder is not None and not args.dry_run:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise CLIError(f"cannot create {folder}: {err.strerror or err}") from err
    progress = None
    if args.input_dir and not args.no_progress and sys.stderr.isatty():
        from tqdm import tqdm

        progress = tqdm(total=len(files), unit="file", file=sys.stderr, desc="voronoi")
    counts = {UPDATED: 0, UNCHANGED: 0, SKIPPED: 0, FAILED: 0}
    reasons: Dict[str, int] = {}
    notes: Dict[str, int] = {}
    stale = 0
    taken: Dict[str, Path] = {}
    try:
        for path in files:
            if folder is None:
                outcome = augment_file(path, params, args.dry_run, policy)
            else:
                outcome = write_documents(path, folder, params, args.dry_run, policy, args.format, taken)
            counts[outcome.outcome] += 1
            stale += outcome.stale
            for document in outcome.documents:
                report_notes(document.origin, document.notes, progress)
                for name, value in document.counts.items():
                    notes[name] = notes.get(name, 0) + value
            if outcome.outcome == SKIPPED:
                reason = outcome.detail.split(":", 1)[0]
                reasons[reason] = reasons.get(reason, 0) + 1
                say(f"skipped {path}: {outcome.detail}", progress)
            elif outcome.outcome == FAILED:
                say(f"error: {outcome.detail}", progress)
            elif outcome.outcome == UPDATED and args.dry_run:
                say(f"would {outcome.detail} in {path}", progress, sys.stdout)
            if progress is not None:
                progress.update(1)
    finally:
        if progress is not None:
            progress.close()
    skipped = f"{counts[SKIPPED]} skipped"
    if reasons:
        skipped += " (" + ", ".join(f"{name}: {n}" for name, n in sorted(reasons.items())) + ")"
    verb = "would update" if args.dry_run else "updated"
    line = (
        f"{len(files)} file(s) processed: {counts[UPDATED]} {verb}, {counts[UNCHANGED]} unchanged, "
        f"{skipped}, {counts[FAILED]} error(s); {annotation_summary(notes, policy)}"
    )
    if stale:
        line += f"; {stale} stale temp file(s) removed"
    print(line)
    return 1 if counts[FAILED] else 0
