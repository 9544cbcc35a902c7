"""Write the passage-retrieval question set of the annotated real notes (issue 42, "Passage retrieval").

    .venv/bin/python scripts/retrieval_questions.py [--out bench/data/real_notes/retrieval_questions.jsonl]

Deterministic: the same annotation files give the same questions, in the same order. The notes are
read in place from the shared data (``../shared/data/real_notes``; ``CLINCHUNK_SHARED_DATA`` points
elsewhere); only offsets, the concept text the annotations already hold and the questions are written.

One question a line: ``id``, ``note``, ``lang``, ``kind``, ``question``, ``evidence`` (a list of
``[start, end)`` character offsets into the note). Two kinds of question (``docs/retrieval.md``):

* ``concept:<status>``: from the concept annotations (``<lang>_{dev,test}.jsonl``; development notes
  added after round 4 of issue 40 are left out, so the set stays the one measured), a template per
  status filled with the concept's text ("Is there a family history of type II diabetes?"). The
  evidence is the concept's *sentence* by :func:`sentence_around`, a rule independent of our
  chunker: a sentence ends after ``. ! ?`` followed by whitespace or a comma (the flattened line
  break of the English notes), after a line break, and after the ``:,`` of a flattened header. Per note, at most :data:`PER_STATUS` concepts of each status
  (the first in the note whose text is new in that note and has at least 3 letters).
* ``section:<category>``: from the annotated section headers (``headers_test.jsonl``), a template
  per header category ("What is the patient's family history?"); the evidence is the body of every
  section of that category in the note: from the end of its header to the start of the next
  annotated header (or the note's end), less the separators and whitespace at either end.
  Category ``other`` gives no question.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

from spacy_clinchunk.export.blocks import trim

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("CLINCHUNK_SHARED_DATA") or ROOT.parent / "shared" / "data")
DATA_DIR = ROOT / "bench" / "data" / "real_notes"
OUT = DATA_DIR / "retrieval_questions.jsonl"
NOTE_FILES = {"en": "mtsamples_dev.jsonl", "de": "grascco_de_dev.jsonl"}
CONCEPT_SPLITS = ("dev", "test")
LAST_ROUND = 4  # the annotation round of issue 40 whose notes the question set was built from
PER_STATUS = 1  # concepts of one status asked about per note

CONCEPT_TEMPLATES = {
    "en": {
        "affirmed": "Does the patient have {x}?",
        "negated": "Was {x} ruled out?",
        "normal": "What did the examination show about {x}?",
        "historical": "Does the patient have a history of {x}?",
        "hypothetical": "What was planned or discussed in case of {x}?",
        "uncertain": "Is {x} suspected?",
        "family": "Is there a family history of {x}?",
    },
    "de": {
        "affirmed": "Hat der Patient {x}?",
        "negated": "Wurde {x} ausgeschlossen?",
        "normal": "Was ergab die Untersuchung zu {x}?",
        "historical": "Ist {x} aus der Vorgeschichte bekannt?",
        "hypothetical": "Was ist für den Fall {x} vorgesehen?",
        "uncertain": "Besteht der Verdacht auf {x}?",
        "family": "Ist {x} in der Familie bekannt?",
    },
}
SECTION_TEMPLATES = {
    "en": {
        "diagnoses": "What are the diagnoses?",
        "procedures": "Which procedures were performed?",
        "findings": "What were the findings?",
        "imaging": "What did the imaging show?",
        "history_of_present_illness": "What is the history of the present illness?",
        "observation_and_plan": "What is the assessment and plan?",
        "medications": "Which medications does the patient take?",
        "physical_exam": "What did the physical examination show?",
        "hospital_course": "How was the hospital course?",
        "past_medical_history": "What is the patient's past medical history?",
        "indications": "What was the indication?",
        "allergies": "Does the patient have any allergies?",
        "social_history": "What is the patient's social history?",
        "labs": "What were the laboratory results?",
        "past_surgical_history": "Which operations has the patient had before?",
        "family_history": "What is the patient's family history?",
        "review_of_systems": "What did the review of systems show?",
        "complications": "Were there any complications?",
        "chief_complaint": "What is the chief complaint?",
    },
    "de": {
        "diagnoses": "Welche Diagnosen wurden gestellt?",
        "procedures": "Welche Eingriffe wurden durchgeführt?",
        "findings": "Welche Befunde wurden erhoben?",
        "imaging": "Was zeigte die Bildgebung?",
        "history_of_present_illness": "Wie ist die Anamnese der aktuellen Erkrankung?",
        "observation_and_plan": "Wie ist die Beurteilung und das weitere Vorgehen?",
        "medications": "Welche Medikamente nimmt der Patient?",
        "physical_exam": "Was ergab die körperliche Untersuchung?",
        "hospital_course": "Wie war der stationäre Verlauf?",
        "past_medical_history": "Welche Vorerkrankungen hat der Patient?",
        "indications": "Was war die Indikation?",
        "allergies": "Hat der Patient Allergien?",
        "social_history": "Wie ist die Sozialanamnese?",
        "labs": "Wie waren die Laborwerte?",
        "past_surgical_history": "Welche Voroperationen hatte der Patient?",
        "family_history": "Wie ist die Familienanamnese?",
        "review_of_systems": "Was ergab die Systemanamnese?",
        "complications": "Gab es Komplikationen?",
        "chief_complaint": "Was ist die Hauptbeschwerde?",
    },
}
# a sentence ends after . ! ? before whitespace or a comma (a flattened line break), after a line
# break, after the ":," of a flattened header
BOUNDARY = re.compile(r"[.!?](?=[\s,]|$)|\n|:\s*,")
EDGE = " \t\r\n,;:"
Range = Tuple[int, int]


def read_jsonl(path: Path) -> List[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def read_notes(lang: str) -> Dict[str, str]:
    return {row["id"]: row["text"] for row in read_jsonl(SHARED / "real_notes" / NOTE_FILES[lang])}


def sentence_around(text: str, start: int, end: int) -> Range:
    """The sentence that holds ``text[start:end]`` (every sentence it touches), trimmed."""
    left, right = 0, len(text)
    for match in BOUNDARY.finditer(text):
        if match.end() <= start:
            left = match.end()
        elif match.start() >= end:
            right = match.end() if text[match.start()] in ".!?" else match.start()
            break
    return trim(text, left, right, EDGE)


def letters(text: str) -> int:
    return sum(ch.isalpha() for ch in text)


def later_notes(lang: str) -> set:
    """Development notes added after :data:`LAST_ROUND` (``splits.json``'s ``dev_added``): the set
    stays the one the retrieval figures were measured on, whatever later rounds of issue 40 annotate."""
    added = json.loads((DATA_DIR / "splits.json").read_text(encoding="utf-8"))[lang].get("dev_added", {})
    return {note for key, ids in added.items() if int(re.match(r"\d+", key).group()) > LAST_ROUND for note in ids}


def concept_questions(lang: str, notes: Dict[str, str]) -> List[dict]:
    later = later_notes(lang)
    rows = [
        r for split in CONCEPT_SPLITS for r in read_jsonl(DATA_DIR / f"{lang}_{split}.jsonl")
        if "status" in r and r["note"] not in later
    ]
    grouped: Dict[str, List[dict]] = defaultdict(list)
    for row in rows:
        grouped[row["note"]].append(row)
    questions = []
    for note in sorted(grouped):
        text = notes[note]
        asked: Dict[str, int] = defaultdict(int)
        seen = set()
        for row in sorted(grouped[note], key=lambda r: (r["start"], r["end"])):
            status, name = row["status"], " ".join(row["text"].split())
            if asked[status] >= PER_STATUS or name.lower() in seen or letters(name) < 3:
                continue
            seen.add(name.lower())
            asked[status] += 1
            questions.append({
                "note": note, "lang": lang, "kind": f"concept:{status}",
                "question": CONCEPT_TEMPLATES[lang][status].format(x=name),
                "evidence": [list(sentence_around(text, row["start"], row["end"]))],
            })
    return questions


def section_questions(notes: Dict[str, Dict[str, str]]) -> List[dict]:
    headers: Dict[str, List[dict]] = defaultdict(list)
    for row in read_jsonl(DATA_DIR / "headers_test.jsonl"):
        headers[row["note"]].append(row)
    questions = []
    for note in sorted(headers):
        lang = next(code for code, texts in notes.items() if note in texts)
        text = notes[lang][note]
        marks = sorted(headers[note], key=lambda r: r["start"])
        bodies: Dict[str, List[Range]] = defaultdict(list)
        for i, mark in enumerate(marks):
            stop = marks[i + 1]["start"] if i + 1 < len(marks) else len(text)
            body = trim(text, mark["end"], stop, EDGE)
            if mark["category"] in SECTION_TEMPLATES[lang] and re.search(r"\w", text[body[0]:body[1]]):
                bodies[mark["category"]].append(body)
        for category in sorted(bodies, key=lambda c: bodies[c][0]):
            questions.append({
                "note": note, "lang": lang, "kind": f"section:{category}",
                "question": SECTION_TEMPLATES[lang][category],
                "evidence": [list(span) for span in bodies[category]],
            })
    return questions


def build(langs: Sequence[str] = ("en", "de")) -> List[dict]:
    notes = {lang: read_notes(lang) for lang in ("en", "de")}
    questions = [q for lang in langs for q in concept_questions(lang, notes[lang])] + section_questions(
        {lang: notes[lang] for lang in langs})
    for i, question in enumerate(questions):
        question["id"] = f"q{i:04d}"
    return [{key: q[key] for key in ("id", "note", "lang", "kind", "question", "evidence")} for q in questions]


def main(argv: Sequence[str] = ()) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv or None)
    questions = build()
    with open(args.out, "w", encoding="utf-8") as handle:
        for question in questions:
            handle.write(json.dumps(question, ensure_ascii=False) + "\n")
    kinds: Dict[str, int] = defaultdict(int)
    for question in questions:
        kinds[f"{question['lang']} {question['kind'].split(':')[0]}"] += 1
    print(f"{len(questions)} questions -> {args.out}: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
