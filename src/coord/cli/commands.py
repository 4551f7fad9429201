"""The board commands of the CLI: each is one call of the client flow, rendered.

A command takes the parsed arguments and the ``Context`` and returns (the JSON document, the
human text); ``coord.cli.context.execute`` prints one or the other and maps errors to exit
codes. What a claim, done or a path means is written once in ``coord.client.flow``, for the
MCP tools too; what is here is the command line's way of saying it.
"""

from __future__ import annotations

import json
import sys

from coord.cli import render
from coord.client import flow
from coord.errors import CoordError, InvalidInput
from coord.times import clock_of_iso

TYPE_CHECKING = False  # typing costs ~10 ms at import; the CLI path avoids it
if TYPE_CHECKING:
    import argparse
    from typing import Any, NoReturn

    from coord.cli.context import Context, Result


def cmd_add(args: argparse.Namespace, ctx: Context) -> Result:
    fields = {
        "title": args.title,
        "kind": args.kind,
        "priority": args.priority,
        "labels": args.label,
        "deps": [flow.item_id(ctx.session, dep) for dep in args.dep],
        "body": args.body,
        "to": args.to,
        "files": args.file,
        "key": args.key,
        "checks": args.check,
    }
    item = flow.add(ctx.session, ctx.agent(required=False), fields)
    return item, f"added {item['id']}: {render.one_line(item['title'])}"


def cmd_import(args: argparse.Namespace, ctx: Context) -> Result:
    source = sys.stdin if args.file == "-" else _open_text(args.file)
    entries, lines = [], []
    with source:
        for number, line in enumerate(source, 1):
            if not line.strip():
                continue
            try:
                entries.append(json.loads(line))
            except ValueError as err:
                raise InvalidInput(f"{args.file}:{number}: not valid JSON: {err}") from None
            lines.append(number)
    try:
        result = ctx.session.post(
            "/v1/items:import", {"agent": ctx.agent(required=False), "items": entries}
        )
    except CoordError as err:
        # The board counts the entries from 0 ("item 1: ..."); a person reads the file's
        # lines from 1, as the JSON errors above do: say the line.
        index = err.details.get("index")
        if isinstance(index, int) and 0 <= index < len(lines):
            # the board's "item 1: ...", or the request check's "items[1].title ..."
            for prefix in (f"item {index}: ", f"items[{index}]."):
                if err.message.startswith(prefix):
                    err.message = f"{args.file}:{lines[index]}: {err.message[len(prefix) :]}"
        raise
    return result, f"imported {len(result['ids'])} items: {render.id_ranges(result['ids'])}"


def cmd_ls(args: argparse.Namespace, ctx: Context) -> Result:
    state = None if args.all else (args.state or ("open" if not args.ready else None))
    if args.needs_human:
        state = "needs_human"
    if args.mine and args.holder:
        raise InvalidInput("give --mine or --holder NAME, not both")
    if sum((args.state is not None, args.all, args.needs_human)) > 1:
        raise InvalidInput("give one of --state, --all, --needs-human: each sets the states")
    if args.holder == "":
        raise InvalidInput("--holder needs a name: `coord ls --holder NAME`")
    query = {
        "state": state,
        "holder": ctx.agent() if args.mine else args.holder,
        "spec": ctx.session.document_path(args.spec) if args.spec else None,
        "ready": "true" if args.ready else None,
        "kind": args.kind,
        "label": args.label,
        "limit": 1000 if args.all else args.limit,
        "after": args.after,
    }
    result = ctx.session.get("/v1/items", query)
    while args.all and result.get("next"):  # --all: every state, every page
        page = ctx.session.get("/v1/items", {**query, "after": result["next"]})
        result = {"items": result["items"] + page["items"], "next": page.get("next")}
    text = render.items_table(result["items"])
    if result.get("next"):  # a cut listing says so, and how to see the rest
        text += (
            f"\nshowing {len(result['items'])} items; more after {result['next']}: "
            f"`coord ls --after {result['next']}` (or `--limit 1000`, or `--all`)"
        )
    return result, text


def cmd_show(args: argparse.Namespace, ctx: Context) -> Result:
    # read as this agent: a claim's token is shown to its holder alone (issue 27)
    item = ctx.session.get(f"/v1/items/{args.id}", {"agent": ctx.agent(required=False)})
    return item, render.item_detail(item)


def cmd_edit(args: argparse.Namespace, ctx: Context) -> Result:
    changes: dict[str, Any] = {}
    for key in ("title", "body", "priority"):
        if getattr(args, key) is not None:
            changes[key] = getattr(args, key)
    if args.label is not None:
        changes["labels"] = args.label
    if args.dep:
        changes["add_deps"] = [flow.item_id(ctx.session, dep) for dep in args.dep]
    if args.no_dep:
        changes["remove_deps"] = [flow.item_id(ctx.session, dep) for dep in args.no_dep]
    if args.check:
        changes["add_checks"] = args.check
    if args.no_check:
        changes["remove_checks"] = args.no_check
    item = flow.edit(ctx.session, ctx.agent(required=False), args.id, changes, args.token)
    return item, f"edited {item['id']}: {render.one_line(item['title'])}"


def cmd_cancel(args: argparse.Namespace, ctx: Context) -> Result:
    item = flow.cancel(ctx.session, ctx.agent(required=False), args.id, args.reason, args.token)
    return item, f"cancelled {_ref(item)}: {render.one_line(item['title'])}"


def cmd_reopen(args: argparse.Namespace, ctx: Context) -> Result:
    item = flow.reopen(ctx.session, ctx.agent(required=False), args.id, args.reason)
    return item, f"reopened {_ref(item)}: {render.one_line(item['title'])} (pending again)"


def cmd_claim(args: argparse.Namespace, ctx: Context) -> Result:
    won = flow.claim(ctx.session, ctx.agent(), args.id, args.lease)
    return won, render.claim_line(won)


def cmd_next(args: argparse.Namespace, ctx: Context) -> Result:
    options = {"kind": args.kind, "label": args.label, "lease": args.lease}
    if args.count is None:
        won = flow.claim_next(ctx.session, ctx.agent(), **options)
        return won, render.claim_line(won)
    batch = flow.claim_next(ctx.session, ctx.agent(), **options, count=args.count)
    return batch, "\n".join(render.claim_line(c) for c in batch["items"])


def cmd_heartbeat(args: argparse.Namespace, ctx: Context) -> Result:
    claim = flow.heartbeat(ctx.session, ctx.agent(), args.id, args.token, args.lease)
    return claim, f"lease on {_ref(claim)} extended until {clock_of_iso(claim['lease_expires_at'])}"


def cmd_release(args: argparse.Namespace, ctx: Context) -> Result:
    item = flow.release(ctx.session, ctx.agent(), args.id, args.token, args.reason)
    return item, f"released {_ref(item)}: back to pending"


def cmd_done(args: argparse.Namespace, ctx: Context) -> Result:
    """Close the item; its checks run here first (``coord.client.flow.done``)."""
    if args.skip_checks:
        if not args.reason or not args.reason.strip():
            raise InvalidInput("--skip-checks needs --reason TEXT: it is recorded for everyone")
    elif args.reason:
        raise InvalidInput("--reason goes with --skip-checks")
    from coord.cli.check_progress import CheckProgress

    as_json = bool(getattr(args, "json", False))
    ran: list[str] = []

    def before_checks(commands: list[str], workdir: str) -> None:
        ran.extend(commands)
        _show_checks(args.id, commands, workdir, as_json=as_json)

    if args.id is None:  # in a worktree `coord start` made: its item
        from coord.client import worktree_flow

        args.id = str(worktree_flow.item_here(ctx.session))
    item = flow.done(
        ctx.session,
        ctx.agent(),
        args.id,
        token=args.token,
        summary=args.summary,
        skip_reason=args.reason if args.skip_checks else None,
        check_timeout=args.check_timeout,
        watch=CheckProgress(),
        before_checks=before_checks,
    )
    if item.get("state") == "queued":  # a worktree item: submitted to land
        from coord.cli.worktree_cmd import submitted_text

        return {**item, "checks_run": ran}, submitted_text(item)
    skipped = " (checks skipped: recorded)" if args.skip_checks else ""
    return {
        **item,
        "checks_run": ran,
    }, f"done {_ref(item)}: {render.one_line(item['title'])}{skipped}"


def _show_checks(ref: str, commands: list[str], workdir: str, *, as_json: bool) -> None:
    """What is about to run with the shell here, before any of it runs: the item's checks
    were written by someone else (its creator, or a design document). On stderr, which the
    agent sees: stdout holds the answer (one JSON document with --json, whose
    ``checks_run`` lists them too)."""
    if as_json:
        announced = {"about_to_run": commands, "item": ref, "cwd": workdir}
        print(json.dumps(announced), file=sys.stderr, flush=True)
        return
    where = render.one_line(f"{ref} in {workdir}")
    print(f"coord: running {len(commands)} check(s) of {where}:", file=sys.stderr)
    for command in commands:  # anyone's text: shown, never acted on by the terminal
        print(f"  $ {render.one_line(command)}", file=sys.stderr, flush=True)


def cmd_escalate(args: argparse.Namespace, ctx: Context) -> Result:
    item = flow.escalate(ctx.session, ctx.agent(), args.id, " ".join(args.question), args.token)
    contact = f"; ask {item['escalate_to']}" if item.get("escalate_to") else ""
    until = clock_of_iso(item.get("lease_expires_at"))
    return item, (
        f"{_ref(item)} needs a human{contact}. You keep the claim and its files until an "
        f"answer (watch `coord inbox`), at most until {until}: past that the question stays "
        "but the item can be taken over"
    )


def cmd_answer(args: argparse.Namespace, ctx: Context) -> Result:
    item = ctx.session.post(
        f"/v1/items/{args.id}/answer",
        {"agent": ctx.agent(required=False), "text": " ".join(args.text)},
    )
    return item, f"answered {_ref(item)}: back to {item['claimed_by']}"


def _ref(item: dict[str, Any]) -> str:
    return str(item.get("key") or item["id"])


def cmd_send(args: argparse.Namespace, ctx: Context) -> Result:
    sent = flow.send(ctx.session, ctx.agent(required=False), args.to, " ".join(args.text))
    return sent, f"sent to {args.to} (note {sent['id']}, in their inbox)"


def cmd_reply(args: argparse.Namespace, ctx: Context) -> Result:
    reply = flow.reply(ctx.session, ctx.agent(required=False), args.id, " ".join(args.text))
    return reply, f"replied on {reply['item_id']} (reply {reply['id']})"


def cmd_ack(args: argparse.Namespace, ctx: Context) -> Result:
    result = ctx.session.post(f"/v1/items/{args.id}/ack", {"agent": ctx.agent(required=False)})
    return result, f"acknowledged {result['id']}" + ("" if result["new"] else " (already)")


def cmd_inbox(args: argparse.Namespace, ctx: Context) -> Result:
    result = flow.inbox(ctx.session, ctx.agent(), peek=args.peek)
    return result, render.events_table(result["events"], empty="inbox empty: nothing new")


def cmd_agents(args: argparse.Namespace, ctx: Context) -> Result:
    if args.older_than is not None and not args.prune:
        raise InvalidInput("--older-than goes with --prune: `coord agents --prune --older-than D`")
    if args.prune:
        older_than = 7 * 86400.0 if args.older_than is None else args.older_than
        body = {"agent": ctx.agent(required=False), "older_than_seconds": older_than}
        result = ctx.session.post("/v1/agents:prune", body)
        return result, render.pruned_text(result)
    result = ctx.session.get("/v1/agents", {"all": "true" if args.all else None})
    return result, render.agents_table(result["agents"], everyone=args.all)


def cmd_log(args: argparse.Namespace, ctx: Context) -> Result:
    item = None if args.item is None else flow.item_id(ctx.session, args.item)
    query = {"after": args.after, "limit": args.limit, "item": item}
    if not args.follow:
        result = ctx.session.get("/v1/events", query)
        text = render.events_table(result["events"], empty="no events")
        events = result["events"]
        # a full page, or one cut by bytes before the board's last event: does one more follow?
        if events and (len(events) == args.limit or events[-1]["seq"] < result["last_seq"]):
            last = events[-1]["seq"]
            if ctx.session.get("/v1/events", {**query, "after": last, "limit": 1})["events"]:
                text += (
                    f"\nshowing {len(events)} events, {events[0]['seq']} to {last}; more "
                    f"after {last}: `coord log --after {last}`"
                )
        return result, text
    try:
        _follow_log(ctx, args.after, item, as_json=bool(getattr(args, "json", False)))
    except KeyboardInterrupt:
        return None, "", 130  # as the shell reports Ctrl-C: the stream did not end by itself


def _follow_log(ctx: Context, after: int, item: int | None, *, as_json: bool) -> NoReturn:
    """Print every event after ``after`` and each new one, from the daemon's event stream,
    across restarts. A reader the stream finds too far behind pages the log, then follows on."""
    from coord.client import stream

    def show(event: dict[str, Any]) -> None:
        line = json.dumps(event) if as_json else render.for_terminal(render.event_line(event))
        print(line, flush=True)

    while True:
        for message in stream.follow(ctx.client, after=after, item=item):
            if isinstance(message, dict):
                show(message)
                after = message["seq"]
            elif isinstance(message, stream.Interrupted):
                print(f"coord: {message.message}; reconnecting", file=sys.stderr, flush=True)
            elif isinstance(message, stream.Resumed):
                print("coord: reconnected", file=sys.stderr, flush=True)
            elif message.last_seq < after:  # a replaced board: its log from the start
                print(
                    f"coord: the board's log ends at {message.last_seq}, before {after} (a "
                    "board replaced since, or another one's cursor); showing it from the start",
                    file=sys.stderr,
                    flush=True,
                )
                after = 0
        # told to reload: catch up a page at a time, then follow again
        while True:
            page = ctx.session.get("/v1/events", {"after": after, "limit": 5000, "item": item})
            for event in page["events"]:
                show(event)
            if not page["events"]:
                break
            after = page["events"][-1]["seq"]  # last_seq is the board's: it may be further on
            if after >= page["last_seq"]:
                break


def _open_text(path: str) -> Any:
    try:
        return open(path, encoding="utf-8")
    except OSError as err:
        raise InvalidInput(f"cannot read {path}: {err.strerror}") from None
