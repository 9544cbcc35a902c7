"""LLM clients against a real HTTP server on 127.0.0.1: APIs, retries, errors, secrets."""
import logging
import time
from email.utils import formatdate

import pytest
from spacy.util import registry

from llm_server import answer_for, refused_url
from spacy_clinchunk.llm.clients import PermanentLLMError, TransientLLMError
from spacy_clinchunk.llm.heuristic import HeuristicContext

PROMPT = "Document context:\nNote.\n\nChunk to contextualize:\nPatient denies chest pain today.\n\nProvide ONLY the context:"


@pytest.fixture
def server(module_server):
    module_server.reset()
    module_server.retry_after = "0"
    module_server.hang_seconds = 5.0
    yield module_server
    module_server.reset()


def ollama(url, **kwargs):
    settings = {"base_url": url, "backoff": 0.01, "max_backoff": 0.05, **kwargs}
    return registry.misc.get("spacy_clinchunk.Ollama.v1")(**settings)


def openai(url, **kwargs):
    settings = {"base_url": url, "backoff": 0.01, "max_backoff": 0.05, **kwargs}
    return registry.misc.get("spacy_clinchunk.OpenAICompatible.v1")(**settings)


def test_ollama_chat_request_and_usage(server):
    client = ollama(server.url, options={"num_ctx": 8192, "top_k": 1})
    completion = client.complete(PROMPT)
    assert completion.text == answer_for(PROMPT)
    assert completion.prompt_tokens == len(PROMPT.split())
    assert completion.completion_tokens == len(completion.text.split())
    request = server.requests[-1]
    assert request["path"] == "/api/chat"
    body = request["body"]
    assert body["stream"] is False
    assert body["model"] == "phi4"
    assert body["messages"] == [{"role": "user", "content": PROMPT}]
    assert body["options"]["num_ctx"] == 8192 and client.context_window == 8192
    assert body["options"]["temperature"] == 0 and body["options"]["top_k"] == 1
    assert body["options"]["num_predict"] == client.max_output_tokens
    assert body["keep_alive"] == "30m"


def test_ollama_generate_endpoint(server):
    client = ollama(server.url, endpoint="generate", num_ctx=4096)
    assert client.complete(PROMPT).text == answer_for(PROMPT)
    body = server.requests[-1]["body"]
    assert server.requests[-1]["path"] == "/api/generate"
    assert body["prompt"] == PROMPT and body["options"]["num_ctx"] == 4096 and body["stream"] is False


def test_num_ctx_never_changes_between_requests(server):
    client = ollama(server.url)
    for _ in range(3):
        client.complete(PROMPT)
    assert {r["body"]["options"]["num_ctx"] for r in server.requests} == {16384}


def test_openai_compatible_with_key_from_environment(server, monkeypatch):
    monkeypatch.setenv("CLINCHUNK_TEST_KEY", "sk-secret-123")
    client = openai(server.openai_url, api_key_env="CLINCHUNK_TEST_KEY", max_tokens=90)
    completion = client.complete(PROMPT)
    assert completion.text == answer_for(PROMPT)
    assert completion.prompt_tokens == len(PROMPT.split())
    request = server.requests[-1]
    assert request["path"] == "/v1/chat/completions"
    assert request["authorization"] == "Bearer sk-secret-123"
    assert request["body"]["stream"] is False and request["body"]["max_tokens"] == 90
    assert "sk-secret-123" not in repr(client) and "sk-secret-123" not in str(vars(client))


def test_openai_without_key_sends_no_authorization(server, monkeypatch):
    monkeypatch.delenv("CLINCHUNK_TEST_KEY", raising=False)
    openai(server.openai_url, api_key_env="CLINCHUNK_TEST_KEY").complete(PROMPT)
    assert server.requests[-1]["authorization"] is None


@pytest.mark.parametrize("failure", ["500", "503", "error200", "malformed"])
def test_transient_failures_are_retried(server, failure):
    server.queue(failure, failure)
    completion = ollama(server.url, max_retries=3).complete(PROMPT)
    assert completion.text == answer_for(PROMPT)
    assert completion.attempts == 3
    assert [r["mode"] for r in server.requests] == [failure, failure, "ok"]


def test_retries_give_up_after_max_retries(server):
    server.mode = "500"
    with pytest.raises(TransientLLMError) as info:
        ollama(server.url, max_retries=2).complete(PROMPT)
    assert len(server.requests) == 3
    assert info.value.attempts == 3
    assert "HTTP 500" in str(info.value)


def test_429_honours_retry_after(server):
    server.retry_after = "1"  # delay-seconds is an integer (RFC 9110)
    server.queue("429")
    client = ollama(server.url, backoff=30.0, max_backoff=30.0)  # backoff would wait far longer
    completion = client.complete(PROMPT)
    assert completion.text == answer_for(PROMPT)
    first, second = server.requests
    assert 0.95 <= second["time"] - first["time"] < 10


def test_retry_after_as_an_http_date(server):
    server.retry_after = formatdate(time.time() + 2, usegmt=True)  # whole seconds: waits ~1-2 s
    server.queue("429")
    ollama(server.url, backoff=30.0, max_backoff=30.0).complete(PROMPT)
    first, second = server.requests
    assert 0.5 <= second["time"] - first["time"] < 10


def test_retry_after_is_capped(server):
    server.retry_after = "3600"
    server.queue("429")
    assert ollama(server.url, max_retry_after=0.05).complete(PROMPT).attempts == 2


def test_ollama_404_names_the_model_and_fails_at_once(server):
    with pytest.raises(PermanentLLMError) as info:
        ollama(server.url, model="phi4:14b-q8").complete(PROMPT)
    assert len(server.requests) == 1
    assert "ollama pull phi4:14b-q8" in str(info.value)


@pytest.mark.parametrize("status", ["400", "401"])
def test_other_4xx_fail_at_once(server, status, monkeypatch):
    monkeypatch.setenv("CLINCHUNK_TEST_KEY", "sk-do-not-log")
    server.queue(status)
    with pytest.raises(PermanentLLMError) as info:
        openai(server.openai_url, api_key_env="CLINCHUNK_TEST_KEY").complete(PROMPT)
    assert len(server.requests) == 1
    assert status in str(info.value)
    if status == "401":
        assert "CLINCHUNK_TEST_KEY" in str(info.value)
    assert "sk-do-not-log" not in str(info.value)


def test_hang_past_read_timeout_is_retried_then_fails(server):
    server.mode = "hang"
    server.hang_seconds = 2.0
    with pytest.raises(TransientLLMError) as info:
        ollama(server.url, read_timeout=0.3, max_retries=1).complete(PROMPT)
    assert "timeout" in str(info.value)
    assert len(server.requests) == 2


def test_refused_connection_is_a_transient_error():
    with pytest.raises(TransientLLMError) as info:
        ollama(refused_url(), max_retries=1, connect_timeout=1.0).complete(PROMPT)
    assert "cannot connect" in str(info.value)
    assert info.value.attempts == 2


def test_nothing_logged_above_debug_and_no_secret_anywhere(server, monkeypatch, caplog):
    monkeypatch.setenv("CLINCHUNK_TEST_KEY", "sk-very-secret")
    server.queue("500")
    with caplog.at_level(logging.DEBUG, logger="spacy_clinchunk"):
        openai(server.openai_url, api_key_env="CLINCHUNK_TEST_KEY").complete(PROMPT)
    assert all(record.levelno <= logging.DEBUG for record in caplog.records)
    assert "sk-very-secret" not in caplog.text
    assert "chest pain" not in caplog.text  # note text never logged, not even at DEBUG here


def test_clients_are_picklable(server):
    import pickle

    client = ollama(server.url)
    client.complete(PROMPT)
    clone = pickle.loads(pickle.dumps(client))
    assert clone.complete(PROMPT).text == answer_for(PROMPT)


def test_invalid_settings_are_rejected():
    with pytest.raises(ValueError):
        ollama("http://127.0.0.1:1", endpoint="completions")
    with pytest.raises(ValueError):
        ollama("http://127.0.0.1:1", num_ctx=100, num_predict=200)


def test_heuristic_context_names_type_section_and_position():
    text = "HISTORY OF PRESENT ILLNESS:\nChest pain for two days.\n\nMedications:\nAspirin 81 mg daily.\n"
    builder = registry.misc.get("spacy_clinchunk.HeuristicContext.v1")()
    start = text.index("Aspirin")
    context = builder.describe(text, start, len(text) - 1, "Discharge summary", 1, 2)
    assert context.startswith("Discharge summary")
    assert "section 'Medications'" in context
    assert "part 2 of 2" in context and "end of the note" in context
    first = builder.describe(text, 0, 20, "Clinical Note", 0, 2)
    assert "HISTORY OF PRESENT ILLNESS" in first and "beginning" in first
    assert isinstance(HeuristicContext(None, False).describe("plain text", 0, 5, "Note", 0, 1), str)


def reference_section(text, start):
    """The last header before the end of ``start``'s line, scanning the text up to there."""
    from spacy_clinchunk.llm.heuristic import _CAPS_LINE, _HEADER

    line_end = text.find("\n", start)
    limit = len(text) if line_end == -1 else line_end
    found, where = None, -1
    for pattern in (_HEADER, _CAPS_LINE):
        for match in pattern.finditer(text, 0, limit):
            if match.start() > where and len(match.group("name").split()) <= 6:
                found, where = match.group("name").strip(), match.start()
    return found


def test_heuristic_sections_found_once_per_note_match_a_scan_per_chunk():
    import random

    rng = random.Random(5)
    pieces = ["HISTORY:", "MEDICATIONS:\n", "PLAN: ", "ASSESSMENT AND PLAN\n", "Vitals: stable. ", "\n",
              "A VERY LONG HEADER WITH MANY MANY WORDS IN IT\n", "text. ", "  Exam:\n", "é ", "Labs (CBC): ok\n"]
    builder = HeuristicContext(None, True)
    for _ in range(300):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        for start in sorted(rng.randint(0, len(text)) for _ in range(5)):
            assert builder.section(text, start) == reference_section(text, start), (text, start)
