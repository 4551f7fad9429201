"""An ask in the feeds a holder reads (issue 26): `coord log`'s line and `coord watch`'s
activity, filtered to the holder, show who asks for what and why, and the answer."""

from __future__ import annotations

from coord.cli import render, watch_view


def _event(seq: int, agent: str, kind: str, details: dict) -> dict:
    return {
        "seq": seq,
        "at": "2026-12-04T01:00:00.000Z",
        "agent": agent,
        "item_id": 2,
        "kind": kind,
        "details": details,
    }


ASKED = _event(7, "b", "asked", {"ask": 1, "holder": "a", "reason": "the fix needs it"})
DEFERRED = _event(
    8,
    "a",
    "ask_deferred",
    {
        "ask": 1,
        "answer": "defer",
        "mentions": ["b"],
        "deferred_until": "2026-12-04T01:20:00.000Z",
        "reason": "tests first",
    },
)
OTHER = _event(9, "c", "claimed", {"token": 1, "lease_expires_at": "2026-12-04T01:15:00.000Z"})


def test_the_log_line_says_who_asks_whom_for_what_and_why() -> None:
    assert render.event_summary(ASKED) == "b asked #2 a to let go: 'the fix needs it' (ask 1)"
    assert render.event_summary(DEFERRED).startswith("a ask_deferred #2 ask 1 of b until ")
    assert render.event_summary(DEFERRED).endswith(": 'tests first'")


def test_watch_for_one_agent_shows_the_asks_addressed_to_it_and_the_answers_to_its_own() -> None:
    def shown(agent: str) -> list[str]:
        _, rows = watch_view._activity([ASKED, DEFERRED, OTHER], agent)
        return [row[1][0] for row in rows]

    assert shown("a") == [render.event_summary(ASKED), render.event_summary(DEFERRED)]
    assert shown("b") == [render.event_summary(ASKED), render.event_summary(DEFERRED)]
    assert shown("c") == [render.event_summary(OTHER)]
