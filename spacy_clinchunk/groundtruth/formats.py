"""Which reader a file goes to: our JSON, brat standoff or BioC, by ending or by content.

``format="auto"`` decides by the ending: ``.ann``/``.txt`` brat, ``.xml`` BioC, ``.json``
our schema unless its top level holds a BioC ``documents`` list. The readers
(:mod:`.json_format`, :mod:`.brat`, :mod:`.bioc`) know only the model; this module is the
one place that knows all of them.
"""
from pathlib import Path
from typing import Any, List, Optional, Union

from .bioc import documents_from_bioc_json, read_bioc_bytes
from .brat import read_brat
from .json_format import document_from_record, is_annotated_record, is_json_text, load_record
from .model import FORMATS, AnnotatedDocument, AnnotationError, NotAnnotatedError, ReadPolicy, Source, parse_bytes, read_file

DEFAULT_PATTERN = "**/*.json"
# file name endings each format reads (auto: all of them)
FORMAT_SUFFIXES = {"json": (".json",), "brat": (".ann",), "bioc": (".xml", ".json")}


def detect_format(path: Path, format: str = "auto") -> str:
    """``json``, ``brat`` or ``bioc`` for a file (by extension unless ``format`` says)."""
    if format not in FORMATS:
        raise AnnotationError(f"format must be one of {', '.join(FORMATS)}, not {format!r}")
    if format != "auto":
        return format
    suffix = path.suffix.lower()
    if suffix in (".ann", ".txt"):
        return "brat"
    if suffix == ".xml":
        return "bioc"
    return "json"


def load_documents(
    source: Source, format: str = "auto", policy: Optional[ReadPolicy] = None
) -> List[AnnotatedDocument]:
    """Every annotated document in one file (a BioC collection may hold several)."""
    policy = policy or ReadPolicy()
    if isinstance(source, dict) or is_json_text(source):
        record, origin = load_record(source)
        return _documents_of_json(record, origin, policy, format)
    path = Path(source)
    kind = detect_format(path, format)
    if kind == "brat":
        return [read_brat(path, policy)]
    data = read_file(path)
    if kind == "bioc" and data.lstrip()[:1] in (b"<", b"\xef"):  # XML (maybe after a BOM)
        return read_bioc_bytes(data, str(path), policy)
    return _documents_of_json(parse_bytes(data, str(path)), str(path), policy, format)


def _documents_of_json(record: Any, origin: str, policy: ReadPolicy, format: str) -> List[AnnotatedDocument]:
    """Our schema, or (``format`` auto or bioc) a BioC JSON collection: a top-level ``documents``."""
    if isinstance(record, dict) and "documents" in record and "full_text" not in record and format in ("auto", "bioc"):
        return documents_from_bioc_json(record, origin, policy)
    if format == "bioc":
        raise NotAnnotatedError(f"{origin}: not an annotated document (no BioC 'documents' list)")
    if isinstance(record, dict) and not is_annotated_record(record):
        raise NotAnnotatedError(f"{origin}: not an annotated document")
    return [document_from_record(record, origin, policy)]


def annotated_files(path: Union[str, Path], pattern: Optional[str] = DEFAULT_PATTERN, format: str = "auto") -> List[Path]:
    """Files under ``path`` matching ``pattern`` (sorted); a file path is returned as is.

    ``pattern=None`` picks the files of ``format`` by ending (auto: .json, .ann and .xml).
    """
    path = Path(path)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise AnnotationError(f"{path}: no such file or directory")
    if pattern:
        return sorted(p for p in path.glob(pattern) if p.is_file())
    suffixes = {s for kind, ends in FORMAT_SUFFIXES.items() if format in ("auto", kind) for s in ends}
    return sorted(p for p in path.glob("**/*") if p.is_file() and p.suffix.lower() in suffixes and not p.name.startswith("."))
