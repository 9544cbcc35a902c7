"""The HTML view (checked in real headless Chromium), its CLI and server, and displaCy rendering."""
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
import spacy

from spacy_clinchunk.attrs import ASSERTION_VIEW_KEY, register_extensions
from spacy_clinchunk.cli import main
from spacy_clinchunk.export.records import RecordError
from spacy_clinchunk.export.view import ASSERTION_COLORS, label_by_assertion, render_displacy, render_html

ROOT = Path(__file__).resolve().parents[2]  # tests/<wing>/test_x.py -> the repository
NOTE = ROOT / "resources" / "examples" / "discharge_summary_en.txt"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


class Chunks(HTMLParser):
    """Chunk elements of a page: attributes and text content (cues are nested marks)."""

    def __init__(self):
        super().__init__()
        self.chunks, self.depth, self.urls = [], 0, []

    def handle_starttag(self, tag, attributes):
        attributes = dict(attributes)
        self.urls += [v for k, v in attributes.items() if k in ("src", "href") and v]
        if self.depth:
            self.depth += 1
        elif "chunk" in (attributes.get("class") or "").split():
            self.chunks.append({**attributes, "text": ""})
            self.depth = 1

    def handle_endtag(self, tag):
        if self.depth:
            self.depth -= 1

    def handle_data(self, data):
        if self.depth:
            self.chunks[-1]["text"] += data


@pytest.fixture(scope="module")
def doc(assertion_nlp):
    nlp = assertion_nlp
    register_extensions()
    doc = nlp.make_doc(NOTE.read_text(encoding="utf-8"))
    doc._.clin_doc_id, doc._.clin_source = "examples/discharge_summary_en.txt", str(NOTE)
    return nlp(doc)


def _parse(page):
    parser = Chunks()
    parser.feed(page)
    return parser


def test_page_has_every_chunk_with_offsets_assertion_and_cues(doc):
    page = render_html(doc)
    parsed = _parse(page)
    spans = list(doc.spans["clin_chunks"])
    assert len(parsed.chunks) == len(spans) > 50
    for element, span in zip(sorted(parsed.chunks, key=lambda c: int(c["data-index"])), spans):
        assert (int(element["data-start"]), int(element["data-end"])) == (span.start_char, span.end_char)
        assert element["text"] == span.text
        assert element["data-assertion"] == span._.clin_assertion
        assert f"assertion-{span._.clin_assertion}" in element["class"].split()
    assert page.count('<mark class="cue"') >= sum(1 for s in spans if s._.clin_assertion == "negated")
    assert parsed.urls == [] and "http" not in page.replace("http-equiv", "")
    assert "default-src 'none'" in page  # the browser may fetch nothing


def _context_doc():
    nlp = spacy.blank("en")
    register_extensions()
    doc = nlp("Chest pain at rest. No fever.")
    doc.spans["windows"] = [doc[0:5], doc[3:8]]  # overlapping
    doc.spans["windows"][0]._.clin_context = "Cardiology note <follow-up>"
    return doc


def test_context_on_hover_overlaps_unassessed_and_missing_group():
    doc = _context_doc()
    page = render_html(doc, "windows")
    chunks = _parse(page).chunks
    assert [c["text"] for c in chunks] == [s.text for s in doc.spans["windows"]]
    assert chunks[0]["data-context"] == "Cardiology note <follow-up>" and "data-context" not in chunks[1]
    assert {c["data-assertion"] for c in chunks} == {"unassessed"} and 'class="note cards"' in page
    with pytest.raises(RecordError, match="no span group 'clin_chunks'"):
        render_html(doc)


def test_displacy_shows_assertion_labels(doc):
    original = [(s.start, s.end, s.label_) for s in doc.spans["clin_chunks"]]
    html = render_displacy(doc, "clin_chunks")
    assert ASSERTION_VIEW_KEY == label_by_assertion(doc)
    labels = [s.label_ for s in doc.spans[ASSERTION_VIEW_KEY]]
    assert labels == [s._.clin_assertion for s in doc.spans["clin_chunks"]]
    assert ">negated<" in html.replace("\n", "").replace(" ", "") and ASSERTION_COLORS["negated"] in html
    assert [(s.start, s.end, s.label_) for s in doc.spans["clin_chunks"]] == original


def test_cli_writes_an_owner_only_page(tmp_path, capsys):
    out = tmp_path / "view.html"
    out.write_text("old")
    os.chmod(out, 0o644)
    assert main(["view", str(NOTE), "--strategy", "assertion", "--output", str(out)]) == 0
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    assert len(_parse(out.read_text(encoding="utf-8")).chunks) > 50
    assert main(["view", str(NOTE), "--strategy", "assertion"]) == 2
    assert capsys.readouterr().err.strip().endswith("error: give --output FILE.html and/or --serve")


def test_cli_picks_one_note_of_a_jsonl_file_by_id(tmp_path, capsys):
    notes = tmp_path / "notes.jsonl"
    lines = [{"id": "n1", "text": "No fever.\n"}, {"id": "n2", "text": NOTE.read_text(encoding="utf-8")}, {"id": "n3", "text": "Cough."}]
    notes.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    out = tmp_path / "n2.html"
    assert main(["view", str(notes), "--id", "n2", "--output", str(out)]) == 0
    page = _parse(out.read_text(encoding="utf-8"))
    assert len(page.chunks) > 50  # the long note, not one of the one-liners
    assert main(["view", str(notes), "--id", "n9", "--output", str(out)]) == 2
    assert "no note with id 'n9'" in capsys.readouterr().err
    assert main(["view", str(notes), "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pick one with --id" in err and "'n1'" in err


def _ignore_sigint():
    """What a background job of a non-interactive shell inherits (``nohup make test &``, CI runners)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _start_server(args, inherit_ignored_sigint=True):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "spacy_clinchunk", "view", str(NOTE), *args, "--serve", "--port", "0"],
        stderr=subprocess.PIPE, text=True, env=env, cwd=str(ROOT),
        preexec_fn=_ignore_sigint if inherit_ignored_sigint else None,
    )
    before = []
    for line in proc.stderr:
        if line.startswith("serving "):
            assert before == [], before  # the command's subprocess smoke test: no log noise first
            return proc, line.split()[1]
        before.append(line)
    proc.wait(timeout=10)
    raise AssertionError(f"server did not start (exit {proc.returncode})")


def _stop(proc, signum=signal.SIGTERM):
    """The server's own handlers end it at once, with status 0, whatever it inherited. Without
    them a server that inherited SIGINT ignored never stops; the wait covers the interpreter's
    teardown (torch's alone takes seconds on a loaded machine)."""
    proc.send_signal(signum)
    try:
        code = proc.wait(timeout=60)
        assert code == 0, proc.stderr.read()[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.slow
def test_serve_on_loopback_answers_get_and_head_and_stops_on_sigterm_with_sigint_ignored():
    from urllib.error import HTTPError
    from urllib.request import Request, urlopen

    proc, url = _start_server(["--strategy", "simple"])
    try:
        assert url.startswith("http://127.0.0.1:")
        with urlopen(url, timeout=10) as response:
            assert response.headers["Content-Type"].startswith("text/html")
            body = response.read()
            assert 'class="chunk' in body.decode("utf-8")
        with urlopen(Request(url, method="HEAD"), timeout=10) as response:
            assert response.status == 200 and response.read() == b""
            assert int(response.headers["Content-Length"]) == len(body)
            assert response.headers["Content-Type"] == "text/html; charset=utf-8"
        with pytest.raises(HTTPError):
            urlopen(url + "other", timeout=10)
    finally:
        _stop(proc, signal.SIGTERM)


@pytest.mark.slow
def test_serve_stops_on_sigint_even_when_it_was_inherited_ignored():
    proc, _ = _start_server(["--strategy", "simple"], inherit_ignored_sigint=True)
    _stop(proc, signal.SIGINT)


def _browser(playwright, tmp_path):
    return playwright.chromium.launch_persistent_context(
        str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS
    )


def _watch(page):
    """Console errors (a script the CSP blocked, a script error) collected as they come."""
    problems = []
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    return problems


def _detail(page):
    """The side panel's rows, ``{"Offsets": "740\u2013756 (16 characters)", ...}``."""
    return dict(zip(page.locator("#detail dt").all_inner_texts(), page.locator("#detail dd").all_inner_texts()))


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_page_in_headless_chromium(doc, tmp_path):
    playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    proc, url = _start_server(["--strategy", "assertion"], inherit_ignored_sigint=False)
    requests = []
    try:
        with playwright.sync_playwright() as p:
            context = _browser(p, tmp_path)
            try:
                page = context.new_page()
                problems = _watch(page)
                context.on("request", lambda request: requests.append(request.url))
                page.goto(url)
                elements = page.locator(".chunk")
                spans = list(doc.spans["clin_chunks"])
                assert elements.count() == len(spans)
                found = elements.evaluate_all(
                    "els => els.map(e => [e.dataset.index, e.textContent, e.className, e.dataset.start, e.dataset.end])"
                )
                for index, text, css, start, end in found:
                    span = spans[int(index)]
                    assert text == span.text and (int(start), int(end)) == (span.start_char, span.end_char)
                    assert css.split()[:2] == ["chunk", f"assertion-{span._.clin_assertion}"]
                negated = page.locator('.chunk[data-assertion="negated"]').first
                colour = negated.evaluate("e => getComputedStyle(e).backgroundColor")
                red, green, blue = (int(ASSERTION_COLORS["negated"][i : i + 2], 16) for i in (1, 3, 5))
                assert colour == f"rgb({red}, {green}, {blue})"
                shot = Path(os.environ.get("CLINCHUNK_VIEW_SCREENSHOT") or tmp_path / "view.png")
                page.screenshot(path=str(shot))
                assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
                assert problems == [], problems  # the script ran under the page's own CSP
            finally:
                context.close()
    finally:
        _stop(proc)
    off_machine = [u for u in requests if not u.startswith(url)]
    assert requests and not off_machine, off_machine


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_detail_panel_filter_search_and_keyboard_in_headless_chromium(doc, tmp_path):
    playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    spans = list(doc.spans["clin_chunks"])
    with playwright.sync_playwright() as p:
        context = _browser(p, tmp_path)
        try:
            page = context.new_page()
            problems = _watch(page)
            page.set_content(render_html(doc, title="discharge_summary_en.txt"))
            # hover: offsets, section, status in words and cues
            target = next(i for i, s in enumerate(spans) if s._.clin_assertion == "negated" and s._.clin_section)
            span = spans[target]
            page.locator(f"#chunk-{target}").hover()
            shown = _detail(page)
            assert shown["Offsets"].startswith(f"{span.start_char}\u2013{span.end_char}")
            assert shown["Section"] == str(span._.clin_section)
            assert shown["Status"] == "negated: stated absent or ruled out"
            assert span._.clin_assertion_cues[0]["text"] in shown["Cues"]
            # headers are styled as headers, not as affirmed chunks
            header = page.locator('.chunk[data-kind="header"]').first
            assert header.inner_text() == "DISCHARGE SUMMARY"
            assert header.evaluate("e => getComputedStyle(e).backgroundColor") == "rgba(0, 0, 0, 0)"
            assert header.evaluate("e => getComputedStyle(e).fontWeight") == "700"
            # click selects (the panel stays on it while the pointer moves on), click again releases
            page.locator(f"#chunk-{target}").click()
            page.locator("#chunk-0").hover()
            assert page.locator("#detail h2").inner_text() == f"Chunk {target} (selected)"
            assert page.locator(f"#chunk-{target}").get_attribute("aria-pressed") == "true"
            page.keyboard.press("Escape")
            assert page.locator(".chunk.selected").count() == 0
            # keyboard: Tab reaches the filters, the search box and the chunks; Enter and Space select
            page.locator("#search").focus()
            page.keyboard.press("Shift+Tab")
            assert page.evaluate("document.activeElement.value") == "header"  # the last filter box
            page.keyboard.press("Tab")
            page.keyboard.press("Tab")
            assert page.evaluate("document.activeElement.id") == "clear"
            page.keyboard.press("Tab")
            focused = page.evaluate("document.activeElement.id")
            assert focused == "chunk-0", focused
            assert _detail(page)["Offsets"].startswith(f"{spans[0].start_char}\u2013")  # focus shows the details
            page.keyboard.press("Enter")
            assert page.locator("#chunk-0").get_attribute("aria-pressed") == "true"
            page.keyboard.press("Space")
            assert page.locator("#chunk-0").get_attribute("aria-pressed") == "false"
            # filter by status: negated chunks lose their colour and leave the tab order
            page.locator('.filter input[value="negated"]').uncheck()
            negated = sum(1 for s in spans if s._.clin_assertion == "negated" and "header" != _kind(page, s))
            assert page.locator(".chunk.filtered").count() == negated > 0
            assert page.locator('.chunk.filtered[data-assertion="affirmed"]').count() == 0
            assert page.locator("#match-count").inner_text() == f"{len(spans) - negated} of {len(spans)} shown"
            page.locator('.filter input[value="negated"]').check()
            # search: matching chunks stand out, the rest dim; Esc in the box clears it
            page.locator("#search").fill("seizure")
            hits = sum(1 for s in spans if "seizure" in s.text.lower())
            assert page.locator(".chunk.match").count() >= hits > 0
            assert page.locator(".chunk.dim").count() == len(spans) - page.locator(".chunk.match").count()
            page.keyboard.press("Escape")
            assert page.locator("#search").input_value() == "" and page.locator(".chunk.dim").count() == 0
            assert problems == [], problems
        finally:
            context.close()


def _kind(page, span):
    return page.locator(f'.chunk[data-start="{span.start_char}"][data-end="{span.end_char}"]').first.get_attribute("data-kind")


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_focus_spans_inside_their_chunks_and_window_context_in_the_panel(tmp_path):
    playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    from spacy_clinchunk.pipeline import load_pipeline as load_nlp

    focus_doc = load_nlp("retrieval")(NOTE.read_text(encoding="utf-8"))
    chunks, focus = list(focus_doc.spans["clin_chunks"]), list(focus_doc.spans["clin_focus"])
    with playwright.sync_playwright() as p:
        context = _browser(p, tmp_path)
        try:
            page = context.new_page()
            problems = _watch(page)
            for key in ("clin_focus", "clin_chunks"):  # either group: the chunks, the focus marked inside
                page.set_content(render_html(focus_doc, key))
                assert page.locator(".chunk").count() == len(chunks)
                assert "affirmed" not in page.locator(".legend").inner_text()
                assert "No assertion status is set on these chunks" in page.locator(".legend").inner_text()
                marked = page.locator(".chunk").evaluate_all(
                    "cs => cs.map(c => Array.from(c.querySelectorAll('mark.focus')).map(m => m.textContent).join('').length)"
                )
                for chunk, length in zip(chunks, marked):  # every character of its focus spans, and no other
                    covered = {i for n in chunk._.clin_focus_ids or () for i in range(focus[n].start_char, focus[n].end_char)}
                    assert length == len(covered & set(range(chunk.start_char, chunk.end_char)))
                assert sum(marked) > 0
            with_focus = next(i for i, c in enumerate(chunks) if c._.clin_focus_ids)
            page.locator(f"#chunk-{with_focus}").hover()
            first = focus[chunks[with_focus]._.clin_focus_ids[0]]
            assert f"'{first.text}' {first.start_char}-{first.end_char}" in _detail(page)["Focus"]
            page.set_content(render_html(_context_doc(), "windows"))  # RAG windows: context in the side panel
            assert "windows" in page.locator(".legend").inner_text()
            page.locator(".chunk").first.click()
            assert _detail(page)["Context"] == "Cardiology note <follow-up>"
            assert page.locator("#detail h2").inner_text() == "Window 0 (selected)"
            assert problems == [], problems
        finally:
            context.close()


@pytest.mark.parametrize("name", ["discharge_summary_en_flat.txt", "discharge_summary_en.txt", "arztbrief_de.txt"])
def test_the_page_counts_the_headers_the_records_flag(name):
    """One header fact: the page's headers are the records' ``is_header`` chunks, flattened
    exports included (the view counted none of the flattened note's fifteen-odd headers)."""
    from spacy_clinchunk.export.records import records_of
    from spacy_clinchunk.export.view_chunks import HEADER, kinds_of
    from spacy_clinchunk.pipeline import resolve_pipeline

    resolved = resolve_pipeline("default")
    doc = resolved.nlp((NOTE.parent / name).read_text(encoding="utf-8"))
    records = records_of(doc, resolved)
    kinds = kinds_of(doc, list(doc.spans[resolved.chunks_key]))
    assert [k == HEADER for k in kinds] == [r["is_header"] for r in records]
    assert sum(r["is_header"] for r in records) >= 8
    page = render_html(doc, resolved.chunks_key)
    assert page.count('data-kind="header"') == sum(r["is_header"] for r in records)
