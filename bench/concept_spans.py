"""Learned concept spans (configs/training/concept_spans.cfg) beside the rules, with bench/retrieval.py's measures.

    python bench/concept_spans.py --run /tmp/clinchunk_concepts/half [--thresholds 0.2,0.3,0.4,0.5]
                                  [--speed MODEL_DIR ...] [--speed-only] [--cache F.npz]

``--run`` is a folder written by ``scripts/train_concept_spans.py half|cv``: its ``test_docs``
are the documents scored (they were never trained on), ``scores.json`` the per-token start and
end probabilities of the model. Rows, all on the same documents (Pass@5 ranks over the chunks
of these documents only, so compare rows of one table):

* ``punct_conj_cleaned``, ``retrieval [clin_focus]`` and the annotations' own spans;
* ``learned (t=T, all pairs)``: spaCy span_finder's decoding at threshold T (every start with
  every end within ``max_length``); ``learned (t=T, nearest)``: each start with its nearest end;
* ``learned focus, rules fallback``: per clause chunk of ``retrieval``, the learned spans that
  overlap it, or its rule focus spans where the model found none;
* ``... + coordination whole``: the same, plus each rule focus span that holds a coordination
  ("aplastic or hypoplastic nails") and overlaps a learned span, kept whole;
* ``retrieval [clin_focus] + learned``: both indexed together;
* ``learned (whole-concept decoding)``: every start-end pair over the threshold scored by
  P(start) x P(end), the best taken greedily without overlap (one span per concept), alone and
  as the focus with the rules' fallback;
* ``learned ... snapped to rule focus``: a learned span that covers at least half of the words of
  the rule focus span holding it is replaced by that span (the rules' whole concept);
* ``... + uncovered rule spans``: the combination, plus each rule focus span that overlaps no
  learned span (``combine_focus(keep_uncovered=True)``), with the learned spans at the
  combination's threshold and at 0.4 and 0.5 (confident spans only), and with whole-concept decoding.

``--late`` scores ``punct_conj_cleaned`` and ``retrieval`` again with late-chunked vectors (one
document-level pass of the bundled MiniLM, each chunk the mean of its tokens there).
``--speed MODEL_DIR [...]`` (``--speed-only``: nothing else) adds words/s, words per CPU-second
(one pass of ``nlp.pipe`` over the test documents, torch on 2 threads) and the peak resident
memory of a fresh process that loads and runs each model or pipeline.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from functools import lru_cache
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

import numpy as np

import common  # noqa: F401  (offline environment first)
import retrieval as rb
from spacy_clinchunk.components.concept_focus import combine_focus

Range = Tuple[int, int]
MAX_LENGTH = 8  # the config's span_finder max_length (tokens)


def decode(score: dict, threshold: float, nearest: bool) -> List[Range]:
    """Spans from per-token start/end probabilities, as span_finder decodes them or nearest-end."""
    tokens = score["tokens"]
    starts = [i for i, p in enumerate(score["start"]) if p >= threshold]
    ends = [i for i, p in enumerate(score["end"]) if p >= threshold]
    spans = set()
    for s in starts:
        following = [e for e in ends if s <= e < s + MAX_LENGTH]
        for e in following[:1] if nearest else following:
            spans.add((tokens[s][0], tokens[e][1]))
    return sorted(spans)


def decode_whole(score: dict, threshold: float) -> List[Range]:
    """Whole-concept decoding: every start-end pair over the threshold (within ``max_length``)
    scored by P(start) x P(end), then the best pairs taken greedily while they overlap none
    taken before: one span per concept, no nested fragments (nearest-end keeps the shortest)."""
    tokens, start_p, end_p = score["tokens"], score["start"], score["end"]
    starts = [i for i, p in enumerate(start_p) if p >= threshold]
    ends = [i for i, p in enumerate(end_p) if p >= threshold]
    pairs = sorted(((start_p[s] * end_p[e], s, e) for s in starts for e in ends if s <= e < s + MAX_LENGTH),
                   key=lambda item: (-item[0], item[1], item[2]))
    taken = [False] * len(tokens)
    spans = []
    for _, s, e in pairs:
        if not any(taken[s:e + 1]):
            taken[s:e + 1] = [True] * (e + 1 - s)
            spans.append((tokens[s][0], tokens[e][1]))
    return sorted(spans)


def snap_to_rules(learned: Sequence[Range], focus: Sequence[Range], text: str, share: float = 0.5) -> List[Range]:
    """Each learned span replaced by the shortest rule focus span that holds it when the learned
    span has at least ``share`` of its words (the rules' whole concept, the model's choice of
    which); other learned spans stay as they are."""
    out = set()
    for start, end in learned:
        holders = [f for f in focus if f[0] <= start and end <= f[1]]
        best = min(holders, key=lambda f: f[1] - f[0], default=None)
        if best is not None and len(text[start:end].split()) >= share * len(text[best[0]:best[1]].split()):
            out.add(best)
        else:
            out.add((start, end))
    return sorted(out)


def rule_groups(docs: Sequence[rb.Document]) -> Tuple[List[List[Range]], List[List[Range]], List[List[List[int]]]]:
    """Clause chunks, focus spans and each chunk's focus indices of the ``retrieval`` strategy."""
    from spacy_clinchunk.pipeline import load_pipeline

    nlp = load_pipeline(str(rb.ROOT / "configs" / "retrieval.cfg"))
    chunks, focus, links = [], [], []
    for doc in nlp.pipe(d.text for d in docs):
        chunks.append([(s.start_char, s.end_char) for s in doc.spans["clin_chunks"]])
        focus.append([(s.start_char, s.end_char) for s in doc.spans["clin_focus"]])
        links.append([list(s._.clin_focus_ids) for s in doc.spans["clin_chunks"]])
    return chunks, focus, links


def learned_focus(text: str, chunks: List[Range], focus: List[Range], links: List[List[int]],
                  learned: List[Range], keep_coordination: bool, keep_uncovered: bool = False) -> List[Range]:
    """What clin_concept_focus writes (its own function): learned spans as each chunk's focus, its
    rule focus spans where the model found none (and, kept whole, coordinations beside them;
    with ``keep_uncovered``, also the rule focus spans that overlap no learned span)."""
    coordination = concept_focus_pipe().coordination_re if keep_coordination else None
    return [(s, e) for s, e, _ in combine_focus(text, chunks, focus, links, learned, coordination, keep_uncovered)]


@lru_cache(maxsize=None)
def concept_focus_pipe():
    """The shipped component (English word lists), for its coordination pattern; built once."""
    import spacy

    return spacy.blank("en").add_pipe("clin_concept_focus")


def late_vectors(docs: Sequence[rb.Document], rows: Sequence[rb.Row], embedder) -> List[np.ndarray]:
    """Per row, one vector per chunk: the mean of the token vectors of one document-level pass
    (the bundled MiniLM, long documents in overlapping pieces) whose tokens start inside the
    chunk, normalised; a chunk with no token start inside gets the vector of its text alone."""
    passes = embedder.token_vectors([d.text for d in docs])
    out = []
    for row in rows:
        vectors = []
        for doc, chunks, (offsets, tokens) in zip(docs, row.chunks, passes):
            for start, end in chunks:
                inside = (offsets[:, 0] >= start) & (offsets[:, 0] < end) if len(offsets) else np.zeros(0, bool)
                vector = tokens[inside].mean(axis=0) if inside.any() else embedder.encode([doc.text[start:end]])[0]
                vectors.append(vector / max(float(np.linalg.norm(vector)), 1e-12))
        out.append(np.asarray(vectors, dtype=np.float32).reshape(-1, 384))
    return out


def speed(model: Path, docs: Sequence[rb.Document]) -> Tuple[float, float, float]:
    """Words/s (wall clock), words per CPU-second (every thread counted, so less sensitive to
    other load) and peak RSS (MB) of a fresh process that loads ``model`` and runs it on ``docs``."""
    code = (
        "import json,resource,sys,time,torch,spacy; torch.set_num_threads(2)\n"
        "texts=json.load(sys.stdin); nlp=spacy.load(sys.argv[1]); list(nlp.pipe(texts[:2]))\n"
        "t=time.perf_counter(); c=time.process_time(); list(nlp.pipe(texts))\n"
        "s=time.perf_counter()-t; cpu=time.process_time()-c; w=sum(len(x.split()) for x in texts)\n"
        "print(json.dumps([w/s, w/cpu, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss/1024]))"
    )
    out = subprocess.run([sys.executable, "-c", code, str(model)], input=json.dumps([d.text for d in docs]),
                         capture_output=True, text=True, check=True).stdout
    words_per_s, words_per_cpu_s, rss = json.loads(out.strip().splitlines()[-1])
    return words_per_s, words_per_cpu_s, rss


def print_speeds(models: Sequence[Path], docs: Sequence[rb.Document]) -> int:
    for model in models:
        words_per_s, words_per_cpu_s, rss = speed(model, docs)
        print(f"model {model}: {words_per_s:,.0f} words/s wall, {words_per_cpu_s:,.0f} words per CPU-second "
              f"(one pass, 2 torch threads), peak RSS {rss:,.0f} MB")
    return 0


def late_table(docs: Sequence[rb.Document], rows: List[rb.Row], cache: rb.EmbeddingCache) -> int:
    """The rows with each chunk's text embedded alone, then with late-chunked vectors."""
    results = [(row, rb.measure(row, docs, cache, 5), rb.structure_scores(row, docs)) for row in rows]
    for row, vectors in zip(rows, late_vectors(docs, rows, cache.embedder)):
        late = rb.Row(f"{row.name}, late-chunked vectors", row.chunks)
        results.append((late, rb.measure(late, docs, cache, 5, vectors), rb.structure_scores(late, docs)))
    cache.save()
    print(rb.table(results, 5))
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", type=Path, required=True, help="folder of scripts/train_concept_spans.py")
    parser.add_argument("--thresholds", default="0.2,0.3,0.4,0.5")
    parser.add_argument("--threshold", type=float, default=0.3, help="the learned spans the combinations use (the config's span_finder threshold)")
    parser.add_argument("--speed", type=Path, nargs="+", help="trained model or pipeline folders: their words/s and memory")
    parser.add_argument("--cache", type=Path)
    parser.add_argument("--speed-only", action="store_true", help="with --speed: only the speed lines")
    parser.add_argument("--late", action="store_true", help="only the late-chunked rows (and their plain twins)")
    args = parser.parse_args(argv)
    docs = rb.load_documents(args.run / "test_docs")
    scores: Dict[str, dict] = json.loads((args.run / "scores.json").read_text(encoding="utf-8"))
    cache = rb.EmbeddingCache(args.cache)
    rows = [rb.build_row("punct_conj_cleaned", docs, 1), rb.build_row("retrieval", docs, 1), rb.evidence_row(docs)]
    if args.late:
        return late_table(docs, rows[:2], cache)
    if args.speed_only:
        return print_speeds(args.speed or (), docs)
    for t in (float(x) for x in args.thresholds.split(",")):
        for nearest in (False, True):
            name = f"learned (t={t:.2f}, {'nearest' if nearest else 'all pairs'})"
            rows.append(rb.Row(name, [decode(scores[d.doc_id], t, nearest) for d in docs]))
    learned = [decode(scores[d.doc_id], args.threshold, True) for d in docs]
    chunks, focus, links = rule_groups(docs)
    for keep in (False, True):
        name = f"learned focus (t={args.threshold:.2f}), rules fallback" + (" + coordination whole" if keep else "")
        rows.append(rb.Row(name, [learned_focus(d.text, c, f, k, lr, keep)
                                  for d, c, f, k, lr in zip(docs, chunks, focus, links, learned)]))
    rows.append(rb.Row(f"retrieval [clin_focus] + learned (t={args.threshold:.2f})",
                       [sorted(set(f) | set(lr)) for f, lr in zip(focus, learned)]))
    # round 4 (2026-12-02): whole-concept decoding, and learned spans snapped to the rules' spans
    whole = [decode_whole(scores[d.doc_id], args.threshold) for d in docs]
    rows.append(rb.Row(f"learned (t={args.threshold:.2f}, whole-concept decoding)", whole))
    rows.append(rb.Row(f"learned focus (t={args.threshold:.2f}, whole-concept), rules fallback + coordination whole",
                       [learned_focus(d.text, c, f, k, lr, True)
                        for d, c, f, k, lr in zip(docs, chunks, focus, links, whole)]))
    snapped = [snap_to_rules(lr, f, d.text) for d, f, lr in zip(docs, focus, learned)]
    rows.append(rb.Row(f"learned (t={args.threshold:.2f}, nearest) snapped to rule focus, rules fallback + coordination whole",
                       [learned_focus(d.text, c, f, k, sn, True)
                        for d, c, f, k, sn in zip(docs, chunks, focus, links, snapped)]))
    # round 5 (2026-12-03): the rule focus spans that no learned span overlaps kept too (the
    # concepts the model missed inside a chunk where it found another), and confident spans only
    for t in sorted({args.threshold, 0.4, 0.5}):
        confident = learned if t == args.threshold else [decode(scores[d.doc_id], t, True) for d in docs]
        rows.append(rb.Row(f"learned focus (t={t:.2f}), rules fallback + coordination whole + uncovered rule spans",
                           [learned_focus(d.text, c, f, k, lr, True, True)
                            for d, c, f, k, lr in zip(docs, chunks, focus, links, confident)]))
    rows.append(rb.Row(f"learned focus (t={args.threshold:.2f}, whole-concept), rules fallback + coordination whole + uncovered rule spans",
                       [learned_focus(d.text, c, f, k, lr, True, True)
                        for d, c, f, k, lr in zip(docs, chunks, focus, links, whole)]))
    results = [(row, rb.measure(row, docs, cache, 5), rb.structure_scores(row, docs)) for row in rows]
    cache.save()
    print(f"{len(docs)} test documents, {sum(len(d.annotations) for d in docs)} annotations, "
          f"{sum(len(d.text.split()) for d in docs)} words")
    print(rb.table(results, 5))
    return print_speeds(args.speed or (), docs)


if __name__ == "__main__":
    sys.exit(main())
