"""Reading annotated documents into spaCy: span groups, extensions, alignment, validation, corpus reader."""
import json
import shutil

import pytest
import spacy
from spacy.tokens import DocBin
from spacy.util import registry
from thinc.api import ConfigValidationError

from conftest import GSC_DIR, SAMPLE_JSON, requires_shared_data
from spacy_clinchunk.groundtruth.model import AnnotationError
from spacy_clinchunk.groundtruth.reader import read_annotated
from spacy_clinchunk.groundtruth.voronoi import OverlapError

TEXT = "The affected families are described. Brachydactyly type A-1 (BDA-1) and hypoplastic nails."


def record(**changes):
    data = {
        "doc_id": "toy",
        "full_text": TEXT,
        "annotations": [
            {
                "hpo_id": "HP:0001056",
                "label": "Milia",
                "assertion_status": "affirmed",
                "evidence_spans": [{"start_char": 15, "end_char": 20, "text_snippet": "milie"}],
            },
            {
                "hpo_id": "HP:0009371",
                "label": "Type A1 brachydactyly",
                "assertion_status": "negated",
                "evidence_spans": [
                    {"start_char": 37, "end_char": 59, "text_snippet": "Brachydactyly type A-1"},
                    {"start_char": 61, "end_char": 66, "text_snippet": "BDA-1"},
                ],
            },
            {
                "hpo_id": "HP:0001792",
                "label": "Small nail",
                "evidence_spans": [{"start_char": 72, "end_char": 89, "text_snippet": "hypoplastic nails"}],
            },
            {
                "hpo_id": "HP:0001231",
                "label": "Abnormal nail",
                "evidence_spans": [{"start_char": 84, "end_char": 89, "text_snippet": "nails"}],
            },
        ],
    }
    data.update(changes)
    return data


def test_read_annotated_from_dict_string_and_path(blank_nlp, tmp_path):
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(record()), encoding="utf-8")
    docs = [read_annotated(record(), blank_nlp), read_annotated(json.dumps(record()), blank_nlp), read_annotated(path, blank_nlp)]
    docs.append(read_annotated(str(path), blank_nlp))
    for doc in docs:
        assert doc.text == TEXT and doc._.clin_doc_id == "toy"
        spans = doc.spans["annotations"]
        assert [s.text for s in spans] == ["milie", "Brachydactyly type A-1", "BDA-1", "hypoplastic nails", "nails"]
        assert [s._.clin_annotation_index for s in spans] == [0, 1, 1, 2, 3]
        assert [s._.clin_hpo_id for s in spans] == ["HP:0001056", "HP:0009371", "HP:0009371", "HP:0001792", "HP:0001231"]
        assert spans[1]._.clin_hpo_label == "Type A1 brachydactyly"
        assert spans[1]._.clin_assertion == "negated" and spans[3]._.clin_assertion == "affirmed"
        assert {"voronoi", "voronoi_0.00", "voronoi_0.50", "voronoi_1.00"} <= set(doc.spans)


def test_spans_that_cut_tokens_are_kept_character_exact(blank_nlp):
    plain = blank_nlp.make_doc(TEXT)
    assert plain.char_span(15, 20) is None  # the tokenizer alone would lose "milie"
    doc = read_annotated(record(), blank_nlp)
    milie = doc.spans["annotations"][0]
    assert (milie.start_char, milie.end_char, milie.text) == (15, 20, "milie")
    assert [t.text for t in doc[milie.start - 1 : milie.end + 1]] == ["fa", "milie", "s"]
    assert doc.text == TEXT and "".join(t.text_with_ws for t in doc) == TEXT
    for key, group in doc.spans.items():
        for span in group:
            assert span.text == doc.text[span.start_char : span.end_char], key
        assert [(s.start_char, s.end_char) for s in group] == sorted((s.start_char, s.end_char) for s in group)


def test_voronoi_groups_name_their_annotation(blank_nlp):
    doc = read_annotated(record(), blank_nlp, expansion_ratios=[0.0, 0.25])
    assert set(doc.spans) == {"annotations", "voronoi", "voronoi_0.00", "voronoi_0.25"}
    zero = doc.spans["voronoi_0.00"]
    assert [(s.text, s.id_, s.label_) for s in zero][0] == ("families", "0", "HP:0001056")
    # the two BDA spans (2 characters apart, no word between) form one part
    assert ("Brachydactyly type A-1 (BDA-1", "1") in [(s.text, s.id_) for s in zero]
    # overlapping annotations share a territory
    territories = {s.id_: (s.start_char, s.end_char) for s in doc.spans["voronoi"]}
    assert territories["2"] == territories["3"]
    assert read_annotated(record(), blank_nlp, expansion_ratios=None).spans.keys() == {"annotations"}


def test_overlap_policies_when_reading(blank_nlp):
    with pytest.raises(OverlapError, match="annotation 2 overlaps with annotation 3"):
        read_annotated(record(), blank_nlp, on_overlap="error")
    doc = read_annotated(record(), blank_nlp, on_overlap="skip")
    assert set(doc.spans) == {"annotations"}


def test_docbin_round_trip_keeps_extensions(blank_nlp):
    doc = read_annotated(record(), blank_nlp)
    restored = list(DocBin(docs=[doc], store_user_data=True).get_docs(blank_nlp.vocab))[0]
    assert [(s.text, s._.clin_hpo_id, s._.clin_annotation_index) for s in restored.spans["annotations"]] == [
        (s.text, s._.clin_hpo_id, s._.clin_annotation_index) for s in doc.spans["annotations"]
    ]


def broken(mutate):
    data = record()
    mutate(data)
    return data


@pytest.mark.parametrize(
    "mutate,message",
    [
        (lambda d: d.pop("full_text"), "missing field 'full_text'"),
        (lambda d: d.pop("annotations"), "missing field 'annotations'"),
        (lambda d: d["annotations"][1].pop("hpo_id"), "annotation 1: missing field 'hpo_id'"),
        (lambda d: d["annotations"][2].pop("evidence_spans"), "annotation 2: missing field 'evidence_spans'"),
        (lambda d: d["annotations"][1]["evidence_spans"][1].pop("end_char"), "annotation 1: evidence span 1: missing field 'end_char'"),
        (lambda d: d["annotations"][0]["evidence_spans"][0].update(start_char=20), "annotation 0: evidence span 0: field 'start_char' (20) must be less than 'end_char' (20)"),
        (lambda d: d["annotations"][0]["evidence_spans"][0].update(start_char=-1), "annotation 0: evidence span 0: field 'start_char' is negative"),
        (lambda d: d["annotations"][3]["evidence_spans"][0].update(end_char=500), "annotation 3: evidence span 0: field 'end_char' (500) is beyond the end"),
        (lambda d: d["annotations"][0]["evidence_spans"][0].update(start_char="15"), "field 'start_char' must be an integer"),
        (lambda d: d["annotations"][0].update(assertion_status="maybe"), "annotation 0: field 'assertion_status'"),
        (lambda d: d["annotations"][0].update(evidence_spans={}), "annotation 0: field 'evidence_spans' must be a list"),
        (lambda d: d["annotations"][0].update(hpo_id=""), "annotation 0: field 'hpo_id' must be a non-empty string"),
    ],
)
def test_validation_errors_name_file_annotation_and_field(blank_nlp, tmp_path, mutate, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(broken(mutate)), encoding="utf-8")
    with pytest.raises(AnnotationError) as err:
        read_annotated(path, blank_nlp)
    assert str(path) in str(err.value) and message in str(err.value)


def test_unreadable_files(blank_nlp, tmp_path):
    latin1 = tmp_path / "latin1.json"
    latin1.write_bytes(json.dumps(record(full_text="café")).replace("caf\\u00e9", "café").encode("latin-1"))
    with pytest.raises(AnnotationError, match=r"latin1\.json: not valid UTF-8"):
        read_annotated(latin1, blank_nlp)
    truncated = tmp_path / "truncated.json"
    truncated.write_text(json.dumps(record())[:50], encoding="utf-8")
    with pytest.raises(AnnotationError, match=r"truncated\.json: invalid JSON: .*line 1"):
        read_annotated(truncated, blank_nlp)
    with pytest.raises(AnnotationError, match="missing.json: cannot read"):
        read_annotated(tmp_path / "missing.json", blank_nlp)
    not_an_object = tmp_path / "list.json"
    not_an_object.write_text("[]", encoding="utf-8")
    with pytest.raises(AnnotationError, match=r"list\.json: expected a JSON object"):
        read_annotated(not_an_object, blank_nlp)


def test_top_level_import():
    import spacy_clinchunk

    assert spacy_clinchunk.read_annotated is read_annotated


def test_registered_corpus_reader_yields_examples(tmp_path):
    names = sorted(p.name for p in SAMPLE_JSON.glob("*.json"))
    for name in names[1:]:
        shutil.copy(SAMPLE_JSON / name, tmp_path / name)
    (tmp_path / "nested").mkdir()
    shutil.copy(SAMPLE_JSON / names[0], tmp_path / "nested" / names[0])
    config = {"corpus": {"@readers": "spacy_clinchunk.AnnotatedCorpus.v1", "path": str(tmp_path), "pattern": "**/*.json"}}
    reader = registry.resolve(config)["corpus"]
    nlp = spacy.blank("en")
    examples = list(reader(nlp))
    assert len(examples) == 4
    for example in examples:
        assert example.predicted.text == example.reference.text
        assert len(example.predicted.spans) == 0 and "voronoi_0.50" in example.reference.spans
    config["corpus"]["pattern"] = "*.json"
    config["corpus"]["on_overlap"] = "skip"
    skipped = list(registry.resolve(config)["corpus"](nlp))
    # the genetics letter has overlapping annotations ("generalized hypotonia" / "hypotonia"): skipped
    assert [eg.reference._.clin_doc_id for eg in skipped] == ["discharge_cardiology", "emergency_neurology_note"]
    config["corpus"]["on_overlap"] = "sometimes"
    with pytest.raises(ConfigValidationError):
        registry.resolve(config)


@pytest.mark.parametrize("folder,documents,evidence_spans", [
    pytest.param(SAMPLE_JSON, 4, 62, id="sample"),
    pytest.param(GSC_DIR, 228, 2073, id="shared", marks=requires_shared_data()),
])
def test_every_document_reads_exactly(blank_nlp, folder, documents, evidence_spans):
    files = sorted(folder.glob("*.json"))
    assert len(files) == documents
    spans = 0
    for file in files:
        data = json.loads(file.read_text(encoding="utf-8"))
        doc = read_annotated(file, blank_nlp)
        expected = sorted(
            (s["start_char"], s["end_char"], s["text_snippet"]) for a in data["annotations"] for s in a["evidence_spans"]
        )
        assert [(s.start_char, s.end_char, s.text) for s in doc.spans["annotations"]] == expected
        spans += len(expected)
        assert len(doc.spans["voronoi_0.50"]) >= len(data["annotations"])
    assert spans == evidence_spans
