"""``whenpro view --serve`` answers only its own page (issue 33, item 1).

The URL it prints carries a random token (as Jupyter's does); the page and the WebSocket
both check it, and both check that ``Host`` names the served address (no DNS rebinding)
and the WebSocket that ``Origin`` is the served page's own. A real headless Chromium on a
page from a second local origin (another port) tries to open the WebSocket, with and
without the token: both are refused; the page opened with the token works.
"""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.test_serve_browser import PAGE_WAIT_MS, TERMINAL_TAP, Served, wait_for_text


@pytest.fixture
def served(team_file: Path, tmp_path: Path) -> Iterator[Served]:
    server = Served(team_file, tmp_path / "server.log")
    try:
        yield server
    finally:
        server.stop()


def response(served: Served, target: str, **headers: str) -> http.client.HTTPResponse:
    """The answer to ``GET target`` on the server (read), with ``headers`` (``Host``
    among them when given; names with ``_`` for ``-``)."""
    connection = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
    try:
        connection.putrequest("GET", target, skip_host="Host" in headers)
        for name, value in headers.items():
            connection.putheader(name.replace("_", "-"), value)
        connection.endheaders()
        answer = connection.getresponse()
        answer.read()
        return answer
    finally:
        connection.close()


def status(served: Served, target: str, **headers: str) -> int:
    """The status of ``GET target`` (see :func:`response`)."""
    return response(served, target, **headers).status


def upgrade(served: Served, target: str, **headers: str) -> int:
    """The status of a WebSocket handshake on ``target`` (101 when accepted)."""
    handshake = {
        "Upgrade": "websocket",
        "Connection": "Upgrade",
        "Sec_WebSocket_Key": "dGhlIHNhbXBsZSBub25jZQ==",
        "Sec_WebSocket_Version": "13",
    }
    return status(served, target, **handshake, **headers)


def test_the_printed_url_carries_a_token_the_page_requires(served: Served) -> None:
    own = f"127.0.0.1:{served.port}"
    assert len(served.token) >= 32
    assert served.url == f"http://{own}/?token={served.token}"
    assert status(served, "/") == 403
    assert status(served, "/?token=" + "0" * len(served.token)) == 403
    page = response(served, f"/?token={served.token}")
    assert page.status == 200 and page.getheader("Referrer-Policy") == "no-referrer"
    assert status(served, f"/?token={served.token}", Host=f"localhost:{served.port}") == 200
    # DNS rebinding: a foreign name resolving to 127.0.0.1 is refused, even with the token
    assert status(served, f"/?token={served.token}", Host=f"attacker.example:{served.port}") == 403
    assert status(served, "/static/js/textual.js", Host=f"attacker.example:{served.port}") == 403


def test_the_websocket_needs_the_token_the_host_and_its_own_origin(served: Served) -> None:
    own = f"http://127.0.0.1:{served.port}"
    ws = f"/ws/{served.token}?width=80&height=24"
    assert upgrade(served, "/ws?width=80&height=24", Origin=own) in (403, 404)
    assert upgrade(served, "/ws/" + "0" * len(served.token), Origin=own) == 403
    assert upgrade(served, ws, Origin="http://127.0.0.1:1") == 403
    assert upgrade(served, ws, Origin="null") == 403
    assert upgrade(served, ws, Origin=own, Host=f"attacker.example:{served.port}") == 403
    assert upgrade(served, ws, Origin=own) == 101


#: A page of another origin that tries the server's WebSocket: ``window.__tries`` is a
#: promise of {url: "open" | "refused"}.
FOREIGN_PAGE = """<!doctype html><html><body><script>
const attempt = (url) => new Promise((resolve) => {
  const socket = new WebSocket(url);
  socket.onopen = () => { socket.send(JSON.stringify(["stdin", "q"])); resolve("open"); };
  socket.onerror = () => resolve("refused");
});
window.__tries = (async () => {
  const out = {};
  for (const url of URLS) { out[url] = await attempt(url); }
  return out;
})();
</script></body></html>"""


class ForeignOrigin:
    """A second local HTTP server (another port: another origin) serving one page."""

    def __init__(self, page: str) -> None:
        body = page.encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - stdlib name
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_page_of_another_origin_cannot_open_the_session(browser: Any, served: Served) -> None:
    host = f"127.0.0.1:{served.port}"
    urls = [
        f"ws://{host}/ws?width=80&height=24",  # what textual-serve alone answered
        f"ws://{host}/ws/{served.token}?width=80&height=24",  # even with a leaked token
    ]
    foreign = ForeignOrigin(FOREIGN_PAGE.replace("URLS", repr(urls)))
    try:
        context = browser.new_context()
        page = context.new_page()
        page.goto(foreign.url)
        tries = page.evaluate("window.__tries")
        assert tries == dict.fromkeys(urls, "refused"), served.output()
        assert served.sessions() == []
        context.close()
    finally:
        foreign.close()

    # the printed URL (with its token) opens the app
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.add_init_script(TERMINAL_TAP)
    page = context.new_page()
    page.goto(served.url)
    wait_for_text(page, 0, "toyteam")
    assert urlsplit(page.url).netloc == host
    page.wait_for_function("document.body.classList.contains('-first-byte')", timeout=PAGE_WAIT_MS)
    context.close()
