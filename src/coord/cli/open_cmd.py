"""`coord open`: the live board's page in a browser, signed in as a person, no token pasted.

The daemon hands out a one-time code (good once, for a minute, with that daemon process) on
the board's token; the link carries it, and the page trades it for its session. The browser
is never given the link: a program's arguments are every local user's to read
(``/proc/PID/cmdline``), so it is given the ``file://`` address of a page only this user may
read that sends it on (the daemon writes it: ``coord.server.web.handoff``). The browser is
opened only where one can show (a display, or macOS), never under CI or a test run, and
never with ``--no-browser``: the link is printed either way (to this terminal only).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from coord import model
from coord.errors import InvalidInput
from coord.fast import identity

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from coord.cli.context import Context, Result


def args_open(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--no-browser",
        action="store_true",
        help="print the link only (default: also open it in a browser, where a display exists "
        "and not under CI, through a file only you can read: the link is never on a command "
        "line)",
    )


def cmd_open(args: argparse.Namespace, ctx: Context) -> Result:
    # the page is a person's, not an agent's: $COORD_AGENT (an agent's session) is not asked
    given = getattr(args, "agent", None)
    person = given or identity.person()  # the name the CLI acts under, one rule
    try:
        name = model.check_agent(person)
    except InvalidInput as err:
        if given:
            raise
        raise InvalidInput(
            f"your user name {person!r} cannot name the page's person ({err.message});"
            " pass --as NAME",
            field="agent",
        ) from None
    show = not args.no_browser and _can_show()
    answer = ctx.client.post("/v1/web/codes", {"agent": name, "file": show})
    url = f"{ctx.client.daemon_url()}{answer['path']}"
    handoff = answer.get("file")
    opened = bool(show and handoff and _open(Path(handoff).as_uri()))
    document = {
        "url": url,
        "as": answer["as"],
        "expires_at": answer["expires_at"],
        "opened": opened,
    }
    seconds = int(answer.get("expires_in", 60))
    text = (
        f"{url}\nopens the live board as {answer['as']}; the link works once, within "
        f"{seconds} s (run `coord open` again for another)"
    )
    if opened:
        text += "\nopened in your browser"
    return document, text


def _can_show() -> bool:
    if os.environ.get("CI") or os.environ.get("PYTEST_CURRENT_TEST"):
        return False
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _open(url: str) -> bool:
    import webbrowser

    try:
        return webbrowser.open(url)
    except webbrowser.Error:
        return False
