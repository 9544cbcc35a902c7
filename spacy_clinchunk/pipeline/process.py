"""Documents through a pipeline: one place for ids, sources, ``max_length`` and errors.

:func:`make_doc` turns an :class:`InputDoc` into a tokenized doc carrying its id and source
(or a clear length error); :func:`process_items` runs many through ``nlp.pipe`` so that one
failing document never stops a batch. The CLI, corpus workers and the export adapters all
process documents here.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Deque, Dict, Iterable, Iterator, Optional, Tuple

# doc.user_data key where the error handler records a component's failure
ERROR_MARK = "clinchunk_error"

_last_error: Dict[str, str] = {}


@dataclass
class InputDoc:
    """One document to process, or the reason it could not be read (``error``)."""

    id: str
    text: Optional[str]
    source: str
    error: Optional[str] = None
    # the input record's own fields (JSON/JSONL keys besides id and text): carried to every
    # record written, as ``Doc._.clin_meta``
    meta: Optional[Dict[str, Any]] = None


def record_component_error(proc_name, proc, docs, err) -> None:
    """Error handler: note the failure on the doc and keep the batch going.

    Components that catch their own errors (ours) return the doc, which then carries
    the mark; components that drop the doc after the handler are found missing later.
    """
    message = f"{proc_name or 'pipeline'}: {type(err).__name__}: {err}"
    _last_error["message"] = message
    for doc in docs or ():
        if doc is not None and ERROR_MARK not in doc.user_data:
            doc.user_data[ERROR_MARK] = message


def make_doc(nlp, item: InputDoc):
    """A tokenized doc carrying the document's id and source, or a clear length error."""
    if len(item.text) > nlp.max_length:
        raise ValueError(
            f"document has {len(item.text):,} characters, more than max_length {nlp.max_length:,}; "
            f"raise it with --max-length (max_length= in run_corpus)"
        )
    doc = nlp.make_doc(item.text)
    doc._.clin_doc_id = item.id
    doc._.clin_source = item.source
    if item.meta:
        doc._.clin_meta = item.meta
    return doc


def process_items(
    nlp, items: Iterable[InputDoc], batch_size: int = 64, handle_errors: bool = True
) -> Iterator[Tuple[InputDoc, Any, Optional[str]]]:
    """Yield ``(item, doc, error)`` in input order; exactly one of ``doc`` and ``error`` is set.

    Items that arrive with an ``error`` (unreadable input) or whose :func:`make_doc` fails
    are reported without entering the pipeline. With ``handle_errors`` a component's error
    becomes that document's error (the pipeline's error handler is set here) and a doc a
    component drops is rerun alone to recover the message; without it, it propagates.
    """
    if handle_errors:
        nlp.set_error_handler(record_component_error)
    pending: Deque[Tuple[int, InputDoc, Optional[str]]] = deque()

    def feed() -> Iterator[Tuple[Any, int]]:
        for index, item in enumerate(items):
            if item.error is not None:
                pending.append((index, item, item.error))
                continue
            try:
                doc = make_doc(nlp, item)
            except Exception as err:
                pending.append((index, item, f"{type(err).__name__}: {err}"))
                continue
            pending.append((index, item, None))
            yield doc, index

    def settle(upto: Optional[int]) -> Iterator[Tuple[InputDoc, Any, Optional[str]]]:
        while pending and (upto is None or pending[0][0] != upto):
            _, item, error = pending.popleft()
            yield (item, None, error) if error is not None else rerun_alone(nlp, item)

    for doc, index in nlp.pipe(feed(), as_tuples=True, batch_size=max(1, batch_size)):
        yield from settle(index)
        _, item, _ = pending.popleft()
        error = doc.user_data.get(ERROR_MARK)
        yield item, (None if error else doc), error
    yield from settle(None)


def rerun_alone(nlp, item: InputDoc) -> Tuple[InputDoc, Any, Optional[str]]:
    """Run one document alone: the doc, or why a component dropped it."""
    _last_error.pop("message", None)
    try:
        docs = list(nlp.pipe([make_doc(nlp, item)]))
    except Exception as err:
        return item, None, f"{type(err).__name__}: {err}"
    if docs and ERROR_MARK not in docs[0].user_data:
        return item, docs[0], None
    if docs:
        return item, None, docs[0].user_data[ERROR_MARK]
    return item, None, _last_error.get("message", "document dropped by the pipeline")
