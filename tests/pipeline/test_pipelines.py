"""Configs assemble, pipelines round-trip through disk, DocBin and other pipelines."""
import subprocess
import sys

import pytest
import spacy
from spacy.tokens import DocBin

from conftest import CONFIG_DIR, EXAMPLE_NOTE, ROOT, chunk_texts
from spacy_clinchunk.pipeline import load_pipeline

TEXT = (
    "CLINICAL HISTORY:\nPatient has arachnodactyly, i.e., long fingers; heart rate is 98.6 bpm.\n"
    "Patient has seizures but no developmental delay. Dr. Smith gave aspirin 81 mg p.o. daily.\n\n"
    "MEDICATIONS:\n1. Metformin 500 mg b.i.d.\n2. Lisinopril 10 mg daily\n"
)
STRUCTURAL_CONFIGS = ["simple", "punct_conj_cleaned"]


def offsets(doc, key="clin_chunks"):
    return [(s.start_char, s.end_char) for s in doc.spans[key]]


@pytest.mark.parametrize("name", STRUCTURAL_CONFIGS)
def test_config_assembles_and_round_trips_through_disk(name, tmp_path):
    nlp = load_pipeline(CONFIG_DIR / f"{name}.cfg")
    expected = offsets(nlp(TEXT))
    assert expected
    nlp.to_disk(tmp_path / name)
    reloaded = spacy.load(tmp_path / name)
    assert offsets(reloaded(TEXT)) == expected


def test_punct_conj_cleaned_on_the_seed_examples():
    nlp = load_pipeline(CONFIG_DIR / "punct_conj_cleaned.cfg")
    assert chunk_texts(nlp("Patient has arachnodactyly, i.e., long fingers; heart rate is 98.6 bpm.")) == [
        "Patient has arachnodactyly",
        "i.e., long fingers",
        "heart rate is 98.6 bpm",
    ]
    doc = nlp(TEXT)
    assert "Metformin 500 mg b.i.d." in chunk_texts(doc)
    assert "CLINICAL HISTORY" in chunk_texts(doc)


def test_spacy_assemble_cli_gives_the_same_chunks(tmp_path):
    out = tmp_path / "assembled"
    result = subprocess.run(
        [sys.executable, "-m", "spacy", "assemble", str(CONFIG_DIR / "punct_conj_cleaned.cfg"), str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    in_memory = load_pipeline(CONFIG_DIR / "punct_conj_cleaned.cfg")
    assert offsets(spacy.load(out)(TEXT)) == offsets(in_memory(TEXT))


def test_resource_override_survives_to_disk_and_load(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("clin_cleaner", config={"overrides": {"leading_cleanup_words": ["patient"]}})
    assert chunk_texts(nlp("Patient reports headache.")) == ["reports headache."]
    nlp.to_disk(tmp_path / "p")
    assert chunk_texts(spacy.load(tmp_path / "p")("Patient reports headache.")) == ["reports headache."]


def test_docbin_keeps_span_groups_and_attributes():
    from spacy_clinchunk.attrs import register_extensions

    register_extensions()
    nlp = load_pipeline(CONFIG_DIR / "punct_conj_cleaned.cfg")
    doc = nlp(TEXT)
    doc._.clin_doc_id = "note-1"
    doc.spans["clin_chunks"][0]._.clin_assertion = "affirmed"
    data = DocBin(docs=[doc], store_user_data=True).to_bytes()
    restored = list(DocBin().from_bytes(data).get_docs(nlp.vocab))[0]
    assert offsets(restored) == offsets(doc)
    assert restored._.clin_doc_id == "note-1"
    assert restored.spans["clin_chunks"][0]._.clin_assertion == "affirmed"


def test_components_added_to_a_medspacy_pipeline_after_pyrush():
    medspacy = pytest.importorskip("medspacy")
    nlp = medspacy.load(enable=["medspacy_pyrush"])
    nlp.add_pipe("clin_punct_splitter")
    nlp.add_pipe("clin_conj_splitter")
    nlp.add_pipe("clin_cleaner")
    doc = nlp("Patient has seizures but no developmental delay. She denies fever, chills, or night sweats.")
    assert chunk_texts(doc) == ["Patient has seizures", "no developmental delay", "She denies fever", "chills", "night sweats"]


def test_first_splitter_seeds_from_paragraphs_without_sentence_boundaries(blank_nlp):
    blank_nlp.add_pipe("clin_conj_splitter")
    doc = blank_nlp("Fever and cough since Monday and rash today\n\nSecond paragraph here")
    assert chunk_texts(doc) == ["Fever and cough since Monday", "and rash today", "Second paragraph here"]


def test_multiprocess_pipe_matches_single_process():
    nlp = load_pipeline(CONFIG_DIR / "punct_conj_cleaned.cfg")
    texts = [TEXT, "No fever but has cough.", "", "Plain text without punctuation and a list"] * 3
    single = [offsets(d) for d in nlp.pipe(texts)]
    multi = [offsets(d) for d in nlp.pipe(texts, n_process=2, batch_size=4)]
    assert multi == single


def test_example_note_exists_and_chunks():
    if not EXAMPLE_NOTE.exists():
        pytest.fail(f"missing example note {EXAMPLE_NOTE}")
    text = EXAMPLE_NOTE.read_text(encoding="utf-8")
    assert 600 <= len(text.split()) <= 1000
    doc = load_pipeline(CONFIG_DIR / "punct_conj_cleaned.cfg")(text)
    assert len(doc.spans["clin_chunks"]) > 50


# -- scoring: nlp.evaluate on annotated documents, and the weights spacy train reads ----------
SCORED = "Patient has seizures but no developmental delay. She denies fever, chills."
# Patient | seizures | developmental delay | delay (inside it: one cluster) | fever, chills (cut by the comma)
SCORED_ANNOTATIONS = [(0, 7), (12, 20), (28, 47), (42, 47), (60, 73)]


def scored_pipeline(**config):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    for factory in ("clin_punct_splitter", "clin_conj_splitter", "clin_cleaner", "clin_focus"):
        nlp.add_pipe(factory, config=config if factory != "clin_focus" else {})
    return nlp


def annotated_examples(nlp):
    from spacy.training import Example

    from spacy_clinchunk.groundtruth.reader import read_annotated

    record = {
        "doc_id": "scored",
        "full_text": SCORED,
        "annotations": [
            {"hpo_id": f"HP:{i}", "evidence_spans": [{"start_char": s, "end_char": e}]}
            for i, (s, e) in enumerate(SCORED_ANNOTATIONS)
        ],
    }
    reference = read_annotated(record, nlp, expansion_ratios=[0.5])
    return [Example(nlp.make_doc(SCORED), reference)]


def test_nlp_evaluate_scores_the_chunks_of_annotated_documents():
    nlp = scored_pipeline()
    assert chunk_texts(nlp(SCORED)) == ["Patient has seizures", "no developmental delay", "She denies fever", "chills"]
    scores = nlp.evaluate(annotated_examples(nlp))
    # 4 of 5 evidence spans inside one chunk ("fever, chills" is cut); 3 of the 4 chunks that
    # touch an annotation touch one cluster ("Patient has seizures" touches two); the comma
    # and space of "fever, chills" (2 of 47 annotated characters) lie in no chunk
    assert scores["chunk_integrity"] == pytest.approx(4 / 5)
    assert scores["chunk_isolation"] == pytest.approx(3 / 4)
    assert scores["chunk_coverage"] == pytest.approx(45 / 47)
    assert scores["chunks_per_doc"] == 4 and scores["chunk_docs"] == 1


def test_each_component_scores_its_own_span_group():
    from spacy.training import Example

    nlp = scored_pipeline(spans_key="alt")
    assert nlp.evaluate(annotated_examples(nlp))["chunk_integrity"] == pytest.approx(4 / 5)  # "alt" is scored
    examples = [Example(nlp(eg.predicted), eg.reference) for eg in annotated_examples(nlp)]
    cleaner = nlp.get_pipe("clin_cleaner")
    assert cleaner.score(examples, spans_key="clin_chunks")["chunks_per_doc"] == 4  # its own key wins
    assert nlp.get_pipe("clin_focus").score(examples) == {}  # focus spans overlap: no chunk scores


def test_spacy_train_weighs_the_chunk_scores():
    nlp = scored_pipeline()
    weights = nlp.config["training"]["score_weights"]
    assert weights["chunk_integrity"] == weights["chunk_isolation"] == 2 * weights["chunk_coverage"] > 0
    assert weights["chunk_iou"] is None and weights["words_per_chunk"] is None
    combined = spacy.util.combine_score_weights([nlp.get_pipe_meta(n).default_score_weights for n in nlp.pipe_names[1:]])
    assert combined["chunk_integrity"] == 0.4 and combined["chunk_coverage"] == 0.2
    assert nlp.config["components"]["clin_cleaner"]["scorer"]["@scorers"] == "spacy_clinchunk.ChunkScorer.v1"


# -- the one resolver: any source, and the groups read from the loaded pipeline ---------------
def test_resolver_reads_the_groups_from_the_loaded_pipeline(tmp_path):
    from spacy_clinchunk.pipeline import resolve_pipeline, strategy_config

    retrieval = resolve_pipeline("retrieval")
    assert retrieval.path == strategy_config("retrieval")
    assert retrieval.spans_keys == ("clin_chunks", "clin_focus") and retrieval.chunks_key == "clin_chunks"
    rag = resolve_pipeline(CONFIG_DIR / "contextual_rag.cfg")  # loading contacts no model
    assert rag.spans_keys == ("clin_rag_chunks",) and rag.chunks_key == "clin_rag_chunks"
    nlp = spacy.blank("en")
    nlp.add_pipe("clin_punct_splitter", config={"spans_key": "mine"})
    nlp.meta["clinchunk"] = {"spans_key": "declared"}  # as a trained pipeline declares its group
    nlp.to_disk(tmp_path / "saved")
    saved = resolve_pipeline(tmp_path / "saved")
    assert saved.path == tmp_path / "saved" and saved.spans_keys == ("mine", "declared") and saved.chunks_key == "declared"
    given = resolve_pipeline(nlp)
    assert given.nlp is nlp and given.path is None and given.chunks_key == "declared"
    overridden = resolve_pipeline(
        "simple", {"components.clin_cleaner.spans_key": "other", "components.clin_size_ceiling.spans_key": "other"}
    )
    assert overridden.chunks_key == "other"  # the setting as loaded, not as written in the file


@pytest.mark.parametrize(
    "source, message",
    [
        ("retrievl", "unknown strategy 'retrievl'; known: assertion, "),
        ("no/such.cfg", "config or pipeline not found: no/such.cfg"),
        ("nothing.cfg", "config or pipeline not found: nothing.cfg"),
    ],
)
def test_resolver_errors_are_one_line(source, message):
    from spacy_clinchunk.pipeline import PipelineError, resolve_pipeline

    with pytest.raises(PipelineError) as info:
        resolve_pipeline(source)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


# -- the flagship default and the size ceiling of every clause strategy -----------------------
CLAUSE_CONFIGS = ["default", "punct_conj_cleaned", "assertion", "retrieval", "simple", "sliding_window", "semantic"]
FLAGSHIP = ["sentencizer", "clin_punct_splitter", "clin_conj_splitter", "clin_cleaner", "clin_size_ceiling",
            "clin_context_assertion", "clin_focus"]
DICTATED = ("patient has seizures but no developmental delay she denies fever chills or night sweats "
            "her mother reports staring spells at night with loss of tone in both arms since the age of two")


@pytest.fixture(scope="module")
def flagship():
    pytest.importorskip("medspacy")
    return load_pipeline(CONFIG_DIR / "default.cfg")


@pytest.mark.parametrize("name", CLAUSE_CONFIGS)
def test_every_clause_strategy_ends_its_chunking_with_the_size_ceiling(name):
    pipeline = spacy.util.load_config(CONFIG_DIR / f"{name}.cfg")["nlp"]["pipeline"]
    writers = [p for p in pipeline if p not in ("clin_context_assertion", "clin_focus")]
    assert writers[-1] == "clin_size_ceiling"


def test_default_is_the_flagship_without_an_embedder(flagship):
    assert flagship.pipe_names == FLAGSHIP
    assert "embedder" not in flagship.config.to_str()
    doc = flagship("Patient has seizures but no developmental delay. She denies fever, chills, or night sweats.")
    chunks, focus = doc.spans["clin_chunks"], doc.spans["clin_focus"]
    assert [(s.text, s._.clin_assertion) for s in chunks] == [
        ("Patient has seizures", "affirmed"),
        ("no developmental delay", "negated"),
        ("She denies fever", "negated"),
        ("chills, or night sweats", "negated"),
    ]
    for i, chunk in enumerate(chunks):  # linked both ways, each focus span with its chunk's assertion
        assert chunk._.clin_focus_ids
        for f in chunk._.clin_focus_ids:
            assert focus[f]._.clin_focus_of == i and focus[f]._.clin_assertion == chunk._.clin_assertion
    assert "developmental delay" in [s.text for s in focus] and "night sweats" in [s.text for s in focus]


def test_default_bounds_dictated_text_and_round_trips(flagship, tmp_path):
    doc = flagship(DICTATED)
    ceiling = flagship.get_pipe("clin_size_ceiling").max_tokens
    chunks = list(doc.spans["clin_chunks"])
    assert len(chunks) >= 3 and all(len(s.text.split()) <= ceiling for s in chunks)
    assert all(s.text == DICTATED[s.start_char:s.end_char] for s in chunks)
    flagship.to_disk(tmp_path / "default")
    reloaded = spacy.load(tmp_path / "default")
    again = reloaded(DICTATED)
    for key in ("clin_chunks", "clin_focus"):
        assert offsets(again, key) == offsets(doc, key)
    assert [s._.clin_assertion for s in again.spans["clin_chunks"]] == [s._.clin_assertion for s in chunks]


def test_default_runs_without_an_embedding_library():
    pytest.importorskip("medspacy")
    code = (
        "import sys, spacy; heavy = ('sentence_transformers', 'transformers', 'model2vec'); "
        "nlp = spacy.blank('en'); before = {m for m in heavy if m in sys.modules}; "
        "from spacy_clinchunk.pipeline import load_pipeline; "
        f"nlp = load_pipeline({str(CONFIG_DIR / 'default.cfg')!r}); nlp('No fever but has cough.'); "
        "print(sorted(m for m in heavy if m in sys.modules and m not in before))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_resolved_pipeline_answers_what_it_writes_once():
    """One resolver: the groups written, the chunks group, the focus group paired with those
    chunks, the record fields and the config hash, all from the loaded pipeline."""
    from spacy_clinchunk.pipeline import PipelineError, PipelineSpec, resolve_pipeline

    resolved = resolve_pipeline(PipelineSpec("retrieval"))
    assert resolved.spans_keys == ("clin_chunks", "clin_focus")
    assert (resolved.chunks_key, resolved.focus_key) == ("clin_chunks", "clin_focus")
    assert {"focus_ids", "focus_of"} <= resolved.fields and "assertion" not in resolved.fields
    same = resolve_pipeline("retrieval")  # a source and keywords build the same spec
    assert same.config_hash == resolved.config_hash
    longer = resolve_pipeline(PipelineSpec("retrieval", max_length=5000))
    assert longer.nlp.max_length == 5000 and longer.config_hash != resolved.config_hash
    changed = resolve_pipeline("retrieval", {"components.clin_cleaner.max_cleanup_passes": 1})
    assert changed.config_hash != resolved.config_hash
    assert resolve_pipeline("retrieval", spans_key="clin_focus").focus_key is None
    with pytest.raises(PipelineError, match="spans key 'nosuch': the pipeline writes no such group"):
        resolve_pipeline(PipelineSpec("retrieval", spans_key="nosuch"))


def test_pinned_spec_loads_what_the_driver_read(tmp_path):
    """A corpus run hands workers the spec pinned: the config text as the driver read it, so
    an edit of the file mid-run changes nothing a worker loads."""
    from spacy_clinchunk.pipeline import PipelineSpec, resolve_pipeline

    config = tmp_path / "mine.cfg"
    config.write_text((CONFIG_DIR / "punct_conj_cleaned.cfg").read_text(encoding="utf-8"), encoding="utf-8")
    spec = PipelineSpec.of(config, overrides={"components.clin_cleaner.max_cleanup_passes": 1}).pinned()
    before = resolve_pipeline(spec)
    config.write_text("[nlp]\nlang = \"de\"\npipeline = []\n", encoding="utf-8")
    after = resolve_pipeline(spec)
    assert after.config_hash == before.config_hash and after.nlp.pipe_names == before.nlp.pipe_names
    assert after.nlp.get_pipe("clin_cleaner").max_cleanup_passes == 1
    assert resolve_pipeline(config).nlp.lang == "de"


def test_only_the_resolver_builds_pipelines_from_configs():
    """Workers, commands and adapters never call ``load_model_from_config`` themselves."""
    package = ROOT / "spacy_clinchunk"
    callers = sorted(
        str(p.relative_to(package)) for p in package.rglob("*.py") if "load_model_from_config(" in p.read_text(encoding="utf-8")
    )
    assert callers == ["pipeline/resolve.py"]
