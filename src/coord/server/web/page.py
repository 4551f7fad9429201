"""The live board's page at ``/``: HTML from here, its script and style from ``static/``.

The HTML is a frame (columns, panels) and a boot document: whom the page acts as, its CSRF
token, the board's clock and the last event's number. The script fills the frame through the
JSON API and keeps it live from ``/v1/events/stream``. Nothing is fetched from anywhere but
this daemon, and the Content-Security-Policy says so to the browser.

Without a session the page is a short note saying to run ``coord open``; with ``?code=`` it
trades the one-time code for the session cookie and sends the browser back to ``/``, so the
code leaves the address bar (and the history) at once.
"""

from __future__ import annotations

import html
import json
from importlib import resources
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from coord import __version__
from coord.errors import CoordError
from coord.fast.clients import CLIENTS
from coord.server.context import Server
from coord.server.pipeline import check_host
from coord.server.web.access import Session

# Only this daemon: no inline script, no other origin, no frames around the page.
SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}
STATIC = {"app.js": "text/javascript; charset=utf-8", "app.css": "text/css; charset=utf-8"}


# HTML and files for people, not JSON: outside the route table and the OpenAPI document
PAGE_PATHS = ("/", "/web/{name}")


def page_routes() -> list[Route]:
    return [
        Route("/", board_page, methods=["GET"]),
        Route("/web/{name}", static_file, methods=["GET"]),
    ]


async def board_page(request: Request) -> Response:
    server: Server = request.app.state.coord
    host = request.headers.get("host", "")
    web = server.web
    try:
        if server.check_host:
            check_host(host)
        if web is None:
            return _note(404, "This daemon serves no web page.")
        code = request.query_params.get("code")
        if code is not None:
            name = web.redeem(code)
            _, value = web.new_session(name)
            answer = RedirectResponse("/", status_code=303, headers=SECURITY_HEADERS)
            answer.headers.append("set-cookie", web.cookie_header(host, value))
            return answer
        cookies = request.headers.get("cookie")
        session = web.from_cookie(host, cookies) if cookies else None
    except CoordError as err:
        return _note(err.http_status, err.message)
    if session is None:
        return _note(
            401,
            "This page shows the board to the people running its agents. To open it, run "
            "`coord open` in the repository: it prints (and opens) a link that signs this "
            "browser in.",
        )
    try:
        page = await server.call(_board_html, server, session)
    except CoordError as err:  # the board cannot be read now (its database is not answering)
        return _note(err.http_status, err.message)
    return HTMLResponse(page, headers=SECURITY_HEADERS)


async def static_file(request: Request) -> Response:
    name = request.path_params["name"]
    server: Server = request.app.state.coord
    try:
        if server.check_host:
            check_host(request.headers.get("host", ""))
    except CoordError as err:
        return _note(err.http_status, err.message)
    if name not in STATIC:
        return _note(404, f"no such file: /web/{name}")
    text = resources.files("coord.server.web").joinpath("static", name).read_bytes()
    return Response(text, media_type=STATIC[name], headers=SECURITY_HEADERS)


def boot_document(server: Server, session: Session) -> dict[str, Any]:
    """What the script starts from. ``server_now`` is the board's clock: every countdown is
    reckoned from it plus the time since the page loaded, never from the browser's clock."""
    board = server.board
    assert server.web is not None
    return {
        "as": session.name,
        "csrf": server.web.csrf_token(session),
        "server_now": board.now(),
        "last_seq": board.last_seq(),
        "version": __version__,
        # an agent named by coord's hooks is `<client>-<8 hex>`: the page tells the client
        "clients": list(CLIENTS),
    }


def _board_html(server: Server, session: Session) -> str:
    boot = json.dumps(boot_document(server, session))
    # JSON inside <script> ends at "</": "<" escaped cannot end it, and reads back the same
    boot = boot.replace("<", "\\u003c")
    name = html.escape(session.name)
    return _TEMPLATE.format(boot=boot, name=name, version=html.escape(__version__))


def _note(status: int, message: str) -> HTMLResponse:
    body = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>coord</title>'
        '<link rel="stylesheet" href="/web/app.css"><link rel="icon" href="data:,"></head>'
        '<body class="note"><h1>coord</h1>'
        f"<p>{html.escape(message)}</p></body></html>"
    )
    return HTMLResponse(body, status_code=status, headers=SECURITY_HEADERS)


_TEMPLATE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>coord: the live board</title>
<link rel="stylesheet" href="/web/app.css">
<link rel="icon" href="data:,">
<script id="boot" type="application/json">{boot}</script>
<script src="/web/app.js" defer></script>
</head>
<body>
<header>
  <h1>coord</h1>
  <span id="counts"></span>
  <span class="spacer"></span>
  <span id="link" class="link" data-state="connecting">connecting…</span>
  <span class="who">acting as <b>{name}</b></span>
</header>
<main>
  <section class="columns">
    <div class="column" id="col-ready"><h2>Ready <span class="count"></span></h2>
      <ol class="rows"></ol><nav class="pager"></nav></div>
    <div class="column" id="col-claimed"><h2>Claimed <span class="count"></span></h2>
      <ol class="rows"></ol><nav class="pager"></nav></div>
    <div class="column" id="col-needs"><h2>Needs human <span class="count"></span></h2>
      <ol class="rows"></ol><nav class="pager"></nav></div>
    <div class="column" id="col-done"><h2>Done <span class="count"></span></h2>
      <ol class="rows"></ol><nav class="pager"></nav></div>
  </section>
  <section class="panels">
    <div class="panel" id="agents"><h2>Agents</h2><ul class="rows"></ul></div>
    <div class="panel" id="files"><h2>Held files</h2><div class="tree"></div></div>
    <div class="panel" id="plan"><h2>Plan</h2>
      <input id="plan-doc" list="plan-docs" placeholder="a design document: docs/plan.md"
        aria-label="design document"><datalist id="plan-docs"></datalist>
      <div class="graph"></div></div>
    <div class="panel" id="feed"><h2>Activity</h2>
      <div class="filters">
        <input id="feed-agent" placeholder="agent" aria-label="filter by agent">
        <input id="feed-item" placeholder="item" aria-label="filter by item">
      </div>
      <ol class="rows"></ol></div>
  </section>
</main>
<footer>coord {version}</footer>
</body>
</html>
"""
