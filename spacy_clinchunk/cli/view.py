"""``view``: chunk one note and write (or serve on 127.0.0.1) a self-contained HTML page."""
import argparse
import sys
from typing import Any, List

from . import CLIError
from .source import add_source_arguments, resolve

DEFAULT_STRATEGY = "assertion"


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "view",
        help="an HTML page of one note's chunks, coloured by assertion",
        description="Chunk one note and show it as one self-contained HTML page (no network access). "
        "Extra --section.key value pairs override the config.",
    )
    parser.add_argument("note", help="a .txt file, or - for stdin")
    add_source_arguments(
        parser,
        strategy_help="named pipeline instead of --config (default: assertion)",
        spans_key_help="span group to show (default: the group the pipeline writes its chunks to)",
    )
    parser.add_argument("--output", "-o", default=None, help="write the page here (owner-only, 0600)")
    parser.add_argument("--serve", action="store_true", help="serve the page on 127.0.0.1 until Ctrl-C")
    parser.add_argument("--port", type=int, default=0, help="port for --serve (default: a free one)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, extra: List[str]) -> int:
    from ..export.records import RecordError
    from ..fileio import open_private
    from ..export.view import render_html

    if not args.output and not args.serve:
        raise CLIError("give --output FILE.html and/or --serve")
    doc = _chunk_note(args, extra)
    try:
        page = render_html(doc, args.spans_key)
    except RecordError as err:
        raise CLIError(str(err)) from err
    if args.output:
        try:
            with open_private(args.output) as out:
                out.write(page)
        except OSError as err:
            raise CLIError(f"cannot write {args.output}: {err.strerror or err}") from err
        print(f"wrote {args.output}", file=sys.stderr)
    if args.serve:
        serve(page.encode("utf-8"), args.port)
    return 0


def _chunk_note(args: argparse.Namespace, extra: List[str]):
    from ..attrs import register_extensions
    from ..corpus.inputs import read_file

    items = list(read_file(args.note))
    if len(items) != 1:
        raise CLIError(f"view shows one note; {args.note} holds {len(items)}")
    item = items[0]
    if item.error is not None:
        raise CLIError(item.error)
    nlp = resolve(args, extra, DEFAULT_STRATEGY).nlp
    register_extensions()
    doc = nlp.make_doc(item.text)
    doc._.clin_doc_id = item.id
    doc._.clin_source = item.source
    return nlp(doc)


def serve(page: bytes, port: int = 0) -> None:
    """Serve ``page`` at http://127.0.0.1:PORT/ until Ctrl-C (or SIGTERM)."""
    import signal
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            if self.path.split("?")[0] not in ("/", "/index.html", "/view.html"):
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(page)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args: Any) -> None:  # request lines are noise on stderr
            pass

    try:
        server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    except OSError as err:
        raise CLIError(f"cannot serve on 127.0.0.1:{port}: {err.strerror or err}") from err
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    print(f"serving http://127.0.0.1:{server.server_address[1]}/ (Ctrl-C to stop)", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
