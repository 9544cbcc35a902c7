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
chroma      rows for a Chroma collection: embedded records         a directory
==========  =====================================================  ===========================

Every record carries the input's own fields (the record model's ``meta``: the keys of a
JSON/JSONL input record besides ``id`` and ``text``, ``Doc._.clin_meta``): a dict in ``records``,
a JSON string in Parquet and datasets (like ``attributes``: one schema for every input),
``doc.meta`` in ``jsonl``, and flat metadata in Chroma (as the LangChain and LlamaIndex adapters
keep them).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import IO, Any, Dict, Iterable, List, Optional, Union

from ..fileio import make_private, open_private
from .records import RecordError, RecordPlan, arrow_schema, flat_row, indexed, record_json, records_of

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
    record = focus_lists(records_of(doc, plan, index="doc", doc_id=doc_id)[0], plan.focus_key)
    try:
        return _ENCODER.encode(record) + "\n"
    except (TypeError, ValueError) as err:  # a value no host conversion knows (export.host_values)
        raise RecordError(f"document {doc_id}: a value is not JSON-serializable ({_first_line(err)})") from None


def focus_lists(record: Dict[str, Any], focus_key: Optional[str]) -> Dict[str, Any]:
    """The document record with each chunk's focus spans as a ``focus`` list of ``{start, end,
    text}`` (as every other output has them) instead of ``focus_ids``, indices into the focus
    group; the focus group's spans name their chunk by id (``parent_id``) instead of ``focus_of``."""
    chunks = record.get("chunks") or []
    focus = (record.get("groups") or {}).get(focus_key or "", [])
    if not focus or not any("focus_ids" in chunk for chunk in chunks):
        return record
    for chunk in chunks:
        numbers = chunk.pop("focus_ids", None) or ()
        chunk["focus"] = [{name: focus[n][name] for name in ("start", "end", "text")} for n in numbers if 0 <= n < len(focus)]
    for span in focus:
        number = span.pop("focus_of", None)
        if isinstance(number, int) and 0 <= number < len(chunks):
            span["parent_id"] = chunks[number]["id"]
    return record


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
        self._schema = arrow_schema()
        self._writer = pq.ParquetWriter(self._file, self._schema)

    def add(self, doc: Any, doc_id: str) -> int:
        import pyarrow as pa

        table = pa.Table.from_pylist([flat_row(r) for r in self.records(doc, doc_id)], schema=self._schema)
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
        try:
            from datasets import Dataset, Features
        except ImportError as err:
            raise RecordError("the Hugging Face dataset export needs `pip install spacy-clinchunk[datasets]`") from err
        Dataset.from_list(self._rows, features=Features.from_arrow_schema(arrow_schema())).save_to_disk(str(self.path))
        make_private(self.path)

    def _open(self) -> None:
        self._rows: List[Dict[str, Any]] = []


class VectorRows(Writer):
    """``chroma``: the records embedded, as the rows a Chroma collection takes, in a folder:
    ``rows.jsonl`` (``id``, ``document``: the embedded text, ``metadata``: the record through
    :func:`~spacy_clinchunk.export.vectorstores.vector_metadata`, the input's own fields flat
    beside the record's) and ``embeddings.npy`` (float32, one row per line of ``rows.jsonl``).

    Chroma's persistent client belongs to one process, so in a corpus run the workers embed
    (the costly part) into these folders and the driver upserts each finished one
    (:mod:`spacy_clinchunk.corpus.chroma`). ``embedder``: the kind of embedder
    (``sentence-transformers``, the default, or ``static``: model2vec vectors, far cheaper on
    CPU); ``model``: its model (default the bundled, offline MiniLM, or for ``static`` the MiniLM
    distilled once). The model loads once per process, however many shards a worker writes.
    """

    suffix = ".chroma"
    to_path = True
    needs = "DIRECTORY"
    ROWS, EMBEDDINGS = "rows.jsonl", "embeddings.npy"

    def __init__(
        self,
        target: Target,
        plan: Any = None,
        index: str = "chunks",
        keep_headers: bool = False,
        model: Optional[str] = None,
        embedder: str = "sentence-transformers",
    ) -> None:
        self.model = model
        self.embedder_kind = embedder
        super().__init__(target, plan, index, keep_headers)

    def _open(self) -> None:
        self.path.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._rows = open_private(self.path / self.ROWS, "w")
        self._vectors: List[Any] = []
        self._texts: List[str] = []  # rows written, not yet embedded (in their order)
        self._embedder: Any = None

    # texts embedded together: a model call per document is a small batch (model2vec tokenizes
    # faster in bulk, sentence-transformers pads less), and a text repeated in a shard ("No",
    # "Negative": about 9% of a shard of MTSamples chunks) is embedded once
    EMBED_BATCH = 4096

    def add(self, doc: Any, doc_id: str) -> int:
        from .vectorstores import vector_metadata

        records = self.records(doc, doc_id)
        texts = [r["enriched_text"] or r["text"] for r in records]
        lines = [
            _ENCODER.encode({"id": r["id"], "document": text, "metadata": vector_metadata(r)}) + "\n"
            for r, text in zip(records, texts)
        ]
        self._rows.write("".join(lines))
        self._texts.extend(texts)
        if len(self._texts) >= self.EMBED_BATCH:
            self._embed_pending()
        return len(records)

    def _embed_pending(self) -> None:
        """Embed the buffered texts, each distinct one once, into rows in the order written."""
        import numpy as np

        from .vectorstores import offline_embedder

        if not self._texts:
            return
        if self._embedder is None:  # the model itself loads once per process (shared_model)
            self._embedder = offline_embedder(model=self.model, kind=self.embedder_kind)
        distinct = list(dict.fromkeys(self._texts))
        row_of = {text: row for row, text in enumerate(distinct)}
        vectors = np.asarray(self._embedder.encode(distinct), dtype=np.float32)
        self._vectors.append(vectors[[row_of[text] for text in self._texts]])
        self._texts = []

    def close(self) -> None:
        import numpy as np

        self._rows.close()
        self._embed_pending()
        vectors = np.concatenate(self._vectors) if self._vectors else np.zeros((0, 0), dtype=np.float32)
        with open_private(self.path / self.EMBEDDINGS, "wb") as out:
            np.save(out, vectors)


# format name -> writer; a new format is one Writer class and one entry here
WRITERS: Dict[str, type] = {
    "jsonl": DocumentLines,
    "docbin": DocBinFile,
    "records": RecordLines,
    "parquet": ParquetFile,
    "hf": DatasetFolder,
    "chroma": VectorRows,
}
# the formats whose records are chunks or focus spans (``index`` applies)
RECORD_FORMATS = ("records", "parquet", "hf", "chroma")


def open_writer(
    fmt: str, target: Target, plan: Any = None, index: str = "chunks", keep_headers: bool = False, **settings: Any
) -> Writer:
    """A writer of ``fmt`` (a key of :data:`WRITERS`) on ``target``; the flat formats leave section
    headers out unless ``keep_headers``; ``settings`` of the format (``model``, ``embedder`` of ``chroma``)."""
    if fmt not in WRITERS:
        raise RecordError(f"unknown format '{fmt}'; known: {', '.join(WRITERS)}")
    return WRITERS[fmt](target, plan, index, keep_headers, **settings)


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
