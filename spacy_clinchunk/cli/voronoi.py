"""``voronoi``: augment annotated JSON files in place with ``chunk_variants.voronoi_v1``.

Every other field and the key order are kept; the file's JSON layout (indent, ASCII
escaping, final newline) is reproduced; writes are atomic (temp file + ``os.replace``);
a re-run with the same parameters leaves the file byte-identical.
"""
import argparse
import json
import os
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from . import CLIError

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
    source.add_argument("--input", help="one annotated JSON file")
    source.add_argument("--input-dir", help="a directory of annotated JSON files")
    parser.add_argument("--pattern", default=DEFAULT_PATTERN, help=f"glob under --input-dir (default {DEFAULT_PATTERN})")
    parser.add_argument(
        "--expansion-ratios", nargs="+", type=float, default=[0.0, 0.5, 1.0], metavar="R", help="ratios in [0, 1]"
    )
    parser.add_argument(
        "--on-overlap",
        choices=("merge", "skip", "error"),
        default="merge",
        help="overlapping annotations: share one territory (merge), skip the file, or fail it",
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
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


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


def atomic_write(path: Path, text: str) -> None:
    """Write via a temp file in the same folder and ``os.replace``: never a truncated file."""
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=str(path.parent))
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        try:
            os.chmod(temp, path.stat().st_mode & 0o7777)
        except OSError:
            pass
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise


def augment_file(path: Path, params: Dict[str, Any], dry_run: bool) -> Tuple[str, str]:
    """Augment one file; returns ``(outcome, detail)``."""
    from ..annotations import AnnotationError, parse_bytes, validate_record
    from ..voronoi import VARIANTS_FIELD, VARIANTS_NAME, OverlapError, VoronoiError, same_block, voronoi_block

    try:
        data = path.read_bytes()
    except OSError as err:
        return FAILED, f"cannot read: {err.strerror or err}"
    try:
        record = parse_bytes(data, str(path))
        if isinstance(record, dict) and "full_text" not in record and "annotations" not in record:
            return SKIPPED, "not an annotated document"
        validate_record(record, str(path))
        block = voronoi_block(record, **params)
    except OverlapError as err:
        if params["on_overlap"] == "skip":
            return SKIPPED, f"overlap: {err}"
        return FAILED, f"{path}: {err}"
    except (AnnotationError, VoronoiError) as err:
        return FAILED, str(err)
    variants = record.get(VARIANTS_FIELD)
    if variants is not None and not isinstance(variants, dict):
        return FAILED, f"{path}: field '{VARIANTS_FIELD}' must be an object"
    old = (variants or {}).get(VARIANTS_NAME)
    if same_block(old, block):
        return UNCHANGED, "up to date"
    block["provenance"]["generated_at"] = now_utc()
    what = "replace" if old is not None else "add"
    detail = f"{what} {VARIANTS_FIELD}.{VARIANTS_NAME}: {len(block['chunks'])} chunks"
    if dry_run:
        return UPDATED, detail
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
        return FAILED, f"{path}: cannot write: {err.strerror or err}"
    return UPDATED, detail


def list_files(args: argparse.Namespace) -> List[Path]:
    if args.input:
        path = Path(args.input)
        if not path.is_file():
            raise CLIError(f"no such file: {args.input}")
        return [path]
    folder = Path(args.input_dir)
    if not folder.is_dir():
        raise CLIError(f"no such directory: {args.input_dir}")
    files = sorted(p for p in folder.glob(args.pattern) if p.is_file())
    if not files:
        raise CLIError(f"no files match {args.pattern} under {args.input_dir}")
    return files


def run(args: argparse.Namespace, extra: List[str]) -> int:
    from ..voronoi import VoronoiError, validate_ratios

    if extra:
        raise CLIError(f"unrecognized arguments: {' '.join(extra)}")
    try:
        ratios = list(validate_ratios(args.expansion_ratios))
    except VoronoiError as err:
        raise CLIError(str(err)) from err
    if args.multi_span_gap < 0:
        raise CLIError("--multi-span-gap must be >= 0")
    params = {"ratios": ratios, "on_overlap": args.on_overlap, "multi_span_gap": args.multi_span_gap}
    files = list_files(args)
    progress = None
    if args.input_dir and not args.no_progress and sys.stderr.isatty():
        from tqdm import tqdm

        progress = tqdm(total=len(files), unit="file", file=sys.stderr, desc="voronoi")
    counts = {UPDATED: 0, UNCHANGED: 0, SKIPPED: 0, FAILED: 0}
    reasons: Dict[str, int] = {}
    try:
        for path in files:
            outcome, detail = augment_file(path, params, args.dry_run)
            counts[outcome] += 1
            if outcome == SKIPPED:
                reason = detail.split(":", 1)[0]
                reasons[reason] = reasons.get(reason, 0) + 1
                _say(progress, f"skipped {path}: {detail}", sys.stderr)
            elif outcome == FAILED:
                _say(progress, f"error: {detail}", sys.stderr)
            elif outcome == UPDATED and args.dry_run:
                _say(progress, f"would {detail} in {path}", sys.stdout)
            if progress is not None:
                progress.update(1)
    finally:
        if progress is not None:
            progress.close()
    skipped = f"{counts[SKIPPED]} skipped"
    if reasons:
        skipped += " (" + ", ".join(f"{name}: {n}" for name, n in sorted(reasons.items())) + ")"
    verb = "would update" if args.dry_run else "updated"
    print(
        f"{len(files)} file(s) processed: {counts[UPDATED]} {verb}, {counts[UNCHANGED]} unchanged, "
        f"{skipped}, {counts[FAILED]} error(s)"
    )
    return 1 if counts[FAILED] else 0


def _say(progress: Any, message: str, stream: Any) -> None:
    if progress is not None:
        progress.write(message, file=stream)
    else:
        print(message, file=stream)
