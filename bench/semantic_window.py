"""Speed and chunk quality of clin_semantic_window, side by side with the seed's way.

Run: ``.venv/bin/python bench/semantic_window.py [--docs N] [--device cpu|cuda]``

Input of the semantic stage is what it gets in the default pipeline: the chunks of
sentencizer -> clin_punct_splitter -> clin_conj_splitter (computed once, not timed).
Rows, in one run with the same model:

* ``baseline``: the seed's way, written here: one ``model.encode`` per segment, then
  pairwise cosines one pair at a time; same split/merge rules as the component;
* ``limit``: one batched encode of exactly the unique windows (pure model compute);
* ``exact`` / ``pooled``: the component (MiniLM), through ``nlp.pipe``;
* ``static`` / ``static-pooled``: the component with the model2vec static embedder.

Quality (integrity, isolation) is computed on the shared GSC+ documents with
``spacy_clinchunk.groundtruth.evaluate`` on the semantic stage's chunks. Peak memory is the peak RSS
of this process during the row (reset between rows through ``/proc/self/clear_refs``).
"""
import argparse
import json
import sys
import time

from common import GSC_DIR, KEY, NOTE  # noqa: E402  (sets the offline environment first)

import numpy as np
import spacy



def reset_peak() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def peak_mb() -> float:
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def load_gsc(limit):
    docs = []
    for path in sorted(GSC_DIR.glob("*.json"))[:limit]:
        data = json.loads(path.read_text(encoding="utf-8"))
        annotations = [[(s["start_char"], s["end_char"]) for s in a["evidence_spans"]] for a in data["annotations"]]
        docs.append((data["full_text"], annotations))
    return docs


def upstream_docs(texts):
    nlp = spacy.blank("en")
    for name in ("sentencizer", "clin_punct_splitter", "clin_conj_splitter"):
        nlp.add_pipe(name)
    return nlp, list(nlp.pipe(texts))


def fresh(docs):
    return [d.copy() for d in docs]


def quality(docs, annotations):
    from spacy_clinchunk.groundtruth.evaluate import Tally, document_tally

    total = Tally()
    for doc, ann in zip(docs, annotations):
        total = total + document_tally(doc.text, [(s.start_char, s.end_char) for s in doc.spans[KEY]], ann)
    scores = total.scores()
    return scores["chunk_integrity"], scores["chunk_isolation"]


def baseline(component, docs):
    """The seed's way: a model.encode per segment, pairwise cosine per pair."""
    from spacy_clinchunk.components.semantic_window import _WORD, _Job
    from spacy_clinchunk.spans import current_ranges, write_group

    model = component.embedder.model
    calls = windows = 0
    for doc in docs:
        text = doc.text
        kept = []
        for start, end in current_ranges(doc, KEY):
            words = [(m.start(), m.end()) for m in _WORD.finditer(text, start, end)]
            job = _Job(0, start, end, words)
            if component._n_windows(len(words)) < 2:
                kept.append((start, end))
                continue
            win_texts = [text[a:b] for a, b in component._window_ranges(job)]
            vectors = model.encode(win_texts, show_progress_bar=False)
            calls += 1
            windows += len(win_texts)
            sims = []
            for i in range(len(vectors) - 1):
                a, b = vectors[i], vectors[i + 1]
                sims.append(float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b))))
            job.sims = np.asarray(sims)
            kept.extend(component._split(text, job))
        write_group(doc, KEY, kept)
    return calls, windows


def unique_windows(component, docs):
    from spacy_clinchunk.components.semantic_window import _WORD, _Job
    from spacy_clinchunk.spans import current_ranges

    seen = {}
    for doc in docs:
        for start, end in current_ranges(doc, KEY):
            words = [(m.start(), m.end()) for m in _WORD.finditer(doc.text, start, end)]
            if component._n_windows(len(words)) >= 2:
                for a, b in component._window_ranges(_Job(0, start, end, words)):
                    seen.setdefault(doc.text[a:b], None)
    return list(seen)


def chunks_of(docs):
    return [[(s.start_char, s.end_char) for s in d.spans[KEY]] for d in docs]


def run_corpus(label, texts, annotations, device, with_quality):
    import torch

    nlp, docs = upstream_docs(texts)
    n_words = sum(len(t.split()) for t in texts)
    st = {"@misc": "spacy_clinchunk.SentenceTransformerEmbedder.v1", "device": device, "batch_size": 64}
    static = {"@misc": "spacy_clinchunk.StaticEmbedder.v1"}
    comps = {
        "exact": nlp.add_pipe("clin_semantic_window", name="exact", config={"embedder": st}),
        "pooled": nlp.add_pipe("clin_semantic_window", name="pooled", config={"embedder": st, "mode": "pooled"}),
        "static": nlp.add_pipe("clin_semantic_window", name="static", config={"embedder": static}),
        "static-pooled": nlp.add_pipe(
            "clin_semantic_window", name="static_pooled", config={"embedder": static, "mode": "pooled"}
        ),
    }
    for comp in comps.values():
        comp.initialize()
    # warm-up (first-call costs are not the method's)
    for comp in comps.values():
        comp.process_batch(fresh(docs[:2]))
    rows = []

    def record(name, seconds, out_docs, extra=""):
        integrity = isolation = None
        if with_quality and out_docs is not None:
            integrity, isolation = quality(out_docs, annotations)
        rows.append([name, seconds, n_words / seconds, peak_mb(), integrity, isolation, extra])

    reset_peak()
    base_docs = fresh(docs)
    t = time.perf_counter()
    calls, n_windows = baseline(comps["exact"], base_docs)
    base_s = time.perf_counter() - t
    record("baseline (per segment)", base_s, base_docs, f"{n_windows} windows, {calls} encode calls")

    windows = unique_windows(comps["exact"], docs)
    model = comps["exact"].embedder.model
    reset_peak()
    t = time.perf_counter()
    with torch.inference_mode():
        model.encode(windows, batch_size=64, show_progress_bar=False)
    limit_s = time.perf_counter() - t
    record("limit (1 encode, unique windows)", limit_s, None, f"{len(windows)} unique windows")

    same = None
    for name, comp in comps.items():
        out = fresh(docs)
        reset_peak()
        t = time.perf_counter()
        comp.process_batch(out)
        seconds = time.perf_counter() - t
        extra = ""
        if name == "exact":
            same = sum(a == b for a, b in zip(chunks_of(out), chunks_of(base_docs)))
            extra = f"same chunks as baseline: {same}/{len(docs)} docs"
        record(name, seconds, out, extra)
    print(f"\n## {label}: {len(texts)} docs, {n_words} words, device {comps['exact'].embedder.model.device}\n")
    print("| row | s | words/s | × baseline | × limit time | peak RSS MB | integrity | isolation | notes |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for name, s, wps, mem, integ, iso, extra in rows:
        fmt = lambda v: "–" if v is None else f"{100 * v:.1f}%"
        print(
            f"| {name} | {s:.2f} | {wps:,.0f} | {base_s / s:.1f} | {s / limit_s:.2f} | {mem:,.0f} | "
            f"{fmt(integ)} | {fmt(iso)} | {extra} |"
        )
    sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=None, help="use the first N GSC+ documents (default all)")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    import torch

    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    if GSC_DIR.is_dir():
        gsc = load_gsc(args.docs)
        run_corpus("GSC+", [t for t, _ in gsc], [a for _, a in gsc], args.device, True)
    if NOTE.is_file():
        run_corpus(f"note {NOTE.name}", [NOTE.read_text(encoding="utf-8")], [[]], args.device, False)


if __name__ == "__main__":
    main()
