"""`coord watch`'s frame: the board laid out in a given width and height, as styled text.

Pure: a snapshot, the recent events and the board's time in; lines of (text, style) segments
out, each at most ``width - 1`` columns (a terminal's last cell scrolls), cut with an ellipsis;
every word an agent wrote passes ``render.one_line`` (an escape sequence in a title is shown,
not obeyed). The curses loop and ``--once`` both print these lines.

The sections share the height fairly: each gets its heading, then rows are dealt one at a time
in turn (Claimed, Needs human, Landing, Ready, Held files, Activity) until the screen is full; a cut
section ends with "… N more". On 80×24 each still shows a few rows.
"""

from __future__ import annotations

import unicodedata

from coord.cli import render
from coord.cli.render import duration
from coord.cli.watch_board import landing_holder, seconds_left, waits_on

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from coord.cli.watch_board import Snapshot

    Segment = tuple[str, str]  # (text, style): "", "bold", "dim", "ok", "warn", "bad"
    Line = list[Segment]

PANES = ("all", "claimed", "needs", "landing", "ready", "files", "activity")
HEARTBEAT_FRESH, HEARTBEAT_STALE = 60.0, 300.0  # seconds: ok below the first, bad past the second
LEASE_ENDING = 60.0  # a lease with less left than this is shown as a warning
HOLDER_WIDTH = 12


def frame(
    snapshot: Snapshot,
    events: list[dict[str, Any]],
    *,
    width: int,
    height: int | None,
    agent: str | None = None,
    pane: str = "all",
    trouble: str | None = None,
    ellipsis: str = "…",
) -> list[Line]:
    """The frame's lines; ``height`` None: every row read (``--once``), no key help."""
    now = snapshot.now()
    sections = [
        ("claimed", _claimed(snapshot, now, agent)),
        ("needs", _needs_human(snapshot, agent)),
        ("landing", _landing(snapshot, agent)),
        ("ready", _ready(snapshot)),
        ("files", _files(snapshot, now, agent)),
        ("activity", _activity(events, agent)),
    ]
    chosen = [section for name, section in sections if pane in ("all", name)]
    lines = [_header(snapshot, now, trouble, ellipsis)]
    if height is not None and height < 3:  # room for the counts alone
        blank: list[Line] = [[("", "")]] * (height - 1)
        return [_fit(lines[0], width - 1, ellipsis), *blank][:height]
    if height is None:
        for heading, rows in chosen:
            lines += [heading, *rows]
    else:
        lines += _share(chosen, height - 2, ellipsis)
        lines += [[("", "")]] * (height - 1 - len(lines))
        lines.append(_footer(pane, agent, trouble, ellipsis))
    return [_fit(line, width - 1, ellipsis) for line in lines]


def _header(snapshot: Snapshot, now: float, trouble: str | None, ellipsis: str) -> Line:
    counts = snapshot.counts
    shown = " · ".join(
        f"{counts.get(state, 0):,} {word}"
        for state, word in (
            ("pending", "pending"),
            ("claimed", "claimed"),
            ("needs_human", "need a human"),
            ("done", "done"),
        )
    )
    line: Line = [("coord watch", "bold"), (f"  {_clock(now)}  {shown}", "")]
    if trouble:  # what it is, in full, is the last line's
        line.insert(1, (f"  reconnecting{ellipsis}", "bad"))
    return line


def _footer(pane: str, agent: str | None, trouble: str | None, ellipsis: str) -> Line:
    if trouble:
        return [(f"reconnecting{ellipsis} {render.one_line(trouble)}", "bad")]
    return [("q quit · r refresh · Tab pane: " + pane + " · f agent: " + (agent or "all"), "dim")]


def _claimed(snapshot: Snapshot, now: float, agent: str | None) -> tuple[Line, list[Line]]:
    items = [i for i in snapshot.claimed if agent in (None, i["claimed_by"])]
    rows = []
    for item in items:
        left = seconds_left(item["lease_expires_at"], now)
        seen = snapshot.last_seen(item["claimed_by"])
        age = None if seen is None else max(0.0, now - seen)
        rows.append(
            [
                (f"{_ref(item):<8}{_holder(item['claimed_by'])} ", ""),
                (f"{'lapsed' if left <= 0 else duration(left):>7}", _lease_style(left)),
                (" hb ", "dim"),
                (f"{'-' if age is None else duration(age):>6}", _freshness(age)),
                (f" {render.one_line(item['title'])}", ""),
                *([(f"  {render.one_line(item['branch'])}", "dim")] if item.get("branch") else []),
            ]
        )
    return _heading("Claimed", snapshot.counts.get("claimed", 0), agent), rows


def _landing(snapshot: Snapshot, agent: str | None) -> tuple[Line, list[Line]]:
    """The queue in submit order, then the items landing sent back, each with why."""
    items = [i for i in snapshot.landing if agent in (None, landing_holder(i))]
    rows: list[Line] = []
    for item in items:
        who: Line = [(f"{_ref(item):<8}{_holder(landing_holder(item))} ", "")]
        title = render.one_line(item["title"])
        if item["state"] == "needs_rework":
            rework = item.get("rework") or {}
            files = ", ".join(rework.get("files") or [])
            why = render.one_line(f"{rework.get('reason')}" + (f" in {files}" if files else ""))
            rows.append([*who, ("needs rework", "warn"), (f" {why}: {title}", "")])
        else:
            head = (item.get("submitted_head") or "")[:10]
            branch = render.one_line(item.get("branch") or "")
            rows.append([*who, ("queued", "ok"), (f" {branch} {head} {title}", "")])
    return _heading("Landing", len(items), agent), rows


def _needs_human(snapshot: Snapshot, agent: str | None) -> tuple[Line, list[Line]]:
    items = [i for i in snapshot.needs_human if agent in (None, i["claimed_by"])]
    rows = []
    for item in items:
        to = f" (for {item['escalate_to']})" if item.get("escalate_to") else ""
        question = render.one_line(str(item.get("question") or ""))
        rows.append(
            [
                (f"{_ref(item):<8}{_holder(item['claimed_by'])} asks{to}: ", ""),
                (question, "warn"),
            ]
        )
    return _heading("Needs human", snapshot.counts.get("needs_human", 0), agent), rows


def _ready(snapshot: Snapshot) -> tuple[Line, list[Line]]:
    rows = []
    for item in snapshot.ready:
        text = f"{_ref(item):<8}P{item['priority']} {render.one_line(item['title'])}"
        if item["ready"]:
            rows.append([(text, "ok")])
        else:
            rows.append([(f"{text}  ", "dim"), (f"[{waits_on(item, snapshot.ref_of)}]", "dim")])
    heading: Line = [
        (f"Ready {snapshot.ready_count}", "bold"),
        (f" of {snapshot.counts.get('pending', 0):,} pending (claimable first)", "dim"),
    ]
    return heading, rows


def _files(snapshot: Snapshot, now: float, agent: str | None) -> tuple[Line, list[Line]]:
    held = [r for r in snapshot.reservations if agent in (None, r["agent"])]
    rows = []
    for r in held:
        left = seconds_left(r["expires_at"], now)
        item = snapshot.ref_of(r["item"]) if r.get("item") is not None else "-"
        mode = "excl" if r["exclusive"] else "shared"
        rows.append(
            [
                (f"{'lapsed' if left <= 0 else duration(left):>7} ", _lease_style(left)),
                (f"{_holder(r['agent'])}{item:<7}{mode:<7}{render.one_line(r['pattern'])}", ""),
            ]
        )
    return _heading("Held files", len(held), agent), rows


def _concerns(event: dict[str, Any], agent: str | None) -> bool:
    """Everything, or what ``agent`` did and what is addressed to it (an ask of what it
    holds names it ``holder``; an answer to its ask names it in ``mentions``)."""
    if agent is None or event.get("agent") == agent:
        return True
    details = event.get("details") or {}
    return details.get("holder") == agent or agent in (details.get("mentions") or ())


def _activity(events: list[dict[str, Any]], agent: str | None) -> tuple[Line, list[Line]]:
    # heartbeats are the agents' pulse, shown as each claim's "hb" age: in the feed they
    # would push every other line off a small screen
    shown = [e for e in events if e["kind"] != "heartbeat" and _concerns(e, agent)]
    rows: list[Line] = [
        [(f"{e['at'][11:19]} ", "dim"), (render.one_line(render.event_summary(e)), "")]
        for e in shown
    ]
    return [("Activity", "bold"), (" newest first", "dim")], rows


def _heading(title: str, count: int, agent: str | None) -> Line:
    mine = [(f" (showing {agent}'s)", "dim")] if agent else []
    return [(f"{title} {count:,}", "bold"), *mine]


def _share(sections: list[tuple[Line, list[Line]]], room: int, ellipsis: str) -> list[Line]:
    """Deal ``room`` lines among the sections: headings first, then a row to each in turn."""
    sections = sections[: max(0, room)]
    given = [0] * len(sections)
    left = room - len(sections)
    while left > 0:
        dealt = False
        for index, (_, rows) in enumerate(sections):
            if left > 0 and given[index] < len(rows):
                given[index] += 1
                left -= 1
                dealt = True
        if not dealt:
            break
    lines: list[Line] = []
    for (heading, rows), count in zip(sections, given, strict=True):
        lines.append(heading)
        if count < len(rows):
            shown = rows[: count - 1] if count else []
            more = len(rows) - len(shown)
            lines += shown + ([[(f"  {ellipsis} {more} more", "dim")]] if count else [])
        else:
            lines += rows
            if not rows:
                lines[-1] = [*heading, (" · none", "dim")]
    return lines


def _fit(line: Line, width: int, ellipsis: str) -> Line:
    """The line cut to ``width`` columns, ending in an ellipsis when something was cut."""
    if sum(width_of(text) for text, _ in line) <= width:
        return line
    room = width - width_of(ellipsis)
    out: Line = []
    used = 0
    for text, style in line:
        for position, char in enumerate(text):
            used += _columns(char)
            if used > room:
                return [*out, (text[:position], style), (ellipsis, "dim")]
        out.append((text, style))
    return out


def width_of(text: str) -> int:
    return sum(_columns(char) for char in text)


def _columns(char: str) -> int:
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def _ref(item: dict[str, Any]) -> str:
    return render.item_ref(item["id"], item.get("key"))


def _holder(name: str | None) -> str:
    name = render.one_line(name or "-")
    if len(name) > HOLDER_WIDTH:
        name = name[: HOLDER_WIDTH - 1] + "~"
    return f"{name:<{HOLDER_WIDTH}} "


def _freshness(age: float | None) -> str:
    if age is None or age >= HEARTBEAT_STALE:
        return "bad"
    return "ok" if age < HEARTBEAT_FRESH else "warn"


def _lease_style(left: float) -> str:
    return "bad" if left <= 0 else "warn" if left < LEASE_ENDING else ""


def _clock(now: float) -> str:
    import time

    return time.strftime("%H:%M:%SZ", time.gmtime(now))
