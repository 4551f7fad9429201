"""The guard for shell commands: may this agent run this command?

Every client's shell tool comes here once its hook JSON is read (an edit tool goes straight
to ``coord.fast.guard.check``, as ``coord guard`` does). ``coord.hooks.shell`` finds the files
the command would write; each is placed as an edit tool's path is (``coord.fast.targets``)
and judged by the same rule on the same read-only look at the board
(``coord.fast.guard.judge``), so an edit tool and a shell command writing the same file get
the same answer. A refusal is the reason to show the agent; ``None`` allows.

Stdlib only and no daemon: it runs before every shell command.
"""

from __future__ import annotations

import os

from coord.errors import InvalidInput
from coord.fast import guard, holds, targets
from coord.times import clock


def refusal(home: str | None, command: str, agent: str | None, cwd: str) -> str | None:
    """Why ``agent`` may not run ``command``: it skips the pre-commit guard, or it writes a
    file another agent holds. None allows (commands that write nothing never read a board)."""
    from coord.hooks import shell

    found = shell.analyse(command, cwd)
    if found.bypass and home is not None:
        return (
            f"coord: `{found.bypass[0]}` would skip coord's pre-commit guard (`coord guard "
            "--staged`), which refuses commits of files another agent holds; commit without it"
        )
    placed: dict[tuple[str, str], targets.Target] = {}  # one per board and canonical name
    for raw, where in found.targets:
        if not raw or "$" in raw or "`" in raw:
            continue  # the shell fills it in when it runs: coord cannot know it
        try:
            target = targets.place(os.path.expanduser(raw), where, home, shell=True)
        except InvalidInput as err:
            return f"coord: this command writes {raw}: {err.message}; refusing it"
        if target is not None:
            placed.setdefault((target.board_dir, target.name), target)
    if not placed:
        return None
    try:
        judged = guard.judge(list(placed.values()), agent)
    except holds.BoardUnreadable as err:
        return f"coord: cannot check the board ({err}); refusing the command"
    lines: list[str] = []
    for target, blocking in judged:
        for r in blocking:
            line = _shell_line(target.raw, r)
            if line not in lines:
                lines.append(line)
    return "\n".join(lines) or None


def _shell_line(raw: str, r: holds.Held) -> str:
    until = clock(r.expires_at)
    item = f" for item {r.item_id}" if r.item_id is not None else ""
    return (
        f"coord: this command writes {raw}, and {r.agent} holds {r.pattern}{item} until {until}; "
        f"do not change it: pick other work or ask {r.agent}"
    )
