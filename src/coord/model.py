"""The board's nouns, their limits, and the validation every face shares."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from coord.errors import InvalidInput, TooLarge
from coord.limits import (  # noqa: F401 (the model's limits, as every face has read them)
    KINDS,
    MAX_BATCH,
    MAX_BODY,
    MAX_CHECKS,
    MAX_DEPS,
    MAX_EVIDENCE_OUTPUT,
    MAX_FILES,
    MAX_IMPORT,
    MAX_INTEGER,
    MAX_LABEL,
    MAX_LABELS,
    MAX_LEASE_SECONDS,
    MAX_PATTERN,
    MAX_TITLE,
    MIN_LEASE_SECONDS,
    WORK_KINDS,
)
from coord.times import iso

# how states are shown and filtered: a claimed item waiting on a human answer is needs_human;
# a worktree item submitted to land is queued (stored), one sent back from landing is
# needs_rework (pending, with the rework facts), one whose commits are on main is merged (done,
# with the merged commit)
SHOWN_STATES = (
    "pending",
    "needs_rework",
    "claimed",
    "needs_human",
    "queued",
    "done",
    "merged",
    "cancelled",
)
# what a listing may ask for besides a shown state: "open" (pending, claimed or queued: not
# finished) and "blocked",
# a pending item waiting on a dependency that is not done (non-empty ``Item.blocked_by``),
# which `coord ls` shows as its own row state
LISTED_STATES = (*SHOWN_STATES, "open", "blocked")
PRIORITY_HIGHEST, PRIORITY_LOWEST, PRIORITY_DEFAULT = 0, 4, 2


AGENT_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._@:+-]{0,63}$"
_AGENT_RE = re.compile(AGENT_PATTERN)
_LABEL_RE = re.compile(r"^[^\s,][^,]{0,63}$")
# package ids: R3, QA1, harness:R3. Never all digits, so they cannot be mistaken for item ids.
KEY_PATTERN = r"^[A-Za-z][A-Za-z0-9_.:-]{0,63}$"
_KEY_RE = re.compile(KEY_PATTERN)


# Plain slotted dataclasses, not frozen: a frozen __init__ costs ~5 us more per object, paid
# several times on every claim. They are snapshots; changing one changes nothing on the board.
@dataclass(slots=True)
class Item:
    id: int
    kind: str
    title: str
    body: str
    priority: int
    state: str
    created_by: str
    to: str | None
    claimed_by: str | None
    fencing_token: int
    lease_expires_at: float | None
    created_at: float
    updated_at: float
    closed_at: float | None
    labels: tuple[str, ...] = ()
    # a design document's work package: its id (``R3``), the document and the line
    key: str | None = None
    spec: str | None = None
    spec_line: int | None = None
    # shell commands that must pass before done, and the last run of them (or the override)
    checks: tuple[str, ...] = ()
    evidence: dict[str, Any] | None = None
    # needs_human: the holder's open question; while it waits the lease is held to the
    # board's escalation bound (not the holder's lease), renewed when answered or re-asked
    question: str | None = None
    escalate_to: str | None = None
    # who the design document reserves this package for: not ready for anyone else
    reserved_for: str | None = None
    # a worktree item (issue 24): the claim's branch, main's tip it started from and its
    # path; the head handed over at submit (and when); main's commit once merged
    branch: str | None = None
    base_commit: str | None = None
    worktree: str | None = None
    submitted_head: str | None = None
    submitted_at: float | None = None
    merged_commit: str | None = None
    # sent back from landing: why (reason, files, check output, main's commit, when), and
    # the last holder, who alone may claim it until ``rework_until`` (first refusal)
    rework: dict[str, Any] | None = None
    rework_for: str | None = None
    rework_until: float | None = None
    deps: tuple[int, ...] = ()
    # dependencies that are not done yet; the item is ready only when this is empty
    blocked_by: tuple[int, ...] = ()
    # the files the item declares; claiming it reserves them
    files: tuple[str, ...] = ()
    # other agents' live exclusive reservations that overlap those files (filled by the core)
    files_held_by: tuple[Reservation, ...] = ()

    def lease_live(self, now: float) -> bool:
        return (
            self.state == "claimed"
            and self.lease_expires_at is not None
            and self.lease_expires_at > now
        )

    def question_stale(self, now: float) -> bool:
        """A question that waited past the escalation bound: it stays, the hold does not."""
        return self.question is not None and self.state == "claimed" and not self.lease_live(now)

    @property
    def shown_state(self) -> str:
        """The state people see: a claimed item waiting on a human is ``needs_human``, a
        pending one sent back from landing ``needs_rework``, a done one on main ``merged``."""
        if self.state == "claimed" and self.question is not None:
            return "needs_human"
        if self.state == "pending" and self.rework is not None:
            return "needs_rework"
        if self.state == "done" and self.merged_commit is not None:
            return "merged"
        return self.state

    def kept_for(self, now: float) -> tuple[str, str] | None:
        """Who alone may claim this open item now, and why: the design document reserves
        it (``reserved``), or it came back from landing and its last holder has first
        refusal until ``rework_until`` (``first_refusal``). Claim-next skips it for everyone
        else; ``rules.ensure_claimable`` refuses them."""
        if self.reserved_for is not None:
            return self.reserved_for, "reserved"
        if (
            self.rework_for is not None
            and self.rework_until is not None
            and self.rework_until > now
        ):
            return self.rework_for, "first_refusal"
        return None

    @property
    def ref(self) -> str:
        """How to name the item on the command line: its package id if it has one."""
        return self.key if self.key is not None else str(self.id)

    def claimable(self, now: float) -> bool:
        """Ready: pending, or claimed with a lease that has run out; every dependency done; no
        file held by someone else; not reserved by a design document (the board's SQL says
        the same in ``sqlite_items._NOT_RESERVED_IN_DOCUMENT``)."""
        open_for_claim = self.state == "pending" or (
            self.state == "claimed" and not self.lease_live(now)
        )
        return (
            open_for_claim
            and not self.blocked_by
            and not self.files_held_by
            and self.kept_for(now) is None
        )

    def to_dict(self, now: float) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "title": self.title,
            "body": self.body,
            "priority": self.priority,
            "labels": list(self.labels),
            "state": self.shown_state,
            "key": self.key,
            "created_by": self.created_by,
            "to": self.to,
            "claimed_by": self.claimed_by,
            "fencing_token": self.fencing_token,
            "lease_expires_at": iso(self.lease_expires_at),
            "lease_expired": self.state == "claimed" and not self.lease_live(now),
            "deps": list(self.deps),
            "blocked_by": list(self.blocked_by),
            "files": list(self.files),
            "files_held_by": [r.to_dict() for r in self.files_held_by],
            "ready": self.claimable(now),
            "spec": f"{self.spec}:{self.spec_line}" if self.spec else None,
            "checks": list(self.checks),
            "evidence": self.evidence,
            "question": self.question,
            "question_stale": self.question_stale(now),
            "escalate_to": self.escalate_to,
            "reserved_for": self.reserved_for,
            "branch": self.branch,
            "base_commit": self.base_commit,
            "worktree": self.worktree,
            "submitted_head": self.submitted_head,
            "submitted_at": iso(self.submitted_at),
            "merged_commit": self.merged_commit,
            "rework": self.rework,
            "rework_for": self.rework_for,
            "rework_until": iso(self.rework_until),
            "created_at": iso(self.created_at),
            "updated_at": iso(self.updated_at),
            "closed_at": iso(self.closed_at),
        }


@dataclass(slots=True)
class Reservation:
    """An agent's hold on a path or pattern until ``expires_at``."""

    id: int
    agent: str
    pattern: str
    exclusive: bool
    item_id: int | None
    reason: str
    created_at: float
    expires_at: float
    # the overlap rule it was granted under: 1 before issue 12, kept until it ends (never
    # narrowed); 2 since (coord.fast.patterns.RULE)
    rule: int = 2

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "agent": self.agent,
            "pattern": self.pattern,
            "exclusive": self.exclusive,
            "item": self.item_id,
            "reason": self.reason,
            "created_at": iso(self.created_at),
            "expires_at": iso(self.expires_at),
        }


@dataclass(slots=True)
class Wait:
    """A waiter's place in the queue for an item's claim (``item_id``) or for paths
    (``patterns``, held whole), first come first served by ``id``. The place is leased until
    ``expires_at``; ``state`` is waiting, granted (``token``: the claim's), cancelled or gone
    (``outcome`` says why)."""

    id: int
    agent: str
    item_id: int | None
    patterns: tuple[str, ...]
    lease_seconds: float
    created_at: float
    expires_at: float
    state: str = "waiting"
    ended_at: float | None = None
    token: int | None = None
    outcome: str = ""

    def live(self, now: float) -> bool:
        return self.state == "waiting" and self.expires_at > now

    def shown_state(self, now: float) -> str:
        """A waiting place past its lease is lost: shown as gone though no write said so."""
        return "gone" if self.state == "waiting" and self.expires_at <= now else self.state

    def target(self) -> dict[str, Any]:
        return (
            {"item": self.item_id} if self.item_id is not None else {"paths": list(self.patterns)}
        )


@dataclass(slots=True)
class Ask:
    """One agent asks the holder of an item (or of paths) to let go. ``answer`` release or
    defer (until ``deferred_until``), None while open; unanswered past ``expires_at`` it has
    timed out, on the board's clock."""

    id: int
    asker: str
    holder: str
    item_id: int | None
    token: int | None
    patterns: tuple[str, ...]
    reason: str
    created_at: float
    expires_at: float
    answer: str | None = None
    answer_reason: str = ""
    deferred_until: float | None = None
    answered_at: float | None = None

    def shown_state(self, now: float) -> str:
        if self.answer == "release":
            return "released"
        if self.answer == "defer":
            return "deferred"
        return "timed_out" if self.expires_at <= now else "open"

    def to_dict(self, now: float) -> dict[str, Any]:
        return {
            "id": self.id,
            "asker": self.asker,
            "holder": self.holder,
            "item": self.item_id,
            "paths": list(self.patterns),
            "reason": self.reason,
            "state": self.shown_state(now),
            "answer_reason": self.answer_reason,
            "deferred_until": iso(self.deferred_until),
            "created_at": iso(self.created_at),
            "expires_at": iso(self.expires_at),
            "answered_at": iso(self.answered_at),
        }


@dataclass(slots=True)
class LandingLease:
    """The board's landing lease: the one runner that may land queued items now, fenced by
    a token that grows with every acquisition. ``holder`` None: free."""

    holder: str | None
    token: int
    expires_at: float | None

    def live(self, now: float) -> bool:
        return self.holder is not None and self.expires_at is not None and self.expires_at > now

    def to_dict(self) -> dict[str, Any]:
        return {"holder": self.holder, "token": self.token, "expires_at": iso(self.expires_at)}


@dataclass(slots=True)
class AccessToken:
    """A token the board's owner issued for a person or a machine (issue 27): requests that
    carry it act as ``name`` alone. The secret is never kept, only its SHA-256."""

    id: int
    name: str
    machine: bool
    created_at: float
    last_used_at: float | None = None
    revoked_at: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "kind": "machine" if self.machine else "person",
            "created_at": iso(self.created_at),
            "last_used_at": iso(self.last_used_at),
            "revoked_at": iso(self.revoked_at),
        }


@dataclass(slots=True)
class Claim:
    """What the winner of a claim gets: the token every later write must present."""

    item: Item
    agent: str
    token: int
    lease_expires_at: float
    takeover_from: str | None = None

    def to_dict(self, now: float) -> dict[str, Any]:
        return {
            "id": self.item.id,
            "title": self.item.title,
            "kind": self.item.kind,
            "agent": self.agent,
            "token": self.token,
            "lease_expires_at": iso(self.lease_expires_at),
            "takeover_from": self.takeover_from,
            "item": self.item.to_dict(now),
        }


# What an event records but no read of the log shows (issue 27): a fencing token opens the
# writes of the claim (or landing lease) it belongs to, and the log is read by everyone. The
# board keeps them: the log still explains the state (`coord export` copies them).
TOKEN_DETAILS = frozenset({"token", "landing_token", "item_token", "current_token"})


@dataclass(slots=True)
class Event:
    seq: int
    at: float
    agent: str | None
    item_id: int | None
    kind: str
    details: dict[str, Any] = field(default_factory=dict)
    # the item's package id where it has one, read with the event: every face names an item
    # the way `coord ls` does ("claimed T3" beside "done #1" read as two boards)
    item_key: str | None = None
    # who made it, as the board knew it (issue 27): {"verified": bool, "via": ..., "machine",
    # "checkout", "client", "session" where known}; None for an event logged before then
    provenance: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        # by hand, not asdict: its deep copy of the details (read fresh from the board for
        # each Event, and only ever encoded) was most of what framing an event for the live
        # stream cost (bench/run.py stream)
        return {
            "seq": self.seq,
            "at": iso(self.at),
            "agent": self.agent,
            "item_id": self.item_id,
            "item_key": self.item_key,
            "kind": self.kind,
            "details": {k: v for k, v in self.details.items() if k not in TOKEN_DETAILS},
            "provenance": self.provenance,
        }


@dataclass(slots=True)
class Reply:
    id: int
    item_id: int
    author: str
    body: str
    created_at: float

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["created_at"] = iso(self.created_at)
        return d


@dataclass(slots=True)
class Agent:
    name: str
    first_seen: float
    last_seen: float
    holding: tuple[int, ...] = ()
    # it acted as an agent: claimed, reserved files or read its inbox itself; a name that
    # only added, edited, answered or replied (a person), or was given a claim by a design
    # document's reservation line, has not
    worked: bool = False

    def to_dict(self, now: float, active_window: float) -> dict[str, Any]:
        return {
            "name": self.name,
            "role": "agent" if self.worked else "person",
            "first_seen": iso(self.first_seen),
            "last_seen": iso(self.last_seen),
            # seen within the board's window; a claim held past it does not make it active
            "active": now - self.last_seen <= active_window,
            "holding": list(self.holding),
        }


# --- validation shared by every face -------------------------------------------------------


def check_agent(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise InvalidInput(
            "an agent name is required: every call names the agent that makes it",
            field="agent",
        )
    if not _AGENT_RE.match(name):
        raise InvalidInput(
            f"invalid agent name {name!r}: use 1-64 letters, digits or ._@:+- "
            "starting with a letter or digit",
            field="agent",
        )
    return name


def check_humans(value: Any) -> frozenset[str]:
    """The board's ``humans`` setting: the names of the people who may cancel, reopen and
    set the checks of anyone's items. Read from ``.coord/config.json``, so the message names
    that file."""
    if value is None:
        return frozenset()
    where = "`humans` in .coord/config.json"
    if not isinstance(value, list):
        raise InvalidInput(f'{where} must be a list of names, like ["alice"]', field="humans")
    for name in value:
        if not isinstance(name, str) or not _AGENT_RE.match(name):
            raise InvalidInput(
                f"{where}: {name!r} is not a name: use 1-64 letters, digits or ._@:+- "
                "starting with a letter or digit, as agents' names are",
                field="humans",
            )
    return frozenset(value)


def digits(value: Any) -> Any:
    """``value`` as an int if it is a string of ASCII digits, else unchanged. Not
    ``str.isdigit`` alone: it says yes to '²' and '٣', which are no id anyone was given."""
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    return value


def is_stored_integer(value: Any) -> bool:
    """An integer the board can store and compare: SQLite's are 64-bit, so a larger one
    names nothing and cannot be a count either."""
    return isinstance(value, int) and not isinstance(value, bool) and value <= MAX_INTEGER


def check_item_id(value: Any) -> int:
    if isinstance(value, str):
        value = digits(value.strip().lstrip("#"))
    if not is_stored_integer(value) or value <= 0:
        raise InvalidInput(
            f"invalid item id {value!r}: ids are positive integers up to {MAX_INTEGER}",
            field="id",
        )
    return value


def check_token(value: Any) -> int:
    value = digits(value)
    if not is_stored_integer(value) or value <= 0:
        raise InvalidInput(
            "a fencing token (the positive integer your claim returned) is required",
            field="token",
        )
    return value


def check_title(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput("a title is required (a non-empty string)", field="title")
    value = value.strip()
    if len(value) > MAX_TITLE:
        raise TooLarge(f"title is {len(value)} characters; the limit is {MAX_TITLE}", field="title")
    return value


def check_body(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidInput("body must be a string", field="body")
    if len(value.encode()) > MAX_BODY:
        raise TooLarge(
            f"body is {len(value.encode())} bytes; the limit is {MAX_BODY}", field="body"
        )
    return value


def check_kind(value: Any) -> str:
    if value not in KINDS:
        raise InvalidInput(f"unknown kind {value!r}: use one of {', '.join(KINDS)}", field="kind")
    return str(value)


def check_state(value: Any, allowed: Sequence[str] = SHOWN_STATES) -> str:
    if value not in allowed:
        raise InvalidInput(
            f"unknown state {value!r}: use one of {', '.join(allowed)}", field="state"
        )
    return str(value)


def check_reason(value: Any, field_name: str) -> str:
    """Required free text: a question, an answer, the reason for an override."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{field_name} needs some text", field=field_name)
    return check_body(value.strip())


def check_item_ref(value: Any) -> int | str:
    """An item id (``12``, ``#12``) or a work package key (``R3``)."""
    if isinstance(value, str) and _KEY_RE.match(value.strip()):
        return value.strip()
    return check_item_id(value)


def check_key(value: Any) -> str:
    if not isinstance(value, str) or not _KEY_RE.match(value):
        raise InvalidInput(
            f"invalid package id {value!r}: 1-64 letters, digits or ._:- starting with a "
            "letter (numbers alone are item ids)",
            field="key",
        )
    return value


def check_commands(value: Any, field_name: str = "checks") -> tuple[str, ...]:
    """Check commands: a list of non-empty shell command strings."""
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise InvalidInput(f"{field_name} must be a list of shell commands", field=field_name)
    if len(value) > MAX_CHECKS:
        raise TooLarge(f"{len(value)} checks; the limit is {MAX_CHECKS}", field=field_name)
    commands: list[str] = []
    for command in value:
        if not isinstance(command, str) or not command.strip() or "\n" in command:
            raise InvalidInput(
                f"{field_name} must be one-line shell commands, not {command!r}",
                field=field_name,
            )
        if len(command) > MAX_PATTERN:
            raise TooLarge(f"a check is over {MAX_PATTERN} characters", field=field_name)
        if command.strip() not in commands:
            commands.append(command.strip())
    return tuple(commands)


def check_priority(value: Any) -> int:
    value = digits(value)
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not PRIORITY_HIGHEST <= value <= PRIORITY_LOWEST
    ):
        raise InvalidInput(
            f"invalid priority {value!r}: use an integer from {PRIORITY_HIGHEST} (highest) "
            f"to {PRIORITY_LOWEST}",
            field="priority",
        )
    return value


def check_labels(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise InvalidInput("labels must be a list of strings", field="labels")
    if len(value) > MAX_LABELS:
        raise TooLarge(f"{len(value)} labels; the limit is {MAX_LABELS}", field="labels")
    labels: list[str] = []
    for label in value:
        label = label.strip()
        if not _LABEL_RE.match(label):
            raise InvalidInput(
                f"invalid label {label!r}: 1-{MAX_LABEL} characters, no commas", field="labels"
            )
        if label not in labels:
            labels.append(label)
    return tuple(labels)


def check_deps(value: Any) -> tuple[int, ...]:
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise InvalidInput("deps must be a list of item ids", field="deps")
    if len(value) > MAX_DEPS:
        raise TooLarge(f"{len(value)} dependencies; the limit is {MAX_DEPS}", field="deps")
    return tuple(dict.fromkeys(check_item_id(v) for v in value))


def check_lease(value: Any, default: float) -> float:
    if value is None:
        return default
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            value = float(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput("lease_seconds must be a number of seconds", field="lease_seconds")
    if not MIN_LEASE_SECONDS <= value <= MAX_LEASE_SECONDS:
        raise InvalidInput(
            f"lease_seconds {value} is out of range: use {MIN_LEASE_SECONDS} to "
            f"{MAX_LEASE_SECONDS}",
            field="lease_seconds",
        )
    return float(value)


def check_files(value: Any) -> tuple[str, ...]:
    """A list of path patterns, as given: normalising them needs the repository (the core)."""
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise InvalidInput("files must be a list of paths or patterns", field="files")
    if len(value) > MAX_FILES:
        raise TooLarge(f"{len(value)} files; the limit is {MAX_FILES}", field="files")
    for pattern in value:
        if not isinstance(pattern, str):
            raise InvalidInput("files must be a list of strings", field="files")
        if len(pattern) > MAX_PATTERN:
            raise TooLarge(f"a pattern is over {MAX_PATTERN} characters", field="files")
    return tuple(value)


_COMMIT_RE = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
# Who holds a submitted item's files while it waits to land: not a valid agent name (agent
# names have no '/'), so no agent can act as it or be mistaken for it.
QUEUE_HOLDER = "coord/queue"
# Who holds a worktree item's files once its claim lapsed, until the item is taken over,
# merged or abandoned (``core.worktree_holds``): as little an agent name as the queue's.
LAPSED_HOLDER = "coord/lapsed"
REWORK_REASONS = ("conflict", "check_failed", "head_moved", "files_held")
# Why a queued item's landing must wait, with nothing for its holder to fix (it stays
# queued): local changes in the checkout of main are in the way, or main kept moving.
WAIT_REASONS = ("checkout_dirty", "main_moved")


def check_commit(value: Any, field_name: str) -> str:
    """A full git object id (SHA-1 or SHA-256, lowercase hex): what a worktree item records
    of main and of its branch. An abbreviation could name another commit later."""
    if not isinstance(value, str) or not _COMMIT_RE.match(value):
        raise InvalidInput(
            f"{field_name} must be a full commit id (40 or 64 lowercase hex digits, as `git "
            f"rev-parse` prints it), not {value!r}",
            field=field_name,
        )
    return value


WORKTREE_BRANCH_PREFIX = "coord/"


def worktree_dirname(branch: str) -> str:
    """A worktree's directory name under the worktree root: its branch without ``coord/``,
    one path component. The one rule: the board records ``<path_root>/<this>`` at the claim
    (``core.landings``) and ``landing.worktrees.create`` makes the worktree there."""
    return branch.removeprefix(WORKTREE_BRANCH_PREFIX).replace("/", "-")


def worktree_path(path_root: str, branch: str) -> str:
    """Where the worktree of ``branch`` is, beneath the worktree root ``path_root``."""
    return f"{path_root.rstrip('/')}/{worktree_dirname(branch)}"


@dataclass(frozen=True, slots=True)
class WorktreeSpec:
    """What a claim with a worktree records: main's tip the worktree starts from, and the
    directory the worktrees of this repository are made in (the item's path is beneath it)."""

    base_commit: str
    path_root: str

    def __post_init__(self) -> None:
        check_commit(self.base_commit, "base_commit")
        if not isinstance(self.path_root, str) or not self.path_root.startswith("/"):
            raise InvalidInput(
                f"path_root must be an absolute directory path, not {self.path_root!r}",
                field="path_root",
            )
