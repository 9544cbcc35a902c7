"""Inside a real medspaCy pipeline: its Section and ConTextModifier objects reach every export as
plain JSON, a saved medspaCy pipeline loads through our resolver, and a corpus run logs a
document whose record cannot be written instead of dying."""
import json
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT
from spacy_clinchunk.export.records import chunk_records, to_arrow
from spacy_clinchunk.export.writers import write_records

medspacy = pytest.importorskip("medspacy")

NOTE = "ALLERGIES:\nNo known drug allergies.\n\nFAMILY HISTORY: lupus.\n\nPAST MEDICAL HISTORY: diabetes.\n"
# the section each finding stands in, as medspaCy's sectionizer names it: (category, title)
SECTIONS = {
    "No known drug allergies": ("allergy", "ALLERGIES:"),
    "lupus": ("family_history", "FAMILY HISTORY:"),
    "diabetes": ("past_medical_history", "PAST MEDICAL HISTORY:"),
}


@pytest.fixture(scope="module")
def host_doc():
    """medspaCy's own pipeline (PyRuSH, target matcher, ConText, sectionizer) with our chunker;
    the host then puts its objects where our records read, as a user wiring the two would:
    each chunk's ``clin_section`` is medspaCy's ``Section``, its ``clin_assertion_cues`` the
    ConText modifiers of the entities it holds."""
    from medspacy.ner import TargetRule

    from spacy_clinchunk.attrs import register_extensions

    nlp = medspacy.load(medspacy_enable=["medspacy_pyrush", "medspacy_target_matcher", "medspacy_context",
                                         "medspacy_sectionizer"])
    nlp.get_pipe("medspacy_target_matcher").add([TargetRule("drug allergies", "PROBLEM"), TargetRule("lupus", "PROBLEM")])
    nlp.add_pipe("clin_punct_splitter")
    register_extensions()
    doc = nlp.make_doc(NOTE)
    doc._.clin_doc_id = "ward3/discharge"
    doc = nlp(doc)
    for chunk in doc.spans["clin_chunks"]:
        chunk._.clin_section = chunk[0]._.section
        modifiers = [m for ent in doc.ents if chunk.start <= ent.start < chunk.end for m in ent._.modifiers]
        if modifiers:
            chunk._.clin_assertion_cues = modifiers
    return doc


def _findings(records):
    return {r["text"]: r for r in records if r["text"] in SECTIONS}


def test_records_hold_the_section_category_title_and_the_modifiers_as_plain_json(host_doc, tmp_path):
    from medspacy.context import ConTextModifier
    from medspacy.section_detection import Section

    assert isinstance(host_doc.spans["clin_chunks"][1]._.clin_section, Section)  # the host's objects are there
    assert any(isinstance(c, ConTextModifier) for s in host_doc.spans["clin_chunks"] for c in s._.clin_assertion_cues or ())
    records = chunk_records(host_doc)
    found = _findings(records)
    assert {text: (r["section"], r["section_title"]) for text, r in found.items()} == SECTIONS
    cue = found["No known drug allergies"]["assertion_cues"][0]
    assert cue == {"text": "No", "category": "NEGATED_EXISTENCE", "direction": "FORWARD", "literal": "no",
                   "start_char": NOTE.index("No"), "end_char": NOTE.index("No") + 2}
    json.dumps(records, allow_nan=False)  # plain JSON throughout
    findings = [r for r in records if not r["is_header"]]  # "ALLERGIES" is a title: files leave it out
    assert len(findings) < len(records)
    assert write_records([host_doc], "records", tmp_path / "out.jsonl") == len(findings)
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    assert lines == findings


def test_parquet_and_datasets_take_the_host_values(host_doc, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    datasets = pytest.importorskip("datasets")
    from spacy_clinchunk.export.records import to_dataset

    assert write_records([host_doc], "parquet", tmp_path / "out.parquet", keep_headers=True) == len(host_doc.spans["clin_chunks"])
    rows = pq.read_table(tmp_path / "out.parquet").to_pylist()
    assert rows == to_arrow(chunk_records(host_doc)).to_pylist()
    assert {r["text"]: (r["section"], r["section_title"]) for r in rows if r["text"] in SECTIONS} == SECTIONS
    dataset = to_dataset([host_doc], keep_headers=True)
    assert isinstance(dataset, datasets.Dataset) and dataset["section_title"] == [r["section_title"] for r in rows]


def test_chroma_langchain_and_llama_index_take_the_host_values(host_doc, tmp_path):
    chromadb = pytest.importorskip("chromadb")
    from chromadb.config import Settings

    from spacy_clinchunk.export.vectorstores import adapter_metadata, to_chroma

    client = chromadb.PersistentClient(path=str(tmp_path / "chroma"), settings=Settings(anonymized_telemetry=False))
    collection = client.get_or_create_collection("host", embedding_function=None)
    records = chunk_records(host_doc)
    embed = lambda texts: [[float(len(t)), 1.0] for t in texts]  # noqa: E731 - Chroma's storage is what is tested
    assert to_chroma([host_doc], collection, embed, keep_headers=True) == len(records)
    stored = collection.get(ids=[r["id"] for r in records], include=["metadatas"])
    by_text = {m["text"]: m for m in stored["metadatas"]}
    assert {t: (by_text[t]["section"], by_text[t]["section_title"]) for t in SECTIONS} == SECTIONS
    assert json.loads(by_text["No known drug allergies"]["assertion_cues"])[0]["text"] == "No"
    meta = adapter_metadata(_findings(records)["lupus"])  # what LangChain and LlamaIndex carry
    assert (meta["section"], meta["section_title"]) == SECTIONS["lupus"] and isinstance(meta["assertion_cues"], list)


@pytest.mark.slow
def test_a_saved_medspacy_pipeline_loads_through_the_resolver_and_the_cli(tmp_path):
    """``spacy.load`` of a saved medspaCy pipeline needs ``import medspacy`` first; our resolver
    does it when the config names a medspacy_ factory (a fresh interpreter: nothing imported)."""
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("medspacy_sectionizer")  # PyRuSH cannot be saved (medspaCy 1.3.1): the sentencizer stands in
    nlp.add_pipe("clin_punct_splitter")
    nlp.add_pipe("clin_context_assertion")
    saved = tmp_path / "medspacy_pipeline"
    nlp.to_disk(saved)
    (tmp_path / "ward3").mkdir()
    (tmp_path / "ward3" / "discharge.txt").write_text(NOTE, encoding="utf-8")
    command = [sys.executable, "-m", "spacy_clinchunk", "chunk", "ward3/discharge.txt", "--config", str(saved),
               "--format", "records"]
    env = {"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    found = _findings([json.loads(line) for line in done.stdout.splitlines()])
    assert {t: (r["section"], r["section_title"]) for t, r in found.items()} == SECTIONS
    assert found["lupus"]["assertion"] == "family" and found["No known drug allergies"]["assertion"] == "negated"


UNSTORABLE_CODE = textwrap.dedent(
    '''
    from spacy.language import Language


    @Language.component("test_unstorable")
    def test_unstorable(doc):
        """A host component that leaves a value no export can hold on a marked note."""
        if "UNSTORABLE" in doc.text:
            doc.spans["clin_chunks"][0]._.clin_hpo_id = object()
        return doc
    '''
)

UNSTORABLE_CONFIG = textwrap.dedent(
    '''
    [nlp]
    lang = "en"
    pipeline = ["sentencizer", "medspacy_sectionizer", "clin_punct_splitter", "test_unstorable"]

    [components]

    [components.sentencizer]
    factory = "sentencizer"

    [components.medspacy_sectionizer]
    factory = "medspacy_sectionizer"

    [components.clin_punct_splitter]
    factory = "clin_punct_splitter"

    [components.test_unstorable]
    factory = "test_unstorable"
    '''
)


@pytest.mark.slow
def test_a_corpus_run_of_a_medspacy_pipeline_logs_the_document_it_cannot_write(tmp_path):
    from spacy_clinchunk.corpus import run_corpus

    code = tmp_path / "host_components.py"
    code.write_text(UNSTORABLE_CODE, encoding="utf-8")
    config = tmp_path / "host.cfg"
    config.write_text(UNSTORABLE_CONFIG, encoding="utf-8")
    inputs = tmp_path / "in"
    for ward in ("ward3", "ward5"):
        (inputs / ward).mkdir(parents=True)
        (inputs / ward / "discharge.txt").write_text(NOTE, encoding="utf-8")
    (inputs / "ward5" / "bad.txt").write_text("UNSTORABLE secret note text. " + NOTE, encoding="utf-8")
    out = tmp_path / "out"
    result = run_corpus(config, [inputs], out, code=str(code))
    assert (result.docs, result.errors) == (2, 1)
    errors = [json.loads(line) for line in (out / "errors.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [e["id"] for e in errors] == ["ward5/bad"]
    assert errors[0]["error"].startswith("RecordError: document ward5/bad: a value is not JSON-serializable")
    assert "secret" not in errors[0]["error"] and "\n" not in errors[0]["error"]
    records = {}
    for shard in sorted((out / "shards").glob("*.jsonl")):
        for line in shard.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            records[record["id"]] = record
    assert sorted(records) == ["ward3/discharge", "ward5/discharge"]  # distinct ids for the same file name
    chunks = {c["text"]: c for c in records["ward5/discharge"]["chunks"]}
    assert (chunks["lupus"]["section"], chunks["lupus"]["section_title"]) == SECTIONS["lupus"]
