"""The live board's page at ``/``: HTML from here, its script and style from ``static/``.

The HTML is a frame (columns, panels) and a boot document, the same for everyone: nothing
of the board is in it. With ``?code=`` the one-time code is traded for the page's session
(``access.py``), which the boot document then carries to the script; the script drops the
code from the address bar and keeps the session in the tab (``sessionStorage``, per origin),
so a reload goes on. The script proves the daemon (``/v1/web/proof``), then fills the frame
through the JSON API and keeps it live from ``/v1/events/stream``, its session in a header.
Without a session it says to run ``coord open``. Nothing is fetched from anywhere but this
daemon, and the Content-Security-Policy says so to the browser.
"""

from __future__ import annotations

import html
import json
from importlib import resources
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from coord import __version__
from coord.errors import CoordError
from coord.fast.clients import CLIENTS
from coord.server.context import Server
from coord.server.pipeline import check_host
from coord.server.web.access import legacy_cookie_reset

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
STATIC = {
    "app.js": "text/javascript; charset=utf-8",
    "proof.js": "text/javascript; charset=utf-8",
    "times.js": "text/javascript; charset=utf-8",
    "plan.js": "text/javascript; charset=utf-8",
    "work.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
}


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
        boot: dict[str, Any] = {"version": __version__, "clients": list(CLIENTS)}
        if code is not None:
            _, boot["session"] = web.new_session(web.redeem(code))
    except CoordError as err:
        return _note(err.http_status, err.message)
    answer = HTMLResponse(_board_html(boot), headers=SECURITY_HEADERS)
    if code is not None:
        answer.headers.append("set-cookie", legacy_cookie_reset(host))
    return answer


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


def _board_html(boot: dict[str, Any]) -> str:
    """The frame, with what the script starts from: the session just made (on ``?code=``),
    the version, and the clients (an agent named by coord's hooks is ``<client>-<8 hex>``:
    the page tells the client)."""
    text = json.dumps(boot)
    # JSON inside <script> ends at "</": "<" escaped cannot end it, and reads back the same
    text = text.replace("<", "\\u003c")
    return _TEMPLATE.format(boot=text, version=html.escape(__version__))


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
<script src="/web/proof.js" defer></script>
<script src="/web/times.js" defer></script>
<script src="/web/plan.js" defer></script>
<script src="/web/app.js" defer></script>
<script src="/web/work.js" defer></script>
</head>
<body>
<header>
  <h1>coord</h1>
  <span id="counts"></span>
  <input id="search" type="search" placeholder="search: words, #12, P3, an agent, a label"
    aria-label="search the board">
  <button id="new-item" type="button">New item</button>
  <span class="spacer"></span>
  <span id="link" class="link" data-state="connecting">connecting…</span>
  <span class="who">acting as <b></b></span>
</header>
<p id="signed-out" hidden><b class="why"></b> This page shows the board to the people running
its agents. To open it, run <code>coord open</code> in the repository: it opens (and prints) a
link that signs this browser in.</p>
<main>
  <section class="panel" id="compose" hidden><h2>New item</h2>
    <form class="form" autocomplete="off">
      <label class="wide">Title <input name="title" required></label>
      <label>Kind <select name="kind"><option>task</option><option>bug</option>
        <option>note</option><option>handoff</option></select></label>
      <label>Priority <select name="priority"><option value="0">0 (highest)</option>
        <option value="1">1</option><option value="2" selected>2</option>
        <option value="3">3</option><option value="4">4</option></select></label>
      <label>Labels <input name="labels" placeholder="ui, backend"></label>
      <label>Waits on <input name="deps" placeholder="#3, P2"></label>
      <label>For <input name="to" placeholder="an agent (--to)"></label>
      <label class="wide">Details <textarea name="body"></textarea></label>
      <div class="buttons"><button type="submit">Add</button>
        <button type="button" class="close">Close</button>
        <span class="err" role="alert"></span><span class="ok" role="status"></span></div>
    </form></section>
  <section class="panel" id="detail" hidden></section>
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
  <section class="panel" id="landing"><h2>Landing <span class="count"></span></h2>
    <div class="queue">
      <div class="group" id="queue-landing"><h3>Landing now</h3><ol class="rows"></ol></div>
      <div class="group" id="queue-queued"><h3>Queued <span class="count"></span></h3>
        <ol class="rows"></ol></div>
      <div class="group" id="queue-rework"><h3>Needs rework <span class="count"></span></h3>
        <ol class="rows"></ol></div>
      <div class="group" id="queue-merged"><h3>Merged, recent</h3><ol class="rows"></ol></div>
    </div></section>
  <section class="panels">
    <div class="panel" id="agents"><h2>Agents</h2><ul class="rows"></ul></div>
    <div class="panel" id="files"><h2>Held files</h2><div class="tree"></div></div>
    <div class="panel" id="plan"><h2>Plan</h2>
      <input id="plan-doc" list="plan-docs" placeholder="a design document: docs/plan.md"
        aria-label="design document"><datalist id="plan-docs"></datalist>
      <ul class="legend">
        <li class="claimable">claimable now</li><li class="claimed">claimed</li>
        <li class="needs">needs a human</li><li class="landing">landing</li>
        <li class="waiting">waiting</li><li class="done">done</li></ul>
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
