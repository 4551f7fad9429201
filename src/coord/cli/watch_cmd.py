"""`coord watch`: the board, live, in a terminal (for tmux users); ``--once`` prints one frame.

Only this command imports curses (``coord.cli.main`` loads this module when it runs). What a
frame reads and how it stays live is ``watch_board``; how it is laid out, ``watch_view``; this
is the terminal: keys, resizes, colours, and a terminal left as it was found (q, Ctrl-C, or an
error). It starts a daemon as any board command does, once; later it waits for one instead
(`coord stop` while it watches stops the daemon, and the view says "reconnecting…").
"""

from __future__ import annotations

import contextlib
import os
import sys

from coord.cli import watch_board, watch_view
from coord.errors import CoordError, InvalidInput

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any

    from coord.cli.context import Context, Result

ONCE_ROWS = 20  # items of each state read for --once and --json (the counts say how many)
TICK_MS = 250  # how often the screen is redrawn: countdowns move each second
EXIT_INTERRUPTED = 130
# style -> (curses colour, attribute); "" is the terminal's own
_COLOURS = {"ok": "COLOR_GREEN", "warn": "COLOR_YELLOW", "bad": "COLOR_RED"}


def args_watch(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--once",
        action="store_true",
        help="print one frame as plain text and exit: no curses, for scripts and pipes "
        "(--json: one JSON snapshot instead)",
    )
    p.add_argument(
        "--agent",
        metavar="NAME",
        help="show only this agent's claims, questions, held files and events "
        "(default: everyone; the f key cycles through the agents)",
    )


def cmd_watch(args: argparse.Namespace, ctx: Context) -> Result:
    as_json = bool(getattr(args, "json", False))
    if not (args.once or as_json) and not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise InvalidInput(
            "coord watch draws the board on a terminal, and this is not one: "
            "`coord watch --once` prints one frame as text (`--json`: one JSON snapshot)"
        )
    once = args.once or as_json
    rows = ONCE_ROWS if once else _terminal_rows()
    snapshot = watch_board.read_board(ctx.client, rows, events=True)
    if as_json:
        return snapshot.of(args.agent).to_dict(), ""
    if once:
        lines = watch_view.frame(
            snapshot,
            list(reversed(snapshot.events)),
            width=_terminal_columns(),
            height=None,
            agent=args.agent,
            ellipsis=_ellipsis(sys.stdout.encoding),
        )
        return snapshot.to_dict(), "\n".join("".join(t for t, _ in line) for line in lines)
    watcher = watch_board.Watcher(ctx.board_dir, snapshot, rows).start()
    return None, "", _run(watcher, args.agent)


def _run(watcher: watch_board.Watcher, agent: str | None) -> int:
    import curses
    import locale

    locale.setlocale(locale.LC_ALL, "")  # curses writes UTF-8 only under a UTF-8 locale
    # curses takes exported LINES and COLUMNS over the terminal's own size, and keeps them
    # across a resize: the window would never grow. The terminal knows its size.
    for variable in ("LINES", "COLUMNS"):
        os.environ.pop(variable, None)
    import signal

    def ended(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)  # through curses.wrapper, which restores the terminal

    for ending in (signal.SIGTERM, signal.SIGHUP):  # `kill`, the pane or the ssh closed
        signal.signal(ending, ended)
    try:
        return int(curses.wrapper(_Screen(watcher, agent).loop))
    except KeyboardInterrupt:  # Ctrl-C: curses.wrapper has restored the terminal
        return EXIT_INTERRUPTED
    except curses.error as err:  # no terminal curses knows (TERM unset, unknown)
        raise CoordError(
            f"cannot draw on this terminal ({err}; TERM={_term()}): "
            "`coord watch --once` prints one frame as text"
        ) from None


class _Screen:
    """The curses loop: draw a frame, wait a tick for a key, again."""

    def __init__(self, watcher: watch_board.Watcher, agent: str | None) -> None:
        self.watcher = watcher
        self.agent = agent
        self.pane = "all"
        self.styles: dict[str, int] = {}

    def loop(self, screen: Any) -> int:
        import curses

        self._colours(curses)
        with contextlib.suppress(curses.error):  # a terminal that cannot hide it shows it
            curses.curs_set(0)
        screen.timeout(TICK_MS)
        screen.keypad(True)
        ellipsis = _ellipsis(screen.encoding)
        while True:
            self._draw(screen, curses, ellipsis)
            key = screen.getch()
            if key in (ord("q"), ord("Q")):
                return 0
            if key in (ord("r"), ord("R")):
                self.watcher.refresh()
            elif key == ord("\t"):
                self.pane = watch_view.PANES[
                    (watch_view.PANES.index(self.pane) + 1) % len(watch_view.PANES)
                ]
            elif key == ord("f"):
                self.agent = _next_agent(self.watcher.snapshot, self.agent)
            elif key == curses.KEY_RESIZE:
                curses.update_lines_cols()
                self.watcher.refresh(rows=screen.getmaxyx()[0])

    def _draw(self, screen: Any, curses: Any, ellipsis: str) -> None:
        height, width = screen.getmaxyx()
        lines = watch_view.frame(
            self.watcher.snapshot,
            self.watcher.events(),
            width=width,
            height=height,
            agent=self.agent,
            pane=self.pane,
            trouble=self.watcher.trouble(),
            ellipsis=ellipsis,
        )
        screen.erase()
        for y, line in enumerate(lines[:height]):
            x = 0
            for text, style in line:
                # the screen's last cell: curses writes it, then complains
                with contextlib.suppress(curses.error):
                    screen.addstr(
                        y, x, _encodable(text, screen.encoding), self.styles.get(style, 0)
                    )
                x += watch_view.width_of(text)
        screen.refresh()

    def _colours(self, curses: Any) -> None:
        self.styles = {"bold": curses.A_BOLD, "dim": curses.A_DIM}
        if not curses.has_colors():
            self.styles.update(ok=0, warn=curses.A_BOLD, bad=curses.A_REVERSE)
            return
        curses.start_color()
        try:
            curses.use_default_colors()
            background = -1
        except curses.error:
            background = curses.COLOR_BLACK
        for number, (style, colour) in enumerate(_COLOURS.items(), 1):
            curses.init_pair(number, getattr(curses, colour), background)
            self.styles[style] = curses.color_pair(number)


def _next_agent(snapshot: watch_board.Snapshot, agent: str | None) -> str | None:
    """The agent after ``agent`` among those on the board; after the last, everyone (None)."""
    names = sorted(
        {a["name"] for a in snapshot.agents if a["active"]}
        | {i["claimed_by"] for i in snapshot.claimed + snapshot.needs_human if i["claimed_by"]}
    )
    if agent not in names:
        return names[0] if names else None
    index = names.index(agent) + 1
    return names[index] if index < len(names) else None


def _ellipsis(encoding: str | None) -> str:
    return "…" if (encoding or "").lower().replace("-", "") == "utf8" else "..."


def _encodable(text: str, encoding: str | None) -> str:
    """``text`` as the terminal's encoding can carry it (a C locale: ASCII, the rest escaped)."""
    if not encoding or encoding.lower().replace("-", "") == "utf8":
        return text
    text = text.replace("·", "|")  # the frame's own separator, one column either way
    return text.encode(encoding, "backslashreplace").decode(encoding)


def _terminal_rows() -> int:
    import shutil

    return shutil.get_terminal_size().lines


def _terminal_columns() -> int:
    import shutil

    return shutil.get_terminal_size().columns  # 80 off a terminal (a pipe)


def _term() -> str:
    return os.environ.get("TERM") or "unset"
