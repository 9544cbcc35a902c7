"""The passage-retrieval question set (``bench/data/real_notes/retrieval_questions.jsonl``, written by
``scripts/retrieval_questions.py``) and the measures of ``bench/passage_retrieval.py`` (issue 42).

The schema test needs nothing outside the project; the evidence and rebuild tests read the shared
real notes (``../shared/data/real_notes``) and skip without them.
"""
import importlib.util
import json
import re
import sys

import pytest
from conftest import ROOT, SHARED_DATA

QUESTIONS = ROOT / "bench" / "data" / "real_notes" / "retrieval_questions.jsonl"
NOTES = {"en": "mtsamples_dev.jsonl", "de": "grascco_de_dev.jsonl"}
KIND = re.compile(r"^(concept:(affirmed|negated|normal|uncertain|historical|hypothetical|family)|section:[a-z_]+)$")
needs_notes = pytest.mark.skipif(not (SHARED_DATA / "real_notes").is_dir(),
                                 reason=f"needs the shared real notes {SHARED_DATA / 'real_notes'} (not in a user's clone)")


def _module(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _questions():
    return [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_question_file_schema():
    questions = _questions()
    assert len(questions) >= 200
    assert len({q["id"] for q in questions}) == len(questions)
    for q in questions:
        assert list(q) == ["id", "note", "lang", "kind", "question", "evidence"], q["id"]
        assert q["lang"] in NOTES and KIND.match(q["kind"]), q["id"]
        assert q["question"].endswith("?")
        assert q["evidence"] and all(isinstance(s, int) and isinstance(e, int) and 0 <= s < e for s, e in q["evidence"])
    kinds = {q["kind"].split(":")[0] for q in questions}
    assert kinds == {"concept", "section"}


@needs_notes
def test_evidence_lies_inside_its_note():
    texts = {}
    for name in NOTES.values():
        for line in (SHARED_DATA / "real_notes" / name).read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            texts[row["id"]] = row["text"]
    for q in _questions():
        text = texts[q["note"]]
        for start, end in q["evidence"]:
            assert end <= len(text), q["id"]
            piece = text[start:end]
            assert piece == piece.strip(" \t\r\n,;:") and re.search(r"\w", piece), (q["id"], piece)


@needs_notes
def test_question_file_is_what_the_script_writes():
    script = _module("retrieval_questions", ROOT / "scripts" / "retrieval_questions.py")
    assert script.build() == _questions()


def test_sentence_rule():
    script = _module("retrieval_questions", ROOT / "scripts" / "retrieval_questions.py")
    text = "HISTORY:,  Had a stroke in 2010.,PLAN: , Aspirin. If chest pain, call."
    start = text.index("stroke")
    assert text[slice(*script.sentence_around(text, start, start + 6))] == "Had a stroke in 2010."
    start = text.index("chest pain")
    assert text[slice(*script.sentence_around(text, start, start + 10))] == "If chest pain, call."


def test_token_overlap_measures():
    bench = _module("bench_passage_retrieval", ROOT / "bench" / "passage_retrieval.py")
    text = "aa bb cc dd ee"
    tokens = bench.word_tokens(text)
    assert tokens == [(0, 2), (3, 5), (6, 8), (9, 11), (12, 14)]
    returned = bench.covered(tokens, [(4, 7)])  # partial overlaps count: bb, cc
    evidence = bench.covered(tokens, [(6, 11)])  # cc, dd
    assert returned == {1, 2} and evidence == {2, 3}
    recall, precision, iou = bench.overlap_measures(returned, evidence)
    assert (recall, precision, iou) == (0.5, 0.5, pytest.approx(1 / 3))
    assert bench.covered(tokens, [(2, 3)]) == set()  # whitespace only
    assert bench.overlap_measures(set(), evidence) == (0.0, 0.0, 0.0)
    assert bench.overlap_measures({0, 1, 2, 3}, evidence) == (1.0, 0.5, 0.5)


def test_small_to_big_in_the_concept_bench_returns_blocks_and_counts_tokens():
    """``bench/retrieval.py --parents block``: the top span of a query maps to its section block
    as records find it, the block is what counts as returned, and the tokens handed over are the
    block's (more than the span's)."""
    bench = _module("bench_retrieval", ROOT / "bench" / "retrieval.py")
    text = ("HISTORY: The child has seizures since infancy. She also has feeding problems.\n"
            "EXAM: Small head. Reflexes are brisk in both legs.")
    evidence = text.index("feeding problems")
    docs = [bench.Document("d1", text, [bench.Annotation("Feeding difficulties", [(evidence, evidence + 16)])])]
    bench.PARENTS.update(kind="block", block_tokens=256)
    try:
        row = bench.pipeline_row("default", docs)
        measures = bench.measure(row, docs, bench.EmbeddingCache(), k=1)
    finally:
        bench.PARENTS.clear()
    assert len(row.parents[0]) == len(row.chunks[0])
    for (start, end), (p_start, p_end) in zip(row.chunks[0], row.parents[0]):
        assert p_start <= start and end <= p_end  # each span lies in its block
    assert measures.parent_hits == [[1.0]]
    assert measures.parent_tokens[0][0] > measures.span_tokens[0][0] > 0
    assert measures.largest_parent == measures.parent_tokens[0][0]
