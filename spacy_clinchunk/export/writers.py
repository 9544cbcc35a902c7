"""One registry of writers, serving the ``chunk`` command and corpus runs alike.

Every format is a :class:`Writer`: built on a target (a stream, or a path it opens itself:
owner-only, as notes are clinical text), fed one document at a time with :meth:`Writer.add`
(which returns the number of records written: 1 for a document format), then closed. What a document becomes
is :func:`~spacy_clinchunk.export.records.records_of`, read with the groups and fields a
:class:`~spacy_clinchunk.pipeline.ResolvedPipeline` answers (or a :class:`RecordPlan`).

==========  =====================================================  ===========================
format      what is written                                        target
==========  =====================================================  ===========================
jsonl       one JSON line per document (``index="doc"`` records)   a text stream or a file
docbin      the docs themselves (spans, extension values): DocBin  a binary file
records     one JSON line per chunk (or focus span, or block)      a text stream or a file
parquet     one row per chunk (or focus span), row group per doc   a file
hf          a Hugging Face dataset (``save_to_disk``)              a directory
==========  =====================================================  ===========================
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import IO, Any, Dict, Iterable, List, Optional, Union

from ..fileio import make_private, open_private
from .records import RecordError, RecordPlan, arrow_schema, flat_row, indexed, record_json, records_of, to_arrow, _dataset

Target = Union[str, Path, IO[Any], None]

# one encoder for every document line (records hold plain JSON values: no cycle check needed)
_ENCODER = json.JSONEncoder(ensure_ascii=False, check_circular=False)


class Writer:
    """A format: ``add`` each document in order, then ``close``.

    ``binary``: writes bytes; ``to_path``: needs a path (it writes a file or folder itself),
    never a stream. ``suffix``: of a corpus shard's output in this format.
    """

    suffix = ""
    binary = False
    to_path = False

    def __init__(self, target: Target, plan: Any = None, index: str = "chunks", keep_headers: bool = False) -> None:
        self.plan = plan if plan is not None else RecordPlan()
        self.index = index
        self.keep_headers = keep_headers
        self._own = False
        if self.to_path:
            if target is None or hasattr(target, "write"):
                raise RecordError(f"--format {self.name()} needs --output {self.needs}")
            self.path = Path(target)
        elif target is None or hasattr(target, "write"):
            self.out: IO[Any] = target or (sys.stdout.buffer if self.binary else sys.stdout)
        else:
            self.out, self._own = open_private(target, "wb" if self.binary else "w"), True
        self._open()

    def _open(self) -> None:
        """What a format sets up once its target is known (a file of its own, a row buffer)."""

    needs = "FILE"

    @classmethod
    def name(cls) -> str:
        return next((name for name, writer in WRITERS.items() if writer is cls), cls.__name__)

    def add(self, doc: Any, doc_id: str) -> int:
        raise NotImplementedError

    def close(self) -> None:
        if self._own:
            self.out.close()

    def records(self, doc: Any, doc_id: str) -> List[Dict[str, Any]]:
        """The flat records written for ``doc``: section headers left out unless ``keep_headers``."""
        return list(indexed(records_of(doc, self.plan, index=self.index, doc_id=doc_id), self.keep_headers))


class DocumentLines(Writer):
    """``jsonl``: one JSON record per document (:func:`records_of` with ``index="doc"``)."""

    suffix = ".jsonl"

    def add(self, doc: Any, doc_id: str) -> int:
        self.out.write(document_line(doc, doc_id, self.plan))
        return 1


def document_line(doc: Any, doc_id: str, plan: Any) -> str:
    """One JSON line for one document: the single serialization of CLI and corpus documents."""
    record = records_of(doc, plan, index="doc", doc_id=doc_id)[0]
    try:
        return _ENCODER.encode(record) + "\n"
    except (TypeError, ValueError) as err:  # a value no host conversion knows (export.host_values)
        raise RecordError(f"document {doc_id}: a value is not JSON-serializable ({_first_line(err)})") from None


class DocBinFile(Writer):
    """``docbin``: the documents (span groups and extension values) in one ``DocBin``."""

    suffix = ".spacy"
    binary = True

    def __init__(self, target: Target, plan: Any = None, index: str = "chunks", keep_headers: bool = False) -> None:
        from spacy.tokens import DocBin

        if target is None or hasattr(target, "encoding"):  # stdout, or another text stream
            raise RecordError("--format docbin needs --output FILE.spacy")
        super().__init__(target, plan, index, keep_headers)
        self.docbin = DocBin(store_user_data=True)

    def add(self, doc: Any, doc_id: str) -> int:
        """Add the doc; one whose values msgpack cannot hold is taken out again and refused."""
        before = len(self.docbin.tokens)
        try:
            self.docbin.add(doc)
        except Exception:  # DocBin appends field by field: leave it as it was
            for name in ("tokens", "spaces", "flags", "cats", "user_data", "span_groups"):
                del getattr(self.docbin, name)[before:]
            raise
        return 1

    def close(self) -> None:
        self.out.write(self.docbin.to_bytes())
        super().close()


class RecordLines(Writer):
    """``records``: one JSON line per chunk (or focus span: ``index="focus"``)."""

    suffix = ".records.jsonl"

    def add(self, doc: Any, doc_id: str) -> int:
        records = self.records(doc, doc_id)
        self.out.write("".join(record_json(record) + "\n" for record in records))
        return len(records)


class ParquetFile(Writer):
    """``parquet``: the records as one Parquet file (owner-only), a row group per document."""

    suffix = ".parquet"
    to_path = True
    needs = "FILE.parquet"

    def _open(self) -> None:
        try:
            import pyarrow.parquet as pq
        except ImportError as err:
            raise RecordError("the Parquet export needs `pip install spacy-clinchunk[parquet]`") from err
        self._file = open_private(self.path, "wb")
        self._writer = pq.ParquetWriter(self._file, arrow_schema())

    def add(self, doc: Any, doc_id: str) -> int:
        table = to_arrow(self.records(doc, doc_id))
        if table.num_rows:
            self._writer.write_table(table)
        return table.num_rows

    def close(self) -> None:
        self._writer.close()
        self._file.close()


class DatasetFolder(Writer):
    """``hf``: the records as a Hugging Face dataset saved with ``save_to_disk`` (owner-only)."""

    suffix = ".hf"
    to_path = True
    needs = "DIRECTORY"

    def add(self, doc: Any, doc_id: str) -> int:
        rows = [flat_row(r) for r in self.records(doc, doc_id)]
        self._rows.extend(rows)
        return len(rows)

    def close(self) -> None:
        _dataset(self._rows).save_to_disk(str(self.path))
        make_private(self.path)

    def _open(self) -> None:
        self._rows: List[Dict[str, Any]] = []


# format name -> writer; a new format is one Writer class and one entry here
WRITERS: Dict[str, type] = {
    "jsonl": DocumentLines,
    "docbin": DocBinFile,
    "records": RecordLines,
    "parquet": ParquetFile,
    "hf": DatasetFolder,
}
# the formats whose records are chunks or focus spans (``index`` applies)
RECORD_FORMATS = ("records", "parquet", "hf")


def open_writer(fmt: str, target: Target, plan: Any = None, index: str = "chunks", keep_headers: bool = False) -> Writer:
    """A writer of ``fmt`` (a key of :data:`WRITERS`) on ``target``; the flat formats leave section
    headers out unless ``keep_headers``."""
    if fmt not in WRITERS:
        raise RecordError(f"unknown format '{fmt}'; known: {', '.join(WRITERS)}")
    return WRITERS[fmt](target, plan, index, keep_headers)


def write_records(
    docs: Iterable[Any],
    fmt: str,
    target: Target,
    spans_key: Optional[str] = None,
    *,
    index: str = "chunks",
    focus_key: Optional[str] = None,
    dedupe: bool = False,
    pipeline: Any = None,
    keep_headers: bool = False,
) -> int:
    """Write ``docs`` in ``fmt`` to ``target``; returns the number of records written (documents
    for ``jsonl`` and ``docbin``). Groups and fields: ``pipeline`` (a ``ResolvedPipeline``) or
    ``spans_key`` / ``focus_key`` (default ``clin_chunks`` / ``clin_focus``). Ids are unique over
    the call (``dedupe=True`` leaves out a repeated document with the same id and text)."""
    from .ids import DocumentIds

    plan = pipeline if pipeline is not None else RecordPlan()
    if spans_key or focus_key:
        plan = RecordPlan(spans_key or plan.chunks_key, focus_key or plan.focus_key, plan.fields)
    writer, ids, written = open_writer(fmt, target, plan, index, keep_headers), DocumentIds(dedupe), 0
    try:
        for doc in docs:  # one document at a time: Parquet writes a row group per document
            doc_id = ids.take(doc)
            if doc_id is not None:
                written += writer.add(doc, doc_id)
        return written
    finally:
        writer.close()


def _first_line(err: BaseException) -> str:
    return next((line.strip() for line in str(err).splitlines() if line.strip()), type(err).__name__)
