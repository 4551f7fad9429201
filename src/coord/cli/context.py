"""What a CLI command runs with, and how its answer reaches the terminal.

A command takes the parsed arguments and a ``Context`` (the board, the client session, the
agent's name) and returns (the JSON document, the human text[, the exit code]). ``execute``
prints one or the other, and turns the board's errors into one line on stderr (or the error
object with ``--json``) and their exit code. No argparse here: ``coord next`` reaches
``execute`` without building a parser (``coord.cli.entry``).
"""

from __future__ import annotations

import json
import sys

from coord.cli import render
from coord.errors import EXIT_OK, CoordError, InvalidInput, said_without_fields
from coord.fast import board_files, identity, next_options

TYPE_CHECKING = False  # typing costs ~10 ms at import; the CLI path avoids it
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

    from coord.client.flow import Session
    from coord.client.http import Client

    # (the JSON document, the human text[, the exit code when it is not 0])
    Result = tuple[Any, str] | tuple[Any, str, int]
    Command = Callable[[argparse.Namespace, "Context"], Result]


class Context:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self._client: Client | None = None
        self._session: Session | None = None
        self._board_dir: Path | None = None

    @property
    def board_dir(self) -> Path:
        if self._board_dir is None:
            self._board_dir = board_files.require_board_dir()
        return self._board_dir

    @property
    def client(self) -> Client:
        if self._client is None:
            from coord.client.http import Client

            self._client = Client(self.board_dir, on_busy=_say_busy)
        return self._client

    @property
    def session(self) -> Session:
        """The client flow's view of this board: through the daemon, from this directory."""
        if self._session is None:
            from coord.client.flow import Session

            self._session = Session(self.board_dir, self.client, local=True)
        return self._session

    def agent(self, *, required: bool = True) -> str:
        name = getattr(self.args, "agent", None) or identity.of_command(self._found_board())
        if name:
            return str(name)
        if required:
            command = getattr(self.args, "command", None) or "this command"
            raise InvalidInput(
                f"`coord {command}` acts for one agent: which? pass --as NAME or set "
                "COORD_AGENT (each agent needs its own name, so two agents never share a claim, "
                "a hold or an inbox)"
            )
        return identity.person()

    def _found_board(self) -> Path | None:
        """The board, if there is one here: naming the agent must not require it."""
        try:
            return self.board_dir
        except CoordError:
            return None

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


def _say_busy(message: str, wait: float) -> None:
    """Before the client asks a busy board again: why the command waits."""
    print(
        render.for_terminal(f"coord: {message}; asking again in {wait:g} s"),
        file=sys.stderr,
        flush=True,
    )


def execute(command: Command, args: argparse.Namespace) -> int:
    """Run one command and print its answer; the exit code."""
    as_json = bool(getattr(args, "json", False))
    ctx = Context(args)
    try:
        document, text, *rest = command(args, ctx)
    except CoordError as err:
        hint = render.cli_hint(err, args)
        # the board's words, but with the CLI's flags where the board names the API's fields
        said = said_without_fields(err) if hint else err.message
        if as_json:
            shown = {**err.to_dict(), "message": said}
            print(json.dumps({**shown, "hint": hint} if hint else shown))
        else:
            print(render.for_terminal(f"coord: {said}"), file=sys.stderr)
            if hint:
                print(render.for_terminal(f"coord: {hint}"), file=sys.stderr)
            if err.details.get("next"):  # the same options --json gives, as one line
                line = next_options.said(err.details["next"])
                print(render.for_terminal(f"coord: {line}"), file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        return 130
    finally:
        ctx.close()
    if as_json:
        if document is not None:
            print(json.dumps(document))
    elif text:
        print(render.for_terminal(text))
    return int(rest[0]) if rest else EXIT_OK
