"""``view``: chunk one note and write (or serve on 127.0.0.1) a self-contained HTML page."""
import argparse
import sys
from pathlib import Path
from typing import Any, Iterable, List, Optional

from . import CLIError
from .source import add_encoding_argument, add_source_arguments, encoding_of, pipeline_spec, resolve


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "view",
        help="an HTML page of one note's chunks, coloured by assertion",
        description="Chunk one note and show it as one self-contained HTML page (no network access). "
        "Extra --section.key value pairs override the config.",
    )
    parser.add_argument("note", help="a .txt file, a JSON/JSONL file of notes, or - for stdin")
    parser.add_argument("--id", dest="note_id", default=None, help="the note to show, by its id, from a file of several")
    add_source_arguments(
        parser,
        strategy_help="named pipeline instead of --config (default: default, as for chunk)",
        spans_key_help="span group to show (default: the group the pipeline writes its chunks to)",
    )
    add_encoding_argument(parser)
    parser.add_argument("--output", "-o", default=None, help="write the page here (owner-only, 0600)")
    parser.add_argument("--serve", action="store_true", help="serve the page on 127.0.0.1 until Ctrl-C or SIGTERM")
    parser.add_argument("--port", type=int, default=0, help="port for --serve (default: a free one)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, extra: List[str]) -> int:
    from ..export.records import RecordError
    from ..export.view import render_html

    if not args.output and not args.serve:
        raise CLIError("give --output FILE.html and/or --serve")
    doc, chunks_key = _chunk_note(args, extra)
    try:
        title = _title(args.note) + (f" {args.note_id}" if args.note_id else "")
        page = render_html(doc, chunks_key, title=title)
    except RecordError as err:
        raise CLIError(str(err)) from err
    if args.output:
        _write_page(args.output, page)
        print(f"wrote {args.output}", file=sys.stderr)
    if args.serve:
        serve(page.encode("utf-8"), args.port)
    return 0


def _title(note: str) -> str:
    """The page title: the note's file name, never the folders above it (they may name people or hosts)."""
    return "stdin" if note == "-" else Path(note).name


def _write_page(path: str, page: str) -> None:
    """Owner-only (an existing page is narrowed too), in place only once complete."""
    from ..fileio import PRIVATE_MODE
    from .pending import PendingOutput

    output = PendingOutput(path, PRIVATE_MODE)
    try:
        output.stream.write(page)
    except BaseException:
        output.abort()
        raise
    output.commit()


def _one_note(items: Iterable[Any], note: str, note_id: Optional[str]) -> Any:
    """The note ``--id`` names (read up to it, not beyond), else the file's only note."""
    if note_id is not None:
        seen = 0
        for item in items:
            seen += 1
            if item.id == note_id:
                return item
        raise CLIError(f"no note with id {note_id!r} in {note} ({seen} note(s))")
    found = list(items)
    if len(found) != 1:
        ids = ", ".join(repr(item.id) for item in found[:3]) + (", ..." if len(found) > 3 else "")
        raise CLIError(f"view shows one note; {note} holds {len(found)}: pick one with --id ({ids})")
    return found[0]


def _chunk_note(args: argparse.Namespace, extra: List[str]):
    from ..corpus.inputs import read_file
    from ..pipeline import make_doc

    item = _one_note(read_file(args.note, encoding_of(args)), args.note, args.note_id)
    if item.error is not None:
        raise CLIError(item.error)
    resolved = resolve(pipeline_spec(args, extra))
    try:
        doc = resolved.nlp(make_doc(resolved.nlp, item))
    except ValueError as err:  # longer than max_length
        raise CLIError(str(err)) from err
    return doc, resolved.chunks_key


def serve(page: bytes, port: int = 0) -> None:
    """Serve ``page`` at http://127.0.0.1:PORT/ until SIGINT (Ctrl-C) or SIGTERM.

    Both handlers are our own, installed here: a background job of a non-interactive shell
    (``nohup make test &``, many CI runners) inherits SIGINT *ignored*, and Python then
    installs no handler of its own for it.
    """
    import signal
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            if self._headers_sent():
                self.wfile.write(page)

        def do_HEAD(self) -> None:  # noqa: N802
            self._headers_sent()

        def _headers_sent(self) -> bool:
            """The status line and headers; True when the page itself should follow."""
            if self.path.split("?")[0] not in ("/", "/index.html", "/view.html"):
                self.send_error(404)
                return False
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(page)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            return True

        def log_message(self, *args: Any) -> None:  # request lines are noise on stderr
            pass

    class Server(ThreadingHTTPServer):
        daemon_threads = True  # an open keep-alive connection must not hold up the exit
        block_on_close = False

    try:
        server = Server(("127.0.0.1", port), Handler)
    except OSError as err:
        raise CLIError(f"cannot serve on 127.0.0.1:{port}: {err.strerror or err}") from err

    def stop(signum: int, frame: Any) -> None:
        # shutdown() waits for serve_forever to leave its loop (within its 0.5 s poll), so it runs
        # in a thread of its own; an exception raised from the handler instead could land inside
        # the server's own bookkeeping (a request thread starting) and leave the process hanging
        threading.Thread(target=server.shutdown, daemon=True).start()

    previous = {}
    try:  # a signal may come the moment the address is printed: the handlers are inside the try
        for number in (signal.SIGINT, signal.SIGTERM):
            previous[number] = signal.signal(number, stop)
        print(f"serving http://127.0.0.1:{server.server_address[1]}/ (Ctrl-C to stop)", file=sys.stderr, flush=True)
        server.serve_forever()  # returns once a handler's shutdown() took effect (also if it came first)
    except KeyboardInterrupt:
        pass
    finally:
        for number, handler in previous.items():
            signal.signal(number, signal.SIG_IGN)  # a second signal must not cut the cleanup short
        server.server_close()
        for number, handler in previous.items():
            signal.signal(number, handler)
