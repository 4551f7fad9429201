"""The core's rules, on real SQLite files, with a clock the test controls."""

from __future__ import annotations

import ast
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import Clock
from coord import errors
from coord.core.board import Board
from coord.limits import MAX_TITLE
from coord.storage.sqlite import SQLiteStorage


@pytest.fixture
def board(tmp_path: Path, clock: Clock) -> Iterator[Board]:
    b = Board(SQLiteStorage(tmp_path / "board.db"), clock=clock, default_lease_seconds=60)
    yield b
    b.close()


def kinds(board: Board, item_id: int | None = None) -> list[str]:
    return [e.kind for e in board.events(item_id=item_id)]


# --- claim -----------------------------------------------------------------------------------


def test_claim_returns_token_and_lease_on_the_board_clock(board: Board, clock: Clock) -> None:
    item = board.add("x", created_by="h")
    claim = board.claim(item.id, agent="a", lease_seconds=30)
    assert claim.token == 1
    assert claim.lease_expires_at == clock.now + 30
    stored = board.get(item.id)
    assert (stored.state, stored.claimed_by, stored.fencing_token) == ("claimed", "a", 1)


def test_second_claim_loses_and_learns_holder_and_expiry(board: Board) -> None:
    item = board.add("x", created_by="h")
    won = board.claim(item.id, agent="a")
    with pytest.raises(errors.AlreadyClaimed) as lost:
        board.claim(item.id, agent="b")
    assert lost.value.details["holder"] == "a"
    assert lost.value.details["lease_expires_at"] == won.to_dict(0)["lease_expires_at"]
    assert "claimed by a" in lost.value.message
    assert board.get(item.id).claimed_by == "a"
    assert kinds(board, item.id) == ["created", "claimed"]


def test_a_holder_cannot_claim_twice(board: Board) -> None:
    item = board.add("x", created_by="h")
    board.claim(item.id, agent="a")
    with pytest.raises(errors.AlreadyClaimed):
        board.claim(item.id, agent="a")


def test_threads_racing_one_item_have_exactly_one_winner(tmp_path: Path) -> None:
    # Each thread opens its own Board (own connection), as separate agents would.
    seed = Board.open(_init(tmp_path))
    item = seed.add("contended", created_by="h")
    barrier = threading.Barrier(12)
    outcomes: list[str] = []

    def worker(n: int) -> None:
        b = Board.open(tmp_path / ".coord")
        barrier.wait()
        try:
            b.claim(item.id, agent=f"t{n}")
            outcomes.append("won")
        except errors.AlreadyClaimed as err:
            outcomes.append(f"lost to {err.details['holder']}")
        finally:
            b.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winner = seed.get(item.id).claimed_by
    assert outcomes.count("won") == 1
    assert sorted(o for o in outcomes if o != "won") == [f"lost to {winner}"] * 11
    seed.close()


def _init(root: Path) -> Path:
    from coord.fast import board_files

    board_files.init_board_files(root / ".coord")
    Board.open(root / ".coord", create=True).close()
    return root / ".coord"


def test_done_and_cancelled_items_are_not_claimable(board: Board) -> None:
    a, b = board.add("a", created_by="h"), board.add("b", created_by="h")
    claim = board.claim(a.id, agent="x")
    board.done(a.id, agent="x", token=claim.token)
    board.cancel(b.id, agent="h", reason="not needed")
    for item_id, state in ((a.id, "done"), (b.id, "cancelled")):
        with pytest.raises(errors.NotClaimable, match=state):
            board.claim(item_id, agent="y")


def test_claim_refuses_an_item_whose_dependencies_are_not_done(board: Board) -> None:
    first = board.add("first", created_by="h")
    second = board.add("second", created_by="h", deps=[first.id])
    with pytest.raises(errors.NotReady) as refused:
        board.claim(second.id, agent="a")
    assert refused.value.details["blocked_by"] == [first.id]
    c = board.claim(first.id, agent="a")
    board.done(first.id, agent="a", token=c.token)
    assert board.claim(second.id, agent="a").token == 1


def test_unknown_item_is_not_found(board: Board) -> None:
    with pytest.raises(errors.NotFound, match="no item 42"):
        board.claim(42, agent="a")


# --- leases and fencing ------------------------------------------------------------------------


def test_expired_lease_is_taken_over_with_a_larger_token(board: Board, clock: Clock) -> None:
    item = board.add("x", created_by="h")
    first = board.claim(item.id, agent="a", lease_seconds=10)
    clock.advance(10)  # expiry is inclusive: at lease_expires_at the lease is over
    second = board.claim(item.id, agent="b")
    assert second.token > first.token
    assert second.takeover_from == "a"
    takeover = board.events(item_id=item.id)[-1]
    assert takeover.kind == "takeover"
    assert takeover.details["takeover_from"] == "a"


def test_zombie_writes_are_refused_and_change_nothing(board: Board, clock: Clock) -> None:
    item = board.add("x", created_by="h")
    zombie = board.claim(item.id, agent="a", lease_seconds=5)
    clock.advance(6)
    live = board.claim(item.id, agent="b", lease_seconds=60)
    before = (board.get(item.id), board.last_seq())
    for attempt in (
        lambda: board.heartbeat(item.id, agent="a", token=zombie.token),
        lambda: board.done(item.id, agent="a", token=zombie.token),
        lambda: board.release(item.id, agent="a", token=zombie.token),
        lambda: board.edit(item.id, agent="a", token=zombie.token, title="mine"),
        lambda: board.cancel(item.id, agent="a", token=zombie.token, reason="r"),
    ):
        with pytest.raises(errors.LeaseLost) as refused:
            attempt()
        assert refused.value.details["holder"] == "b"
        assert "stale" in refused.value.message or "held by b" in refused.value.message
    assert (board.get(item.id), board.last_seq()) == before
    board.done(item.id, agent="b", token=live.token)
    assert board.get(item.id).state == "done"


def test_expired_lease_cannot_be_used_even_if_nobody_took_over(board: Board, clock: Clock) -> None:
    item = board.add("x", created_by="h")
    claim = board.claim(item.id, agent="a", lease_seconds=5)
    clock.advance(5)
    with pytest.raises(errors.LeaseLost, match="expired"):
        board.done(item.id, agent="a", token=claim.token)
    assert board.get(item.id).to_dict(clock.now)["lease_expired"] is True
    again = board.claim(item.id, agent="a")
    assert again.token == claim.token + 1


def test_heartbeat_extends_from_now(board: Board, clock: Clock) -> None:
    item = board.add("x", created_by="h")
    claim = board.claim(item.id, agent="a", lease_seconds=10)
    clock.advance(8)
    extended = board.heartbeat(item.id, agent="a", token=claim.token, lease_seconds=10)
    assert extended.lease_expires_at == clock.now + 10
    assert extended.token == claim.token
    clock.advance(9)
    with pytest.raises(errors.AlreadyClaimed):
        board.claim(item.id, agent="b")


def test_release_returns_to_pending_and_tokens_keep_growing(board: Board) -> None:
    item = board.add("x", created_by="h")
    tokens = []
    for agent in ("a", "b", "c"):
        claim = board.claim(item.id, agent=agent)
        tokens.append(claim.token)
        released = board.release(item.id, agent=agent, token=claim.token)
        assert (released.state, released.claimed_by) == ("pending", None)
    assert tokens == [1, 2, 3]


def test_the_right_token_from_the_wrong_agent_is_refused(board: Board) -> None:
    item = board.add("x", created_by="h")
    claim = board.claim(item.id, agent="a")
    with pytest.raises(errors.LeaseLost, match="held by a"):
        board.done(item.id, agent="b", token=claim.token)


def test_edit_of_a_claimed_item_needs_the_holders_token(board: Board) -> None:
    item = board.add("x", created_by="h")
    claim = board.claim(item.id, agent="a")
    with pytest.raises(errors.LeaseLost, match="only the holder"):
        board.edit(item.id, agent="h", title="hijack")
    edited = board.edit(item.id, agent="a", token=claim.token, title="better", priority=0)
    assert (edited.title, edited.priority) == ("better", 0)


# --- claim-next ----------------------------------------------------------------------------


def test_claim_next_takes_priority_then_age_and_skips_notes(board: Board) -> None:
    board.add("note", created_by="h", kind="note", priority=0)
    low = board.add("low", created_by="h", priority=3)
    old = board.add("old", created_by="h", priority=1)
    new = board.add("new", created_by="h", priority=1)
    order = [board.claim_next(agent="a").item.id for _ in range(3)]
    assert order == [old.id, new.id, low.id]
    with pytest.raises(errors.NothingReady):
        board.claim_next(agent="a")
    assert board.claim_next(agent="a", kind="note").item.title == "note"


def test_claim_next_prefers_a_better_expired_claim(board: Board, clock: Clock) -> None:
    urgent = board.add("urgent", created_by="h", priority=0)
    board.add("later", created_by="h", priority=2)
    board.claim(urgent.id, agent="crashed", lease_seconds=5)
    clock.advance(6)
    claim = board.claim_next(agent="b")
    assert (claim.item.id, claim.takeover_from) == (urgent.id, "crashed")


def test_claim_next_filters_by_label_and_kind(board: Board) -> None:
    board.add("plain", created_by="h", priority=0)
    ui = board.add("ui", created_by="h", labels=["ui"], priority=4)
    bug = board.add("bug", created_by="h", kind="bug", priority=3)
    assert board.claim_next(agent="a", label="ui").item.id == ui.id
    assert board.claim_next(agent="a", kind="bug").item.id == bug.id
    with pytest.raises(errors.NothingReady, match="label=ui"):
        board.claim_next(agent="a", label="ui")


def test_claim_next_waits_for_dependencies(board: Board) -> None:
    base = board.add("base", created_by="h", priority=4)
    board.add("top", created_by="h", priority=0, deps=[base.id])
    claim = board.claim_next(agent="a")
    assert claim.item.id == base.id
    with pytest.raises(errors.NothingReady):
        board.claim_next(agent="b")
    board.done(base.id, agent="a", token=claim.token)
    assert board.claim_next(agent="b").item.title == "top"


# --- dependencies --------------------------------------------------------------------------


def test_a_cycle_is_refused_and_named(board: Board) -> None:
    a = board.add("a", created_by="h")
    b = board.add("b", created_by="h", deps=[a.id])
    c = board.add("c", created_by="h", deps=[b.id])
    seq = board.last_seq()
    with pytest.raises(errors.DependencyCycle) as refused:
        board.edit(a.id, agent="h", add_deps=[c.id])
    assert refused.value.details["cycle"] == [a.id, c.id, b.id, a.id]
    assert f"{a.id} → {c.id} → {b.id} → {a.id}" in refused.value.message
    assert board.get(a.id).deps == ()
    assert board.last_seq() == seq


def test_self_dependency_is_a_cycle(board: Board) -> None:
    a = board.add("a", created_by="h")
    with pytest.raises(errors.DependencyCycle):
        board.edit(a.id, agent="h", add_deps=[a.id])


def test_import_links_refs_and_refuses_cycles_whole(board: Board) -> None:
    ids = board.import_items(
        [{"title": "api", "ref": "api"}, {"title": "ui", "deps": ["api"]}], created_by="h"
    )
    assert board.get(ids[1]).deps == (ids[0],)
    before = board.last_seq()
    with pytest.raises(errors.DependencyCycle):
        board.import_items(
            [{"title": "x", "ref": "x", "deps": ["y"]}, {"title": "y", "ref": "y", "deps": ["x"]}],
            created_by="h",
        )
    assert board.last_seq() == before
    assert len(board.list_items(state=None)) == 2


def test_import_is_all_or_nothing_on_bad_entries(board: Board) -> None:
    with pytest.raises(errors.InvalidInput, match="item 1: invalid priority"):
        board.import_items([{"title": "ok"}, {"title": "bad", "priority": 9}], created_by="h")
    with pytest.raises(errors.InvalidInput, match="unknown field"):
        board.import_items([{"title": "ok", "prio": 1}], created_by="h")
    with pytest.raises(errors.NotFound, match="unknown dependency 99"):
        board.import_items([{"title": "ok", "deps": [99]}], created_by="h")
    assert board.list_items() == [] and board.last_seq() == 0


def test_a_bad_entry_of_a_batch_keeps_its_own_error_and_says_which(board: Board) -> None:
    too_long = "x" * (MAX_TITLE + 1)
    with pytest.raises(errors.TooLarge) as refused:
        board.import_items([{"title": "ok"}, {"title": too_long}], created_by="h")
    assert refused.value.code == "too_large"
    assert refused.value.message.startswith("item 1: title is")
    assert str(refused.value) == refused.value.message
    assert refused.value.details == {"index": 1, "field": "title"}
    with pytest.raises(errors.TooLarge, match=r"^title is"):  # one entry: nothing to say which
        board.import_items([{"title": too_long}], created_by="h")


# --- talking, agents, events ---------------------------------------------------------------


def test_inbox_shows_what_others_did_to_my_items_once(board: Board) -> None:
    mine = board.add("mine", created_by="me")
    board.add("theirs", created_by="other")
    board.add("for me", created_by="other", kind="handoff", to="me")
    board.reply(mine.id, agent="other", body="looks good")
    board.reply(mine.id, agent="me", body="thanks")
    board.ack(mine.id, agent="other")
    seen = [(e.kind, e.agent) for e in board.inbox("me")]
    assert seen == [("created", "other"), ("reply", "other"), ("ack", "other")]
    assert board.inbox("me") == []
    board.reply(2, agent="third", body="ping @me please")
    assert [e.details["mentions"] for e in board.inbox("me", peek=True)] == [["me"]]
    assert len(board.inbox("me")) == 1


def test_an_inbox_holds_news_not_the_history_of_an_item_it_has_just_taken(board: Board) -> None:
    """Issue 25: an agent's first inbox held the imported item's history (created, edited)
    before it had touched the item. What happened before an agent first acted on an item is
    not news to it; what others do after is."""
    item = board.add("imported", created_by="lead")
    board.edit(item.id, agent="lead", title="imported, renamed")
    board.reply(item.id, agent="lead", body="context for whoever takes it")
    board.claim(item.id, agent="worker")
    assert board.inbox("worker") == []
    board.reply(item.id, agent="lead", body="one more thing")
    assert [(e.kind, e.agent) for e in board.inbox("worker")] == [("reply", "lead")]
    board.reply(item.id, agent="lead", body="@bystander have a look")  # a mention is news
    assert [e.kind for e in board.inbox("bystander")] == ["reply"]


def test_inbox_tells_the_previous_holder_about_a_takeover(board: Board, clock: Clock) -> None:
    item = board.add("x", created_by="h")
    board.claim(item.id, agent="a", lease_seconds=1)
    board.inbox("a")
    clock.advance(2)
    board.claim(item.id, agent="b")
    assert [e.kind for e in board.inbox("a")] == ["takeover"]


def test_ack_is_recorded_once(board: Board) -> None:
    item = board.add("x", created_by="h")
    assert board.ack(item.id, agent="a") is True
    assert board.ack(item.id, agent="a") is False
    assert kinds(board, item.id) == ["created", "ack"]


def test_agents_registry_shows_holdings(board: Board) -> None:
    item = board.add("x", created_by="h")
    board.claim(item.id, agent="a")
    listed = {a.name: a.holding for a in board.agents(everyone=True)}
    assert listed == {"h": (), "a": (item.id,)}
    # h only added an item: a person, not an agent (issue 15 item 13)
    assert [a.name for a in board.agents()] == ["a"]


def test_every_change_appends_exactly_one_event(board: Board, clock: Clock) -> None:
    a = board.add("a", created_by="h")
    b = board.add("b", created_by="h")
    c = board.claim(a.id, agent="x")
    board.heartbeat(a.id, agent="x", token=c.token)
    board.edit(b.id, agent="h", add_deps=[a.id])
    board.reply(a.id, agent="y", body="hi")
    board.release(a.id, agent="x", token=c.token)
    c2 = board.claim(a.id, agent="y")
    board.done(a.id, agent="y", token=c2.token)
    board.cancel(b.id, agent="h", reason="not needed")
    events = board.events()
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert [e.kind for e in events] == [
        "created",
        "created",
        "claimed",
        "heartbeat",
        "edited",
        "reply",
        "released",
        "claimed",
        "done",
        "cancelled",
    ]


def test_state_can_be_explained_from_the_log(board: Board, clock: Clock) -> None:
    """Replaying claim/release/done/takeover events gives each item's state and holder."""
    items = [board.add(str(n), created_by="h") for n in range(4)]
    c0 = board.claim(items[0].id, agent="a", lease_seconds=1)
    board.done(items[0].id, agent="a", token=c0.token)
    c1 = board.claim(items[1].id, agent="a", lease_seconds=1)
    board.release(items[1].id, agent="a", token=c1.token)
    board.claim(items[2].id, agent="a", lease_seconds=1)
    clock.advance(2)
    board.claim(items[2].id, agent="b")
    board.cancel(items[3].id, agent="h", reason="not needed")
    replay: dict[int, tuple[str, str | None]] = {}
    for e in board.events():
        assert e.item_id is not None
        if e.kind == "created":
            replay[e.item_id] = ("pending", None)
        elif e.kind in ("claimed", "takeover"):
            replay[e.item_id] = ("claimed", e.agent)
        elif e.kind == "released":
            replay[e.item_id] = ("pending", None)
        elif e.kind == "done":
            replay[e.item_id] = ("done", e.agent)
        elif e.kind == "cancelled":
            replay[e.item_id] = ("cancelled", None)
    actual = {i.id: (i.state, i.claimed_by) for i in board.list_items()}
    assert replay == actual


# --- bad input -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda b: b.add("", created_by="h"), "title is required"),
        (lambda b: b.add("x" * 301, created_by="h"), "limit is 300"),
        (lambda b: b.add("x", created_by="h", kind="epic"), "unknown kind"),
        (lambda b: b.add("x", created_by="h", priority=5), "invalid priority"),
        (lambda b: b.add("x", created_by="h", labels=["a,b"]), "invalid label"),
        (lambda b: b.add("x", created_by="h", body="é" * 40_000), "limit is 65536"),
        (lambda b: b.add("x", created_by="bad name"), "invalid agent name"),
        (lambda b: b.claim(1, agent=""), "agent name is required"),
        (lambda b: b.claim(-1, agent="a"), "invalid item id"),
        (lambda b: b.claim(1, agent="a", lease_seconds=0), "out of range"),
        (lambda b: b.done(1, agent="a", token="x"), "fencing token"),
        (lambda b: b.edit(1, agent="a"), "nothing to change"),
        (lambda b: b.reply(1, agent="a", body="  "), "needs some text"),
    ],
)
def test_bad_input_is_named_and_changes_nothing(board: Board, call, error: str) -> None:  # type: ignore[no-untyped-def]
    board.add("existing", created_by="h")
    before = (board.list_items(), board.last_seq())
    with pytest.raises(errors.InvalidInput, match=error):
        call(board)
    assert (board.list_items(), board.last_seq()) == before


# --- messages --------------------------------------------------------------------------------

CORE = Path(__file__).resolve().parent.parent / "src" / "coord"
FLAG = re.compile(r"(?<![\w-])--[a-z]")


def _messages(path: Path) -> list[tuple[int, str]]:
    """Every string a module can put in an error or a result: its constants but docstrings."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]


def test_the_core_names_no_command_line_flag() -> None:
    """HTTP and MCP callers read the core's messages too: they name API fields (``skip_checks``),
    and the command line adds its own flags by error code."""
    modules = [
        *sorted((CORE / "core").glob("*.py")),
        *sorted((CORE / "storage").glob("*.py")),
        CORE / "model.py",
        CORE / "errors.py",
    ]
    flags = [
        f"{path.relative_to(CORE)}:{line}: {text!r}"
        for path in modules
        for line, text in _messages(path)
        if FLAG.search(text)
    ]
    assert flags == []


def test_a_missing_agent_is_said_without_a_flag(board: Board) -> None:
    with pytest.raises(errors.InvalidInput) as refused:
        board.claim_next(agent="")
    assert refused.value.details == {"field": "agent"} and "--" not in refused.value.message


# --- escalation: held while the question waits, up to a bound --------------------------------

HOLD = 3600  # this board's escalation bound


@pytest.fixture
def asking_board(tmp_path: Path, clock: Clock) -> Iterator[Board]:
    b = Board(
        SQLiteStorage(tmp_path / "board.db"),
        clock=clock,
        default_lease_seconds=60,
        repo_root=tmp_path,
        escalation_hold_seconds=HOLD,
    )
    yield b
    b.close()


def _asked(board: Board) -> tuple[int, int]:
    item = board.add("x", created_by="h", files=["src/a.py"])
    claim = board.claim(item.id, agent="asker")
    board.escalate(item.id, agent="asker", token=claim.token, question="which db?")
    return item.id, claim.token


def test_a_waiting_question_holds_claim_and_files_up_to_the_bound(
    asking_board: Board, clock: Clock
) -> None:
    item_id, _ = _asked(asking_board)
    clock.advance(HOLD - 1)  # far past the 60 s lease, within the bound
    with pytest.raises(errors.AlreadyClaimed, match="human"):
        asking_board.claim(item_id, agent="b")
    assert asking_board.who("src/a.py", agent="b")["may_edit"] is False
    shown = asking_board.show(item_id)
    assert (shown["state"], shown["question_stale"]) == ("needs_human", False)
    clock.advance(2)  # past the bound: the question stays, shown stale; the files are free
    assert asking_board.who("src/a.py", agent="b")["may_edit"] is True
    assert asking_board.reserve(["src/a.py"], agent="c", lease_seconds=5)
    listed = [i.to_dict(clock()) for i in asking_board.list_items(state="needs_human")]
    assert [(i["id"], i["question"], i["question_stale"]) for i in listed] == [
        (item_id, "which db?", True)
    ]


def test_a_stale_question_is_taken_over_with_an_event_that_reaches_the_asker(
    asking_board: Board, clock: Clock
) -> None:
    item_id, old_token = _asked(asking_board)
    asking_board.inbox(agent="asker")  # drain what came before
    clock.advance(HOLD + 1)
    took = asking_board.claim_next(agent="b")
    assert (took.item.id, took.takeover_from) == (item_id, "asker")
    assert took.item.question == "which db?" and took.item.shown_state == "needs_human"
    assert [r.agent for r in asking_board.reservations()] == ["b"]  # the files moved with it
    event = asking_board.events(item_id=item_id)[-1]
    assert (event.kind, event.details["takeover_from"]) == ("takeover", "asker")
    assert event.details["question"] == "which db?"
    news = asking_board.inbox(agent="asker")
    assert [(e.kind, e.agent) for e in news] == [("takeover", "b")]
    with pytest.raises(errors.LeaseLost):
        asking_board.heartbeat(item_id, agent="asker", token=old_token)


def test_an_answer_or_a_new_ask_renews_the_hold(asking_board: Board, clock: Clock) -> None:
    item_id, token = _asked(asking_board)
    asking_board.heartbeat(item_id, agent="asker", token=token)  # never shortens the wait
    assert asking_board.get(item_id).lease_expires_at == clock() + HOLD
    clock.advance(HOLD - 10)
    asking_board.escalate(item_id, agent="asker", token=token, question="which db, again?")
    clock.advance(HOLD - 10)  # past the first bound: asking again renewed it
    assert asking_board.get(item_id).lease_live(clock())
    with pytest.raises(errors.AlreadyClaimed):
        asking_board.claim(item_id, agent="b")
    clock.advance(5)
    answered = asking_board.answer(item_id, agent="human", text="sqlite")
    assert answered.lease_expires_at == clock() + 60  # the holder's lease again
    assert asking_board.who("src/a.py", agent="b")["may_edit"] is False
    clock.advance(61)  # an answered item lapses like any claim
    assert asking_board.claim(item_id, agent="b").takeover_from == "asker"
