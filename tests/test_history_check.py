"""The linearizability checker (``history_check``) on hand-made histories: it must accept
the ones a correct board can produce and reject each kind of wrong answer.

Times: ``start``/``end`` are the clients' clock; ``at`` and lease ends are the database's
(deliberately far apart: the checker never compares the two clocks).
"""

from __future__ import annotations

from typing import Any

import pytest

from history_check import NotLinearizable, Op, check, op_from_answer, seconds

T = 1_000_000.0  # the database clock, around some epoch second


def claim(
    agent: str,
    span: tuple[float, float],
    at: float,
    token: int,
    lease: float = 2.0,
    takeover_from: str | None = None,
) -> Op:
    return Op(
        agent,
        "claim",
        1,
        *span,
        lease=lease,
        at=T + at,
        new_token=token,
        lease_end=T + at + lease,
        takeover_from=takeover_from,
    )


def refused_claim(
    agent: str, span: tuple[float, float], holder: str | None, lease_end: float | None
) -> Op:
    return Op(
        agent,
        "claim",
        1,
        *span,
        lease=2.0,
        error="already_claimed",
        holder=holder,
        lease_end=None if lease_end is None else T + lease_end,
    )


def write(
    kind: str, agent: str, span: tuple[float, float], token: int, at: float, lease: float = 2.0
) -> Op:
    granted = kind == "heartbeat"
    return Op(
        agent,
        kind,
        1,
        *span,
        token=token,
        lease=lease if granted else None,
        at=T + at,
        new_token=token if granted else None,
        lease_end=T + at + lease if granted else None,
    )


def lease_lost(
    kind: str,
    agent: str,
    span: tuple[float, float],
    token: int,
    *,
    state: str,
    holder: str | None,
    current: int | None,
    lease_end: float | None,
) -> Op:
    return Op(
        agent,
        kind,
        1,
        *span,
        token=token,
        error="lease_lost",
        state=state,
        holder=holder,
        current_token=current,
        lease_end=None if lease_end is None else T + lease_end,
    )


def rejects(ops: list[Op], why: str = "no serial order") -> None:
    with pytest.raises(NotLinearizable, match=why):
        check(ops)


# --- histories a correct board produces ----------------------------------------------------


def test_concurrent_claims_one_winner_the_others_told_who_holds_it() -> None:
    ops = [
        refused_claim("b", (0.0, 1.0), "a", 2.0),
        claim("a", (0.1, 0.9), 0.0, token=1),
        refused_claim("c", (0.2, 0.5), "a", 2.0),
    ]
    order = check(ops)[1]
    assert order[0].agent == "a"


def test_takeover_after_expiry_and_the_zombie_refused() -> None:
    ops = [
        claim("a", (0.0, 0.1), 0.0, token=1, lease=1.0),
        write("heartbeat", "a", (0.2, 0.3), 1, at=0.5, lease=1.0),  # lease now ends at 1.5
        claim("b", (2.0, 2.1), 1.6, token=2, takeover_from="a"),
        # the zombie is told the holder, never its token (issue 27)
        lease_lost(
            "heartbeat",
            "a",
            (2.2, 2.3),
            1,
            state="claimed",
            holder="b",
            current=None,
            lease_end=3.6,
        ),
        lease_lost(
            "done", "a", (2.4, 2.5), 1, state="claimed", holder="b", current=None, lease_end=3.6
        ),
        write("release", "b", (2.6, 2.7), 2, at=1.9),
        claim("c", (2.8, 2.9), 2.0, token=3),
        write("done", "c", (3.0, 3.1), 3, at=2.1),
        Op("a", "claim", 1, 3.2, 3.3, lease=2.0, error="not_claimable", state="done"),
    ]
    assert len(check(ops)[1]) == len(ops)


def test_own_lapsed_lease_is_lost_even_before_a_takeover() -> None:
    # a's lease ended at 1.0; nobody took it; a's heartbeat is refused with a still named
    ops = [
        claim("a", (0.0, 0.1), 0.0, token=1, lease=1.0),
        lease_lost(
            "heartbeat", "a", (0.2, 0.3), 1, state="claimed", holder="a", current=1, lease_end=1.0
        ),
        claim("b", (0.4, 0.5), 1.2, token=2, takeover_from="a"),
    ]
    check(ops)


def test_a_refusal_concurrent_with_the_release_may_come_before_it() -> None:
    ops = [
        claim("a", (0.0, 1.0), 0.0, token=1),
        write("release", "a", (2.0, 3.0), 1, at=0.5),
        refused_claim("b", (0.5, 2.5), "a", 2.0),  # overlaps the release: before it is fine
    ]
    check(ops)


def test_answers_rounded_to_the_millisecond_are_accepted() -> None:
    # the new claim's time, as printed, is 0.4 ms before the old lease's printed end
    ops = [
        claim("a", (0.0, 0.1), 0.0, token=1, lease=1.0),
        claim("b", (0.5, 0.6), 0.9996, token=2, lease=1.0, takeover_from="a"),
    ]
    check(ops)


# --- histories no correct board produces ----------------------------------------------------


def test_rejects_two_overlapping_live_claims_of_one_item() -> None:
    rejects([claim("a", (0.0, 0.1), 0.0, token=1), claim("b", (0.0, 0.2), 0.5, token=2)])
    # nor both with the same token
    rejects([claim("a", (0.0, 0.1), 0.0, token=1), claim("b", (0.0, 0.2), 0.5, token=1)])


def test_rejects_a_stale_token_accepted_after_a_takeover() -> None:
    rejects(
        [
            claim("a", (0.0, 0.1), 0.0, token=1, lease=1.0),
            claim("b", (0.2, 0.3), 1.5, token=2, takeover_from="a"),
            write("heartbeat", "a", (0.4, 0.5), 1, at=1.6),
        ]
    )


def test_rejects_a_heartbeat_granted_after_its_lease_ran_out() -> None:
    rejects(
        [
            claim("a", (0.0, 0.1), 0.0, token=1, lease=1.0),
            write("heartbeat", "a", (0.4, 0.5), 1, at=1.2),  # lease ended at 1.0
        ]
    )


def test_rejects_tokens_not_strictly_increasing() -> None:
    first = claim("a", (0.0, 0.1), 0.0, token=1)
    release = write("release", "a", (0.2, 0.3), 1, at=0.1)
    rejects([first, release, claim("b", (0.4, 0.5), 0.2, token=1)])  # the same again
    rejects([first, release, claim("b", (0.4, 0.5), 0.2, token=3)])  # a gap
    check([first, release, claim("b", (0.4, 0.5), 0.2, token=2)])  # the right one


def test_rejects_an_answer_possible_only_out_of_real_time_order() -> None:
    # The same three answers as the accepted concurrent case, but b asked after the release
    # had ended: "held by a" is then impossible.
    rejects(
        [
            claim("a", (0.0, 1.0), 0.0, token=1),
            write("release", "a", (2.0, 3.0), 1, at=0.5),
            refused_claim("b", (3.5, 4.0), "a", 2.0),
        ]
    )


def test_rejects_a_refusal_naming_a_lease_that_had_already_run_out() -> None:
    # b's claim (granted, at 1.5) shows the clock past a's lease end (1.0); c asked after
    # b's answer, yet was told a holds the item until 1.0
    rejects(
        [
            claim("a", (0.0, 0.1), 0.0, token=1, lease=1.0),
            claim("b", (0.2, 0.3), 1.5, token=2, takeover_from="a"),
            refused_claim("c", (0.4, 0.5), "a", 1.0),
        ]
    )


def test_rejects_a_write_granted_after_a_refusal_said_the_lease_had_run_out() -> None:
    # a's heartbeat was refused as expired (so the clock had reached 2.0), then a's done,
    # asked afterwards, granted at 0.8: time would run backwards
    rejects(
        [
            claim("a", (0.0, 0.1), 0.0, token=1),
            lease_lost(
                "heartbeat",
                "a",
                (0.2, 0.3),
                1,
                state="claimed",
                holder="a",
                current=1,
                lease_end=2.0,
            ),
            write("done", "a", (0.4, 0.5), 1, at=0.8),
        ]
    )


def test_rejects_a_refusal_with_the_wrong_facts() -> None:
    rejects(
        [claim("a", (0.0, 0.1), 0.0, token=1), refused_claim("b", (0.2, 0.3), "c", 2.0)]
    )  # names a holder that never claimed
    rejects(
        [
            claim("a", (0.0, 0.1), 0.0, token=1),
            lease_lost(
                "done", "b", (0.2, 0.3), 7, state="claimed", holder="a", current=2, lease_end=2.0
            ),
        ]
    )  # the wrong current token


def test_rejects_a_lease_end_that_is_not_the_lease_asked_for() -> None:
    wrong = Op("a", "claim", 1, 0.0, 0.1, lease=2.0, at=T, new_token=1, lease_end=T + 60)
    rejects([wrong])


def test_the_failure_names_the_operations_that_cannot_be_placed() -> None:
    ops = [
        claim("a", (0.0, 0.1), 0.0, token=1, lease=1.0),
        claim("b", (0.2, 0.3), 1.5, token=2, takeover_from="a"),
        write("heartbeat", "zombie", (0.4, 0.5), 1, at=1.6),
    ]
    with pytest.raises(NotLinearizable, match=r"zombie heartbeat\(token=1\)"):
        check(ops)


# --- reading answers ------------------------------------------------------------------------


def _record(status: int, answer: dict[str, Any], **fields: Any) -> dict[str, Any]:
    base = {"agent": "a", "kind": "claim", "item": 3, "start": 1.0, "end": 2.0, "lease": 1.5}
    return {**base, **fields, "status": status, "answer": answer}


def test_reads_a_granted_claim_and_a_refusal_from_their_answers() -> None:
    granted = op_from_answer(
        _record(
            200,
            {
                "token": 4,
                "lease_expires_at": "2026-12-01T18:30:01.500Z",
                "takeover_from": "b",
                "item": {"updated_at": "2026-12-01T18:30:00.000Z"},
            },
        )
    )
    assert (granted.new_token, granted.takeover_from) == (4, "b")
    assert granted.lease_end == pytest.approx(granted.at + 1.5)  # type: ignore[operator]
    assert granted.at == seconds("2026-12-01T18:30:00.000Z")
    refused = op_from_answer(
        _record(
            409,
            {
                "error": "lease_lost",
                "holder": None,
                "current_token": 4,
                "state": "pending",
                "lease_expires_at": None,
            },
            kind="done",
            token=4,
        )
    )
    assert (refused.error, refused.state, refused.lease_end) == ("lease_lost", "pending", None)


def test_an_answer_outside_the_model_is_not_guessed_at() -> None:
    with pytest.raises(NotLinearizable, match="503"):
        op_from_answer(_record(503, {"error": "board_unavailable"}))
