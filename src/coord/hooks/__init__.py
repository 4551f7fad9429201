"""`coord hook CLIENT EVENT`: an agent client's hook, answered from the board.

The client (``claude``, ``codex``, ``gemini``, ``cursor``) runs ``coord hook CLIENT EVENT``
with its hook JSON on stdin, and reads the answer in its own format (``coord.hooks.claude``,
``.codex``, ``.gemini``, ``.cursor`` say which, with the documentation they follow; Cursor's
input is first put in the others' shape, also when Cursor runs Claude Code's hooks). Four
kinds of event:

- **the guard** (Claude Code and Codex ``PreToolUse``, Gemini ``BeforeTool``, Cursor
  ``preToolUse`` and ``beforeShellExecution``), before a tool
  runs: a file edit another agent holds is refused, the holder and free files are allowed in
  silence (no output: an explicit "allow" would skip the user's permission prompts), and a
  shell command is refused when it writes a held file or skips coord's pre-commit guard
  (``coord.hooks.shell``). The guard fails closed: unreadable input, an unreadable board, a
  path coord refuses (``.git/...``, the board in ``.coord/``) or a crash refuse the call with a
  one-line reason. Every way of writing a path meets one rule (``coord.fast.targets``): a
  path in the repository, however spelled, is judged by its board, and a path in no coord
  repository (``/tmp/x``) is allowed, by an edit tool as by a shell command. Refusals
  are the client's JSON decision on stdout with exit 0; only when even that cannot be written
  does it exit 2 with the reason on stderr, which every one of these clients also reads as a
  refusal (exit 1 would let the call through). Where no board is found from the hook's
  ``cwd`` (or ``COORD_DIR``), coord is not in use there: only paths in another coord
  repository are judged (by that repository's board).
  Once it allows a call, the guard snapshots the files other agents hold in the agent's
  working tree (``coord.hooks.aftercheck``), and it answers within its own deadline
  (``GUARD_DEADLINE_SECONDS``): every client lets a call through when a guard hook times out.
- **the after-tool check** (Claude Code ``PostToolUse`` and ``PostToolUseFailure``, Codex
  ``PostToolUse``, Gemini ``AfterTool``, Cursor ``afterShellExecution`` and
  ``afterFileEdit``): compares with that snapshot; a held file the call changed is put back,
  reported on the board and told to the agent (``coord.hooks.aftercheck``). The call has run:
  nothing is refused, and an error is one line on stderr.
- **session start** (``SessionStart``): records which agent this client process is
  (``coord.fast.identity.remember``) and tells the agent its name, claims, inbox, what is ready
  and how to use coord (``coord.hooks.session``).
- **stop** (Claude Code and Codex ``Stop``, Gemini ``AfterAgent``, Cursor ``stop``):
  heartbeats the agent's claims and reminds it of what it still holds. It never blocks the
  stop.
- **worktrees** (Claude Code ``WorktreeCreate`` and ``WorktreeRemove``): the client's
  worktrees are coord's; making one claims an item (``coord.hooks.worktree``). On any error
  nothing is made or removed, and the exit is 1 with the reason: the client says it.

Session start and stop never break a session: on any error they print one line to stderr
and exit 0. Other events are answered with nothing.

The guard runs before every edit, so its path imports only the stdlib and coord's small
modules (as ``coord guard`` does); ``coord.cli.entry`` routes ``coord hook`` here without
argparse.
"""

from __future__ import annotations

import sys

from coord.errors import EXIT_REFUSED

# a hook event coord does not answer: an error the clients show without blocking the call
EXIT_UNKNOWN_EVENT = 1

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from coord.hooks.client_spec import HookClient


class Refusal(Exception):
    """Input the guard cannot read, said in one line (the guard refuses the call)."""


def run_hook(client: str, event: str) -> int:
    """Answer one hook: read stdin, print the client's answer, return the exit code."""
    spec = _client(client)
    if spec is None:
        from coord.fast.clients import HOOK_CLIENTS  # here: a known client never needs the list

        print(
            f"coord hook: unknown client {client!r}: use {', '.join(HOOK_CLIENTS)}", file=sys.stderr
        )
        return EXIT_REFUSED
    if event in spec.GUARD_EVENTS:
        answered = _deadline(spec, guard_deadline())
        try:
            spec, client, event, data = _shape(spec, client, event, _event(_stdin()))
            reason = _guard(spec, client, data)
            if reason is None and data.get("tool_name") not in spec.QUIET_TOOLS:
                from coord.hooks import aftercheck

                try:  # what the after hook compares with: no snapshot, no call
                    aftercheck.snapshot(client, data)
                except Exception as err:
                    reason = (
                        f"coord hook: cannot snapshot the files others hold ({_line(err)}); "
                        "refusing the call"
                    )
        except Refusal as refusal:
            reason = f"coord hook: {refusal}; refusing the call"
        except BaseException as err:  # fail closed, whatever happened
            reason = f"coord hook: {_line(err)}; refusing the call"
        answered.acquire()  # from here the deadline's refusal is not written
        return 0 if reason is None else _refuse(spec, reason)
    if event in spec.AFTER_EVENTS:
        try:
            spec, client, event, data = _shape(spec, client, event, _event(_stdin()))
            from coord.hooks import aftercheck

            answer = aftercheck.answer(spec, client, event, data)
            answer = _with_new_asks(spec, client, event, data, answer)
            if answer is not None:
                _print(answer)
        except BaseException as err:  # the call has run: nothing to refuse; say it
            print(
                f"coord hook {client} {event}: cannot check held files: {_line(err)}",
                file=sys.stderr,
            )
        return 0
    if event in getattr(spec, "WORKTREE_EVENTS", ()):  # Claude Code's worktrees are coord's
        from coord.hooks import worktree

        try:
            return worktree.answer(client, event, _event(_stdin()))
        except BaseException as err:  # nothing was made or removed: say why, fail the call
            print(f"coord hook {client} {event}: {_line(err)}", file=sys.stderr)
            return worktree.EXIT_FAILED
    if event not in (spec.START_EVENT, spec.STOP_EVENT):
        # A typo in the client's settings (`coord hook claude Foo`) would otherwise pass
        # unnoticed forever. Exit 1, not 2: the clients show it without blocking the call.
        from coord.fast.clients import EVENTS

        _stdin()
        known = ", ".join(EVENTS[client])
        print(
            f"coord hook: {client} has no event {event!r} coord answers: use {known}",
            file=sys.stderr,
        )
        return EXIT_UNKNOWN_EVENT
    try:
        spec, client, event, data = _shape(spec, client, event, _event(_stdin()))
        from coord.hooks import session

        if event == spec.START_EVENT:
            _print(spec.context(event, session.start_context(client, data)))
        else:
            text = session.stop_notice(client, data)
            waiting = None
            if getattr(spec, "AFTER_AT_STOP", False):
                from coord.hooks import aftercheck

                waiting = aftercheck.pending_notice(data, client)
            if waiting:  # the after-tool check's message, for a client that read none then
                _print(spec.followup("\n\n".join(filter(None, (waiting, text)))))
            elif text:
                _print(spec.notice(text))
    except BaseException as err:  # never break the session over coord
        print(f"coord hook {client} {event}: {_line(err)}", file=sys.stderr)
    return 0


def _with_new_asks(
    spec: Any, client: str, event: str, data: dict[str, Any], answer: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The after-tool answer, with the asks addressed to this agent that it was not shown
    yet (``coord.fast.asks_seen``), for a client whose after-tool hook can add context. A
    board that cannot say leaves the answer as it was."""
    context = getattr(spec, "context", None)
    cwd = data.get("cwd")
    if not getattr(spec, "ASKS_IN_CONTEXT", False) or context is None:
        return answer
    if not isinstance(cwd, str) or not cwd:
        return answer
    from coord.fast import asks_seen, board_files, identity

    home = board_files.locate(cwd)
    if home is None or not board_files.has_board(home):
        return answer
    session_id = data.get("session_id")
    agent = identity.agent_name(home, client, session_id if isinstance(session_id, str) else None)
    asks = asks_seen.new_asks(home, agent) if agent else []
    if not asks:
        return answer
    text = asks_seen.context_text(asks)
    if answer is None:
        return dict(context(event, text))
    if "reason" in answer:  # a block's reason is already put before the model: add to it
        return {**answer, "reason": f"{answer['reason']}\n\n{text}"}
    shown = answer.get("hookSpecificOutput")
    if isinstance(shown, dict) and "additionalContext" in shown:
        extra = f"{shown['additionalContext']}\n\n{text}"
        return {**answer, "hookSpecificOutput": {**shown, "additionalContext": extra}}
    return answer


# The guard's own bound, in seconds: past it the call is refused. Every client lets a call
# through when a guard hook times out (Claude Code, Codex, Gemini CLI; Cursor unless the
# hook says failClosed), so the guard must answer first: `coord init` writes each client a
# hook timeout of GUARD_TIMEOUT_SECONDS (coord.fast.clients), well past this deadline.
GUARD_DEADLINE_SECONDS = 10.0
DEADLINE_VAR = "COORD_GUARD_DEADLINE"  # may only shorten it (the tests'); never lengthen


def guard_deadline() -> float:
    import os

    try:
        asked = float(os.environ.get(DEADLINE_VAR, GUARD_DEADLINE_SECONDS))
    except ValueError:
        return GUARD_DEADLINE_SECONDS
    return asked if 0 < asked < GUARD_DEADLINE_SECONDS else GUARD_DEADLINE_SECONDS


def _deadline(spec: Any, seconds: float) -> Any:
    """Refuse the call from a watchdog thread once ``seconds`` pass, whatever the guard is
    doing (blocked in a read, a lock, a slow disk: a signal would wait for it). Returns the
    lock the guard takes before it answers; whoever takes it first answers, once."""
    import _thread  # the C module: no import cost, unlike threading
    import os
    import time

    from coord.fast import jsontext

    answered = _thread.allocate_lock()
    reason = (
        f"coord hook: the guard did not decide within {seconds:g} s; refusing the call "
        "(try again; `coord doctor` says whether the board answers)"
    )
    # made now: the watchdog must not import while the guard may hold an import lock
    refusal = (jsontext.dumps(spec.deny(reason)) + "\n").encode()

    def refuse_late() -> None:
        time.sleep(seconds)
        if not answered.acquire(False):
            return  # the guard is answering
        code = 0
        try:
            os.write(1, refusal)
        except BaseException:  # no stdout: the exit code alone refuses
            code = EXIT_REFUSED
        os._exit(code)

    _thread.start_new_thread(refuse_late, ())
    return answered


def _client(client: str) -> HookClient | None:
    if client == "claude":
        from coord.hooks import claude

        return claude
    if client == "codex":
        from coord.hooks import codex

        return codex
    if client == "gemini":
        from coord.hooks import gemini

        return gemini
    if client == "cursor":
        from coord.hooks import cursor

        return cursor
    return None


def _shape(
    spec: Any, client: str, event: str, data: dict[str, Any]
) -> tuple[Any, str, str, dict[str, Any]]:
    """(spec, client, event, input) in the shape the guard and session read.

    Cursor runs Claude Code's hooks too, with its own input (``conversation_id``,
    ``workspace_roots``, its tool names): read as Claude Code's, every call would lack a
    ``cwd`` and be refused. Such a call is answered as Cursor's, under Cursor's agent name."""
    if client == "claude" and event in _CLAUDE_EVENTS_CURSOR_RUNS:
        from coord.hooks import cursor

        if cursor.is_cursor(data):
            spec, client, event = cursor.IN_CLAUDE, "cursor", cursor.FROM_CLAUDE[event]
    adapt = getattr(spec, "adapt", None)
    return spec, client, event, (adapt(event, data) if adapt is not None else data)


_CLAUDE_EVENTS_CURSOR_RUNS = ("PreToolUse", "PostToolUse", "SessionStart", "Stop")


def _guard(spec: Any, client: str, data: dict[str, Any]) -> str | None:
    """The guard's whole decision: the reason to refuse, or None to allow."""
    tool = data.get("tool_name")
    if not isinstance(tool, str) or not tool:
        raise Refusal("the hook input names no tool_name")
    tool_input = data.get("tool_input", data.get("args"))
    if not isinstance(tool_input, dict):
        raise Refusal(f"the hook input for {tool} has no tool_input object")
    command, given = "", []
    if tool in spec.SHELL_TOOLS:
        command = _text(tool_input, ("command",), tool)
    elif tool in spec.EDIT_TOOLS:
        given = [_text(tool_input, (field,), tool) for field in spec.EDIT_TOOLS[tool]]
    elif tool in spec.PATCH_TOOLS:
        from coord.hooks import patch

        given = patch.paths(_text(tool_input, ("command", "input", "patch"), tool))
        if not given:
            raise Refusal(f"found no file in the {tool} patch")
    elif tool in spec.QUIET_TOOLS:
        return None
    elif hasattr(spec, "named_paths"):  # Claude Code's PowerShell and MCP tools
        try:
            given = spec.named_paths(tool, tool_input)
        except ValueError as err:
            raise Refusal(str(err)) from None
        if not given:
            return None
    else:  # a tool coord does not know: if it names a file, guard it as an edit
        fields = [f for f in ("file_path", "notebook_path") if f in tool_input]
        if not fields:
            return None
        given = [_text(tool_input, (field,), tool) for field in fields]
    cwd = data.get("cwd")
    if not isinstance(cwd, str) or not cwd:
        raise Refusal("the hook input has no cwd to read paths from")
    from coord.fast import board_files, guard, identity

    home = board_files.locate(cwd)  # None: coord is not used where the agent stands
    session_id = data.get("session_id")
    if isinstance(session_id, str) and session_id:
        agent = identity.agent_name(home, client, session_id)
    else:  # COORD_AGENT, else what this client's SessionStart recorded
        agent = identity.agent_name(home)
    if tool in spec.SHELL_TOOLS:
        from coord.hooks import shell_guard

        refused_by: list[dict[str, Any]] = []
        said = shell_guard.refusal(
            home, command, agent, spec.shell_cwd(tool_input, cwd), refused_by=refused_by
        )
        if said is None:
            return None
        return with_next_step(spec, said, {"refusals": refused_by}, agent)
    # an edit is what `coord guard` judges; with no board where the agent stands, coord is not
    # in use there, yet a path in another coord repository is still judged by that board
    code, lines, verdict = guard.check(home, given, agent, cwd=cwd, home_required=False)
    if code == 0:
        return None
    reason = "\n".join(lines) or "coord guard: refusing the edit"
    return with_next_step(spec, reason, verdict, agent)


def with_next_step(spec: Any, reason: str, verdict: dict[str, Any], agent: str | None) -> str:
    """The guard's refusal with what to do next, in the client's words (``NEXT_HOW``): the
    options of the board's ``next`` (``coord.fast.next_options``), each command as ``agent``
    runs it (the session's name: its shell may not carry it), and the object itself for a
    client (or a script) that reads it."""
    from coord.fast import jsontext, next_options

    found = next_options.for_guard(verdict.get("refusals") or [])
    if found is None:
        return reason
    said = next_options.said(found, agent)
    return f"{reason}\ncoord: {said} ({spec.NEXT_HOW})\ncoord next: {jsontext.dumps(found)}"


def _stdin() -> bytes:
    return sys.stdin.buffer.read()


def _event(raw: bytes) -> dict[str, Any]:
    from coord.fast import jsontext

    try:
        data = jsontext.loads(raw)
    except ValueError as err:
        raise Refusal(f"the hook input is not JSON ({_line(err)})") from None
    if not isinstance(data, dict):
        raise Refusal("the hook input is not a JSON object")
    return data


def _text(tool_input: dict[str, Any], fields: tuple[str, ...], tool: str) -> str:
    for field in fields:
        value = tool_input.get(field)
        if isinstance(value, str):
            return value
    raise Refusal(f"the {tool} input has no {fields[0]} string")


def _refuse(spec: Any, reason: str) -> int:
    try:
        _print(spec.deny(reason))
        return 0
    except BaseException:  # stdout is gone: the exit code alone must refuse
        import contextlib

        with contextlib.suppress(BaseException):
            print(reason, file=sys.stderr)
        return EXIT_REFUSED


def _print(answer: dict[str, Any]) -> None:
    from coord.fast import jsontext

    sys.stdout.write(jsontext.dumps(answer) + "\n")
    sys.stdout.flush()


def _line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def args_hook(p: Any) -> None:
    """The full parser's view of `coord hook` (``coord.cli.entry`` usually skips it)."""
    from coord.fast.clients import HOOK_CLIENTS

    p.add_argument("client", choices=HOOK_CLIENTS, help="the client whose hook this is")
    p.add_argument("event", help="the client's hook event: PreToolUse, SessionStart, Stop, ...")


def cmd_hook(args: Any, ctx: Any) -> tuple[None, str, int]:
    import os

    if getattr(args, "agent", None):  # --as NAME: as COORD_AGENT, which hooks read
        os.environ["COORD_AGENT"] = args.agent
    return None, "", run_hook(args.client, args.event)
