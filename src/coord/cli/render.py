"""Human-readable output for the CLI. JSON mode bypasses all of this."""

from __future__ import annotations

import re

from coord.times import clock_of_iso, duration_text

TYPE_CHECKING = False  # typing costs ~10 ms at import; the CLI path avoids it
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from typing import Any

    from coord.errors import CoordError


# Characters a terminal acts on instead of showing: C0 and C1 controls but tab and newline
# (an ESC starts a sequence that can recolour, retitle or rewrite the screen; a CR overwrites
# the line) and the bidirectional overrides that make text read other than it is. Titles,
# bodies and replies are any agent's words: printed raw, one agent could write into a human's
# terminal.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_UNSAFE_IN_A_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escaped(match: re.Match[str]) -> str:
    return repr(match.group())[1:-1]  # "\x1b", "\r", "\u202e": visible, harmless


def for_terminal(text: str) -> str:
    """``text`` with what a terminal would act on shown as escapes; newlines and tabs kept.
    Every human-readable answer passes here before it is printed."""
    return _UNSAFE.sub(_escaped, text)


def one_line(text: str) -> str:
    """A field shown on one line of a table (a title): its newlines shown as ``\n`` too."""
    return _UNSAFE_IN_A_LINE.sub(_escaped, text)


def claim_line(claim: dict[str, Any]) -> str:
    key = (claim.get("item") or {}).get("key")
    line = (
        f"claimed {claim['id']}{f' ({key})' if key else ''}: {one_line(claim['title'])} "
        f"as {claim['agent']} "
        f"(token {claim['token']}, lease until {clock_of_iso(claim['lease_expires_at'])})"
    )
    if claim.get("takeover_from") == claim["agent"]:
        line += "; your lease had run out: claimed again, with a new token"
    elif claim.get("takeover_from"):
        line += f"; took over from {claim['takeover_from']}, whose lease had run out"
    rework = (claim.get("item") or {}).get("rework")
    if rework:  # sent back from landing: what to fix, without asking
        files = ", ".join(rework.get("files") or [])
        line += f"\nsent back from landing: {rework.get('reason')}" + (
            f" in {one_line(files)}" if files else ""
        )
        if rework.get("check_output"):
            tail = rework["check_output"].strip().splitlines()[-5:]
            line += "\n" + "\n".join(f"  | {one_line(t)}" for t in tail)
    return line


def items_table(items: Sequence[dict[str, Any]]) -> str:
    if not items:
        return "no items"
    rows = [("ID", "P", "KIND", "STATE", "HOLDER", "TITLE")]
    for item in items:
        state = item["state"]
        holder = item["claimed_by"] if item["state"] in ("claimed", "needs_human") else ""
        if item.get("lease_expired"):
            state = "expired"
        elif state == "pending" and item.get("reserved_for"):
            # the document's reason first, as `coord spec status` says it: it names the person
            state, holder = "reserved", item["reserved_for"]
        elif state == "pending" and item.get("blocked_by"):
            state = "blocked"
        elif state == "pending" and item.get("files_held_by"):
            state = "files held"
        rows.append(
            (
                str(item["id"]) + (f" {item['key']}" if item.get("key") else ""),
                str(item["priority"]),
                item["kind"],
                state,
                holder or "",
                one_line(item["title"]),
            )
        )
    return _table(rows)


def _worktree_lines(item: dict[str, Any]) -> list[str]:
    """A worktree item's way to main: its branch and worktree, what it handed to the queue,
    the commit it landed as, or why landing sent it back."""
    if not item.get("branch"):
        return []
    base = (item.get("base_commit") or "")[:12]
    lines = [f"  branch {item['branch']} from {base}, worktree {item.get('worktree')}"]
    if item.get("submitted_head"):
        lines.append(
            f"  submitted {item['submitted_head'][:12]} at {item.get('submitted_at')}"
            + (": queued to land" if item["state"] == "queued" else "")
        )
    if item.get("merged_commit"):
        lines.append(f"  merged on main as {item['merged_commit'][:12]}")
    rework = item.get("rework")
    if rework:
        files = ", ".join(rework.get("files") or [])
        lines.append(
            f"  sent back from landing: {rework.get('reason')}"
            + (f" in {files}" if files else "")
            + (
                f" (for {item['rework_for']} until {item['rework_until']})"
                if item.get("rework_for")
                else ""
            )
        )
    return lines


def item_detail(item: dict[str, Any]) -> str:
    key = f" ({item['key']})" if item.get("key") else ""
    lines = [
        f"{item['id']}{key}  {one_line(item['title'])}",
        f"  kind {item['kind']}, priority {item['priority']}, state {item['state']}"
        + (
            f", was held by {item['claimed_by']}: lease EXPIRED at "
            f"{clock_of_iso(item['lease_expires_at'])}, can be taken over"
            if item["state"] == "claimed" and item.get("lease_expired")
            else f", held by {item['claimed_by']} until {clock_of_iso(item['lease_expires_at'])}"
            if item["state"] == "claimed"
            else f", held by {item['claimed_by']} (question stale since "
            f"{clock_of_iso(item['lease_expires_at'])}: can be taken over)"
            if item["state"] == "needs_human" and item.get("question_stale")
            else f", held by {item['claimed_by']} while the question waits, until "
            f"{clock_of_iso(item['lease_expires_at'])}"
            if item["state"] == "needs_human"
            else ""
        ),
        f"  created by {item['created_by']} at {item['created_at']}"
        + (f", to {item['to']}" if item.get("to") else ""),
    ]
    if item.get("question"):
        contact = f" (ask {item['escalate_to']})" if item.get("escalate_to") else ""
        ref = item.get("key") or item["id"]
        lines.append(f"  NEEDS A HUMAN{contact}: {item['question']}  (`coord answer {ref} ...`)")
    if item.get("spec"):
        lines.append(f"  from {item['spec']}")
    if item.get("reserved_for") and item["state"] in ("pending", "claimed", "needs_rework"):
        document = (item.get("spec") or "").rpartition(":")[0] or "its design document"
        lines.append(
            f"  reserved for {item['reserved_for']} in {document}: no one else may claim it "
            "while the line stands"
        )
    if item.get("escalate_to") and not item.get("question"):
        lines.append(f"  escalate to {item['escalate_to']}")
    lines += _worktree_lines(item)
    if item["labels"]:
        lines.append("  labels: " + ", ".join(item["labels"]))
    if item.get("checks"):
        lines.append("  checks: " + ", ".join(f"`{c}`" for c in item["checks"]))
    lines += _evidence_lines(item.get("evidence"))
    if item.get("files"):
        lines.append("  files: " + ", ".join(item["files"]))
        for r in item.get("files_held_by", []):
            until = clock_of_iso(r["expires_at"])
            lines.append(f"    {r['pattern']} held by {r['agent']} until {until}")
    if item["deps"]:
        waiting = set(item["blocked_by"])
        lines.append(
            "  depends on: "
            + ", ".join(f"{d} (waiting)" if d in waiting else f"{d} (done)" for d in item["deps"])
        )
    if item["body"]:
        lines += ["", *("  " + line for line in item["body"].splitlines())]
    for reply in item.get("replies", []):
        lines.append(f"\n  {reply['author']} at {reply['created_at']}:")
        lines += ["    " + line for line in reply["body"].splitlines()]
    if item.get("replies_next") is not None:  # the daemon answers a thread a page at a time
        lines.append(
            f"\n  ... the thread goes on (cut to one page): GET /v1/items/{item['id']}"
            f"?replies_after={item['replies_next']} shows the next"
        )
    if item.get("acks"):
        lines.append("\n  acknowledged by " + ", ".join(a["agent"] for a in item["acks"]))
    if item.get("history"):
        lines.append("\n  history:")
        lines += ["    " + event_line(e) for e in item["history"]]
    return "\n".join(lines)


def _evidence_lines(evidence: dict[str, Any] | None) -> list[str]:
    if not evidence:
        return []
    if evidence.get("skipped"):
        return [f"  checks SKIPPED by {evidence['by']} at {evidence['at']}: {evidence['skipped']}"]
    verdict = "passed" if evidence.get("passed") else "FAILED"
    lines = [f"  checks {verdict} ({evidence['by']} at {evidence['at']}):"]
    for run in evidence.get("runs", []):
        head = f" at {run['head'][:10]}" if run.get("head") else ""
        lines.append(f"    {run['command']}: exit {run['exit_code']}{head}")
    return lines


def event_line(event: dict[str, Any]) -> str:
    """One line of the log; an actor whose name was only asserted (the board's token, a page)
    is marked so, apart from one a token issued for the name proved (issue 27)."""
    proven = (event.get("provenance") or {}).get("verified")
    mark = " (asserted)" if proven is False and event.get("agent") else ""
    return f"{event['seq']:>6} {event['at']} {event_summary(event)}{mark}"


def event_summary(event: dict[str, Any]) -> str:
    """Who did what to which item, with what it said: "claude-1 claimed #12 until 14:05:00Z"
    (the log's line without its number and time; `coord watch`'s feed). The log shows no
    fencing tokens (issue 27); a daemon from before then still sent them."""
    details = event.get("details") or {}
    extra = ""
    if event["kind"] in ("claimed", "takeover", "heartbeat"):
        token = details.get("token")
        extra = (f" token {token}" if token is not None else "") + (
            f" until {clock_of_iso(details.get('lease_expires_at'))}"
        )
        if details.get("takeover_from"):
            extra += f" (from {details['takeover_from']})"
    elif event["kind"] == "created" and details.get("kind") == "note" and details.get("to"):
        # a direct message (`coord send`): said as one, to whom
        item = f" #{event['item_id']}" if event.get("item_id") is not None else ""
        said = f"{details.get('title', '')!r}"
        return f"{event.get('agent') or '-'} to {details['to']}{item}: {said}"
    elif event["kind"] == "created":
        extra = f" {details.get('title', '')!r}"
    elif event["kind"] == "reply":
        extra = f" {details.get('excerpt', '')!r}"
    elif event["kind"] == "escalated":
        extra = f" asks {details.get('question', '')!r}"
    elif event["kind"] == "answered":  # the answer itself: "lead answered #5" told nothing
        extra = f" {details.get('question', '')!r}: {details.get('answer', '')!r}"
    elif event["kind"] in ("cancelled", "reopened") and details.get("reason"):
        extra = f": {details['reason']!r}"
        if details.get("holder"):
            extra += f" (ended {details['holder']}'s claim)"
    elif event["kind"] == "asked":  # issue 26: the holder must see who asks, and why
        paths = f" {', '.join(details['paths'])}" if details.get("paths") else ""
        extra = (
            f" {details.get('holder')} to let go{paths}: {details.get('reason', '')!r} "
            f"(ask {details.get('ask')})"
        )
    elif event["kind"] in ("ask_released", "ask_deferred"):
        asker = ", ".join(details.get("mentions") or [])
        until = details.get("deferred_until")
        extra = f" ask {details.get('ask')} of {asker}" + (
            f" until {clock_of_iso(until)}" if until else ""
        )
        if details.get("reason"):
            extra += f": {details['reason']!r}"
    elif event["kind"] in ("waiting", "wait_granted"):
        paths = ", ".join(details.get("patterns") or details.get("paths") or [])
        extra = f" (wait {details.get('wait')})" + (f" {paths}" if paths else "")
        if details.get("token") is not None:
            extra += f" token {details['token']}"
    elif event["kind"] == "edited":
        # the old and new values are in the event (`coord log --json`, `coord show --json`)
        extra = " " + ", ".join(sorted(details))
    elif details.get("reason"):
        extra = f" ({details['reason']!r})"
    item = f" {item_ref(event['item_id'], event.get('item_key'))}" if event.get("item_id") else ""
    return f"{event.get('agent') or '-'} {event['kind']}{item}{extra}"


def item_ref(item_id: int, key: str | None) -> str:
    """An item as every face names it: its package id where it has one (``T3``), else ``#12``."""
    return one_line(key) if key else f"#{item_id}"


def events_table(events: Sequence[dict[str, Any]], *, empty: str) -> str:
    return "\n".join(event_line(e) for e in events) if events else empty


def agents_table(agents: Sequence[dict[str, Any]], *, everyone: bool = False) -> str:
    if not agents:
        return "no one yet" if everyone else "no agents yet (`coord agents --all`: people too)"
    head = ("NAME", "ROLE") if everyone else ("AGENT",)
    rows = [(*head, "ACTIVE", "LAST SEEN", "HOLDING")]
    for agent in agents:
        name = (agent["name"], agent["role"]) if everyone else (agent["name"],)
        rows.append(
            (
                *name,
                "yes" if agent["active"] else "no",
                agent["last_seen"],
                ", ".join(str(i) for i in agent["holding"]) or "-",
            )
        )
    return _table(rows)


def pruned_text(result: dict[str, Any]) -> str:
    lines = [
        f"forgot {len(result['pruned'])} agent(s) unseen for {age(result['older_than_seconds'])}"
        + (": " + ", ".join(result["pruned"]) if result["pruned"] else "")
    ]
    lines += [f"kept {kept['name']}: {kept['why']}" for kept in result["kept"]]
    return "\n".join(lines)


def reservations_table(reservations: Sequence[dict[str, Any]]) -> str:
    if not reservations:
        return "no live reservations"
    rows = [("PATTERN", "HOLDER", "MODE", "ITEM", "UNTIL", "REASON")]
    for r in reservations:
        rows.append(
            (
                r["pattern"],
                r["agent"],
                "exclusive" if r["exclusive"] else "shared",
                str(r["item"]) if r["item"] is not None else "-",
                clock_of_iso(r["expires_at"]),
                one_line(r["reason"] or ""),
            )
        )
    return _table(rows)


duration = duration_text  # one spelling of a length of time (coord.times)


def age(seconds: float) -> str:
    """A length in the largest unit holding it whole, as ``--older-than`` takes it: 14d, 90m."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return duration(seconds)


def id_ranges(ids: Sequence[int]) -> str:
    if not ids:
        return "none"
    spans, start, prev = [], ids[0], ids[0]
    for value in [*ids[1:], None]:
        if value is not None and value == prev + 1:
            prev = value
            continue
        spans.append(str(start) if start == prev else f"{start}-{prev}")
        if value is not None:
            start = prev = value
    return ", ".join(spans)


def _table(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False))
        + "  "
        + row[-1]
        for row in rows
    )


def cli_hint(err: CoordError, args: argparse.Namespace) -> str | None:
    """What to type next, for refusals the board words for every face alike (it speaks HTTP
    and MCP too, where there are no flags): chosen by the error's code, never its text."""
    if err.code in ("checks_failed", "checks_required"):
        command = "coord git done" if getattr(args, "command", None) == "git" else "coord done"
        ref = getattr(args, "id", None) or err.details.get("package") or err.details.get("id")
        again = f"{command} {ref or 'ID'}"
        first = "fix it and run" if err.code == "checks_failed" else "run"
        return (
            f"{first} `{again}` again (it runs the checks here), or close it without passing "
            f"them: `{again} --skip-checks --reason TEXT` (the reason is recorded for everyone)"
        )
    if err.code == "invalid_input" and err.details.get("field") == "token":
        return "give it with --token T"
    # the board's word for it, or the request check's (the body's field)
    if err.code == "invalid_input" and err.details.get("field") in (
        "older_than",
        "older_than_seconds",
    ):
        return "give --older-than as a duration of at least an hour: 90m, 12h, 7d, 2w"
    return None
