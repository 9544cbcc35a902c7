"""German section headers of real letters (issue 40, round 4): header lines written for these tests,
not copied from letters, and bench/sections.py --split dev reading its annotations."""
import json
import sys
from pathlib import Path

import pytest
import spacy

from spacy_clinchunk.assertion.layout import scan_headers
from spacy_clinchunk.assertion.sections import SectionTable, section_data

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def german():
    vocab = spacy.blank("de").vocab
    return SectionTable(section_data("de")), lambda word: vocab[word].is_stop


def opening(text, table_and_stop):
    table, is_stop = table_and_stop
    return [(text[h.start:h.label_end], h.name) for h in scan_headers(text, table, is_stop) if h.opens]


@pytest.mark.parametrize("text,label,name", [
    # the head of a compound or of a noun phrase names the section
    ("Nierensonographie:\nkein Harnstau.", "Nierensonographie", "imaging"),
    ("Neurologischer Befund:\nkeine Paresen.", "Neurologischer Befund", "physical_exam"),
    ("Kardiologisches Konsil vom 02.03.2031:\nkeine Intervention.", "Kardiologisches Konsil vom 02.03.2031", "findings"),
    ("Stress-Echokardiographie:\nnormale Pumpfunktion.", "Stress-Echokardiographie", "imaging"),
    ("Abdomenübersicht im Liegen:\nkeine freie Luft.", "Abdomenübersicht im Liegen", "imaging"),
    ("Urinbefunde:\nunauffällig.", "Urinbefunde", "findings"),
    ("Vorstellungsgrund:\nDyspnoe.", "Vorstellungsgrund", "chief_complaint"),
    # a cut-short word, a bracket, a comma between two headers
    ("Körperl. Untersuchung: wach, orientiert.", "Körperl. Untersuchung", "physical_exam"),
    ("Beurteilung u. Procedere: Kontrolle in 3 Monaten.", "Beurteilung u. Procedere", "observation_and_plan"),
    ("Entlassmedikation (Stand 3.4.):\nASS 100 1-0-0", "Entlassmedikation (Stand 3.4.)", "medications"),
    ("Vorerkrankungen, Voroperationen: Asthma.", "Vorerkrankungen, Voroperationen", "past_medical_history"),
    # no space after the colon, for a known or a dated label
    ("Laborwerte:Hb 12 g/dl.", "Laborwerte", "labs"),
    ("Gerinnung vom 04.05.2030:Quick 90 %.", "Gerinnung vom 04.05.2030", "labs"),
    # a header on its own line with what qualifies it, or a report's title without a colon
    ("Nebendiagnosen (ICD-10)\nAsthma", "Nebendiagnosen (ICD-10)", "diagnoses"),
    ("- Labor bei Entlassung 12.6.2031\nCRP 3 mg/l", "Labor bei Entlassung 12.6.2031", "labs"),
    ("Sonographischer Befund vom 12.03.2030\nLeber unauffällig.", "Sonographischer Befund vom 12.03.2030", "physical_exam"),
    ("MRT Kopf mit KM\nkeine Raumforderung.", "MRT Kopf mit KM", "imaging"),
])
def test_german_header_lines(german, text, label, name):
    assert (label, name) in opening(text, german)


@pytest.mark.parametrize("text,label", [
    ("Zeit:12 Uhr", "Zeit"),  # an unknown label needs the space after its colon
    ("Patient wach, Orientiert: ja", "Patient wach, Orientiert"),  # a comma joins known headers only
    ("Befund unauffällig\nweiter so.", "Befund unauffällig"),  # a line that is no title
    ("Patient stabil. Procedere: Kontrolle.", "Patient stabil. Procedere"),  # a sentence's end is no cut-short word
])
def test_german_lines_that_open_no_section(german, text, label):
    assert label not in [found for found, _ in opening(text, german)]


def test_a_letters_head_opens_no_section(german):
    text = "Klinikvorstand: Prof. Dr. A. Muster\nBetreff: Frau B., geb. 1.2.1950\n\nDiagnosen:\nAsthma\n\nTelefonat: Tochter informiert."
    assert opening(text, german) == [("Diagnosen", "diagnoses"), ("Telefonat", None)]


def test_english_table_has_no_heads():
    """Heads are German data: English headers are looked up whole, as before."""
    table = SectionTable(section_data("en"))
    assert not table.by_head
    assert table.lookup("Renal ultrasound") == (None, None)


def test_sections_bench_reads_the_dev_headers():
    sys.path.insert(0, str(ROOT / "bench"))
    import sections  # noqa: E402

    assert sections.headers_path("dev").name == "headers_dev.jsonl"
    gold = sections.read_headers("dev")
    rows = [row for rows in gold.values() for row in rows]
    assert len(gold) == 20 and all(note.startswith("grascco-") for note in gold)
    assert all(set(row) == {"note", "start", "end", "text", "category"} for row in rows)
    import real_notes  # noqa: E402

    if not real_notes.notes_path("de").is_file():
        pytest.skip("the shared German letters are not here")
    notes = real_notes.read_notes("de")
    assert all(notes[row["note"]][row["start"]:row["end"]] == row["text"] for row in rows)
    parsed = json.loads(json.dumps(sorted(rows, key=lambda r: (r["note"], r["start"]))))
    assert parsed == sorted(rows, key=lambda r: (r["note"], r["start"]))
