"""``convert``: ground truth from any format (our JSON, brat, BioC) to DocBin, our JSON, brat or BioC.

``--to docbin`` writes one ``.spacy`` file whose docs carry the ``annotations`` span
group (labels = concept ids), the Voronoi groups and the extension attributes, ready
for ``spacy train`` (``--spans-key sc`` copies the annotations into the key spancat
reads). ``--to json``/``brat`` write one document per file into a folder,
``--to bioc-json``/``bioc-xml`` one collection file. Every file written holds note
text and is created owner-only (0600). Bad files are reported and skipped; the exit
status is 1 when any file ended in error.
"""
import argparse
import json
from pathlib import Path
from typing import Any, Dict, List

from . import CLIError
from .reading import add_reading_arguments, input_files, policy_of, report_notes, say

TARGETS = ("docbin", "json", "brat", "bioc-json", "bioc-xml")
HELP = "convert annotated documents (JSON, brat, BioC) to DocBin, JSON, brat or BioC"
DESCRIPTION = (
    "Read annotated documents in any supported format and write them as a spaCy DocBin "
    "(annotation and Voronoi span groups), our JSON schema, brat standoff or BioC."
)


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser("convert", help=HELP, description=DESCRIPTION)
    parser.add_argument("input", help="an annotated file or a directory of them")
    parser.add_argument("--to", required=True, choices=TARGETS, help="output format")
    parser.add_argument("--output", "-o", required=True, help="output file (docbin, bioc-*) or folder (json, brat)")
    parser.add_argument("--pattern", default=None, help="glob under a directory input (default: by --format)")
    add_reading_arguments(parser)
    parser.add_argument("--lang", default="en", help="language of the blank tokenizer for --to docbin")
    parser.add_argument(
        "--expansion-ratios", nargs="*", type=float, default=[0.0, 0.5, 1.0], metavar="R",
        help="Voronoi variants in the DocBin (none: no Voronoi groups)",
    )
    parser.add_argument("--spans-key", default=None, help="also copy the annotation spans to this span group (e.g. sc)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, extra: List[str]) -> int:
    from ..groundtruth.reader import annotation_summary, corpus_counts, read_corpus_file

    if extra:
        raise CLIError(f"unrecognized arguments: {' '.join(extra)}")
    source = Path(args.input)
    if not source.exists():
        raise CLIError(f"no such file or directory: {args.input}")
    files = input_files(str(source), args.pattern, args.format)
    policy = policy_of(args)
    results = []
    for path in files:
        result = read_corpus_file(path, args.format, policy)
        results.append(result)
        for document in result.documents:
            report_notes(document.origin, document.notes)
        if result.outcome == "error":
            say(f"error: {result.reason}")
    documents = [d for r in results for d in r.documents]
    output = Path(args.output)
    try:
        written, left_out = write_output(args, documents, output)
    except OSError as err:
        raise CLIError(f"cannot write {output}: {err.strerror or err}") from err
    counts = corpus_counts(results)
    line = (
        f"{counts['files']} file(s) read: {counts['read']} converted, {counts['skipped']} skipped, {counts['error']} error(s); "
        f"{written} document(s) written to {output}; {annotation_summary(counts, policy)}"
    )
    if left_out:
        line += f"; {left_out} unlocated annotation(s) left out (brat cannot hold them)"
    print(line)
    return 1 if counts["error"] else 0


def write_output(args: argparse.Namespace, documents: List[Any], output: Path) -> "tuple[int, int]":
    """Write ``documents`` in ``args.to``; returns ``(documents written, annotations left out)``."""
    from ..fileio import atomic_write
    from ..groundtruth.json_format import document_to_record
    from ..groundtruth.model import AnnotationError

    if args.to in ("bioc-json", "bioc-xml", "docbin"):
        output.parent.mkdir(parents=True, exist_ok=True)
        try:
            atomic_write(output, _collection(args, documents))
        except AnnotationError as err:
            raise CLIError(str(err)) from err
        return len(documents), 0
    output.mkdir(parents=True, exist_ok=True)
    left_out = 0
    names: Dict[str, Any] = {}
    for document in documents:
        stem = _unique(names, document)
        if args.to == "json":
            atomic_write(output / f"{stem}.json", json.dumps(document_to_record(document), indent=2, ensure_ascii=False) + "\n")
        else:
            from ..groundtruth.brat import write_brat

            try:
                left_out += write_brat(document, output, stem)[1]
            except AnnotationError as err:
                raise CLIError(str(err)) from err
    return len(documents), left_out


def _unique(names: Dict[str, Any], document: Any) -> str:
    from .voronoi import safe_name

    stem = safe_name(document.doc_id)
    if stem in names:
        raise CLIError(f"{document.origin}: document id {document.doc_id!r} also comes from {names[stem]}")
    names[stem] = document.origin
    return stem


def _collection(args: argparse.Namespace, documents: List[Any]) -> Any:
    if args.to == "bioc-json":
        from ..groundtruth.bioc import dumps_bioc_json

        return dumps_bioc_json(documents)
    if args.to == "bioc-xml":
        from ..groundtruth.bioc import to_bioc_xml

        return to_bioc_xml(documents)
    return docbin_bytes(documents, args.lang, args.expansion_ratios, args.spans_key)


def docbin_bytes(documents: List[Any], lang: str, ratios: List[float], spans_key: Any = None) -> bytes:
    """A DocBin of the documents' ``Doc`` objects (span groups and extension attributes kept)."""
    import spacy
    from spacy.tokens import DocBin

    from ..groundtruth.align import document_to_doc
    from ..groundtruth.voronoi import VoronoiError, VoronoiSettings

    try:
        nlp = spacy.blank(lang)
    except (ImportError, KeyError) as err:
        raise CLIError(f"unknown language {lang!r}") from err
    docbin = DocBin(store_user_data=True)
    for document in documents:
        try:
            doc = document_to_doc(document, nlp, VoronoiSettings(tuple(ratios or ())))
        except VoronoiError as err:
            raise CLIError(str(err)) from err
        if spans_key:
            doc.spans[spans_key] = list(doc.spans["annotations"])
        docbin.add(doc)
    return docbin.to_bytes()
