"""The shell guard's judgement of git commands that rewrite the working tree, command by command
(coord.hooks.git_rewrites): what each refusal says, when git runs and when it does not, and the
commands the corpus cannot run in its scene (a linked worktree, a submodule, `git am`), each
run here in a copy to show that what is refused really changes the held file and what is
allowed does not.

Real git repositories and real boards throughout; tests/test_git_corpus.py is the executing
corpus over the whole command set.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import guard_oracle as oracle
from coord.core.board import Board
from coord.fast import board_files
from coord.hooks import shell_guard
from test_git_corpus import prepare

B = "bob"


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """guard_oracle's scene with test_git_corpus's additions (read only here: judged, never
    run)."""
    return oracle.make_template(tmp_path_factory.mktemp("scene"), prepare)


def refusal(repo: Path, command: str, cwd: str = ".") -> str | None:
    return shell_guard.refusal(str(repo / ".coord"), command, B, str(repo / cwd))


@pytest.mark.parametrize(
    ("command", "said"),
    [
        ("git stash", "`git stash` would put away docs/guide.md"),
        ("git stash -u -- tests", "would put away tests/test_a_wip.py"),
        (
            "git stash -a -- docs",
            "put away docs/build.log, docs/draft.md, docs/guide.md and 1 more",
        ),
        ("git stash push -S", "would put away src/b.py, and alice holds src/b.py"),
        ("git stash apply stash@{1}", "would change bin/run.sh"),
        ("git stash push -- lib/free.py && git stash pop 2", "would change bin/run.sh"),
        ("git reset --hard", "`git reset --hard` would overwrite docs/guide.md"),
        ("git reset --merge", "would overwrite docs/staged.md, and alice holds docs/**"),
        ("git reset --keep held-clean", "would overwrite bin/run.sh"),
        ("git restore .", "would overwrite src/a.py, and alice holds src/a.py"),
        ("git checkout -- src", "would overwrite src/a.py"),
        ("git checkout held-clean", "would overwrite bin/run.sh"),
        ("git checkout remote-held", "would overwrite bin/run.sh"),
        ("git switch -f free-more", "would overwrite"),
        ("git clean -fd", "would delete tests/test_a_wip.py, and alice holds tests/test_a*.py"),
        ("git clean -fX docs", "would delete docs/build.log"),
        ("git rm bin/run.sh", "would delete bin/run.sh"),
        ("git mv -f src/c.py src/a.py", "would move src/a.py"),
        ("git mv src/*.py lib/", "would move src/a.py"),  # the shell expands the glob
        ("yes | git restore -p", "would overwrite src/a.py"),
        ("git read-tree -u --reset HEAD", "would overwrite"),
        ("git checkout-index -f -a", "would overwrite docs/guide.md, and alice"),
        ("git apply .patches/held.patch", "would patch bin/run.sh"),
        ("git merge held-clean", "would change bin/run.sh"),
        ("git cherry-pick -n held-clean", "would change bin/run.sh"),
        ("git revert -n held-undo", "would change bin/run.sh"),
        ("git rebase --autostash held-clean", "would change"),
        ("git diff --output=docs/x.diff", "would write docs/x.diff"),
        ("git clone -q . docs/vendor", "would write into docs/vendor"),
    ],
)
def test_each_rewrite_names_the_held_file_the_holder_and_what_to_do(
    scene: Path, command: str, said: str
) -> None:
    reason = refusal(scene, command)
    assert reason is not None, command
    assert said in reason, reason
    assert "alice holds" in reason and reason.rstrip().endswith("alice"), reason
    assert "\n" not in reason or all(line.startswith("coord: ") for line in reason.splitlines())


def test_the_advice_fits_the_command(scene: Path) -> None:
    assert "`git stash push -- PATH...`" in str(refusal(scene, "git stash"))
    assert "`git clean -n` lists them" in str(refusal(scene, "git clean -fd"))
    assert "worktree of your own" in str(refusal(scene, "git checkout held-clean"))
    assert "worktree of your own" in str(refusal(scene, "git merge held-clean"))
    pull = str(refusal(scene, "git pull"))
    assert "cannot tell" in pull and "`git fetch`, then `git merge`" in pull, pull
    assert "alice holds src/a.py, src/b.py, docs/**" in pull, pull


@pytest.mark.parametrize(
    ("command", "cwd"),
    [
        ("git stash push -- lib/free.py", "."),
        ("git stash push -m mine -- notes lib", "."),
        ("git checkout -- lib/free.py", "."),
        ("git checkout .", "lib"),
        ("git restore --staged src/b.py", "."),
        ("git reset -- src/b.py", "."),
        ("git reset --soft HEAD", "."),
        ("git checkout -b bob-work", "."),
        ("git checkout free-more", "."),
        ("git checkout remote-free", "."),
        ("git clean -fd notes", "."),
        ("git clean -n", "."),
        ("git rm --cached src/a.py", "."),
        ("git rm src/c.py", "."),
        ("git mv src/c.py src/d.py", "."),
        ("git merge free-more", "."),
        ("git apply --check .patches/held.patch", "."),
        ("git apply .patches/free.patch", "."),
        ("git stash show stash@{1}", "."),
        ("git stash push -q -m b -- lib/free.py && git stash pop -q", "."),
        ("git stash push -- lib/free.py && git stash apply stash@{1}", "."),
        ("git stash drop", "."),
        ("git merge --abort", "."),
        ("git rebase --abort", "."),
        ("git sparse-checkout list", "."),
        ("git bisect log", "."),
        ("git checkout no-such-branch-anywhere", "."),  # a path then; git refuses it
        ("git --help stash", "."),
        ("git stash --help", "."),
        ("git stage docs", "."),
    ],
)
def test_rewrites_of_free_files_only_are_allowed(scene: Path, command: str, cwd: str) -> None:
    assert refusal(scene, command, cwd) is None


def _logging_git(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An environment whose ``git`` writes each call to a log, then runs the real git."""
    bin_dir, log = tmp_path / "bin", tmp_path / "git.log"
    bin_dir.mkdir()
    real = shutil.which("git")
    assert real is not None
    script = bin_dir / "git"
    script.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {real} "$@"\n')
    script.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COORD_", "GIT_"))}
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    return env, log


def _hook(scene: Path, command: str, env: dict[str, str]) -> str | None:
    """``command`` through Claude Code's real hook process; the refusal, or None."""
    payload = json.loads((oracle.FIXTURES / "claude" / "pre_tool_use_bash.json").read_text())
    payload["cwd"] = str(scene)
    payload["tool_input"]["command"] = command
    done = subprocess.run(
        [sys.executable, "-m", "coord", "hook", "claude", "PreToolUse"],
        input=json.dumps(payload),
        env={**env, "COORD_AGENT": B},
        cwd=scene,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    if not done.stdout:
        return None
    return str(json.loads(done.stdout)["hookSpecificOutput"]["permissionDecisionReason"])


def test_everyday_git_runs_no_git_process_in_the_hook(scene: Path, tmp_path: Path) -> None:
    """status, diff, log, add, commit: the guard answers from the command line alone. A
    rewrite runs git, read-only, only because another agent holds files here."""
    env, log = _logging_git(tmp_path)
    for command in (
        "git status",
        "git diff",
        "git log --oneline -3",
        "git add lib/free.py",
        "git commit -m 'bob: free' lib/free.py",
        "git fetch origin",
        "git show HEAD",
        "git branch -a",
    ):
        assert _hook(scene, command, env) is None, command
        assert not log.exists(), (command, log.read_text())
    assert "would put away" in str(_hook(scene, "git stash", env))
    ran = log.read_text().splitlines()
    assert ran and all(line.split()[2] in ("status", "diff") for line in ran), ran
    assert all("core.fsmonitor=false" in line for line in ran), ran


def test_with_nobody_else_holding_rewrites_run_no_git_and_are_allowed(tmp_path: Path) -> None:
    root = tmp_path / "alone"
    repo = oracle.make_template(root, prepare)
    board = Board.open(repo / ".coord")
    try:  # only B holds anything now
        board.unreserve(agent=oracle.HOLDER, everything=True)
        board.reserve(["lib/"], agent=B)
    finally:
        board.close()
    env, log = _logging_git(tmp_path)
    for command in ("git stash -u", "git reset --hard", "git pull", "git checkout $BRANCH"):
        assert _hook(repo, command, env) is None, command
    assert not log.exists(), log.read_text()
    board = Board.open(repo / ".coord")
    try:
        board.reserve(["docs/"], agent=oracle.HOLDER)
    finally:
        board.close()
    assert "cannot tell" in str(_hook(repo, "git checkout $BRANCH", env))
    assert "would put away docs/draft.md" in str(_hook(repo, "git stash -u -- docs", env))


def test_a_program_named_on_the_command_line_is_never_run_by_the_hook(
    scene: Path, tmp_path: Path
) -> None:
    """`-c core.fsmonitor=CMD` (or a filter) makes git run CMD, even in `git status`: such a
    command is refused while others hold files, and the guard's own git never runs CMD."""
    marker = tmp_path / "ran"
    for setting in (f"core.fsmonitor=touch {marker}", f"filter.x.clean=touch {marker}"):
        for command in (f"git -c '{setting}' stash", f"git -c '{setting}' status"):
            reason = str(refusal(scene, command))
            assert "can make git run a program" in reason and "alice holds" in reason, reason
    assert not marker.exists()
    # settings that run nothing are read as before; `git config` of one that does is refused
    assert "would put away" in str(refusal(scene, "git -c user.name=Bob -c color.ui=never stash"))
    assert refusal(scene, "git -c color.ui=always status") is None
    assert refusal(scene, "git config user.name Bob") is None
    assert refusal(scene, "git config --get core.fsmonitor") is None
    for command in ("git config core.fsmonitor ./watch", "git config --local core.hooksPath h"):
        assert "can make git run a program" in str(refusal(scene, command)), command


def test_an_option_given_as_a_revision_never_reaches_the_guards_own_git(
    scene: Path, tmp_path: Path
) -> None:
    """`--source=--output=FILE` would make the guard's `git diff` write FILE before it has
    judged anything: a revision that starts with `-` is not passed on."""
    marker = tmp_path / "written"
    for command in (
        f"git restore --source=--output={marker} src/a.py",
        f"git rebase --onto=--output={marker} v1",
    ):
        reason = str(refusal(scene, command))
        assert "alice" in reason, (command, reason)
    assert not marker.exists()


def test_git_moved_elsewhere_by_its_environment_is_refused_while_others_hold(scene: Path) -> None:
    """`GIT_WORK_TREE=docs git checkout -f` writes the whole tree into docs/: the guard asks
    git about another tree than the one the command works in, so it cannot tell."""
    for command, name in (
        ("GIT_WORK_TREE=docs git checkout -f", "GIT_WORK_TREE"),
        ("env GIT_DIR=.git git status", "GIT_DIR"),
        ("export GIT_INDEX_FILE=/tmp/i; git checkout-index -a", "GIT_INDEX_FILE"),
        ("GIT_EXTERNAL_DIFF=./d git diff", "GIT_EXTERNAL_DIFF"),
        ("GIT_EDITOR=vim git commit", "GIT_EDITOR"),
    ):
        reason = str(refusal(scene, command))
        assert f"it sets {name} for git" in reason and "alice holds" in reason, reason
    for command in ("GIT_PAGER=cat git log", "GIT_EDITOR=true git commit -m x lib/free.py"):
        assert refusal(scene, command) is None, command
    assert "would put away" in str(refusal(scene, "GIT_PAGER=cat git stash"))


def test_an_unreadable_board_refuses_a_rewrite(tmp_path: Path) -> None:
    repo = oracle.make_template(tmp_path / "broken", prepare)
    (repo / ".coord" / "board.db").write_bytes(b"this is not a database")
    reason = str(refusal(repo, "git stash"))
    assert "cannot check the board" in reason, reason
    assert refusal(repo, "git status") is None  # a command that writes nothing reads no board


def test_a_rewrite_that_cannot_be_told_is_refused_while_others_hold(scene: Path) -> None:
    for command, why in (
        ("git switch no-such-branch-anywhere", "names no commit"),
        ("git -c alias.x='!rm -rf docs' x", "alias that runs a shell command"),
        ("git frobnicate", "not a git command coord knows"),
        ("git am", "standard input"),
        ("git apply", "standard input"),
        ("git rebase --continue", "under way"),
        ("git bisect start HEAD v1", "checks out the commits"),
        ("git stash push --frobnicate", "does not know the option"),
        ("git checkout --sta", "does not know the option"),
        ("cd no-such-dir && git stash", "where it runs"),
    ):
        reason = str(refusal(scene, command))
        assert "cannot tell" in reason and why in reason, (command, reason)


def test_a_path_checkout_with_no_such_branch_is_read_as_paths(scene: Path) -> None:
    """git's rule without `--`: a revision first, else paths (`git checkout docs` restores
    docs/ from the index)."""
    assert "would overwrite docs/guide.md" in str(refusal(scene, "git checkout docs"))
    assert refusal(scene, "git checkout src/c.py") is None


def test_git_clean_names_are_read_as_git_quotes_them(scene: Path, tmp_path: Path) -> None:
    repo = tmp_path / "quoted"
    shutil.copytree(scene, repo, symlinks=True)
    (repo / "docs" / "tab\there é.md").write_text("A's oddly named draft\n")
    reason = str(refusal(repo, "git clean -f docs"))
    assert "docs/tab\there é.md" in reason, reason


def test_options_are_read_as_git_reads_them() -> None:
    from coord.hooks import git_options

    spec = git_options.Spec("f|force d e|exclude= x X n|dry-run q|quiet i|interactive")
    parsed = git_options.parse(["-fdxe.coord", "--dry", "src", "--", "-x"], spec)
    assert parsed.has("force") and parsed.has("d") and parsed.has("x")
    assert parsed.values("exclude") == [".coord"] and parsed.has("dry-run")
    assert parsed.operands == ["src"] and parsed.paths == ["-x"]
    reset = git_options.Spec("soft mixed hard merge keep q|quiet")
    assert git_options.parse(["--ha", "--so"], reset).last_of(("hard", "soft")) == "soft"
    with pytest.raises(git_options.Unsure):
        git_options.parse(["--m"], reset)  # --mixed or --merge: git refuses it too
    call = git_options.read_call(
        ["-C", "src", "-c", "core.fsmonitor=x", "--no-pager", "stash", "-u"], "/r"
    )
    assert (call.cwd, call.sub, call.args) == ("/r/src", "stash", ["-u"])
    assert call.oracle == ["-C", "src"]  # the fsmonitor setting is not repeated


# --- what the corpus's scene cannot hold: worktrees, submodules, git am --------------------


def _git(cwd: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COORD_", "GIT_"))}
    env.update(oracle._GIT_ENV)
    done = subprocess.run(
        ["git", "-c", "protocol.file.allow=always", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout


def _repo(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    _git(root, "init", "-q", "-b", "main")
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "start")
    return root


def _board(repo: Path, held: list[str]) -> None:
    board_files.init_board_files(repo / ".coord")
    board = Board.open(repo / ".coord", create=True)
    try:
        board.reserve(held, agent=oracle.HOLDER)
    finally:
        board.close()


@pytest.fixture
def worktrees(tmp_path: Path) -> Iterator[Path]:
    """A repository whose linked worktree wt-a has A's uncommitted work in a held file, and
    wt-b only B's."""
    repo = _repo(tmp_path / "repo", {"src/a.py": "a = 1\n", "lib/free.py": "f = 1\n"})
    for name in ("wt-a", "wt-b"):
        _git(repo, "worktree", "add", "-q", f"../{name}", "-b", name)
    (tmp_path / "wt-a" / "src" / "a.py").write_text("a = 2  # A's work\n")
    (tmp_path / "wt-b" / "lib" / "free.py").write_text("f = 2  # B's work\n")
    _board(repo, ["src/a.py"])
    yield repo


def test_worktree_remove_force_over_held_uncommitted_work(worktrees: Path) -> None:
    repo = worktrees
    reason = str(refusal(repo, "git worktree remove --force ../wt-a"))
    assert "would delete src/a.py" in reason and "alice" in reason, reason
    assert refusal(repo, "git worktree remove --force ../wt-b") is None
    assert refusal(repo, "git worktree list") is None
    # run both: the refused one really loses A's work, the allowed one keeps it
    _git(repo, "worktree", "remove", "--force", "../wt-b")
    assert (repo.parent / "wt-a" / "src" / "a.py").read_text() == "a = 2  # A's work\n"
    _git(repo, "worktree", "remove", "--force", "../wt-a")
    assert not (repo.parent / "wt-a").exists()


def test_submodule_update_force_over_held_work(tmp_path: Path) -> None:
    lib = _repo(tmp_path / "upstream-lib", {"x.c": "int x;\n"})
    other = _repo(tmp_path / "upstream-other", {"y.c": "int y;\n"})
    repo = _repo(tmp_path / "repo", {"README": "r\n"})
    _git(repo, "submodule", "add", "-q", str(lib), "libs/sub")
    _git(repo, "submodule", "add", "-q", str(other), "libs/other")
    _git(repo, "commit", "-qm", "submodules")
    (repo / "libs" / "sub" / "x.c").write_text("int x = 1;  /* A's work */\n")
    (repo / "libs" / "other" / "y.c").write_text("int y = 1;  /* B's work */\n")
    _board(repo, ["libs/sub/x.c"])
    reason = str(refusal(repo, "git submodule update --force"))
    assert "would check out libs/sub" in reason, reason
    assert "libs/sub" in str(refusal(repo, "git submodule deinit -f libs/sub"))
    # git rm of a submodule deletes its working tree: the gitlink is judged as a directory
    assert "would delete libs/sub" in str(refusal(repo, "git rm -f libs/sub"))
    assert refusal(repo, "git submodule update --force libs/other") is None
    assert refusal(repo, "git submodule status") is None
    _git(repo, "submodule", "update", "--force", "libs/other")
    assert "A's work" in (repo / "libs" / "sub" / "x.c").read_text()
    _git(repo, "submodule", "update", "--force")  # what was refused: A's work is gone
    assert "A's work" not in (repo / "libs" / "sub" / "x.c").read_text()


def test_git_am_of_a_held_file(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo", {"src/a.py": "a = 1\n", "lib/free.py": "f = 1\n"})
    for name, rel in (("held", "src/a.py"), ("free", "lib/free.py")):
        _git(repo, "checkout", "-q", "-b", name)
        (repo / rel).write_text("changed = True\n")
        _git(repo, "commit", "-qam", f"change {rel}")
        (tmp_path / f"{name}.mbox").write_text(_git(repo, "format-patch", "-1", "--stdout"))
        _git(repo, "checkout", "-q", "main")
    _board(repo, ["src/a.py"])
    reason = str(refusal(repo, f"git am {tmp_path / 'held.mbox'}"))
    assert "would patch src/a.py" in reason, reason
    assert refusal(repo, f"git am -3 {tmp_path / 'free.mbox'}") is None
    _git(repo, "am", "-q", str(tmp_path / "free.mbox"))
    assert (repo / "src" / "a.py").read_text() == "a = 1\n"
    _git(repo, "am", "-q", str(tmp_path / "held.mbox"))  # what was refused changes it
    assert (repo / "src" / "a.py").read_text() == "changed = True\n"


# --- a whole tree against many holds ---------------------------------------------------------


@pytest.fixture(scope="module")
def big_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2,000 tracked files; other agents hold 300 files, directories and globs among them."""
    repo = _repo(
        tmp_path_factory.mktemp("big") / "repo",
        {
            f"pkg{d}/{kind}{f}.{ext}": "x\n"
            for d in range(20)
            for f in range(50)
            for kind, ext in (("m", "py"), ("d", "md"))
        },
    )
    board_files.init_board_files(repo / ".coord")
    board = Board.open(repo / ".coord", create=True)
    try:
        board.reserve([f"pkg{d}/m{f}.py" for d in range(3) for f in range(40)], agent="carol")
        board.reserve([f"pkg{d}/d{f}.md" for d in range(3, 6) for f in range(50)], agent="dave")
        board.reserve(["pkg7/", "pkg8/**/*.md", "**/m49.py", "pkg9/[dm]1?.*"], agent="erin")
        board.reserve([f"PKG1{d}/M1.PY" for d in range(5)], agent="fay")  # another case
    finally:
        board.close()
    return repo


def test_narrowing_many_files_to_those_near_a_hold_changes_no_verdict(
    big_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`git rm -r .` names every tracked file: the guard compares each with the holds near
    it only. The verdict must be the one a comparison with every hold gives."""
    from coord.fast import guard
    from coord.hooks import git_rewrites

    commands = ("git rm -r .", "git rm -r pkg1 pkg8 pkg9", "git rm -r -- '*.md'", "git rm -r pkg19")
    narrowed = {c: refusal(big_tree, c) for c in commands}
    monkeypatch.setattr(git_rewrites, "_NARROW_FROM", 10**12)
    monkeypatch.setattr(guard, "_INDEX_FROM", 10**12)
    monkeypatch.setattr(git_rewrites, "_SHOWN_LINES", 10**6)
    whole = {c: refusal(big_tree, c) for c in commands}
    monkeypatch.setattr(git_rewrites, "_NARROW_FROM", 0)
    monkeypatch.setattr(guard, "_INDEX_FROM", 0)
    assert {c: refusal(big_tree, c) for c in commands} == whole
    assert "carol" in str(whole["git rm -r ."]) and "erin holds pkg9/[dm]1?.*" in str(
        whole["git rm -r ."]
    )
    assert "erin holds **/m49.py" in str(whole["git rm -r pkg19"])
    assert whole["git rm -r -- '*.md'"] is not None and "carol" not in str(
        whole["git rm -r -- '*.md'"]
    )
    for command in commands:  # the same lines, ten of them shown
        full, shown = str(whole[command]).splitlines(), str(narrowed[command]).splitlines()
        assert shown[:10] == full[:10], command
        if len(full) > 10:
            assert shown[10].startswith(f"coord: and {len(full) - 10} more held files `git rm")
