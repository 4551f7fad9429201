"""The guard in worktrees, judged by running (issue 24 item 9).

Every command of tests/guard_corpus/worktrees.txt goes through each client's real hook as
agent B, in the main checkout, while agent A works item 1 in its coord worktree
(.worktrees/1-t1, claimed on the board, locked by coord, with A's uncommitted work in it);
then the command is run in a scratch copy of the repository (tests/guard_oracle.py; the copy's
linked worktree is repaired to point at the copy, as git does after a move). An allowed
command that changed anything in A's worktree is an escape; a refused one that changed
nothing, a false refusal (accepted only where docs/files-and-the-guard.md lists it).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import guard_oracle as oracle
from guard_scene import A_WORKTREE

CORPUS = oracle.CORPORA / "worktrees.txt"
A_WORK = {"src/c.py": "def c():\n    return 30  # A: work in progress\n"}
A_UNTRACKED = {"notes/wip.md": "A's notes, not yet added\n"}


def claim_a_worktree(board: Any, repo: Path) -> None:
    """Item 1, claimed by A with its worktree made by coord (`coord start`'s two halves)."""
    from coord.fast.git import Git
    from coord.landing import worktrees
    from coord.model import WorktreeSpec

    base = Git(repo).out("rev-parse", "main")
    root = repo / ".worktrees"
    item = board.add("A's work in a worktree", created_by="lead").id
    won = board.landing.claim(
        item,
        agent=oracle.HOLDER,
        lease_seconds=oracle.LEASE_SECONDS,
        worktree=WorktreeSpec(base_commit=base, path_root=str(root)),
    )
    branch = board.get(item).branch
    worktrees.ensure_ignored(repo, root)
    made = worktrees.create(repo, branch, base, item=item, token=won.token, root=root)
    assert Path(made.path) == repo / A_WORKTREE, made.path
    for rel, text in {**A_WORK, **A_UNTRACKED}.items():
        path = Path(made.path) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.fixture(scope="module")
def entries() -> list[oracle.Entry]:
    return oracle.load_corpus(CORPUS)


@pytest.fixture(scope="module")
def corpus(entries: list[oracle.Entry]) -> Iterator[oracle.CorpusRun]:
    with oracle.scratch("worktree-corpus-") as root:
        run = oracle.run_corpus(entries, root, claim=claim_a_worktree)
    print("\n" + oracle.summary(run))
    yield run


def _place(outcome: oracle.Outcome) -> str:
    e = outcome.entry
    where = f" (in {e.cwd})" if e.cwd != "." else ""
    return f"line {e.line} [{e.category}] {e.command!r}{where}"


def test_the_corpus_tries_each_way_into_a_worktree(entries: list[oracle.Entry]) -> None:
    assert len(entries) >= 60
    commands = [(e.command, e.cwd) for e in entries]
    assert len(commands) == len(set(commands)), "an entry is given twice"
    kinds = {e.expect for e in entries}
    assert kinds == set(oracle.EXPECTATIONS), kinds


def test_every_entry_does_what_its_label_says(corpus: oracle.CorpusRun) -> None:
    wrong = corpus.mislabelled()
    assert not wrong, "corpus entries their run contradicts:\n" + "\n".join(wrong)
    assert not corpus.skipped
    assert not corpus.disagreements, "\n".join(corpus.disagreements)
    unclear = [f"{c}: {_place(o)}: {o.verdicts[c].reason}" for o, c in corpus.unclear()]
    assert not unclear, "answers that neither refuse nor allow:\n" + "\n".join(unclear)


def test_no_allowed_command_changes_a_worktree_another_agent_works_in(
    corpus: oracle.CorpusRun,
) -> None:
    escaped: dict[int, tuple[oracle.Outcome, list[str]]] = {}
    for outcome, client in corpus.escapes():
        escaped.setdefault(outcome.entry.line, (outcome, []))[1].append(client)
    lines = [
        f"{_place(o)}: allowed by {', '.join(clients)}; it changed {', '.join(o.execution.changed)}"
        for o, clients in escaped.values()
    ]
    assert not lines, f"{len(lines)} allowed commands changed A's worktree:\n" + "\n".join(lines)


def test_reading_a_worktree_and_working_beside_it_are_allowed(corpus: oracle.CorpusRun) -> None:
    accepted = set(oracle.accepted_refusals())
    refused = {}
    for outcome, client in corpus.false_refusals():
        if outcome.entry.command not in accepted:
            refused[outcome.entry.line] = f"{_place(outcome)} ({client}): "
            refused[outcome.entry.line] += outcome.verdicts[client].reason
    assert not refused, "harmless commands refused:\n" + "\n".join(refused.values())
