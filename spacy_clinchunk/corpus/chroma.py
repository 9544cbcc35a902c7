"""A corpus run into a persistent Chroma collection (``fmt="chroma"``).

Workers write each shard's embedded rows (:class:`~spacy_clinchunk.export.writers.VectorRows`:
``shards/<name>.chroma/``); the driver upserts a shard's rows into the collection as soon as
the shard is done, then enters the shard in the manifest. Chroma's persistent client belongs
to one process (each keeps its own copy of the vector index), so only the driver writes it.

Resumption is that of every corpus run: a shard in the manifest was upserted, so a rerun after
an interruption skips it; a shard whose worker or upsert was cut off is redone, and since
record ids are stable (``<doc id>:<start>-<end>``) its upsert replaces what got in, never
duplicates it. Before upserting a shard, the chunks its documents had in the collection are
deleted, so a rerun with another config leaves no stale chunk of those documents behind.
"""
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from ..export.writers import VectorRows
from .errors import CorpusError

DEFAULT_COLLECTION = "clinchunk"
# collection metadata key naming the embedding model its vectors come from
EMBEDDER_KEY = "clinchunk_embedder"
DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"


@dataclass(frozen=True)
class ChromaTarget:
    """Where a corpus run upserts: a persistent Chroma directory, a collection, the model."""

    path: str
    collection: str = DEFAULT_COLLECTION
    model: Optional[str] = None  # sentence-transformers name or path; None: the bundled MiniLM

    @property
    def model_name(self) -> str:
        return self.model or DEFAULT_MODEL_NAME

    def store(self) -> List[str]:
        """What a manifest entry records, so that a shard upserted elsewhere is not skipped."""
        return [self.path, self.collection, self.model_name]


class ChromaSink:
    """The driver's handle on the collection: :meth:`upsert` one finished shard's rows."""

    def __init__(self, target: ChromaTarget) -> None:
        try:
            import chromadb
            from chromadb.config import Settings
        except ImportError as err:
            raise CorpusError("--format chroma needs `pip install chromadb`") from err
        os.makedirs(target.path, mode=0o700, exist_ok=True)  # the store holds note text: owner-only
        client = chromadb.PersistentClient(path=target.path, settings=Settings(anonymized_telemetry=False))
        # no embedding function: rows come embedded (Chroma's default one downloads a model)
        self.collection = client.get_or_create_collection(
            target.collection, embedding_function=None, metadata={EMBEDDER_KEY: target.model_name}
        )
        held = (self.collection.metadata or {}).get(EMBEDDER_KEY)
        if held not in (None, target.model_name):
            raise CorpusError(
                f"collection '{target.collection}' holds vectors of {held}, not {target.model_name}; "
                f"give --collection another name or --embed-model {held}"
            )
        self.batch = max(1, min(5000, int(client.get_max_batch_size())))

    def upsert(self, folder: Path) -> int:
        """Upsert the rows of one shard (replacing its documents' earlier chunks); the count."""
        ids, documents, metadatas, vectors = read_rows(folder)
        doc_ids = sorted({str(m["doc_id"]) for m in metadatas})
        for start in range(0, len(doc_ids), self.batch):
            self.collection.delete(where={"doc_id": {"$in": doc_ids[start : start + self.batch]}})
        for start in range(0, len(ids), self.batch):
            end = start + self.batch
            self.collection.upsert(
                ids=ids[start:end], documents=documents[start:end], metadatas=metadatas[start:end],
                embeddings=vectors[start:end],
            )
        return len(ids)


def read_rows(folder: Path) -> Tuple[List[str], List[str], List[Dict[str, Any]], Any]:
    """``(ids, documents, metadatas, embeddings)`` of a shard written by ``VectorRows``."""
    import numpy as np

    ids, documents, metadatas = [], [], []
    with open(Path(folder) / VectorRows.ROWS, encoding="utf-8") as rows:
        for line in rows:
            row = json.loads(line)
            ids.append(row["id"])
            documents.append(row["document"])
            metadatas.append(row["metadata"])
    vectors = np.load(Path(folder) / VectorRows.EMBEDDINGS)
    if len(vectors) != len(ids):
        raise CorpusError(f"{folder}: {len(ids)} rows but {len(vectors)} embeddings; rerun with --no-resume")
    return ids, documents, metadatas, vectors


def private_store(path: str, file_mode: int) -> None:
    """``file_mode`` on every file Chroma wrote (its folders are owner-only from the start)."""
    for folder, _dirs, files in os.walk(path):
        for name in files:
            os.chmod(os.path.join(folder, name), file_mode)
