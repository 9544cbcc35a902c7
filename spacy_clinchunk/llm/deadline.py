"""The total deadline of one HTTP request (``total_timeout`` of the LLM clients).

``requests`` bounds only the wait for each read, so a server that trickles a byte at a
time never times out. Each request gets a watch (:func:`watching`); the connection it uses
registers its socket there, and one timer thread per process shuts that socket down at the
deadline (connect, send, headers or body), which fails the blocked call at once.
"""
import heapq
import itertools
import os
import socket
import threading
import time
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, Iterator, List, Optional, Tuple

_current = threading.local()


class _Watch:
    """The socket one request is using, shut down if the request outlives its deadline."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.sock: Optional[socket.socket] = None
        self.expired = False
        self.done = False
        self.lock = threading.Lock()

    def attach(self, sock: Optional[socket.socket]) -> None:
        with self.lock:
            self.sock = sock
            if self.expired and not self.done and sock is not None:
                _shut_down(sock)

    def expire(self) -> None:
        with self.lock:
            if not self.done:
                self.expired = True
                if self.sock is not None:
                    _shut_down(self.sock)

    def finish(self) -> None:
        with self.lock:
            self.done = True


class _Watchdog:
    """One thread per process that expires overdue watches (no thread per request)."""

    def __init__(self) -> None:
        self._heap: List[Tuple[float, int, _Watch]] = []
        self._cond = threading.Condition()
        self._count = itertools.count()
        self._pid: Optional[int] = None

    def watch(self, seconds: float) -> _Watch:
        watch = _Watch(time.monotonic() + seconds)
        with self._cond:
            if self._pid != os.getpid():  # first use, or a forked child without the thread
                self._heap, self._pid = [], os.getpid()
                threading.Thread(target=self._run, name="clinchunk-llm-deadline", daemon=True).start()
            earliest = not self._heap or watch.deadline < self._heap[0][0]
            heapq.heappush(self._heap, (watch.deadline, next(self._count), watch))
            if earliest:
                self._cond.notify()
        return watch

    def _run(self) -> None:
        with self._cond:
            while True:
                now = time.monotonic()
                while self._heap and (self._heap[0][2].done or self._heap[0][0] <= now):
                    _, _, watch = heapq.heappop(self._heap)
                    watch.expire()
                self._cond.wait(self._heap[0][0] - now if self._heap else None)


_WATCHDOG = _Watchdog()


@contextmanager
def watching(seconds: float) -> Iterator[_Watch]:
    """Run one request of this thread under a deadline of ``seconds``; ``watch.expired`` says whether it struck."""
    watch = _WATCHDOG.watch(seconds)
    _current.watch = watch
    try:
        yield watch
    finally:
        watch.finish()
        _current.watch = None


def _watch_socket(sock: Optional[socket.socket]) -> None:
    watch = getattr(_current, "watch", None)
    if watch is not None:
        watch.attach(sock)


def _shut_down(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:  # already closed
        pass


@lru_cache(maxsize=None)
def deadline_adapter() -> type:
    """A ``requests`` adapter whose urllib3 connections report their socket to the request's watch.

    Built on first use (``requests`` is not imported with the package), through
    urllib3's documented extension points: ``ConnectionCls`` and ``pool_classes_by_scheme``.
    """
    from requests.adapters import HTTPAdapter
    from urllib3.connection import HTTPConnection, HTTPSConnection
    from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

    class Watched:
        def connect(self) -> None:
            super().connect()
            _watch_socket(self.sock)

        def request(self, *args: Any, **kwargs: Any) -> Any:
            _watch_socket(self.sock)  # a kept-alive connection: already connected
            return super().request(*args, **kwargs)

    class WatchedHTTP(Watched, HTTPConnection):
        pass

    class WatchedHTTPS(Watched, HTTPSConnection):
        pass

    class WatchedHTTPPool(HTTPConnectionPool):
        ConnectionCls = WatchedHTTP

    class WatchedHTTPSPool(HTTPSConnectionPool):
        ConnectionCls = WatchedHTTPS

    classes = {"http": WatchedHTTPPool, "https": WatchedHTTPSPool}

    class DeadlineAdapter(HTTPAdapter):
        def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
            super().init_poolmanager(*args, **kwargs)
            self.poolmanager.pool_classes_by_scheme = classes

        def proxy_manager_for(self, proxy: str, **kwargs: Any) -> Any:
            manager = super().proxy_manager_for(proxy, **kwargs)
            if hasattr(manager, "pool_classes_by_scheme"):
                manager.pool_classes_by_scheme = classes
            return manager

    return DeadlineAdapter
