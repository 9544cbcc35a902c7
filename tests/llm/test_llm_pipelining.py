"""clin_llm_context calls pipelined across documents and batches: same output whatever
the server's speed, order kept, bounded documents in flight, keep-alive connections."""
import random

import spacy

from conftest import llm_config
from llm_server import FakeLLMServer, answer_for

KEY = "clin_rag_chunks"
WORDS = "patient denies chest pain fever cough reports mild headache aspirin daily clinic lungs clear".split()


def notes(n, seed=0):
    rng = random.Random(seed)
    return [
        " ".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12))).capitalize() + "."
                 for _ in range(rng.randint(1, 8)))
        for _ in range(n)
    ]


def build(url, concurrency, **config):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("clin_llm_context", config=llm_config(**{
        "chunk_size": 30, "chunk_overlap": 6, "align": "sentences",
        "max_concurrency": concurrency,
        "model": {"@misc": "spacy_clinchunk.Ollama.v1", "base_url": url}, **config,
    }))
    return nlp


def outputs(docs):
    return [
        (doc.text, [(s.start_char, s.end_char, s._.clin_chunk_id, s._.clin_context, s._.clin_enriched_text) for s in doc.spans[KEY]],
         doc._.clin_llm_context_failures)
        for doc in docs
    ]


def test_slow_jittery_and_fast_servers_give_identical_output():
    texts = notes(40, seed=1)
    with FakeLLMServer() as fast:
        expected = outputs(build(fast.url, 1).pipe(texts, batch_size=7))
    with FakeLLMServer(latency=0.02, jitter=0.05) as slow:  # answers complete out of order
        got = outputs(build(slow.url, 8).pipe(texts, batch_size=7))
        assert slow.max_inflight > 1
    assert got == expected
    assert [t for t, _, _ in got] == texts
    assert all(failures == 0 and all(context for *_, context, _ in spans) for _, spans, failures in got)


def test_each_context_lands_on_its_own_chunk_across_batches():
    texts = notes(25, seed=2)
    with FakeLLMServer(latency=0.01, jitter=0.03) as server:
        docs = list(build(server.url, 6).pipe(texts, batch_size=4))
    for doc in docs:
        for span in doc.spans[KEY]:
            assert span._.clin_context == answer_for("Chunk to contextualize:\n" + span.text + "\n\nProvide ONLY")


def test_calls_overlap_batches_but_documents_in_flight_stay_bounded():
    texts = notes(30, seed=3)
    seen = []
    with FakeLLMServer(latency=0.05) as server:
        nlp = build(server.url, 8, chunk_size=400)  # one chunk per note: one call per document

        def feed():
            for i, text in enumerate(texts):
                seen.append(i)
                yield nlp.make_doc(text)

        component = nlp.get_pipe("clin_llm_context")
        sentencizer = nlp.get_pipe("sentencizer")
        stream = component.pipe((sentencizer(d) for d in feed()), batch_size=2)
        first = next(stream)
        assert first.text == texts[0]
        # in flight at the first output: at most max(batch_size, 2 * concurrency) + 1 docs read
        assert len(seen) <= 2 * 8 + 1
        rest = list(stream)
        # with batches of 2 and no pipelining, at most 2 calls would ever run together
        assert server.max_inflight > 2
        assert server.max_inflight <= 8
    assert [d.text for d in [first] + rest] == texts


def test_the_connection_pool_keeps_connections_alive():
    texts = notes(24, seed=4)
    with FakeLLMServer(latency=0.01) as server:
        nlp = build(server.url, 4, chunk_size=400)
        list(nlp.pipe(texts))
        client = nlp.get_pipe("clin_llm_context").model
        assert client.pool_size == 4
        ports = server.client_ports
    assert len(ports) <= 4 + 1, "requests reuse up to max_concurrency kept-alive connections"
