"""One exception hierarchy for every face.

Each error carries a stable machine code (``error``), a sentence a person or a model can act
on (``message``) and the facts behind it (``details``). The HTTP face maps ``http_status``,
the CLI maps ``exit_code``; nothing else decides how an error looks.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~10 ms at import; the CLI path avoids it
if TYPE_CHECKING:
    from typing import Any

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_CONFLICT = 3
EXIT_NOTHING_READY = 4
# no such item, package or document: one code from every command (it was 1 from some, 2 from
# others), so a script can tell "not there" from "refused"
EXIT_NOT_FOUND = 5
# `coord wait --timeout`: the time ran out before the claim or the paths were granted (the
# place was given up); not a refusal, so not 3: wait again, ask the holder or pick other work
EXIT_WAIT_TIMEOUT = 6
# the guard's "do not edit", and a hook's refusal when no JSON decision can be given: what
# every agent client reads as "blocked"
EXIT_REFUSED = 2


class CoordError(Exception):
    code = "error"
    http_status = 500
    exit_code = EXIT_ERROR

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        return {"error": self.code, "message": self.message, **self.details}


class StaleSnapshot(CoordError):
    """An item's compare-and-set missed inside a write transaction: its fencing token was no
    longer the one this transaction read.

    Writers are serialised (the storage contract), so this is a broken invariant, not a race
    to retry: a backend that let another writer in, or a core that wrote from an old copy.
    The transaction rolls back, so nothing was written."""

    code = "stale_snapshot"


class InvalidInput(CoordError):
    """The request itself is wrong: a bad value, a missing field, a wrong type."""

    code = "invalid_input"
    http_status = 422
    exit_code = EXIT_USAGE


class InvalidJson(InvalidInput):
    """The request body is not JSON at all (or JSON that has no NaN/Infinity, as Python's
    reader would allow): nothing in it could be read."""

    code = "invalid_json"
    http_status = 400


class DependencyCycle(InvalidInput):
    """Every dependency is well formed; together with the others (the board's, or the rest
    of the import) they would close a loop: a conflict, answered 409 like the board's other
    refusals of well-formed requests."""

    code = "dependency_cycle"
    http_status = 409


class TooLarge(InvalidInput):
    code = "too_large"
    http_status = 413


class NotFound(CoordError):
    code = "not_found"
    http_status = 404
    exit_code = EXIT_NOT_FOUND


class Unauthorized(CoordError):
    code = "unauthorized"
    http_status = 401


class ForeignHost(Unauthorized):
    """The request named the daemon by a host name that is not loopback: the DNS-rebinding
    defence refuses it whatever the token."""

    code = "foreign_host"
    http_status = 403


class ForeignOrigin(Unauthorized):
    """A request on the web page's session came from another origin, or a change came with
    no Origin at all: the page's session works only for the page itself."""

    code = "foreign_origin"
    http_status = 403


class Conflict(CoordError):
    """The board's state refuses the request; someone else got there first."""

    code = "conflict"
    http_status = 409
    exit_code = EXIT_CONFLICT


class AlreadyClaimed(Conflict):
    code = "already_claimed"


class LeaseLost(Conflict):
    """A write carried a token that is no longer the item's live claim (the zombie case)."""

    code = "lease_lost"


class FilesReserved(Conflict):
    """Some requested file is held by another agent."""

    code = "files_reserved"


class NotReady(Conflict):
    """The item waits on dependencies that are not done."""

    code = "not_ready"


class NotClaimable(Conflict):
    """The item is done or cancelled."""

    code = "not_claimable"


class AlreadyExists(Conflict):
    code = "already_exists"


class ChecksFailed(Conflict):
    """A check command of the item failed: it stays claimed; the evidence is recorded."""

    code = "checks_failed"
    # What to do next, in the HTTP API's words (the fields of `done`), after the facts. The
    # CLI and MCP take other arguments (flags, a tool's arguments): they cut it off
    # (``said_without_fields``) and say it in their own words.
    advice_in_fields = (
        "Fix it and finish it again with new `evidence`, or close it anyway with the reason "
        "in `skip_checks`"
    )


class ChecksRequired(Conflict):
    """The item has checks and no evidence of them came with ``done``."""

    code = "checks_required"
    advice_in_fields = (
        "finish it with the `evidence` that each passed where you work, or close it anyway "
        "with the reason in `skip_checks`"
    )


def said_without_fields(err: CoordError) -> str:
    """A checks refusal's facts (which checks, how they failed, their output) without the
    HTTP API's advice, for a face that gives its own; any other refusal as it is."""
    if err.code == ChecksFailed.code:
        return err.message.replace(f" {ChecksFailed.advice_in_fields}", "")
    if err.code == ChecksRequired.code:
        return err.message.replace(f": {ChecksRequired.advice_in_fields}", "")
    return err.message


class NotWaiting(Conflict):
    """``answer`` on an item that asked nothing."""

    code = "not_waiting"


class NotCancelled(Conflict):
    """``reopen`` on an item that is not cancelled (a done item stays done)."""

    code = "not_cancelled"


class CursorPastEnd(Conflict):
    """A reader's cursor (``after``) is past the board's last event: it was taken from
    another board, or from this one before it was replaced (a restore, a migration), and
    nothing after it will ever come. ``last_seq`` says where the log ends: read again from
    0, or from there. (The event stream says it as ``event: reload``.)"""

    code = "cursor_past_end"


class AskNotOpen(Conflict):
    """An ask answered already, or timed out: nothing to answer."""

    code = "ask_not_open"


class WaitTimedOut(CoordError):
    """`coord wait --timeout` ran out before the grant; the place was given up."""

    code = "wait_timed_out"
    http_status = 408
    exit_code = EXIT_WAIT_TIMEOUT


class NotPermitted(CoordError):
    """The agent may not do this to someone else's item (cancel, reopen, set its checks):
    the message names who may."""

    code = "not_permitted"
    http_status = 403
    exit_code = EXIT_CONFLICT


class Forbidden(NotPermitted):
    """A request proven to be one agent's (a person's or machine's token, a page session)
    names another: acting as someone else is refused, whatever the write (issue 27)."""

    code = "forbidden"


class NothingReady(CoordError):
    code = "nothing_ready"
    http_status = 404
    exit_code = EXIT_NOTHING_READY


class BoardNotFound(CoordError):
    code = "no_board"
    exit_code = EXIT_ERROR


class DaemonAlreadyRunning(CoordError):
    code = "daemon_running"


class DaemonUnavailable(CoordError):
    code = "daemon_unavailable"
    http_status = 503


class BoardUnavailable(DaemonUnavailable):
    """The board cannot take the request now, for a reason outside the request: nothing was
    changed. Each subclass names the reason and what to do."""

    code = "board_unavailable"


class BoardGone(BoardUnavailable):
    """The daemon's board file was deleted or replaced while it ran: a write to the file it
    still has open would be acknowledged and then lost at the next start."""

    code = "board_gone"


class BoardBusy(BoardUnavailable):
    """Another process holds SQLite's write lock longer than the daemon will wait."""

    code = "board_busy"
    retry_after = 1  # seconds: the HTTP face sends it as Retry-After


class DiskFull(BoardUnavailable):
    """SQLite could not write (SQLITE_FULL / ENOSPC): the transaction was rolled back."""

    code = "disk_full"
    http_status = 507


class BoardIOError(BoardUnavailable):
    """SQLite's read or write of the board failed in the operating system (SQLITE_IOERR): a
    failing device, a file-size limit, a quota. The transaction was rolled back."""

    code = "board_io_error"


class DatabaseUnreachable(BoardUnavailable):
    """A PostgreSQL board's server cannot be reached, or dropped the connection (a restart, a
    terminated backend, a network fault). Nothing was acknowledged; the daemon opens a new
    connection for the next request, so trying again once the server is back succeeds."""

    code = "database_unreachable"
    retry_after = 2  # seconds: the HTTP face sends it as Retry-After


class BoardUnreadable(CoordError):
    """The board's files cannot be opened or written with this process's permissions."""

    code = "board_unreadable"


class GitError(CoordError):
    """git failed in a way that is not a lost race: not installed, no repository, no remote,
    no network, a command that did not finish in time."""

    code = "git_error"


ERRORS_BY_CODE: dict[str, type[CoordError]] = {
    cls.code: cls
    for cls in (
        CoordError,
        StaleSnapshot,
        InvalidInput,
        Forbidden,
        InvalidJson,
        DependencyCycle,
        TooLarge,
        NotFound,
        Unauthorized,
        ForeignHost,
        ForeignOrigin,
        Conflict,
        AlreadyClaimed,
        LeaseLost,
        FilesReserved,
        NotReady,
        NotClaimable,
        AlreadyExists,
        ChecksFailed,
        ChecksRequired,
        NotWaiting,
        AskNotOpen,
        WaitTimedOut,
        NotCancelled,
        CursorPastEnd,
        NotPermitted,
        NothingReady,
        BoardNotFound,
        DaemonAlreadyRunning,
        DaemonUnavailable,
        BoardUnavailable,
        BoardGone,
        BoardBusy,
        DiskFull,
        BoardIOError,
        DatabaseUnreachable,
        BoardUnreadable,
        GitError,
    )
}


def error_from_dict(body: dict[str, Any]) -> CoordError:
    """Rebuild an error sent over the wire, so the CLI raises what the core raised."""
    code = str(body.get("error", "error"))
    message = str(body.get("message", code))
    details = {k: v for k, v in body.items() if k not in ("error", "message")}
    cls = ERRORS_BY_CODE.get(code)
    if cls is None:
        err = CoordError(message, **details)
        err.code = code
        return err
    return cls(message, **details)
