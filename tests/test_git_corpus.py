"""git's commands that rewrite the working tree, judged by running (issue 22 item 2).

Every command of tests/guard_corpus/git.txt goes through each client's real hook as agent B
while agent A holds files with uncommitted work, and is then run in a scratch copy of the
repository (tests/guard_oracle.py): an allowed command that changed a held file is an escape,
a refused one that changed none a false refusal (accepted only where
docs/files-and-the-guard.md lists it).

The scene is guard_oracle's (A's modified src/a.py, docs/guide.md; untracked docs/draft.md and
tests/test_a_wip.py), with what git's commands need (``prepare``): A's *staged* work (src/b.py,
a new docs/staged.md), an ignored file in a held directory (docs/build.log), a branch that
changes only a held file A has not touched (held-clean: bin/run.sh) and one that changes only
free files (free-more), a commit that undoes held-clean's (held-undo), a stash of each kind,
patches and mailboxes of each, and an origin whose main changes bin/run.sh (for pull) with a
branch remote-held only it has (for checkout's --guess).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

import guard_oracle as oracle

CORPUS = oracle.CORPORA / "git.txt"
RUN_SH_NEW = "#!/bin/sh\necho run faster\n"


def _git(repo: Path, *args: str, stdin: str | None = None, index: Path | None = None) -> str:
    env = {**oracle._base_env(repo.parent / "home"), **oracle._GIT_ENV}
    if index is not None:
        env["GIT_INDEX_FILE"] = str(index)
    done = subprocess.run(
        ["git", *args],
        cwd=repo,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout.strip()


def _commit(repo: Path, parent: str, files: dict[str, str], message: str, *parents: str) -> str:
    """A commit of ``parent``'s tree with ``files`` changed, made without touching the working
    tree or the index (A's uncommitted work is already there)."""
    index = repo.parent / "scratch-index"
    _git(repo, "read-tree", parent, index=index)
    for rel, text in files.items():
        blob = _git(repo, "hash-object", "-w", "--stdin", stdin=text)
        mode = "100755" if rel.endswith(".sh") else "100644"
        _git(repo, "update-index", "--add", "--cacheinfo", f"{mode},{blob},{rel}", index=index)
    tree = _git(repo, "write-tree", index=index)
    index.unlink()
    heads = [a for p in (parents or (parent,)) for a in ("-p", p)]
    return _git(repo, "commit-tree", tree, *heads, "-m", message)


def prepare(repo: Path) -> None:
    """What git's commands need beside guard_oracle's scene (see the module's docstring)."""
    # the sandboxes are copies: the index's inode and ctime no longer match, and git would
    # rewrite every file with its own content on a reset. A working tree whose index is up to
    # date (the usual case) is the one to judge in, so git compares mtime and size only.
    _git(repo, "config", "core.trustctime", "false")
    _git(repo, "config", "core.checkStat", "minimal")
    (repo / "src" / "b.py").write_text("def b():\n    return 20  # A: staged work\n")
    (repo / "docs" / "staged.md").write_text("A's new page, staged\n")
    _git(repo, "add", "src/b.py", "docs/staged.md")
    exclude = repo / ".git" / "info" / "exclude"
    exclude.parent.mkdir(exist_ok=True)
    exclude.write_text("*.log\n.patches/\n")
    (repo / "docs" / "build.log").write_text("A's ignored build log\n")
    (repo / "notes" / "out.log").write_text("B's ignored log\n")
    main = _git(repo, "rev-parse", "HEAD")
    held_clean = _commit(repo, main, {"bin/run.sh": RUN_SH_NEW}, "run faster")
    _git(repo, "update-ref", "refs/heads/held-clean", held_clean)
    run_sh = oracle.COMMITTED["bin/run.sh"][0]
    held_undo = _commit(repo, held_clean, {"bin/run.sh": run_sh}, "undo: run faster")
    _git(repo, "update-ref", "refs/heads/held-undo", held_undo)
    free = {"notes/todo.md": "- [x] done\n", "lib/more.py": "MORE = 1\n"}
    free_more = _commit(repo, main, free, "more free things")
    _git(repo, "update-ref", "refs/heads/free-more", free_more)
    # two stashes: stash@{1} changes bin/run.sh, stash@{0} notes/todo.md (both clean here)
    for files in ({"bin/run.sh": RUN_SH_NEW}, {"notes/todo.md": "- [ ] stashed\n"}):
        staged = _commit(repo, main, {}, "index on main", main)
        work = _commit(repo, main, files, "WIP on main", main, staged)
        _git(repo, "stash", "store", "-m", "WIP on main", work)
    patches = repo / ".patches"
    patches.mkdir()
    (patches / "held.patch").write_text(_git(repo, "diff", main, held_clean) + "\n")
    (patches / "free.patch").write_text(_git(repo, "diff", main, free_more) + "\n")
    for name, rev in (("held", held_clean), ("free", free_more)):
        mbox = _git(repo, "format-patch", "-1", "--stdout", rev)
        (patches / f"{name}.mbox").write_text(mbox + "\n")
    (patches / "held-paths.txt").write_text("src/a.py\ndocs/guide.md\n")
    # an origin beside the template (not copied: each sandbox fetches from it, none writes it)
    origin = repo.parent / "origin.git"
    _git(repo, "init", "-q", "--bare", str(origin))
    ahead = _commit(repo, main, {"bin/run.sh": RUN_SH_NEW}, "upstream: run faster")
    remote_held = _commit(repo, main, {"bin/run.sh": RUN_SH_NEW, "lib/r.py": "R = 1\n"}, "r")
    _git(repo, "push", "-q", str(origin), f"{ahead}:refs/heads/main")
    _git(repo, "push", "-q", str(origin), f"{remote_held}:refs/heads/remote-held")
    _git(repo, "push", "-q", str(origin), f"{free_more}:refs/heads/remote-free")
    _git(repo, "remote", "add", "origin", str(origin))
    _git(repo, "fetch", "-q", "origin")
    _git(repo, "branch", "-q", "--set-upstream-to=origin/main", "main")
    for ref in ("remote-held", "remote-free"):  # only origin has them: checkout guesses
        assert _git(repo, "branch", "--list", ref) == ""


@pytest.fixture(scope="module")
def entries() -> list[oracle.Entry]:
    return oracle.load_corpus(CORPUS)


@pytest.fixture(scope="module")
def corpus(entries: list[oracle.Entry]) -> Iterator[oracle.CorpusRun]:
    with oracle.scratch("git-corpus-") as root:
        run = oracle.run_corpus(entries, root, prepare=prepare)
    print("\n" + oracle.summary(run))
    yield run


def _place(outcome: oracle.Outcome) -> str:
    e = outcome.entry
    where = f" (in {e.cwd})" if e.cwd != "." else ""
    return f"line {e.line} [{e.category}] {e.command!r}{where}"


def test_the_corpus_tries_every_command_that_rewrites_the_tree(entries: list[oracle.Entry]) -> None:
    assert len(entries) >= 150
    commands = [(e.command, e.cwd) for e in entries]
    assert len(commands) == len(set(commands)), "an entry is given twice"
    for category in {e.category for e in entries}:  # each category tries both ways
        kinds = {e.expect for e in entries if e.category == category}
        assert "writes-held" in kinds or category.startswith("everyday"), category
        assert kinds - {"writes-held"} or category == "git spellings", category
    spelled = "\n".join(e.command for e in entries)
    for piece in (
        "git stash -u",
        "git stash -a",
        "git stash --keep-index",
        "git stash push -S",
        "git stash save",
        "git stash apply",
        "git stash pop",
        "git reset --hard",
        "git reset --merge",
        "git reset --keep",
        "git restore .",
        "git restore --source",
        "git restore --staged",
        "git checkout -- ",
        "git checkout -f",
        "git switch -f",
        "git switch --discard-changes",
        "git clean -fd",
        "git clean -fX",
        "git rm -f",
        "git mv -f",
        "git read-tree -u",
        "git checkout-index -f",
        "git apply",
        "git merge",
        "git rebase",
        "git cherry-pick",
        "git revert",
        "git pull",
        "git fetch",
        "git checkout -b",
        "git add",
        "git commit",
    ):
        assert piece in spelled, piece


def test_every_entry_does_what_its_label_says(corpus: oracle.CorpusRun) -> None:
    """A writes-held entry must change a held file when run, another must not: the corpus
    is checked by the same run, so a label cannot drift from what git does."""
    wrong = corpus.mislabelled()
    assert not wrong, "corpus entries their run contradicts:\n" + "\n".join(wrong)
    assert not corpus.skipped
    assert not corpus.disagreements, "\n".join(corpus.disagreements)
    unclear = [f"{c}: {_place(o)}: {o.verdicts[c].reason}" for o, c in corpus.unclear()]
    assert not unclear, "answers that neither refuse nor allow:\n" + "\n".join(unclear)


def test_no_allowed_git_command_changes_a_held_file(corpus: oracle.CorpusRun) -> None:
    escaped: dict[int, tuple[oracle.Outcome, list[str]]] = {}
    for outcome, client in corpus.escapes():
        escaped.setdefault(outcome.entry.line, (outcome, []))[1].append(client)
    lines = [
        f"{_place(o)}: allowed by {', '.join(clients)}; it changed {', '.join(o.execution.changed)}"
        for o, clients in escaped.values()
    ]
    assert not lines, f"{len(lines)} allowed git commands changed a held file:\n" + "\n".join(lines)


def test_harmless_git_commands_are_allowed(corpus: oracle.CorpusRun) -> None:
    """Everyday git (status, diff, log, add, commit, fetch, a stash or checkout of B's own
    files, a new branch) is allowed; a refusal of one docs/files-and-the-guard.md does not list
    fails."""
    accepted = set(oracle.accepted_refusals())
    refused = {}
    for outcome, client in corpus.false_refusals():
        if outcome.entry.command not in accepted:
            refused[outcome.entry.line] = f"{_place(outcome)} ({client}): "
            refused[outcome.entry.line] += outcome.verdicts[client].reason
    assert not refused, "harmless git commands refused:\n" + "\n".join(refused.values())


def test_each_refusal_says_why_and_what_to_do_instead(corpus: oracle.CorpusRun) -> None:
    for outcome in corpus.outcomes:
        for client, verdict in outcome.verdicts.items():
            if not verdict.refused or outcome.entry.expect != "writes-held":
                continue
            reason = verdict.reason
            if "`.coord/` is coord's board" in reason:
                continue  # it would delete the board too: refused whoever holds what
            assert "alice" in reason, (client, _place(outcome), reason)
            assert "ask alice" in reason or "pick other work or ask alice" in reason, reason
            assert "Traceback" not in reason
    assert os.environ.get("COORD_AGENT") is None  # B is the client's session, as in real use
