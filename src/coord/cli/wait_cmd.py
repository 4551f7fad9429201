"""`coord wait`, `coord ask`, `coord answer-ask`, `coord asks`: waiting your turn, and asking
the holder (issue 26; docs/waiting.md).

`coord wait` takes a place in the board's queue and keeps it (a heartbeat that is also the
long poll) until the board grants the claim or the paths; it prints one line then, so a
client that streams a background command's output (Claude Code's Monitor tool) wakes its
agent. Out of time it gives the place up and exits ``EXIT_WAIT_TIMEOUT``.
"""

from __future__ import annotations

import os

from coord.cli import argtypes
from coord.errors import EXIT_WAIT_TIMEOUT, Conflict, InvalidInput, WaitTimedOut
from coord.times import clock_of_iso, epoch_of_iso, parse_duration

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any

    from coord.cli.context import Context, Result

PLACE_SECONDS = 30.0  # coord.client.waiting's: the place's lease, renewed thrice as often


def target_of(words: list[str]) -> dict[str, Any]:
    """One item (an id, #id, or a package id that names no file here) or paths."""
    if len(words) == 1:
        word = words[0].strip()
        bare = word[1:] if word.startswith("#") else word
        if bare.isascii() and bare.isdigit():
            return {"item": int(bare)}
        if word[:1].isalpha() and "/" not in word and "." not in word and not os.path.exists(word):
            return {"item": word}  # a package id, R3
    for word in words:
        if word.lstrip("#").isdigit():
            raise InvalidInput(
                f"{word} is an item: wait for one item, or for paths, not both", field="target"
            )
    return {"patterns": words}


def _what(status: dict[str, Any]) -> str:
    if status.get("item") is not None:
        return f"item {status['item']}"
    return ", ".join(status.get("paths") or [])


def args_wait(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", nargs="+", metavar="ITEM|PATH", help="an item id, or the paths")
    p.add_argument(
        "--timeout",
        type=argtypes.seconds,
        default=None,
        metavar="SECONDS",
        help=f"give up after this long (exit {EXIT_WAIT_TIMEOUT}); default: wait until granted",
    )
    p.add_argument(
        "--lease", type=argtypes.seconds, metavar="SECONDS", help="the granted claim's lease"
    )
    p.add_argument(
        "--place",
        type=argtypes.seconds,
        default=PLACE_SECONDS,
        metavar="SECONDS",
        help=f"how long the board keeps your place without a heartbeat (default "
        f"{PLACE_SECONDS:g}; this command heartbeats three times as often): a waiter that dies "
        "loses its place after it",
    )


def cmd_wait(args: argparse.Namespace, ctx: Context) -> Result:
    from coord.client import waiting

    target = target_of(args.target)
    if "patterns" in target:
        target["patterns"] = ctx.session.repo_relative(target["patterns"])
    status = waiting.wait(
        ctx.session,
        ctx.agent(),
        target,
        timeout=args.timeout,
        place=args.place,
        lease=args.lease,
    )
    return _said(status, args.timeout)


def _said(status: dict[str, Any], timeout: float | None) -> Result:
    what = _what(status)
    until = clock_of_iso(status.get("lease_expires_at"))
    if status["state"] == "granted":
        if status.get("item") is not None:
            line = (
                f"granted: item {status['item']} is yours (token {status['token']}) until {until}"
            )
        else:
            line = f"granted: {what} reserved for you until {until}"
        return status, line
    if status["state"] == "cancelled" and timeout is not None:
        place = status.get("place_when_given_up")
        raise WaitTimedOut(
            f"still waiting for {what} after {timeout:g} s"
            + (f" (place {place} in the queue)" if place else "")
            + "; gave the place up. Wait again, ask the holder (`coord ask`), or pick other "
            "work (`coord next`)",
            wait=status["wait"],
            place=place,
        )
    why = status.get("outcome") or status["state"]
    raise Conflict(f"the wait for {what} ended without a grant: {why}", wait=status["wait"])


def args_ask(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", nargs="+", metavar="ITEM|PATH", help="an item id, or held paths")
    p.add_argument("--reason", required=True, help="why you need it: the holder reads this")
    p.add_argument(
        "--timeout",
        type=argtypes.seconds,
        metavar="SECONDS",
        help="unanswered, the ask times out after this (default 600)",
    )


def cmd_ask(args: argparse.Namespace, ctx: Context) -> Result:
    target = target_of(args.target)
    if "patterns" in target:
        target["patterns"] = ctx.session.repo_relative(target["patterns"])
    from coord.client import waiting

    body: dict[str, Any] = {"agent": ctx.agent(), "reason": args.reason}
    if args.timeout is not None:
        body["timeout_seconds"] = args.timeout
    ask = ctx.session.post(*waiting.ask_for(target, body))
    what = f"item {ask['item']}" if ask.get("item") is not None else ", ".join(ask["paths"])
    return ask, (
        f"asked {ask['holder']} to let go of {what} (ask {ask['id']}); its answer reaches your "
        f"inbox; unanswered it times out at {clock_of_iso(ask['expires_at'])}. To be next when "
        f"it is released: `coord wait {' '.join(args.target)}`"
    )


def args_answer_ask(p: argparse.ArgumentParser) -> None:
    p.add_argument("ask", type=int, metavar="ASK", help="the ask's id (`coord asks`)")
    p.add_argument("answer", choices=("release", "defer"), help="let go now, or later")
    p.add_argument(
        "--until",
        metavar="WHEN",
        help="defer: until when, a while (20m, 1h) or a time (2026-12-04T14:30:00Z)",
    )
    p.add_argument("--reason", default="", help="why, for the asker")


def cmd_answer_ask(args: argparse.Namespace, ctx: Context) -> Result:
    body: dict[str, Any] = {"agent": ctx.agent(), "answer": args.answer, "reason": args.reason}
    if args.answer == "defer":
        if not args.until:
            raise InvalidInput("defer says until when: --until 20m, or --until TIME")
        length = parse_duration(args.until)
        if length is not None:
            body["for_seconds"] = length
        else:
            try:
                body["until"] = epoch_of_iso(args.until)
            except ValueError:
                raise InvalidInput(
                    f"--until {args.until!r}: a while (20m, 1h) or a time (2026-12-04T14:30:00Z)"
                ) from None
    ask = ctx.session.post(f"/v1/asks/{args.ask}/answer", body)
    if ask["state"] == "released":
        return ask, f"released for {ask['asker']} (ask {ask['id']})"
    return ask, (
        f"deferred until {clock_of_iso(ask['deferred_until'])}; {ask['asker']} is told "
        f"(ask {ask['id']})"
    )


def args_asks(p: argparse.ArgumentParser) -> None:
    p.add_argument("--holder", metavar="NAME", help="whose asks (default: yours)")


def cmd_asks(args: argparse.Namespace, ctx: Context) -> Result:
    from urllib.parse import quote

    holder = args.holder or ctx.agent()
    found = ctx.session.get(f"/v1/asks?holder={quote(holder)}")
    lines = [
        f"ask {a['id']}: {a['asker']} asks for "
        + (f"item {a['item']}" if a.get("item") is not None else ", ".join(a["paths"]))
        + f": {a['reason']} (until {clock_of_iso(a['expires_at'])}; "
        f"`coord answer-ask {a['id']} release` or `defer --until 20m`)"
        for a in found["asks"]
    ]
    return found, "\n".join(lines) or f"no open asks for {holder}"
