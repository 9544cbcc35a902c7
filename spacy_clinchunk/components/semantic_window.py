"""clin_semantic_window: split chunks where the meaning of a sliding word window shifts.

Each chunk of the ``spans_key`` group is cut into whitespace-separated words; windows of
``window_size`` words move ``step_size`` words at a time; a split is made where the
cosine similarity of adjacent windows drops below ``threshold``. Pieces shorter than
``min_segment_words`` join a neighbour, and a piece that is (or ends with) a negation
("no", "kein", "sin") joins the piece it negates. Windows are slices of ``doc.text``, so
every chunk keeps exact character offsets.

With ``only_over = N`` (default null: every chunk) it works only on chunks of more than N
words, the ones a size ceiling would have to cut anyway: well-punctuated text, whose clause
chunks are short, then never reaches the embedder, and an over-long run-on piece is cut
where its meaning shifts. Put ``clin_size_ceiling`` after it for the guarantee.

Speed: :meth:`SemanticWindow.pipe` collects the windows of every chunk of every doc in
a batch, drops duplicates, encodes them once (length-sorted batches under
``torch.inference_mode``) and computes all adjacent cosines in one vectorised step.
``mode = "pooled"`` runs the model once per chunk and averages contextual token vectors
over each window (prefix sums), which costs one pass over the text instead of
``window_size`` passes.
"""

import logging
import re
from typing import Any, Callable, Dict, Iterable, Iterator, List, Literal, Optional, Sequence, Tuple

import numpy as np
from spacy.language import Language
from spacy.tokens import Doc
from spacy import util
from spacy.util import minibatch

from .base import ChunkRefiner, WordLists, factory_settings, refiner_factory, require_extra
from ..embed.embedders import DEFAULT_MODEL, Embedder
from ..resources_io import Override
from ..spans import Range, current_ranges, normalize_word, write_group
from .settings import NonNegativeInt, PositiveInt, SettingError, Similarity

FACTORY = "clin_semantic_window"
MODEL_DIR = "model"
DEFAULT_EMBEDDER = {
    "@misc": "spacy_clinchunk.SentenceTransformerEmbedder.v1",
    "model": DEFAULT_MODEL,
    "device": "auto",
    "batch_size": 64,
    "normalize": True,
}

logger = logging.getLogger("spacy_clinchunk")
_WORD = re.compile(r"\S+")
_CLOSING_PUNCT = (".", ",", ";", ":", "!", "?")

Words = List[Tuple[int, int]]  # char ranges of the words of one chunk
Segment = Tuple[int, int]  # [first word, end word) of one piece


@refiner_factory(
    FACTORY,
    embedder=DEFAULT_EMBEDDER,
    mode="exact",
    window_size=7,
    step_size=1,
    threshold=0.5,
    min_segment_words=3,
    split_at="drop",
    negation_merge=True,
    negation_merge_max_words=12,
    batch_size=256,
    save_model=False,
    only_over=None,
)
def make_semantic_window(
    nlp: Language,
    name: str,
    embedder: Embedder,
    mode: Literal["exact", "pooled"],
    window_size: PositiveInt,
    step_size: PositiveInt,
    threshold: Similarity,
    min_segment_words: NonNegativeInt,
    split_at: Literal["drop", "minimum"],
    negation_merge: bool,
    negation_merge_max_words: NonNegativeInt,
    batch_size: PositiveInt,
    save_model: bool,
    only_over: Optional[PositiveInt],
    spans_key: str, language: Optional[str], overrides: Dict[str, Override], scorer: Optional[Callable],  # every refiner's
):
    settings = factory_settings(locals())
    if step_size > window_size:
        raise SettingError(f"{name}: step_size ({step_size}) must not exceed window_size ({window_size})")
    if getattr(embedder, "reads_docs", False) and mode != "pooled":
        raise SettingError(f'{name}: the embedder {embedder.name} gives token vectors only; set mode = "pooled"')
    require_extra(nlp, "embed")
    return SemanticWindow(nlp, name, **settings)


def _phrases(items: Iterable[str]) -> List[Tuple[str, ...]]:
    phrases = {tuple(normalize_word(w) for w in item.split()) for item in items if item.strip()}
    return sorted((p for p in phrases if all(p)), key=len, reverse=True)


class _Job:
    """One chunk to be split: its words and the rows of its windows in the vector table."""

    __slots__ = ("doc_index", "start", "end", "words", "rows", "sims")

    def __init__(self, doc_index: int, start: int, end: int, words: Words) -> None:
        self.doc_index = doc_index
        self.start = start
        self.end = end
        self.words = words
        self.rows: Optional[np.ndarray] = None
        self.sims: Optional[np.ndarray] = None


class SemanticWindow(ChunkRefiner):
    """Embedding-based sliding-window splitter with negation-aware merging."""

    resource_names = ("negation_merge_words", "negation_merge_avoid")
    compiled = ("negations", "avoid")

    def __init__(
        self,
        nlp: Language,
        name: str,
        *,
        embedder: Embedder,
        mode: str,
        window_size: int,
        step_size: int,
        threshold: float,
        min_segment_words: int,
        split_at: str,
        negation_merge: bool,
        negation_merge_max_words: int,
        batch_size: int,
        save_model: bool,
        only_over: Optional[int],
        **kwargs: Any,
    ) -> None:
        self.embedder = embedder
        self.mode = mode
        self.window_size = window_size
        self.step_size = step_size
        self.threshold = threshold
        self.min_segment_words = min_segment_words
        self.split_at = split_at
        self.negation_merge = negation_merge
        self.negation_merge_max_words = negation_merge_max_words
        self.batch_size = batch_size
        self.save_model = save_model
        self.only_over = only_over
        self.last_stats: Dict[str, int] = {}
        super().__init__(nlp, name, **kwargs)

    def setup(self) -> None:
        self.negations = _phrases(self.resources["negation_merge_words"])
        self.avoid = _phrases(self.resources["negation_merge_avoid"])

    @property
    def reads_docs(self) -> bool:
        """The embedder reads vectors an upstream component wrote (TransformerListener.v1)."""
        return bool(getattr(self.embedder, "reads_docs", False))

    def initialize(
        self,
        get_examples: Optional[Callable] = None,
        *,
        nlp: Optional[Language] = None,
        resources: Optional[WordLists] = None,
    ) -> None:
        """Load the word lists (see :meth:`ChunkRefiner.initialize`) and the embedding model
        (otherwise both load at the first document)."""
        check_pipeline = getattr(self.embedder, "check_pipeline", None)
        if check_pipeline is not None:
            check_pipeline(nlp, self.name)
        super().initialize(get_examples, nlp=nlp, resources=resources)
        self.embedder.initialize()

    # -- spaCy API ----------------------------------------------------------
    def __call__(self, doc: Doc) -> Doc:
        return next(iter(self.pipe([doc])))

    def pipe(self, stream: Iterable[Doc], *, batch_size: int = 128) -> Iterator[Doc]:
        error_handler = self.get_error_handler()
        for docs in minibatch(stream, size=max(batch_size, 1)):
            try:
                self.process_batch(docs)
            except Exception as err:  # routed like spaCy's own pipes
                error_handler(self.name, self, docs, err)
            yield from docs

    def refine(self, text: str, start: int, end: int) -> Iterable[Range]:
        """Split one chunk (a single-chunk batch; :meth:`pipe` is the fast path)."""
        words = [(m.start(), m.end()) for m in _WORD.finditer(text, start, end)]
        job = _Job(0, start, end, words)
        if self._wanted(len(words)):
            self._similarities([text], [job])
            return self._split(text, job)
        return [(start, end)]

    # -- the batched path ------------------------------------------------------
    def process_batch(self, docs: Sequence[Doc]) -> None:
        self.resources  # noqa: B018  (data errors surface before any model call)
        texts = [doc.text for doc in docs]
        kept: List[List[Range]] = [[] for _ in docs]
        jobs: List[_Job] = []
        for d, doc in enumerate(docs):
            for start, end in current_ranges(doc, self.spans_key, self.abbreviation_rule):
                words = [(m.start(), m.end()) for m in _WORD.finditer(texts[d], start, end)]
                if self._wanted(len(words)):
                    jobs.append(_Job(d, start, end, words))
                else:  # shorter than two windows, or not over only_over: left alone, no model call
                    kept[d].append((start, end))
        if jobs:
            if self.reads_docs:
                self._upstream_similarities(docs, jobs)
            else:
                self._similarities(texts, jobs)
            for job in jobs:
                kept[job.doc_index].extend(self._split(texts[job.doc_index], job))
        for d, doc in enumerate(docs):
            write_group(doc, self.spans_key, kept[d])

    def _wanted(self, n_words: int) -> bool:
        """Whether a chunk of ``n_words`` words is split (two windows, and over ``only_over``)."""
        return self._n_windows(n_words) >= 2 and (self.only_over is None or n_words > self.only_over)

    def _n_windows(self, n_words: int) -> int:
        if n_words < self.window_size:
            return 0
        return (n_words - self.window_size) // self.step_size + 1

    def _window_ranges(self, job: _Job) -> List[Range]:
        w, s, words = self.window_size, self.step_size, job.words
        return [(words[i * s][0], words[i * s + w - 1][1]) for i in range(self._n_windows(len(words)))]

    def _similarities(self, texts: Sequence[str], jobs: Sequence[_Job]) -> None:
        if self.mode == "pooled":
            self._pooled_similarities(texts, jobs)
        else:
            self._exact_similarities(texts, jobs)

    def _exact_similarities(self, texts: Sequence[str], jobs: Sequence[_Job]) -> None:
        """Every window of the batch encoded once (duplicates dropped), cosines in one step."""
        unique: Dict[str, int] = {}
        total = 0
        for job in jobs:
            text = texts[job.doc_index]
            rows = [unique.setdefault(text[a:b], len(unique)) for a, b in self._window_ranges(job)]
            job.rows = np.asarray(rows, dtype=np.int64)
            total += len(rows)
        windows = list(unique)
        order = sorted(range(len(windows)), key=lambda i: len(windows[i]), reverse=True)
        vectors = np.empty((len(windows), 0), dtype=np.float32)
        for b in range(0, len(order), self.batch_size * 64):  # bounded memory, still few calls
            part = order[b:b + self.batch_size * 64]
            encoded = self.embedder.encode([windows[i] for i in part])
            if vectors.shape[1] == 0:
                vectors = np.zeros((len(windows), encoded.shape[1]), dtype=np.float32)
            vectors[np.asarray(part, dtype=np.int64)] = encoded
        left = np.concatenate([job.rows[:-1] for job in jobs])
        right = np.concatenate([job.rows[1:] for job in jobs])
        sims = np.einsum("ij,ij->i", vectors[left], vectors[right])
        self._assign(jobs, sims)
        self.last_stats = {"chunks": len(jobs), "windows": total, "unique_windows": len(windows)}
        logger.debug("%s: %d windows (%d unique) in %d chunks", self.name, total, len(windows), len(jobs))

    def _pooled_similarities(self, texts: Sequence[str], jobs: Sequence[_Job]) -> None:
        """One pass per (unique) chunk; a window is the mean of its tokens' vectors."""
        unique: Dict[str, int] = {}
        keys = []
        for job in jobs:
            keys.append(unique.setdefault(texts[job.doc_index][job.start:job.end], len(unique)))
        chunk_texts = list(unique)
        token_data = self.embedder.token_vectors(chunk_texts)
        for job, key in zip(jobs, keys):
            offsets, vectors = token_data[key]
            job.sims = self._pooled_window_sims(job, offsets, vectors, job.start)
        self.last_stats = {"chunks": len(jobs), "unique_chunks": len(chunk_texts)}

    def _upstream_similarities(self, docs: Sequence[Doc], jobs: Sequence[_Job]) -> None:
        """Pooled windows over token vectors an upstream component computed for each doc."""
        per_doc: Dict[int, Tuple[np.ndarray, np.ndarray]] = {}
        for job in jobs:
            if job.doc_index not in per_doc:
                per_doc[job.doc_index] = self.embedder.doc_token_vectors(docs[job.doc_index])
            offsets, vectors = per_doc[job.doc_index]
            job.sims = self._pooled_window_sims(job, offsets, vectors, 0)
        self.last_stats = {"chunks": len(jobs), "docs": len(per_doc)}

    def _pooled_window_sims(self, job: _Job, offsets: np.ndarray, vectors: np.ndarray, base: int) -> np.ndarray:
        """Cosines of adjacent windows, each the sum of the vectors of the tokens that start
        inside it; ``offsets`` are relative to ``base``."""
        ranges = np.asarray(self._window_ranges(job), dtype=np.int64) - base
        starts = offsets[:, 0] if len(offsets) else np.zeros(0, dtype=np.int64)
        first = np.searchsorted(starts, ranges[:, 0], side="left")
        last = np.searchsorted(starts, ranges[:, 1], side="left")
        width = vectors.shape[1] if vectors.ndim == 2 else 0
        prefix = np.zeros((len(vectors) + 1, width), dtype=np.float64)
        if len(vectors):
            np.cumsum(vectors, axis=0, out=prefix[1:])
        windows = (prefix[last] - prefix[first]).astype(np.float32)
        norms = np.linalg.norm(windows, axis=1)
        ok = norms > 0
        windows[ok] /= norms[ok, None]
        sims = np.einsum("ij,ij->i", windows[:-1], windows[1:])
        sims[~(ok[:-1] & ok[1:])] = 1.0  # a window without tokens gives no evidence of a shift
        return sims

    def _assign(self, jobs: Sequence[_Job], sims: np.ndarray) -> None:
        cursor = 0
        for job in jobs:
            n = self._n_windows(len(job.words)) - 1
            job.sims = sims[cursor:cursor + n]
            cursor += n

    # -- splitting -----------------------------------------------------------------
    def split_points(self, sims: np.ndarray) -> List[int]:
        """Word indices before which a split falls, given adjacent-window similarities.

        ``drop`` (the seed's rule): for every pair ``i`` below the threshold, before the
        first word that entered window ``i + 1``, i.e. word ``i * step_size + window_size``.
        ``minimum``: once per run of consecutive below-threshold pairs, at its lowest pair.
        """
        below = np.flatnonzero(sims < self.threshold)
        if not len(below):
            return []
        if self.split_at == "minimum":
            picked = []
            run = [int(below[0])]
            for i in below[1:]:
                if i == run[-1] + 1:
                    run.append(int(i))
                else:
                    picked.append(min(run, key=lambda j: (sims[j], j)))
                    run = [int(i)]
            picked.append(min(run, key=lambda j: (sims[j], j)))
        else:
            picked = [int(i) for i in below]
        return sorted({i * self.step_size + self.window_size for i in picked})

    def _split(self, text: str, job: _Job) -> List[Range]:
        n = len(job.words)
        points = [p for p in self.split_points(job.sims) if 0 < p < n]
        bounds = [0] + points + [n]
        segments = [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]
        segments = self._merge_short(segments)
        if self.negation_merge:
            segments = self._merge_negations(text, job.words, segments)
        return [(job.words[a][0], job.words[b - 1][1]) for a, b in segments if b > a]

    def _merge_short(self, segments: List[Segment]) -> List[Segment]:
        """Pieces of fewer than ``min_segment_words`` words join the previous piece (the
        next one for the first piece)."""
        if self.min_segment_words <= 1 or len(segments) <= 1:
            return segments
        merged: List[Segment] = []
        for seg in segments:
            if merged and (seg[1] - seg[0] < self.min_segment_words or merged[-1][1] - merged[-1][0] < self.min_segment_words):
                merged[-1] = (merged[-1][0], seg[1])
            else:
                merged.append(seg)
        return merged

    def _merge_negations(self, text: str, words: Words, segments: List[Segment]) -> List[Segment]:
        """A piece that is, or ends with, a negation joins the next piece, unless that piece
        starts with an avoid word; when the next piece is long, only the negation moves."""
        result: List[Segment] = []
        i = 0
        segments = list(segments)
        while i < len(segments):
            seg = segments[i]
            if i + 1 < len(segments):
                k = self._trailing_negation(text, words, seg)
                nxt = segments[i + 1]
                if k and not self._starts_with_avoid(text, words, nxt):
                    if k == seg[1] - seg[0] or nxt[1] - nxt[0] <= self.negation_merge_max_words:
                        segments[i + 1] = (seg[0], nxt[1])  # the whole piece joins the next
                    else:
                        result.append((seg[0], seg[1] - k))
                        segments[i + 1] = (seg[1] - k, nxt[1])  # only the negation moves
                    i += 1
                    continue
            result.append(seg)
            i += 1
        return result

    def _normalized(self, text: str, words: Words, a: int, b: int) -> List[str]:
        return [normalize_word(text[s:e]) for s, e in words[a:b]]

    def _trailing_negation(self, text: str, words: Words, seg: Segment) -> int:
        """Number of words of the negation phrase ending the piece (0 when none)."""
        a, b = seg
        last_raw = text[words[b - 1][0]:words[b - 1][1]]
        if last_raw.endswith(_CLOSING_PUNCT):
            return 0  # "... no." closes its clause; it negates nothing that follows
        for phrase in self.negations:
            k = len(phrase)
            if k <= b - a and tuple(self._normalized(text, words, b - k, b)) == phrase:
                return k
        return 0

    def _starts_with_avoid(self, text: str, words: Words, seg: Segment) -> bool:
        a, b = seg
        for phrase in self.avoid:
            k = len(phrase)
            if k <= b - a and tuple(self._normalized(text, words, a, a + k)) == phrase:
                return True
        return False

    # -- serialization ----------------------------------------------------------
    # the data of every refiner plus the embedding model (``save_model``), ``exclude``: "model"
    def to_disk(self, path: Any, *, exclude: Iterable[str] = tuple()) -> None:
        super().to_disk(path, exclude=exclude)
        if self.save_model:
            util.to_disk(path, {MODEL_DIR: self.embedder.save}, exclude)

    def from_disk(self, path: Any, *, exclude: Iterable[str] = tuple()) -> "SemanticWindow":
        super().from_disk(path, exclude=exclude)
        util.from_disk(path, {MODEL_DIR: lambda saved: saved.is_dir() and self.embedder.use_saved(saved)}, exclude)
        return self
