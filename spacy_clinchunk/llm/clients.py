"""LLM clients of ``clin_llm_context`` over HTTP.

* ``spacy_clinchunk.Ollama.v1``: Ollama's native ``/api/chat`` or ``/api/generate``.
* ``spacy_clinchunk.OpenAICompatible.v1``: ``/v1/chat/completions`` (vLLM, llama.cpp
  server, LM Studio, hosted APIs); the API key is read from an environment variable
  whose *name* is configured, at request time, and never stored or logged.

The context writer without an LLM, ``spacy_clinchunk.HeuristicContext.v1``, lives in
:mod:`~spacy_clinchunk.llm.heuristic` (and stays importable from here).

The HTTP clients share one keep-alive ``requests`` session per process (its pool sized
to the component's concurrency), explicit connect and read timeouts plus a total
deadline per request (``total_timeout``, :mod:`~spacy_clinchunk.llm.deadline`), and
``"stream": false``. tenacity retries connection errors, timeouts, 5xx and
``{"error": ...}`` bodies with jittered exponential backoff; 429 honours
``Retry-After``; other 4xx fail at once. Server bodies can echo the prompt (note text),
so they are logged at DEBUG only, never put into error messages.
"""
import inspect
import json
import logging
import os
import threading
import time
from dataclasses import dataclass
from typing import Any, Dict, Optional

from spacy.util import registry

from .deadline import deadline_adapter, watching

logger = logging.getLogger("spacy_clinchunk")


class LLMError(RuntimeError):
    """A context request failed."""

    attempts = 1  # HTTP requests made before giving up


class TransientLLMError(LLMError):
    """Worth retrying: connection error, timeout, 5xx, malformed or error body."""

    def __init__(self, message: str, retry_after: Optional[float] = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class PermanentLLMError(LLMError):
    """Not worth retrying: 4xx other than 429 (missing model, bad key, bad request)."""


@dataclass
class Completion:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    attempts: int = 1


class HTTPClient:
    """Shared machinery of the HTTP clients: session, timeouts, retries, error mapping."""

    kind = "http"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        num_ctx: int,
        max_output_tokens: int,
        connect_timeout: float,
        read_timeout: float,
        total_timeout: float,
        max_retries: int,
        backoff: float,
        max_backoff: float,
        max_retry_after: float,
        pool_size: int = 4,
    ) -> None:
        if num_ctx <= max_output_tokens:
            raise ValueError(f"num_ctx ({num_ctx}) must exceed the output budget ({max_output_tokens})")
        if not total_timeout or total_timeout <= 0:
            raise ValueError(f"total_timeout must be a positive number of seconds, not {total_timeout!r}")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.num_ctx = int(num_ctx)
        self.max_output_tokens = int(max_output_tokens)
        self.connect_timeout = float(connect_timeout)
        self.read_timeout = float(read_timeout)
        self.total_timeout = float(total_timeout)
        self.max_retries = int(max_retries)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.max_retry_after = float(max_retry_after)
        self.pool_size = int(pool_size)
        self._session: Any = None
        self._session_pid: Optional[int] = None
        self._session_lock = threading.Lock()

    # -- what the component needs to know ----------------------------------
    @property
    def identity(self) -> str:
        """Cache identity: the kind of API and the model (not the server address)."""
        return f"{self.kind}:{self.model}"

    @property
    def context_window(self) -> int:
        return self.num_ctx

    def set_pool_size(self, size: int) -> None:
        """Keep ``size`` connections alive: one per concurrent request of the component."""
        with self._session_lock:
            if int(size) > self.pool_size:
                self.pool_size = int(size)
                self._session = None  # rebuilt with the larger pool on the next request

    # -- HTTP -----------------------------------------------------------------
    @property
    def session(self) -> Any:
        with self._session_lock:
            if self._session is None or self._session_pid != os.getpid():
                import requests

                session = requests.Session()
                adapter = deadline_adapter()(pool_connections=4, pool_maxsize=self.pool_size, max_retries=0)
                session.mount("http://", adapter)
                session.mount("https://", adapter)
                self._session, self._session_pid = session, os.getpid()
            return self._session

    def headers(self) -> Dict[str, str]:
        return {"Content-Type": "application/json"}

    def post_json(self, path: str, body: Dict[str, Any]) -> Dict[str, Any]:
        """One attempt within ``total_timeout``: POST ``body``; parsed JSON, or a Transient/Permanent error."""
        import requests

        url = f"{self.base_url}{path}"
        timeout = (min(self.connect_timeout, self.total_timeout), min(self.read_timeout, self.total_timeout))
        with watching(self.total_timeout) as watch:
            try:
                response = self.session.post(url, json=body, headers=self.headers(), timeout=timeout)
                content = response.content
            except requests.RequestException as err:
                if watch.expired:
                    raise TransientLLMError(f"no complete answer from {url} within total_timeout={self.total_timeout:g}s") from err
                if isinstance(err, requests.Timeout):
                    raise TransientLLMError(f"timeout talking to {url} ({type(err).__name__})") from err
                if _never_connected(err):
                    raise TransientLLMError(f"cannot connect to {url}") from err
                raise TransientLLMError(f"connection to {url} broke off ({type(err).__name__})") from err
        return self._parse(url, response, content)

    def _parse(self, url: str, response: Any, content: bytes) -> Dict[str, Any]:
        status = response.status_code
        if status >= 400:  # the body may echo the prompt: DEBUG only
            logger.debug("HTTP %d from %s: %s", status, url, _short(content.decode("utf-8", "replace")))
        if status == 429:
            retry_after = _retry_after(response.headers.get("Retry-After"))
            raise TransientLLMError(f"rate limited by {url} (HTTP 429)", retry_after=retry_after)
        if status >= 500:
            raise TransientLLMError(f"HTTP {status} from {url}: {response.reason or 'server error'}")
        if status == 404:
            raise PermanentLLMError(self.not_found_message(url))
        if status in (401, 403):
            raise PermanentLLMError(self.auth_message(url, status))
        if status >= 400:
            raise PermanentLLMError(f"HTTP {status} from {url}: {response.reason or 'client error'}")
        try:
            data = json.loads(content)
        except ValueError as err:
            raise TransientLLMError(f"malformed JSON from {url}") from err
        if not isinstance(data, dict):
            raise TransientLLMError(f"unexpected JSON from {url}: not an object")
        if data.get("error"):
            logger.debug("error body from %s: %s", url, _short(data["error"]))
            raise TransientLLMError(f"error from {url} in a 200 answer (the body is logged at DEBUG)")
        return data

    def not_found_message(self, url: str) -> str:
        return f"HTTP 404 from {url}"

    def auth_message(self, url: str, status: int) -> str:
        return f"HTTP {status} from {url}: authentication failed"

    # -- one completion with retries --------------------------------------
    def request(self, prompt: str) -> Completion:  # pragma: no cover - abstract
        raise NotImplementedError

    def complete(self, prompt: str) -> Completion:
        from tenacity import Retrying, retry_if_exception_type, stop_after_attempt

        started = time.perf_counter()
        retrying = Retrying(
            retry=retry_if_exception_type(TransientLLMError),
            stop=stop_after_attempt(self.max_retries + 1),
            wait=self._wait,
            before_sleep=_log_retry,
            reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    completion = self.request(prompt)
        except PermanentLLMError as err:
            err.attempts = retrying.statistics.get("attempt_number", 1)
            raise
        except TransientLLMError as err:
            attempts = retrying.statistics.get("attempt_number", 1)
            final = TransientLLMError(f"{err} (gave up after {attempts} attempts)")
            final.attempts = attempts
            raise final from err
        completion.seconds = time.perf_counter() - started
        completion.attempts = retrying.statistics.get("attempt_number", 1)
        return completion

    def _wait(self, state: Any) -> float:
        """``Retry-After`` when the server sent one (capped), else jittered exponential backoff."""
        from tenacity import wait_random_exponential

        error = state.outcome.exception() if state.outcome is not None else None
        retry_after = getattr(error, "retry_after", None)
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        return wait_random_exponential(multiplier=self.backoff, max=self.max_backoff)(state)

    def __getstate__(self) -> Dict[str, Any]:  # sessions and locks stay in their process
        state = dict(self.__dict__)
        state.update(_session=None, _session_pid=None, _session_lock=None)
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._session_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.base_url!r}, model={self.model!r})"


class OllamaClient(HTTPClient):
    """Ollama's native API. ``num_ctx`` is sent with every request and never changes."""

    kind = "ollama"

    def __init__(self, *, endpoint: str, options: Dict[str, Any], keep_alive: Optional[str], **kwargs: Any) -> None:
        if endpoint not in ("chat", "generate"):
            raise ValueError(f"Ollama endpoint must be 'chat' or 'generate', not {endpoint!r}")
        options = dict(options or {})
        if "num_ctx" in options:
            kwargs["num_ctx"] = int(options.pop("num_ctx"))
        if "num_predict" in options:
            kwargs["max_output_tokens"] = int(options.pop("num_predict"))
        super().__init__(**kwargs)
        self.endpoint = endpoint
        self.options = {"temperature": 0, **options}
        self.keep_alive = keep_alive

    def request(self, prompt: str) -> Completion:
        body: Dict[str, Any] = {
            "model": self.model,
            "stream": False,
            "options": {**self.options, "num_ctx": self.num_ctx, "num_predict": self.max_output_tokens},
        }
        if self.keep_alive is not None:
            body["keep_alive"] = self.keep_alive
        if self.endpoint == "chat":
            body["messages"] = [{"role": "user", "content": prompt}]
        else:
            body["prompt"] = prompt
        data = self.post_json(f"/api/{self.endpoint}", body)
        if self.endpoint == "chat":
            message = data.get("message")
            text = message.get("content") if isinstance(message, dict) else None
        else:
            text = data.get("response")
        if not isinstance(text, str):
            raise TransientLLMError(f"no answer text in Ollama's /api/{self.endpoint} response")
        return Completion(text, _int(data.get("prompt_eval_count")), _int(data.get("eval_count")))

    def not_found_message(self, url: str) -> str:
        return (
            f"HTTP 404 from {url}: Ollama at {self.base_url} does not have model '{self.model}'; "
            f"run `ollama pull {self.model}` on that server"
        )


class OpenAICompatibleClient(HTTPClient):
    """``POST {base_url}/chat/completions``; ``base_url`` usually ends in ``/v1``."""

    kind = "openai"

    def __init__(
        self, *, api_key_env: Optional[str], temperature: float, extra_body: Dict[str, Any], **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.api_key_env = api_key_env or None
        self.temperature = float(temperature)
        self.extra_body = dict(extra_body or {})

    def headers(self) -> Dict[str, str]:
        headers = super().headers()
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if key:
                headers["Authorization"] = f"Bearer {key}"
        return headers

    def request(self, prompt: str) -> Completion:
        body = {
            **self.extra_body,
            "model": self.model,
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": self.max_output_tokens,
            "temperature": self.temperature,
            "stream": False,
        }
        data = self.post_json("/chat/completions", body)
        try:
            text = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            text = None
        if not isinstance(text, str):
            raise TransientLLMError("no answer text in the /chat/completions response")
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        return Completion(text, _int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens")))

    def not_found_message(self, url: str) -> str:
        return f"HTTP 404 from {url}: model '{self.model}' or the endpoint does not exist"

    def auth_message(self, url: str, status: int) -> str:
        where = f"set the environment variable {self.api_key_env}" if self.api_key_env else "configure api_key_env"
        return f"HTTP {status} from {url}: authentication failed; {where}"


# -- registered functions ----------------------------------------------------
# The retry and timeout settings both HTTP clients take, with their types and defaults, in
# one place: :func:`_takes_http_settings` adds them to each registered function's signature
# (``__signature__``, which ``inspect.signature`` and so spaCy's config validation read).
_HTTP_SETTINGS = (
    ("connect_timeout", float, 5.0),
    ("read_timeout", float, 120.0),
    ("max_retries", int, 3),
    ("backoff", float, 0.5),
    ("max_backoff", float, 8.0),
    ("max_retry_after", float, 60.0),
    ("total_timeout", float, 180.0),
)


def _takes_http_settings(func: Any) -> Any:
    """Give ``func(..., **http)`` the keyword parameters of :data:`_HTTP_SETTINGS` in its signature."""
    signature = inspect.signature(func)
    own = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    shared = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=kind)
        for name, kind, default in _HTTP_SETTINGS
    ]
    func.__signature__ = signature.replace(parameters=own + shared)
    return func


def _http_settings(http: Dict[str, Any]) -> Dict[str, Any]:
    """The shared settings, defaults filled in for a direct call that left some out."""
    unknown = sorted(set(http) - {name for name, _, _ in _HTTP_SETTINGS})
    if unknown:
        raise TypeError(f"unexpected setting(s) {unknown}")
    return {name: http.get(name, default) for name, _, default in _HTTP_SETTINGS}


@registry.misc("spacy_clinchunk.Ollama.v1")
@_takes_http_settings
def ollama_v1(
    base_url: str = "http://localhost:11434",
    model: str = "phi4",
    endpoint: str = "chat",
    num_ctx: int = 16384,
    num_predict: int = 160,
    options: Dict[str, Any] = {},
    keep_alive: Optional[str] = "30m",
    **http: Any,
) -> OllamaClient:
    """Ollama client. ``options`` go to Ollama as is (``temperature`` defaults to 0)."""
    return OllamaClient(
        base_url=base_url, model=model, num_ctx=num_ctx, endpoint=endpoint, options=options,
        keep_alive=keep_alive, max_output_tokens=num_predict, **_http_settings(http),
    )


@registry.misc("spacy_clinchunk.OpenAICompatible.v1")
@_takes_http_settings
def openai_compatible_v1(
    base_url: str = "http://localhost:8000/v1",
    model: str = "phi4",
    api_key_env: Optional[str] = "OPENAI_API_KEY",
    num_ctx: int = 16384,
    max_tokens: int = 160,
    temperature: float = 0.0,
    extra_body: Dict[str, Any] = {},
    **http: Any,
) -> OpenAICompatibleClient:
    """OpenAI-compatible chat completions; the key is read from ``$api_key_env`` per request."""
    return OpenAICompatibleClient(
        base_url=base_url, model=model, num_ctx=num_ctx, api_key_env=api_key_env, temperature=temperature,
        extra_body=extra_body, max_output_tokens=max_tokens, **_http_settings(http),
    )


# -- helpers -------------------------------------------------------------------
def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _short(value: Any, limit: int = 200) -> str:
    text = value if isinstance(value, str) else str(value)
    if isinstance(value, dict) and "message" in value:
        text = str(value["message"])
    return text if len(text) <= limit else text[:limit] + "..."


def _never_connected(err: Exception) -> bool:
    """Whether ``requests`` failed before a connection existed (refused, unreachable, DNS)."""
    from urllib3.exceptions import NewConnectionError

    reason = getattr(err.args[0], "reason", None) if err.args else None
    return isinstance(reason, NewConnectionError)


def _log_retry(state: Any) -> None:
    error = state.outcome.exception() if state.outcome is not None else None
    logger.debug("LLM request failed (%s); retry %d", error, state.attempt_number)


def _retry_after(value: Optional[str]) -> Optional[float]:
    """``Retry-After`` in seconds or as an HTTP date (urllib3's parser); ``None`` if absent or invalid."""
    if not value:
        return None
    from urllib3.exceptions import InvalidHeader
    from urllib3.util.retry import Retry

    try:
        return Retry(0).parse_retry_after(value)
    except InvalidHeader:
        return None
