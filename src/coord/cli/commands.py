"""The board commands of the CLI: each is one call to the daemon, rendered.

A command takes the parsed arguments and the ``Context`` and returns (the JSON document, the
human text); ``coord.cli.main`` prints one or the other and maps errors to exit codes.
"""

from __future__ import annotations

import argparse
import json
import sys

from coord.cli import files, render
from coord.client import tokens
from coord.client.http import Client
from coord.errors import CoordError, InvalidInput
from coord.fast import board_files

TYPE_CHECKING = False  # typing costs ~10 ms at import; the CLI path avoids it
if TYPE_CHECKING:
    from typing import Any

    from coord.cli.main import Context, Result


def cmd_init(args: argparse.Namespace, ctx: Context) -> Result:
    from coord.core.board import Board

    board_dir = board_files.new_board_dir()
    created = board_files.init_board_files(board_dir)
    if args.lease is not None:
        config = board_files.read_config(board_dir)
        config["default_lease_seconds"] = args.lease
        board_files.write_json_atomic(board_dir / "config.json", config)
    board = Board.open(board_dir, create=True)
    version = board.storage.schema_version()
    board.close()
    verb = "created" if created else "already there:"
    return (
        {"board": str(board_dir), "created": created, "schema_version": version},
        f"{verb} board {board_dir} (schema {version}); write token in "
        f"{board_files.token_path(board_dir)}",
    )


def cmd_serve(args: argparse.Namespace, ctx: Context) -> Result:
    from coord.server.daemon import serve

    serve(ctx.board_dir, host=args.host, port=args.port, log_level=args.log_level)
    return {"stopped": True}, "daemon stopped"


def cmd_stop(args: argparse.Namespace, ctx: Context) -> Result:
    client = Client(ctx.board_dir, autostart=False)
    url = client.daemon_url()
    if url is None:
        return {"stopped": False, "running": False}, "no daemon is running"
    client.post("/v1/shutdown", {})
    return {"stopped": True, "url": url}, f"stopped the daemon at {url}"


def cmd_add(args: argparse.Namespace, ctx: Context) -> Result:
    item = ctx.client.post(
        "/v1/items",
        {
            "agent": ctx.agent(required=False),
            "title": args.title,
            "kind": args.kind,
            "priority": args.priority,
            "labels": args.label,
            "deps": args.dep,
            "body": args.body,
            "to": args.to,
            "files": files.repo_relative(ctx, args.file) if args.file else [],
            "key": args.key,
            "checks": args.check,
        },
    )
    return item, f"added {item['id']}: {item['title']}"


def cmd_import(args: argparse.Namespace, ctx: Context) -> Result:
    source = sys.stdin if args.file == "-" else _open_text(args.file)
    entries = []
    with source:
        for number, line in enumerate(source, 1):
            if not line.strip():
                continue
            try:
                entries.append(json.loads(line))
            except ValueError as err:
                raise InvalidInput(f"{args.file}:{number}: not valid JSON: {err}") from None
    result = ctx.client.post(
        "/v1/items:import", {"agent": ctx.agent(required=False), "items": entries}
    )
    return result, f"imported {len(result['ids'])} items: {render.id_ranges(result['ids'])}"


def cmd_ls(args: argparse.Namespace, ctx: Context) -> Result:
    state = None if args.all else (args.state or ("open" if not args.ready else None))
    if args.needs_human:
        state = "needs_human"
    query = {
        "state": state,
        "spec": spec_path(ctx, args.spec) if args.spec else None,
        "ready": "true" if args.ready else None,
        "kind": args.kind,
        "label": args.label,
        "limit": args.limit,
        "after": args.after,
    }
    result = ctx.client.get("/v1/items?" + _query(query))
    return result, render.items_table(result["items"])


def cmd_show(args: argparse.Namespace, ctx: Context) -> Result:
    item = ctx.client.get(f"/v1/items/{args.id}")
    return item, render.item_detail(item)


def cmd_edit(args: argparse.Namespace, ctx: Context) -> Result:
    agent = ctx.agent(required=False)
    body: dict[str, Any] = {"agent": agent}
    for key in ("title", "body", "priority"):
        if getattr(args, key) is not None:
            body[key] = getattr(args, key)
    if args.label is not None:
        body["labels"] = args.label
    if args.dep:
        body["add_deps"] = args.dep
    if args.no_dep:
        body["remove_deps"] = args.no_dep
    if args.check:
        body["add_checks"] = args.check
    if args.no_check:
        body["remove_checks"] = args.no_check
    token = (
        args.token if args.token is not None else tokens.remembered(ctx.board_dir, agent, args.id)
    )
    if token is not None:
        body["token"] = token
    item = ctx.client.call("PATCH", f"/v1/items/{args.id}", body)
    return item, f"edited {item['id']}: {item['title']}"


def cmd_cancel(args: argparse.Namespace, ctx: Context) -> Result:
    agent = ctx.agent(required=False)
    body: dict[str, Any] = {"agent": agent, "reason": args.reason}
    token = (
        args.token if args.token is not None else tokens.remembered(ctx.board_dir, agent, args.id)
    )
    if token is not None:
        body["token"] = token
    item = ctx.client.post(f"/v1/items/{args.id}/cancel", body)
    return item, f"cancelled {item['id']}: {item['title']}"


def cmd_claim(args: argparse.Namespace, ctx: Context) -> Result:
    agent = ctx.agent()
    won = ctx.client.post(
        f"/v1/items/{args.id}/claim", {"agent": agent, "lease_seconds": args.lease}
    )
    tokens.remember_claim(ctx.board_dir, agent, won)
    return won, render.claim_line(won)


def cmd_next(args: argparse.Namespace, ctx: Context) -> Result:
    agent = ctx.agent()
    request = {"agent": agent, "lease_seconds": args.lease, "kind": args.kind, "label": args.label}
    if args.count is None:
        won = ctx.client.post("/v1/claim-next", request)
        tokens.remember_claim(ctx.board_dir, agent, won)
        return won, render.claim_line(won)
    batch = ctx.client.post("/v1/claim-next", {**request, "count": args.count})
    for claim in batch["items"]:
        tokens.remember_claim(ctx.board_dir, agent, claim)
    return batch, "\n".join(render.claim_line(c) for c in batch["items"])


def cmd_heartbeat(args: argparse.Namespace, ctx: Context) -> Result:
    agent = ctx.agent()
    token = ctx.token_for(args.id, agent)
    claim = ctx.client.post(
        f"/v1/items/{args.id}/heartbeat",
        {"agent": agent, "token": token, "lease_seconds": args.lease},
    )
    return claim, f"lease on {claim['id']} extended until {claim['lease_expires_at']}"


def _finish(args: argparse.Namespace, ctx: Context, action: str, extra: dict[str, Any]) -> Any:
    agent = ctx.agent()
    token = ctx.token_for(args.id, agent)
    try:
        item = ctx.client.post(
            f"/v1/items/{args.id}/{action}", {"agent": agent, "token": token, **extra}
        )
    except CoordError as err:
        if err.code == "lease_lost":  # that claim is over for good: drop its token
            tokens.forget(ctx.board_dir, agent, args.id)
        raise
    tokens.forget(ctx.board_dir, agent, args.id, item["id"], item.get("key"))
    return item


def cmd_release(args: argparse.Namespace, ctx: Context) -> Result:
    item = _finish(args, ctx, "release", {"reason": args.reason})
    return item, f"released {_ref(item)}: back to pending"


def cmd_done(args: argparse.Namespace, ctx: Context) -> Result:
    """Close the item. If it has checks the daemon says so (checks_required), and they run
    here, in this working tree, before the item is closed with their evidence."""
    extra: dict[str, Any] = {"summary": args.summary}
    if args.skip_checks:
        if not args.reason or not args.reason.strip():
            raise InvalidInput("--skip-checks needs --reason TEXT: it is recorded for everyone")
        extra["skip_checks"] = args.reason
    elif args.reason:
        raise InvalidInput("--reason goes with --skip-checks")
    try:
        item = _finish(args, ctx, "done", extra)
    except CoordError as err:
        if err.code != "checks_required":
            raise
        from coord.client import checks

        listed = err.details.get("checks") or []
        print(f"coord: running {len(listed)} check(s) of {args.id} here", file=sys.stderr)
        runs = checks.run(listed, cwd=".", timeout=args.check_timeout)
        for run in runs:
            verdict = "ok" if run["exit_code"] == 0 else f"FAILED (exit {run['exit_code']})"
            print(f"  {run['command']}: {verdict} in {run['duration_s']:.1f}s", file=sys.stderr)
        try:
            item = _finish(args, ctx, "done", {**extra, "evidence": runs})
        except CoordError as failed:
            if failed.code == "checks_failed":
                tails = [
                    f"--- {r['command']} (exit {r['exit_code']}), last lines:\n{r['output_tail']}"
                    for r in runs
                    if r["exit_code"] != 0
                ]
                failed.message = "\n".join([failed.message, *tails])
            raise
    skipped = " (checks skipped: recorded)" if args.skip_checks else ""
    return item, f"done {_ref(item)}: {item['title']}{skipped}"


def cmd_escalate(args: argparse.Namespace, ctx: Context) -> Result:
    agent = ctx.agent()
    token = ctx.token_for(args.id, agent)
    item = ctx.client.post(
        f"/v1/items/{args.id}/escalate",
        {"agent": agent, "token": token, "question": " ".join(args.question)},
    )
    contact = f"; ask {item['escalate_to']}" if item.get("escalate_to") else ""
    return item, (
        f"{_ref(item)} needs a human{contact}. You keep the claim and its files; the lease "
        "is paused until `coord answer` (watch `coord inbox`)"
    )


def cmd_answer(args: argparse.Namespace, ctx: Context) -> Result:
    item = ctx.client.post(
        f"/v1/items/{args.id}/answer",
        {"agent": ctx.agent(required=False), "text": " ".join(args.text)},
    )
    return item, f"answered {_ref(item)}: back to {item['claimed_by']}"


def _ref(item: dict[str, Any]) -> str:
    return str(item.get("key") or item["id"])


def spec_path(ctx: Context, given: str) -> str:
    """A design document's path as the board knows it: relative to the repository root."""
    return files.repo_relative(ctx, [given], literal=True)[0]


def cmd_reply(args: argparse.Namespace, ctx: Context) -> Result:
    reply = ctx.client.post(
        f"/v1/items/{args.id}/replies",
        {"agent": ctx.agent(required=False), "body": " ".join(args.text)},
    )
    return reply, f"replied on {reply['item_id']} (reply {reply['id']})"


def cmd_ack(args: argparse.Namespace, ctx: Context) -> Result:
    result = ctx.client.post(f"/v1/items/{args.id}/ack", {"agent": ctx.agent(required=False)})
    return result, f"acknowledged {result['id']}" + ("" if result["new"] else " (already)")


def cmd_inbox(args: argparse.Namespace, ctx: Context) -> Result:
    result = ctx.client.post("/v1/inbox", {"agent": ctx.agent(), "peek": args.peek})
    return result, render.events_table(result["events"], empty="inbox empty: nothing new")


def cmd_agents(args: argparse.Namespace, ctx: Context) -> Result:
    result = ctx.client.get("/v1/agents")
    return result, render.agents_table(result["agents"])


def cmd_log(args: argparse.Namespace, ctx: Context) -> Result:
    query = {"after": args.after, "limit": args.limit, "item": args.item}
    if not args.follow:
        result = ctx.client.get("/v1/events?" + _query(query))
        return result, render.events_table(result["events"], empty="no events")
    after = args.after
    try:
        while True:
            result = ctx.client.get(
                "/v1/events?" + _query({**query, "after": after, "wait": 25}), timeout=40
            )
            for event in result["events"]:
                print(
                    json.dumps(event)
                    if bool(getattr(args, "json", False))
                    else render.event_line(event),
                    flush=True,
                )
            after = result["last_seq"]
    except KeyboardInterrupt:
        return None, ""


def _query(params: dict[str, Any]) -> str:
    from urllib.parse import urlencode

    return urlencode({k: v for k, v in params.items() if v not in (None, "", 0, False)})


def _open_text(path: str) -> Any:
    try:
        return open(path, encoding="utf-8")
    except OSError as err:
        raise InvalidInput(f"cannot read {path}: {err.strerror}") from None
