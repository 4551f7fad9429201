"""What agents read: coord's block in ``AGENTS.md``, and the client files that import it.

Codex and Cursor read ``AGENTS.md`` themselves; Claude Code reads ``CLAUDE.md`` and Gemini CLI
``GEMINI.md``, each of which gets one line importing ``AGENTS.md`` (unless the user's file
already does, or is a link to ``AGENTS.md``).
"""

from __future__ import annotations

from coord.wiring.plan import Target
from coord.wiring.text_blocks import BlockSpec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from coord.wiring.plan import Plan

AGENTS_MD = "AGENTS.md"


def agents_md_body(cmd: str) -> str:
    """What agents are told in AGENTS.md: short, with the exact commands."""
    return f"""\
## Working with coord: several agents share this repository

coord is the shared board of this repository: work items, who holds which files, messages.
Use it from the shell (`{cmd} ...`) or through its MCP tools (server `coord`).

- **Your name.** Use one name for the whole session, on every command: `--as NAME` or
  `COORD_AGENT=NAME` (for example `claude-1`). If coord's session hook told you a name, use it.
- **Take work.** `{cmd} next --as NAME` claims the best ready item (exit 4: nothing is ready);
  `{cmd} show ID` shows it. Work only on items you hold; `{cmd} ls` lists the board.
- **Files.** Claiming an item reserves its files. Before editing anything else, reserve it:
  `{cmd} reserve 'src/x/**' --as NAME` (exit 3: someone holds it, so pick other work). The
  guard refuses edits and commits of files another agent holds; do not work around it.
  `{cmd} who PATH` says who holds a path.
- **Keep it.** `{cmd} heartbeat ID --as NAME` before your lease runs out (15 minutes by default).
- **Finish.** `{cmd} done ID --as NAME --summary "what changed"` runs the item's checks here
  first; if one fails, the item stays yours: fix it and run `done` again. `{cmd} release ID
  --as NAME` gives an item back unfinished.
- **Ask a human.** `{cmd} escalate ID "your question" --as NAME`: you keep the claim and the
  files while you wait; the answer arrives in your inbox.
- **Inbox.** `{cmd} inbox --as NAME` at the start and between items: replies, `@NAME`
  mentions, answers, takeovers of your claims. `{cmd} reply ID "text" --as NAME` answers.
"""


def _markdown(body: str) -> BlockSpec:
    return BlockSpec("md", lambda _indent: body)


def agents_md(root: Path, shell: str) -> Target:
    return Target(AGENTS_MD, root / AGENTS_MD, _markdown(agents_md_body(shell)))


def importing_agents_md(root: Path, name: str, line: str, plan: Plan) -> list[Target]:
    """``name`` (CLAUDE.md, GEMINI.md) with ``line``, the client's import of AGENTS.md."""
    path = root / name
    agents = root / AGENTS_MD
    if path.exists() and agents.exists() and path.resolve() == agents.resolve():
        plan.notes.append(f"{name} is {AGENTS_MD} (a link): nothing to import")
        return []
    spec = _markdown(f"{line}\n")
    # either spelling of the import, written by the user, is the same instruction
    spec.already = ("@AGENTS.md", "@./AGENTS.md")
    return [Target(name, path, spec)]
