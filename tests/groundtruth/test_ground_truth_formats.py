"""Ground truth from any format: unlocated annotations, snippet near-misses, pathological JSON,
brat standoff, BioC JSON/XML, and round trips between them (fixtures written here)."""
import json
import logging

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spacy.training import Example

from spacy_clinchunk.groundtruth.align import document_to_doc
from spacy_clinchunk.groundtruth.formats import load_documents
from spacy_clinchunk.groundtruth.json_format import document_from_record, document_to_record
from spacy_clinchunk.groundtruth.model import AnnotatedDocument, Annotation, AnnotationError, ReadPolicy
from spacy_clinchunk.groundtruth.reader import AnnotatedCorpus, read_annotated
from spacy_clinchunk.groundtruth.bioc import dumps_bioc_json, read_bioc_bytes, to_bioc_xml
from spacy_clinchunk.groundtruth.brat import parse_ann, read_brat, to_ann
from spacy_clinchunk.groundtruth.evaluate import ChunkScorer
from spacy_clinchunk.groundtruth.voronoi import voronoi_block

TEXT = "Decreased vibratory sense in the feet. No seizures. Café-au-lait spots noted."


def span(start, end, snippet=None):
    item = {"start_char": start, "end_char": end}
    item["text_snippet"] = TEXT[start:end] if snippet is None else snippet
    return item


def record(*annotations):
    return {"doc_id": "note1", "full_text": TEXT, "annotations": list(annotations)}


VIBRATION = {"hpo_id": "HP:0002495", "label": "Impaired vibratory sensation", "evidence_spans": [span(0, 25)]}
SEIZURE = {"hpo_id": "HP:0001250", "label": "Seizure", "assertion_status": "negated", "evidence_spans": [span(42, 50)]}
CAFE = {"hpo_id": "HP:0000957", "label": "Cafe-au-lait spot", "evidence_spans": [span(52, 70)]}
UNLOCATED = {"hpo_id": "HP:0001263", "label": "Global developmental delay", "evidence_spans": []}


# -- unlocated annotations ---------------------------------------------------------------
def test_unlocated_annotations_are_kept_on_the_doc_without_territory(blank_nlp):
    doc = read_annotated(record(VIBRATION, UNLOCATED, SEIZURE), blank_nlp)
    assert doc._.clin_unlocated_annotations == [
        {"index": 1, "hpo_id": "HP:0001263", "label": "Global developmental delay", "assertion_status": None, "source_id": None}
    ]
    assert [s.label_ for s in doc.spans["annotations"]] == ["HP:0002495", "HP:0001250"]
    assert [s.id_ for s in doc.spans["voronoi"]] == ["0", "2"]  # indices of the source file
    without = read_annotated(record(VIBRATION, SEIZURE), blank_nlp)
    for key in ("voronoi", "voronoi_0.50"):
        assert [(s.start_char, s.end_char) for s in doc.spans[key]] == [(s.start_char, s.end_char) for s in without.spans[key]]
    block = voronoi_block(record(VIBRATION, UNLOCATED, SEIZURE))
    assert [c["hpo_id"] for c in block["chunks"]] == ["HP:0002495", "HP:0001250"]


def test_unlocated_policies(blank_nlp):
    assert read_annotated(record(UNLOCATED, CAFE), blank_nlp, unlocated="skip")._.clin_unlocated_annotations == []
    document = document_from_record(record(UNLOCATED, CAFE), "x.json", ReadPolicy(unlocated="skip"))
    assert document.counts == {"unlocated": 1} and document.unlocated == []
    with pytest.raises(AnnotationError, match=r"x\.json: 1 unlocated annotation\(s\) \(1\)"):
        document_from_record(record(CAFE, UNLOCATED), "x.json", ReadPolicy(unlocated="error"))
    with pytest.raises(ValueError, match="unlocated must be one of"):
        ReadPolicy(unlocated="maybe")


# -- snippets ------------------------------------------------------------------------------
def test_whitespace_and_case_differences_are_accepted_at_debug_level(blank_nlp, caplog):
    trailing = dict(VIBRATION, evidence_spans=[span(10, 25, "vibratory sense ")])
    upper = dict(SEIZURE, evidence_spans=[span(42, 50, "SEIZURES")])
    with caplog.at_level(logging.DEBUG, logger="spacy_clinchunk"):
        document = document_from_record(record(trailing, upper), "n.json")
    assert [a.spans for a in document.annotations] == [[(10, 25)], [(42, 50)]]
    assert document.counts == {"near_miss": 2} and document.notes == []
    assert caplog.records and all(r.levelno == logging.DEBUG for r in caplog.records)


def test_real_mismatch_follows_the_policy_and_never_costs_other_annotations(blank_nlp, caplog):
    wrong = dict(SEIZURE, evidence_spans=[span(42, 50, "headache")])
    data = record(VIBRATION, wrong, CAFE)
    with caplog.at_level(logging.DEBUG, logger="spacy_clinchunk"):
        kept = document_from_record(data, "n.json")
    assert [a.hpo_id for a in kept.annotations] == ["HP:0002495", "HP:0001250", "HP:0000957"]
    assert kept.notes == ["annotation 1: evidence span 0: text does not match the text at 42-50 "
                          "(8 vs 8 characters, first difference at character 0); annotation kept"]
    above_debug = [r.getMessage() for r in caplog.records if r.levelno > logging.DEBUG]
    assert above_debug and not any("headache" in m or "seizures" in m for m in above_debug)  # no note text
    skipped = document_from_record(data, "n.json", ReadPolicy(snippet_mismatch="skip-annotation"))
    assert [a.hpo_id for a in skipped.annotations] == ["HP:0002495", "HP:0000957"]
    assert skipped.counts == {"mismatch": 1, "skipped_annotations": 1}
    with pytest.raises(AnnotationError, match=r"n\.json: annotation 1: evidence span 0: text does not match"):
        document_from_record(data, "n.json", ReadPolicy(snippet_mismatch="error"))
    doc = read_annotated(data, blank_nlp, snippet_mismatch="skip-annotation")
    assert [s.text for s in doc.spans["annotations"]] == ["Decreased vibratory sense", "Café-au-lait spots"]


def test_every_fault_of_a_file_is_named_in_one_message():
    bad = record(dict(VIBRATION, evidence_spans=[span(0, 500)]), dict(CAFE, hpo_id=""), dict(SEIZURE, evidence_spans=[span(9, 3)]))
    with pytest.raises(AnnotationError) as err:
        document_from_record(bad, "f.json")
    message = str(err.value)
    assert f"annotation 0: evidence span 0: field 'end_char' (500) is beyond the end of the text ({len(TEXT)})" in message
    assert "annotation 1: field 'hpo_id' must be a non-empty string" in message
    assert "annotation 2: evidence span 0: field 'start_char' (9) must be less than 'end_char' (3)" in message


# -- pathological JSON ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "raw,message",
    [
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"full_text": "x", "annotations": [], "doc_id": ' + "9" * 5000 + "}", "invalid JSON"),
        ('{"full_text": "x", "full_text": "y", "annotations": []}', "duplicate key 'full_text'"),
        ('{"full_text": "x", "annotations": [], "n": NaN}', "non-standard constant NaN"),
        ('{"full_text": "x", "annotations": [{"hpo_id": "HP:1", "evidence_spans": [{"start_char": 0, "end_char": 1e999}]}]}', "must be an integer"),
    ],
)
def test_pathological_json_gives_a_file_error(tmp_path, raw, message):
    path = tmp_path / "bad.json"
    path.write_text(raw, encoding="utf-8")
    with pytest.raises(AnnotationError, match=message) as err:
        load_documents(path)
    assert str(path) in str(err.value)


# -- brat ---------------------------------------------------------------------------------------------
BRAT_TEXT = "Patient has short fingers and toes.\r\nNo fever; myopia since 2010.\n"
BRAT_ANN = "\r\n".join(
    [
        "T1\tPhenotype 12 17;30 34\tshort toes",
        "T2\tPhenotype 12 25\tshort fingers",
        "N1\tReference T2 HPO:HP_0009381\tShort finger",
        "N2\tReference T2 UMLS:C0239594\tShort fingers",
        "T3\tDisease 40 45\tfever",
        "A1\tNegation T3",
        "T4\tPhenotype 47 53\tMYOPIA",
        "N3\tReference T4 UMLS:C0027092\tMyopia",
        "A2\tAssertion T4 historical",
        "#1\tAnnotatorNotes T3\tPyrexia",
        "R1\tRelated Arg1:T1 Arg2:T2",
        "",
    ]
)


def write_brat_pair(folder, stem, text, ann, encoding="utf-8"):
    (folder / f"{stem}.txt").write_bytes(text.encode(encoding))
    (folder / f"{stem}.ann").write_bytes(ann.encode("utf-8"))
    return folder / f"{stem}.ann"


def test_brat_discontinuous_attributes_and_normalizations(tmp_path, blank_nlp):
    path = write_brat_pair(tmp_path, "case1", BRAT_TEXT, BRAT_ANN)
    document = read_brat(path)
    assert document.doc_id == "case1" and document.text == BRAT_TEXT
    got = [(a.source_id, a.hpo_id, a.label, a.assertion_status, a.spans) for a in document.annotations]
    assert got == [
        ("T1", "Phenotype", None, None, [(12, 17), (30, 34)]),
        ("T2", "HP:0009381", "Short finger", None, [(12, 25)]),
        ("T3", "Disease", "Pyrexia", "negated", [(40, 45)]),
        ("T4", "UMLS:C0027092", "Myopia", "historical", [(47, 53)]),
    ]
    assert document.counts == {"near_miss": 1}  # "MYOPIA" vs "myopia"
    doc = read_annotated(tmp_path / "case1.txt", blank_nlp)
    assert [s.text for s in doc.spans["annotations"]] == ["short", "short fingers", "toes", "fever", "myopia"]
    assert [s._.clin_assertion for s in doc.spans["annotations"]][3] == "negated"


@pytest.mark.parametrize(
    "ann,message",
    [
        ("T1\tPhenotype 12 x17\tshort\n", "line 1 (T1): malformed fragment '12 x17'"),
        ("T1 Phenotype 12 17 short\n", "line 1: malformed text-bound annotation"),
        ("T1\tPhenotype 12 170\tshort\n", "line 1 (T1): end offset (170) is beyond the end of the text (66)"),
        ("T1\tPhenotype 12 17\tshort\nA1\tNegation T9\n", "line 2: refers to unknown annotation T9"),
        ("T1\tPhenotype 12 17\tshort\nX1\twhat\n", "line 2: unknown annotation kind 'X'"),
        ("T1\tPhenotype 12 17\tshort\nT1\tPhenotype 18 25\tfingers\n", "line 2: annotation id T1 used twice"),
    ],
)
def test_brat_bad_lines_name_file_and_line(tmp_path, ann, message):
    path = write_brat_pair(tmp_path, "bad", BRAT_TEXT, ann)
    with pytest.raises(AnnotationError) as err:
        read_brat(path)
    assert str(path) in str(err.value) and message in str(err.value)


def test_brat_wrong_fragment_text_and_non_utf8_in_a_corpus_run(tmp_path, blank_nlp):
    write_brat_pair(tmp_path, "a_good", BRAT_TEXT, BRAT_ANN)
    write_brat_pair(tmp_path, "b_wrong_text", BRAT_TEXT, "T1\tPhenotype 12 17\tlong\nT2\tPhenotype 40 45\tfever\n")
    write_brat_pair(tmp_path, "c_latin1", "Café: fièvre\n", "T1\tPhenotype 6 12\tfièvre\n", encoding="latin-1")
    write_brat_pair(tmp_path, "d_outside", BRAT_TEXT, "T1\tPhenotype 60 90\tx\n")
    corpus = AnnotatedCorpus(tmp_path, pattern=None, format="brat", snippet_mismatch="skip-annotation")
    examples = list(corpus(blank_nlp))
    assert [eg.reference._.clin_doc_id for eg in examples] == ["a_good", "b_wrong_text"]
    assert [s.text for s in examples[1].reference.spans["annotations"]] == ["fever"]  # the other annotation survives
    outcomes = {r.path.stem: (r.outcome, r.reason) for r in corpus.results}
    assert outcomes["b_wrong_text"][0] == "read"
    assert outcomes["c_latin1"][0] == "error" and "c_latin1.txt: not valid UTF-8" in outcomes["c_latin1"][1]
    assert outcomes["d_outside"][0] == "error" and "line 1 (T1): end offset (90) is beyond" in outcomes["d_outside"][1]
    note = examples[1].reference  # the mismatch note names line and offsets only
    assert note.text == BRAT_TEXT


# -- BioC ---------------------------------------------------------------------------------------
TITLE = "Ataxie cérébelleuse chez l'enfant."
ABSTRACT = "Le patient présente une ataxie et une hypotonie."


def bioc_json(annotations, title_offset=0, abstract_offset=len(TITLE) + 1):
    return {
        "source": "PubTator",
        "documents": [
            {
                "id": "12345",
                "passages": [
                    {"offset": title_offset, "infons": {"type": "title"}, "text": TITLE, "annotations": []},
                    {"offset": abstract_offset, "infons": {"type": "abstract"}, "text": ABSTRACT, "annotations": annotations},
                ],
            }
        ],
    }


def pubtator(ident, offset, length, text, identifier="HP:0001251", **infons):
    return {"id": ident, "infons": {"identifier": identifier, "type": "Phenotype", **infons}, "text": text,
            "locations": [{"offset": offset, "length": length}] if offset is not None else []}


def test_bioc_json_pubtator_passages_and_unlocated(tmp_path):
    start = len(TITLE) + 1 + ABSTRACT.index("ataxie")
    data = bioc_json([pubtator("1", start, 6, "ataxie", assertion_status="affirmed"), pubtator("2", None, 0, "", identifier="HP:0001252")])
    path = tmp_path / "collection.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    [document] = load_documents(path)
    assert document.doc_id == "12345" and document.text == TITLE + " " + ABSTRACT
    assert [(a.hpo_id, a.spans, a.assertion_status) for a in document.annotations] == [("HP:0001251", [(start, start + 6)], "affirmed")]
    assert [a.hpo_id for a in document.unlocated] == ["HP:0001252"]


def test_bioc_byte_offsets_and_passage_relative_offsets_are_detected(tmp_path):
    text = TITLE + " " + ABSTRACT
    char_start = text.index("hypotonie")
    byte_start = len(text[:char_start].encode("utf-8"))
    assert byte_start != char_start  # the title has non-ASCII letters
    as_bytes = bioc_json([pubtator("1", byte_start, 9, "hypotonie")], abstract_offset=len(TITLE.encode()) + 1)
    [document] = read_bioc_bytes(json.dumps(as_bytes).encode(), "bytes.json", ReadPolicy())
    assert document.annotations[0].spans == [(char_start, char_start + 9)]
    assert document.notes == ["offsets read as UTF-8 bytes relative to the document (they do not fit as document characters)"]
    relative = bioc_json([pubtator("1", ABSTRACT.index("hypotonie"), 9, "hypotonie")])
    [document] = read_bioc_bytes(json.dumps(relative).encode(), "rel.json", ReadPolicy())
    assert document.annotations[0].spans == [(char_start, char_start + 9)] and "relative to the passage" in document.notes[0]
    wrong = bioc_json([pubtator("1", 3, 9, "hypotonie"), pubtator("2", char_start, 9, "hypotonie")])
    [document] = read_bioc_bytes(json.dumps(wrong).encode(), "wrong.json", ReadPolicy(snippet_mismatch="skip-annotation"))
    assert [a.source_id for a in document.annotations] == ["2"] and document.counts["mismatch"] == 1


def test_bioc_bad_passages_and_unsafe_xml(tmp_path):
    overlapping = bioc_json([], abstract_offset=5)
    with pytest.raises(AnnotationError, match="passage 1 starts at 5, inside the passage before it"):
        read_bioc_bytes(json.dumps(overlapping).encode(), "p.json", ReadPolicy())
    bomb = (
        '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;">]>'
        "<collection><document><id>1</id><passage><offset>0</offset><text>&lol2;</text></passage></document></collection>"
    )
    with pytest.raises(AnnotationError, match="x.xml: (invalid or unsafe XML|XML with a DTD)"):
        read_bioc_bytes(bomb.encode(), "x.xml", ReadPolicy())
    with pytest.raises(AnnotationError, match="not an annotated document"):
        read_bioc_bytes(b"<html><body/></html>", "h.xml", ReadPolicy())
    deep = "<collection>" + "<a>" * 100_000 + "</a>" * 100_000 + "</collection>"
    assert read_bioc_bytes(deep.encode(), "deep.xml", ReadPolicy()) == []


# -- round trips --------------------------------------------------------------------------------
ALPHABET = st.sampled_from(list("abcdefghij ABC,.;-\n\r\téüß漢"))
IDS = st.sampled_from(["HP:0000001", "HP:0001250", "UMLS:C0000001", "MESH:D000001", "Disease"])
LABELS = st.one_of(st.none(), st.sampled_from(["Seizure", "Café au lait", "Short finger"]))
STATUSES = st.one_of(st.none(), st.sampled_from(["affirmed", "negated", "family", "historical"]))


@st.composite
def documents(draw):
    text = draw(st.text(ALPHABET, min_size=1, max_size=60))
    annotations = []
    for index in range(draw(st.integers(0, 5))):
        spans = []
        for _ in range(draw(st.integers(0, 3))):
            start = draw(st.integers(0, len(text) - 1))
            spans.append((start, draw(st.integers(start + 1, len(text)))))
        annotations.append(Annotation(index, draw(IDS), spans, draw(LABELS), draw(STATUSES)))
    return AnnotatedDocument(
        "doc1", text, "<generated>", [a for a in annotations if a.spans], [a for a in annotations if not a.spans]
    )


def scores_of(document, nlp):
    reference = document_to_doc(document, nlp)
    predicted = reference.copy()
    predicted.spans["clin_chunks"] = [predicted.char_span(s.start_char, s.end_char) for s in reference.spans["voronoi"]]
    return ChunkScorer().score([Example(predicted, reference)])


ROUND_TRIP = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@ROUND_TRIP
@given(documents())
def test_json_brat_json_round_trip_keeps_ground_truth_voronoi_and_scores(blank_nlp, document):
    ann, left_out = to_ann(document)
    assert left_out == len(document.unlocated)
    back = parse_ann(ann, document.text, "doc1.ann", "doc1", ReadPolicy(snippet_mismatch="error"))
    located = AnnotatedDocument(document.doc_id, document.text, "x", document.annotations)
    expected = document_to_record(located)
    assert document_to_record(back) == expected
    via_json = document_from_record(json.loads(json.dumps(document_to_record(document))), "x.json")
    assert json.dumps(voronoi_block(document_to_record(back))) == json.dumps(voronoi_block(document_to_record(via_json)))
    assert scores_of(back, blank_nlp) == scores_of(located, blank_nlp)
    full = scores_of(document, blank_nlp)  # brat cannot hold unlocated annotations; nothing else differs
    assert full.pop("unlocated_annotations") == len(document.unlocated)
    assert full == {k: v for k, v in scores_of(back, blank_nlp).items() if k != "unlocated_annotations"}


@ROUND_TRIP
@given(st.lists(documents(), min_size=1, max_size=3))
def test_bioc_json_and_xml_round_trips_keep_everything(docs):
    for number, document in enumerate(docs):
        document.doc_id = f"d{number}"
    expected = [document_to_record(d) for d in docs]
    for raw in (dumps_bioc_json(docs).encode("utf-8"), to_bioc_xml(docs).encode("utf-8")):
        back = read_bioc_bytes(raw, "c", ReadPolicy(snippet_mismatch="error"))
        assert [document_to_record(d) for d in back] == expected
        assert all(d.notes == [] for d in back)


def test_evidence_span_taking_in_trailing_whitespace_stays_character_exact(blank_nlp):
    spaced = dict(VIBRATION, evidence_spans=[span(10, 26)])  # "vibratory sense " with its space
    doc = read_annotated(record(spaced, SEIZURE), blank_nlp)
    assert [s.text for s in doc.spans["annotations"]] == ["vibratory sense ", "seizures"]
    assert doc.text == TEXT
    for group in doc.spans.values():
        assert all(s.text == TEXT[s.start_char : s.end_char] for s in group)
    plain = read_annotated(record(VIBRATION, SEIZURE), blank_nlp)
    assert [t.text for t in plain] == [t.text for t in blank_nlp.make_doc(TEXT)]  # no rebuild when not needed


def test_brat_offsets_count_a_byte_order_mark_in_the_text(tmp_path):
    path = write_brat_pair(tmp_path, "bom", "\ufeffNo fever.", "\ufeffT1\tPhenotype 4 9\tfever\n")
    document = read_brat(path)
    assert document.text == "\ufeffNo fever." and document.annotations[0].spans == [(4, 9)]
    assert document.counts == {}  # exact match: the BOM is character 0, as brat counts it


def test_registered_corpus_reader_reads_brat_and_bioc_from_config(tmp_path, blank_nlp):
    from spacy.util import registry
    from thinc.api import ConfigValidationError

    write_brat_pair(tmp_path, "case1", BRAT_TEXT, BRAT_ANN)
    config = {"c": {"@readers": "spacy_clinchunk.AnnotatedCorpus.v2", "path": str(tmp_path), "pattern": None, "format": "brat"}}
    [example] = list(registry.resolve(config)["c"](blank_nlp))
    assert example.reference._.clin_doc_id == "case1" and len(example.reference.spans["annotations"]) == 5
    two = {"documents": [{"id": "x", "passages": [{"offset": 0, "text": "a b"}]}, {"id": "y", "passages": [{"offset": 0, "text": "c"}]}]}
    (tmp_path / "two.json").write_text(json.dumps(two), encoding="utf-8")
    assert [eg.reference._.clin_doc_id for eg in AnnotatedCorpus(tmp_path / "two.json")(blank_nlp)] == ["x", "y"]
    with pytest.raises(AnnotationError, match="holds 2 documents"):
        read_annotated(tmp_path / "two.json", blank_nlp)
    config["c"]["format"] = "csv"  # choices are checked with the config, as for spaCy's own readers
    with pytest.raises(ConfigValidationError, match="format"):
        registry.resolve(config)


# -- the shipped sample -------------------------------------------------------------------------
def test_the_shipped_sample_reads_to_the_same_documents_from_json_brat_and_bioc(blank_nlp):
    from conftest import SAMPLE_DIR
    from spacy_clinchunk import attrs

    strict = ReadPolicy(unlocated="error", snippet_mismatch="error")

    def read(paths):
        documents = [d for path in paths for d in load_documents(path, policy=strict)]
        assert all(d.notes == [] and d.counts == {} for d in documents)  # exact snippets, nothing unlocated
        return documents

    from_json = read(sorted((SAMPLE_DIR / "json").glob("*.json")))
    expected = [document_to_record(d) for d in from_json]
    assert len(expected) == 4
    assert all(5 <= len({a["hpo_id"] for a in r["annotations"]}) <= 15 for r in expected)
    statuses = {a["assertion_status"] for r in expected for a in r["annotations"]}
    assert statuses == set(attrs.ASSERTION_LABELS)  # every assertion label has an example
    assert any(len(a["evidence_spans"]) > 1 for r in expected for a in r["annotations"])  # discontinuous
    others = {
        "brat": read(sorted((SAMPLE_DIR / "brat").glob("*.ann"))),
        "bioc-xml": read([SAMPLE_DIR / "bioc" / "notes.xml"]),
        "bioc-json": read([SAMPLE_DIR / "bioc" / "notes.bioc.json"]),
    }
    for name, documents in others.items():
        assert [document_to_record(d) for d in documents] == expected, name

    def as_doc(document):  # tokens, every span group, assertions
        doc = document_to_doc(document, blank_nlp)
        groups = {key: [(s.start_char, s.end_char, s.label_, s.id_) for s in group] for key, group in doc.spans.items()}
        return [t.text for t in doc], groups, [s._.clin_assertion for s in doc.spans["annotations"]]

    for name, documents in others.items():
        for mine, theirs in zip(from_json, documents):
            assert as_doc(mine) == as_doc(theirs), (name, mine.doc_id)
