"""One record model for every span group: stable ids, every field, JSONL / Parquet / HF datasets, CLI."""
import json
import os
import stat

import pytest
import spacy
from spacy.tokens import Span

from spacy_clinchunk.attrs import register_extensions
from spacy_clinchunk.cli import main
from spacy_clinchunk.pipeline import load_pipeline as load_nlp
from spacy_clinchunk.export.records import (
    RECORD_FIELDS,
    RecordError,
    chunk_records,
    doc_to_record,
    document_id,
    to_arrow,
    to_dataset,
)
from spacy_clinchunk.export.writers import RECORD_FORMATS, write_records

NOTE = (
    "HISTORY:\nThe patient reports chest pain since this morning. She denies fever or chills.\n"
    "FAMILY HISTORY:\nHer mother had breast cancer.\n"
    "PLAN:\nRule out pneumonia. Aspirin 81 mg daily.\n"
)


@pytest.fixture(scope="module")
def nlp(assertion_nlp):
    return assertion_nlp


def _doc(nlp, text=NOTE, doc_id="a/note.txt", source="notes/a/note.txt"):
    register_extensions()
    doc = nlp.make_doc(text)
    doc._.clin_doc_id = doc_id
    doc._.clin_source = source
    return nlp(doc)


def with_meta(records, meta=None):
    """What the writers write: the record model plus the input's own fields (``meta``)."""
    return [{**record, "meta": meta} for record in records]


def test_records_carry_offsets_ids_source_and_assertion(nlp):
    doc = _doc(nlp)
    records = chunk_records(doc)
    assert len(records) == len(doc.spans["clin_chunks"]) > 3
    for i, record in enumerate(records):
        assert list(record) == list(RECORD_FIELDS)
        assert record["text"] == NOTE[record["start"] : record["end"]]
        assert record["id"] == f"a/note.txt:{record['start']}-{record['end']}"
        assert (record["doc_id"], record["source"], record["index"]) == ("a/note.txt", "notes/a/note.txt", i)
        assert record["assertion"] in {"affirmed", "negated", "family", "uncertain", "historical", "hypothetical", "normal"}
    by_text = {r["text"]: r for r in records}
    fever = next(r for t, r in by_text.items() if "fever" in t)
    assert fever["assertion"] == "negated"
    assert [c["text"].lower() for c in fever["assertion_cues"]] == ["denies"]
    assert json.loads(json.dumps(records)) == records  # plain JSON values only


def test_ids_are_stable_across_runs_and_unique_per_input(nlp):
    first = [r["id"] for r in chunk_records(_doc(nlp))]
    again = [r["id"] for r in chunk_records(_doc(load_nlp("assertion")))]
    assert first == again and len(set(first)) == len(first)
    other = [r["id"] for r in chunk_records(_doc(nlp, doc_id="b/note.txt"))]
    assert not set(first) & set(other)


def test_doc_without_id_gets_a_stable_hash_id():
    nlp = spacy.blank("en")
    register_extensions()
    a, b, c = nlp("Same text."), nlp("Same text."), nlp("Other text.")
    for doc in (a, b, c):
        doc.spans["clin_chunks"] = [doc[0:2]]
    assert document_id(a) == document_id(b) != document_id(c)
    assert document_id(a).startswith("doc-")
    assert chunk_records(a)[0]["id"] == f"{document_id(a)}:0-9"


def test_unassessed_empty_missing_and_duplicate_spans():
    nlp = spacy.blank("en")
    register_extensions()
    doc = nlp("No fever today.")
    doc.spans["clin_chunks"] = [doc[0:2], doc[0:2]]
    doc.spans["empty"] = []
    records = chunk_records(doc)
    assert [r["id"] for r in records] == [f"{document_id(doc)}:0-8", f"{document_id(doc)}:0-8#1"]
    assert records[0]["assertion"] is None and records[0]["assertion_cues"] == [] and records[0]["attributes"] == {}
    assert chunk_records(doc, "empty") == []
    with pytest.raises(RecordError, match=r"no span group 'clin_rag_chunks' \(groups: clin_chunks, empty\)"):
        chunk_records(doc, "clin_rag_chunks")


def test_other_attributes_are_kept_and_unserializable_ones_rejected(tmp_path):
    nlp = spacy.blank("en")
    register_extensions()
    doc = nlp("Seizures noted.")
    span = Span(doc, 0, 1, label="HP")
    span._.clin_hpo_id = "HP:0001250"
    doc.spans["annotations"] = [span]
    record = chunk_records(doc, "annotations")[0]
    assert record["label"] == "HP" and record["attributes"] == {"hpo_id": "HP:0001250"}
    span = doc.spans["annotations"][0]
    span._.clin_hpo_label = {2, 1}  # a set: a sorted list in records
    assert chunk_records(doc, "annotations")[0]["attributes"]["hpo_label"] == [1, 2]
    span._.clin_hpo_label = object()  # nothing JSON can hold: one clear line naming the field
    with pytest.raises(RecordError, match=r"field 'attributes' is not JSON-serializable"):
        write_records([doc], "records", tmp_path / "out.jsonl", "annotations")


def test_jsonl_parquet_and_dataset_hold_the_same_records(nlp, tmp_path):
    import pyarrow.parquet as pq

    datasets = pytest.importorskip("datasets")
    docs = [_doc(nlp), _doc(nlp, text="No cough. Mild headache.", doc_id="b/note.txt")]
    expected = [r for d in docs for r in chunk_records(d) if not r["is_header"]]  # files leave headers out
    assert set(RECORD_FORMATS) == {"records", "parquet", "hf", "chroma"}
    for fmt, name in (("records", "out.jsonl"), ("parquet", "out.parquet"), ("hf", "out_ds")):
        assert write_records(docs, fmt, tmp_path / name) == len(expected)
    lines = (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == with_meta(expected)  # no input fields: meta null
    rows = pq.read_table(tmp_path / "out.parquet").to_pylist()
    from_disk = datasets.load_from_disk(str(tmp_path / "out_ds")).to_list()
    assert rows == from_disk == with_meta(to_arrow(expected).to_pylist()) == with_meta(to_dataset(docs).to_list())
    assert [(r["id"], r["text"], r["assertion"]) for r in rows] == [(r["id"], r["text"], r["assertion"]) for r in expected]
    negated = next(r for r in rows if r["assertion"] == "negated")
    assert negated["assertion_cues"][0]["start_char"] >= 0
    for path in (tmp_path / "out.jsonl", tmp_path / "out.parquet", *(tmp_path / "out_ds").iterdir()):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path


def test_empty_input_gives_empty_files_with_the_schema(tmp_path):
    import pyarrow.parquet as pq

    assert write_records([], "parquet", tmp_path / "empty.parquet") == 0
    table = pq.read_table(tmp_path / "empty.parquet")
    assert table.num_rows == 0 and table.column_names == list(RECORD_FIELDS)
    with pytest.raises(RecordError, match="needs --output"):
        write_records([], "parquet", None)


def test_doc_to_record_keeps_its_shape(nlp):
    record = doc_to_record(_doc(nlp))
    assert record["id"] == "a/note.txt" and record["doc"]["source"] == "notes/a/note.txt"
    # the language whose assertion rules applied, and the detector's share of evidence for it
    assert record["doc"]["language"] == "en" and 0.5 <= record["doc"]["language_score"] <= 1
    assert set(record["doc"]) == {"source", "language", "language_score"}
    assert {"text", "start", "end", "assertion"} <= set(record["chunks"][0])


@pytest.mark.parametrize("fmt,name", [("records", "out.jsonl"), ("parquet", "out.parquet"), ("hf", "out_ds")])
def test_cli_writes_each_format(tmp_path, capsys, fmt, name):
    import pyarrow.parquet as pq

    note = tmp_path / "note.txt"
    note.write_text(NOTE, encoding="utf-8")
    out = tmp_path / name
    assert main(["chunk", str(note), "--strategy", "assertion", "--format", fmt, "-o", str(out)]) == 0
    if fmt == "records":
        rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    elif fmt == "parquet":
        rows = pq.read_table(out).to_pylist()
    else:
        rows = pytest.importorskip("datasets").load_from_disk(str(out)).to_list()
    assert rows and all(r["text"] == NOTE[r["start"] : r["end"]] for r in rows)
    assert any(r["assertion"] == "negated" for r in rows)
    assert stat.S_IMODE(os.stat(out).st_mode) in (0o600, 0o700)


def test_cli_parquet_to_stdout_is_one_line_error(tmp_path, capsys):
    note = tmp_path / "note.txt"
    note.write_text(NOTE, encoding="utf-8")
    assert main(["chunk", str(note), "--strategy", "simple", "--format", "parquet"]) == 2
    assert capsys.readouterr().err.strip() == "error: --format parquet needs --output FILE.parquet"


def test_records_find_assertion_values_under_another_prefix_through_docbin(tmp_path):
    from spacy.tokens import DocBin

    from spacy_clinchunk.pipeline import load_pipeline

    nlp = load_pipeline("retrieval")
    nlp.add_pipe("clin_context_assertion", before="clin_focus", config={"extension_prefix": "rec_"})
    doc = nlp("No fever. Mother with lupus.")
    assert doc.spans["clin_chunks"][0]._.rec_assertion == "negated"
    assert doc.spans["clin_chunks"][0]._.clin_assertion is None  # nothing under the package names
    restored = next(DocBin().from_bytes(DocBin(docs=[doc], store_user_data=True).to_bytes()).get_docs(nlp.vocab))
    for group in ("clin_chunks", "clin_focus"):
        got = [(r["text"], r["assertion"]) for r in chunk_records(restored, group)]
        assert got[0] == ("No fever", "negated")
        assert got[-1][1] == "family"


# -- the flagship chain (clause chunks, assertion, focus): focus spans in every record ---------
@pytest.fixture(scope="module")
def flagship_docs():
    nlp = load_nlp("assertion")
    nlp.add_pipe("clin_focus")
    return [_doc(nlp), _doc(nlp, text="No cough. Mild headache since Monday.", doc_id="b/note.txt")]


def test_flagship_records_carry_assertion_cues_section_and_focus(flagship_docs, nlp):
    records = chunk_records(flagship_docs[0])
    assert [r["focus"] for r in chunk_records(_doc(nlp))] == [[] for _ in records]  # no clin_focus: empty lists
    assert any(r["focus"] for r in records) and any(r["section"] for r in records)
    for record in records:
        assert record["parent_id"] == record["block_id"] and not {"focus_ids", "focus_of"} & set(record["attributes"])
        for focus in record["focus"]:
            assert list(focus) == ["start", "end", "text"] and NOTE[focus["start"] : focus["end"]] == focus["text"]
            assert record["start"] <= focus["start"] < focus["end"] <= record["end"]
    fever = next(r for r in records if "fever" in r["text"])
    assert fever["assertion"] == "negated" and fever["assertion_cues"][0]["text"] == "denies"
    assert "fever" in [f["text"] for f in fever["focus"]]


def test_focus_spans_as_records_of_their_own_with_their_chunk_id(flagship_docs):
    doc = flagship_docs[0]
    chunks = {r["id"]: r for r in chunk_records(doc)}
    focus = chunk_records(doc, index="focus")
    assert len(focus) == len(doc.spans["clin_focus"]) > 0
    for record in focus:
        assert list(record) == list(RECORD_FIELDS) and record["spans_key"] == "clin_focus"
        parent = chunks[record["parent_id"]]
        assert {k: record[k] for k in ("start", "end", "text")} in parent["focus"]
        assert (record["assertion"], record["assertion_cues"], record["focus"]) == (
            parent["assertion"], parent["assertion_cues"], [])
        assert "focus_of" not in record["attributes"]
    with pytest.raises(RecordError, match="unknown index 'nodes'; known: chunks, focus"):
        chunk_records(doc, index="nodes")
    plain = spacy.blank("en")("No fever.")
    plain.spans["clin_chunks"] = [plain[0:2]]
    with pytest.raises(RecordError, match="no focus group 'clin_focus'"):
        chunk_records(plain, index="focus")


@pytest.mark.parametrize("index", ["chunks", "focus"])
def test_flagship_records_in_jsonl_parquet_and_dataset(flagship_docs, tmp_path, index):
    import pyarrow as pa
    import pyarrow.parquet as pq

    datasets = pytest.importorskip("datasets")
    expected = [r for d in flagship_docs for r in chunk_records(d, index=index) if not r["is_header"]]
    assert expected and any(r["is_header"] for d in flagship_docs for r in chunk_records(d, index=index))
    for fmt, name in (("records", "out.jsonl"), ("parquet", "out.parquet"), ("hf", "out_ds")):
        assert write_records(flagship_docs, fmt, tmp_path / name, index=index) == len(expected)
    lines = (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == with_meta(expected)
    table = pq.read_table(tmp_path / "out.parquet")
    assert table.schema.field("focus").type == pa.list_(
        pa.struct([("start", pa.int64()), ("end", pa.int64()), ("text", pa.string())]))
    rows = table.to_pylist()
    assert rows == datasets.load_from_disk(str(tmp_path / "out_ds")).to_list() == with_meta(to_dataset(flagship_docs, index=index).to_list())
    assert [(r["id"], r["parent_id"], r["focus"]) for r in rows] == [(r["id"], r["parent_id"], r["focus"]) for r in expected]


def test_records_read_only_what_the_pipeline_sets_and_lose_nothing(flagship_docs, nlp):
    """``fields_written``: the fields the components declare (``assigns``); records built with
    it equal the records that read every field, and an undeclared component reads them all."""
    from spacy.language import Language

    from spacy_clinchunk.pipeline.resolve import record_fields as fields_written

    assert fields_written(nlp) == {"assertion", "assertion_cues", "assertion_statuses", "section"}
    flagship = load_nlp("assertion")
    flagship.add_pipe("clin_focus")
    fields = fields_written(flagship)
    assert {"focus_of", "focus_ids", "assertion"} <= fields
    for doc in flagship_docs:
        for index in ("chunks", "focus"):
            assert chunk_records(doc, index=index, fields=fields) == chunk_records(doc, index=index)
        assert doc_to_record(doc, fields=fields) == doc_to_record(doc)

    @Language.component("test_sets_hpo_undeclared")
    def sets_hpo(doc):
        for span in doc.spans.get("clin_chunks", []):
            span._.clin_hpo_id = "HP:0000001"
        return doc

    custom = spacy.blank("en")
    custom.add_pipe("sentencizer")
    custom.add_pipe("clin_punct_splitter")
    assert fields_written(custom) == frozenset()
    custom.add_pipe("test_sets_hpo_undeclared")
    assert fields_written(custom) is None
    record = chunk_records(custom("Fever."), fields=fields_written(custom))[0]
    assert record["attributes"] == {"hpo_id": "HP:0000001"}


def test_cli_ids_are_unique_over_the_inputs_however_the_paths_are_given(tmp_path, capsys, monkeypatch):
    """Two files of the same name in two folders: ids relative to the common root of the
    inputs (``ward3/discharge``, ``ward5/discharge``), given relative, absolute or through ``..``."""
    note = "HISTORY:\nShe denies fever or chills. Mild cough for three days.\n"
    for ward in ("ward3", "ward5"):
        (tmp_path / ward).mkdir()
        (tmp_path / ward / "discharge.txt").write_text(note, encoding="utf-8")
    monkeypatch.chdir(tmp_path / "ward3")
    for paths in (["../ward3/discharge.txt", "../ward5/discharge.txt"],
                  [str(tmp_path / "ward3" / "discharge.txt"), "../ward5/discharge.txt"],
                  ["discharge.txt", str(tmp_path / "ward5")]):
        assert main(["chunk", *paths, "--strategy", "assertion", "--format", "records"]) == 0
        records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        assert sorted({r["doc_id"] for r in records}) == ["ward3/discharge", "ward5/discharge"], paths
        assert len({r["id"] for r in records}) == len(records)
    assert main(["chunk", "discharge.txt", "--strategy", "assertion", "--format", "records"]) == 0
    assert {json.loads(line)["doc_id"] for line in capsys.readouterr().out.splitlines()} == {"discharge"}


def test_write_records_gives_repeated_documents_ids_of_their_own(nlp, tmp_path):
    docs = [nlp("No fever. Mild cough."), nlp("No fever. Mild cough.")]
    assert write_records(docs, "records", tmp_path / "out.jsonl") == 2 * len(chunk_records(docs[0]))
    records = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len({r["id"] for r in records}) == len(records)
    assert sorted({r["doc_id"] for r in records}) == [records[0]["doc_id"], records[0]["doc_id"] + "#1"]


def test_cli_record_ids_are_unique_over_files_and_records_that_share_an_id(tmp_path, capsys, monkeypatch):
    """``a.txt`` and ``a.text`` keep their suffix; two JSONL files that both say ``"id": "x"``
    give ``x`` and ``x#1``: every record id of the run is distinct, in records and jsonl."""
    ward = tmp_path / "w"
    ward.mkdir()
    for name in ("a.txt", "a.text"):
        (ward / name).write_text("No fever. Mild cough.\n", encoding="utf-8")
    for name in ("r1.jsonl", "r2.jsonl"):
        (tmp_path / name).write_text(json.dumps({"id": "x", "text": "Denies chest pain."}) + "\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    paths = ["w/a.txt", "w/a.text", "r1.jsonl", "r2.jsonl"]
    assert main(["chunk", *paths, "--strategy", "assertion", "--format", "records"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sorted({r["doc_id"] for r in records}) == ["w/a.text", "w/a.txt", "x", "x#1"]
    assert len({r["id"] for r in records}) == len(records) == 6
    assert main(["chunk", *paths, "--strategy", "assertion", "--format", "jsonl"]) == 0
    assert [json.loads(line)["id"] for line in capsys.readouterr().out.splitlines()] == ["w/a.txt", "w/a.text", "x", "x#1"]


def test_write_records_can_store_repeated_identical_documents_once(nlp, tmp_path):
    docs = [nlp("No fever. Mild cough."), nlp("No fever. Mild cough."), nlp("Chest pain.")]
    written = write_records(docs, "records", tmp_path / "out.jsonl", dedupe=True)
    records = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    assert written == len(records) == len(chunk_records(docs[0])) + len(chunk_records(docs[2]))
    assert len({r["doc_id"] for r in records}) == 2
