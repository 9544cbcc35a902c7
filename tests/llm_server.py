"""A real HTTP server on 127.0.0.1 that speaks Ollama's and the OpenAI-compatible API.

Used by the tests and ``bench/llm_context.py``. It answers every context request with
a deterministic context naming the first words of the chunk, so callers can check that
answers land on the right chunks, and it can be told to misbehave:

    server = FakeLLMServer(latency=0.3).start()
    server.queue("500", "429", "ok")   # the next three requests, then ``server.mode``
    server.mode = "hang"                # every later request
    ...
    server.stop()

Modes: ``ok``, ``500``, ``503`` (Ollama's "server busy"), ``429`` (with
``Retry-After: server.retry_after``), ``404`` (model not found), ``400``, ``401``,
``malformed`` (invalid JSON), ``error200`` (``{"error": ...}`` under status 200),
``hang`` (sleep ``hang_seconds`` before answering), ``empty`` (empty answer),
``refusal`` and ``chatter`` (answers the client must clean), ``echo500`` (a 500 whose
error body repeats the prompt, as some servers do). :func:`refused_url` gives a
loopback address where nothing listens (connection refused).

:class:`SocketFaultServer` misbehaves below HTTP: it trickles, stalls, resets or
answers garbage on a raw socket.

Run standalone: ``python tests/llm_server.py --latency 0.3`` prints its URL.
"""
import argparse
import json
import random
import re
import socket
import threading
import time
from collections import deque
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Deque, Dict, List, Optional

_CHUNK = re.compile(r"Chunk to contextualize:\s*\n(.*?)\n\s*\nProvide ONLY", re.DOTALL)


def chunk_of(prompt: str) -> str:
    """The chunk inside a prompt written from the default template (else the whole prompt)."""
    match = _CHUNK.search(prompt)
    return match.group(1) if match else prompt


def answer_for(prompt: str) -> str:
    """The context the server writes: deterministic, naming the chunk's first words."""
    words = chunk_of(prompt).split()[:6]
    return f"This part of the clinical note begins with '{' '.join(words)}'."


def refused_url() -> str:
    """A loopback URL where no server listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


class _Server:
    """``with Server(...) as server:`` starts and stops it."""

    def start(self) -> Any:  # pragma: no cover - defined by each server
        raise NotImplementedError

    def stop(self) -> None:  # pragma: no cover - defined by each server
        raise NotImplementedError

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


class FakeLLMServer(_Server):
    def __init__(self, latency: float = 0.0, model: str = "phi4", jitter: float = 0.0) -> None:
        self.latency = latency
        self.jitter = jitter  # extra random latency in [0, jitter): answers complete out of order
        self.model = model
        self.mode = "ok"
        self.retry_after = "0"
        self.hang_seconds = 5.0
        self.requests: List[Dict[str, Any]] = []
        self.inflight = 0
        self.max_inflight = 0
        self._plan: Deque[str] = deque()
        self._lock = threading.Lock()
        self._server: Optional[ThreadingHTTPServer] = None
        self._thread: Optional[threading.Thread] = None

    # -- control ----------------------------------------------------------------
    def start(self) -> "FakeLLMServer":
        handler = _make_handler(self)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def url(self) -> str:
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def openai_url(self) -> str:
        return f"{self.url}/v1"

    def queue(self, *modes: str) -> None:
        with self._lock:
            self._plan.extend(modes)

    def reset(self) -> None:
        with self._lock:
            self._plan.clear()
            self.requests.clear()
            self.mode = "ok"
            self.max_inflight = 0

    @property
    def calls(self) -> int:
        """Requests that got a proper answer."""
        return sum(1 for r in self.requests if r["mode"] in ("ok", "chatter"))

    @property
    def client_ports(self) -> set:
        """Client ports seen: one per TCP connection the clients opened."""
        return {r["port"] for r in self.requests}

    def _next_mode(self) -> str:
        with self._lock:
            return self._plan.popleft() if self._plan else self.mode

    # -- answering --------------------------------------------------------------
    def handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length)
        mode = self._next_mode()
        with self._lock:
            self.inflight += 1
            self.max_inflight = max(self.max_inflight, self.inflight)
        try:
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {}
            with self._lock:
                self.requests.append(
                    {
                        "path": handler.path,
                        "body": body,
                        "mode": mode,
                        "authorization": handler.headers.get("Authorization"),
                        "time": time.monotonic(),
                        "port": handler.client_address[1],
                    }
                )
            delay = self.latency + (random.random() * self.jitter if self.jitter else 0.0)
            if delay:
                time.sleep(delay)
            self._respond(handler, mode, body)
        finally:
            with self._lock:
                self.inflight -= 1

    def _respond(self, handler: BaseHTTPRequestHandler, mode: str, body: Dict[str, Any]) -> None:
        path = handler.path
        if mode == "hang":
            time.sleep(self.hang_seconds)
            mode = "ok"
        if mode in ("500", "503"):
            message = "server busy, please try again. maximum pending requests exceeded" if mode == "503" else "boom"
            return _send(handler, int(mode), {"error": message})
        if mode == "429":
            return _send(handler, 429, {"error": "rate limited"}, {"Retry-After": self.retry_after})
        if mode == "404":
            return _send(handler, 404, {"error": f"model '{body.get('model')}' not found, try pulling it first"})
        if mode in ("400", "401"):
            return _send(handler, int(mode), {"error": {"message": "bad request" if mode == "400" else "invalid key"}})
        if mode == "malformed":
            return _send_raw(handler, 200, b'{"message": {"content": "trunc')
        if mode == "echo500":
            return _send(handler, 500, {"error": f"cannot process: {_prompt_of(path, body)}"})
        if mode == "error200":
            return _send(handler, 200, {"error": "an unknown error was encountered while running the model"})
        if path not in ("/api/chat", "/api/generate", "/v1/chat/completions"):
            return _send(handler, 404, {"error": "not found"})
        if body.get("model") != self.model:
            return _send(handler, 404, {"error": f"model '{body.get('model')}' not found, try pulling it first"})
        prompt = _prompt_of(path, body)
        if mode == "empty":
            text = ""
        elif mode == "refusal":
            text = "I'm sorry, but I can't help with that."
        elif mode == "chatter":
            text = f'Sure! Here is the context:\nContext: "{answer_for(prompt)}"\nLet me know if you need more.'
        else:
            text = answer_for(prompt)
        prompt_tokens, completion_tokens = len(prompt.split()), len(text.split())
        if path == "/api/chat":
            payload = {
                "model": self.model,
                "message": {"role": "assistant", "content": text},
                "done": True,
                "prompt_eval_count": prompt_tokens,
                "eval_count": completion_tokens,
            }
        elif path == "/api/generate":
            payload = {
                "model": self.model,
                "response": text,
                "done": True,
                "prompt_eval_count": prompt_tokens,
                "eval_count": completion_tokens,
            }
        else:
            payload = {
                "id": "cmpl-test",
                "object": "chat.completion",
                "model": self.model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                },
            }
        _send(handler, 200, payload)


def _prompt_of(path: str, body: Dict[str, Any]) -> str:
    if path == "/api/generate":
        return str(body.get("prompt", ""))
    messages = body.get("messages") or []
    return str(messages[-1].get("content", "")) if messages else ""


def _send(handler: BaseHTTPRequestHandler, status: int, payload: Any, headers: Optional[Dict[str, str]] = None) -> None:
    _send_raw(handler, status, json.dumps(payload).encode("utf-8"), headers)


def _send_raw(handler: BaseHTTPRequestHandler, status: int, data: bytes, headers: Optional[Dict[str, str]] = None) -> None:
    """The whole response in one write: no small trailing segment for delayed ACKs to stall."""
    lines = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}", "Content-Type: application/json", f"Content-Length: {len(data)}"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    try:
        handler.wfile.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + data)
    except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
        pass


def _make_handler(server: FakeLLMServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 - http.server API
            server.handle(self)

        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            pass

    return Handler


class SocketFaultServer(_Server):
    """A raw TCP server on 127.0.0.1 for faults below HTTP.

    Modes: ``trickle`` (valid headers, then the JSON answer one byte every ``interval``
    seconds), ``trickle_headers`` (the headers themselves one byte at a time), ``stall``
    (reads the request, never answers), ``reset`` (reads the request, then a TCP RST),
    ``garbage`` (bytes that are not HTTP, then close).
    """

    def __init__(self, mode: str = "trickle", interval: float = 0.2) -> None:
        self.mode = mode
        self.interval = interval
        self.connections = 0
        self._sock: Optional[socket.socket] = None
        self._stop = threading.Event()

    def start(self) -> "SocketFaultServer":
        self._sock = socket.socket()
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self._sock.settimeout(0.2)
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._sock is not None:
            self._sock.close()

    @property
    def url(self) -> str:
        assert self._sock is not None, "server not started"
        return "http://127.0.0.1:%d" % self._sock.getsockname()[1]

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            prompt = _read_request(conn)
            if self.mode == "reset":
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                return
            if self.mode == "garbage":
                conn.sendall(b"\x00\xffTHIS IS NOT HTTP\r\n\r\n")
                return
            if self.mode == "stall":
                self._stop.wait(600)
                return
            body = json.dumps({"model": "phi4", "message": {"role": "assistant", "content": answer_for(prompt)}, "done": True}).encode()
            head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            slow = head + body if self.mode == "trickle_headers" else body
            if self.mode == "trickle":
                conn.sendall(head)
            for i in range(len(slow)):
                if self._stop.wait(self.interval):
                    return
                conn.sendall(slow[i : i + 1])
        except OSError:  # the client gave up
            pass
        finally:
            conn.close()


def _read_request(conn: socket.socket) -> str:
    """Read one HTTP request; the prompt in it (Ollama's chat body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        piece = conn.recv(65536)
        if not piece:
            return ""
        data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(re.search(rb"content-length:\s*(\d+)", head, re.IGNORECASE).group(1))
    while len(body) < length:
        piece = conn.recv(65536)
        if not piece:
            break
        body += piece
    try:
        return _prompt_of("/api/chat", json.loads(body))
    except ValueError:
        return ""


def main() -> None:
    parser = argparse.ArgumentParser(description="fake Ollama / OpenAI-compatible server on 127.0.0.1")
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--mode", default="ok")
    args = parser.parse_args()
    server = FakeLLMServer(latency=args.latency)
    server.mode = args.mode
    server.start()
    print(server.url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
