"""A worktree per claim (issue 24): create, include, setup, list and judge, remove safely;
against real repositories in tmp dirs."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from coord.errors import Conflict, GitError, InvalidInput, NotFound
from coord.fast import worktree as fast_worktree
from coord.landing import include, removal, snapshot, worktrees


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "t")
    git(root, "config", "user.email", "t@example.com")
    (root / "a.txt").write_text("a\n")
    (root / ".gitignore").write_text("*.log\n.env\nconfig/local.json\n.coord/\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    return root


def claim(repo_root: Path, item: int = 3, token: int = 7, **kw) -> worktrees.Created:
    return worktrees.create(
        repo_root, f"coord/{item}-t{token}", "main", item=item, token=token, **kw
    )


def commit(wt: Path, name: str, text: str) -> str:
    (wt / name).write_text(text)
    git(wt, "add", name)
    git(wt, "commit", "-qm", f"{name}")
    return git(wt, "rev-parse", "HEAD")


def test_a_claim_gets_a_locked_worktree_on_its_own_branch_that_prune_keeps(
    tmp_path: Path,
) -> None:
    root = repo(tmp_path)
    base = git(root, "rev-parse", "main")
    made = claim(root)
    assert made.path == root / ".worktrees" / "3-t7"
    assert git(made.path, "rev-parse", "--abbrev-ref", "HEAD") == "coord/3-t7"
    assert made.head == base
    git(root, "worktree", "prune", "--expire=now")
    (found,) = worktrees.list_worktrees(root)
    assert found.path == made.path and found.branch == "coord/3-t7"
    assert found.lock is not None
    assert (found.lock.item, found.lock.token, found.lock.pid) == (3, 7, os.getpid())
    assert found.alive is True and found.clean
    assert (found.merged, found.ahead) == ("ancestry", 0)  # nothing done yet
    # the guard reads the same reason from the worktree's files, without git
    assert fast_worktree.lock_of(str(made.path)) == found.lock_reason
    # ignored by git through .git/info/exclude, never through the user's .gitignore
    assert git(root, "status", "--porcelain") == ""
    assert "/.worktrees/" in (root / ".git/info/exclude").read_text().splitlines()
    assert (root / ".gitignore").read_text() == "*.log\n.env\nconfig/local.json\n.coord/\n"
    claim(root, item=4, token=1)  # a second one: the exclude line is written once
    assert (root / ".git/info/exclude").read_text().count("/.worktrees/") == 1


def test_the_worktree_root_is_never_inside_the_board_however_spelled(tmp_path: Path) -> None:
    root = repo(tmp_path)
    (root / ".coord").mkdir()
    os.symlink(root / ".coord", tmp_path / "board-link")
    for spelled in (".coord/worktrees", "x/../.coord", str(tmp_path / "board-link" / "w")):
        with pytest.raises(InvalidInput, match="board's directory"):
            claim(root, root=spelled)
    with pytest.raises(InvalidInput, match="git directory"):
        claim(root, root=".git/wt")
    with pytest.raises(InvalidInput, match="repository itself"):
        claim(root, root=".")
    assert git(root, "branch", "--list", "coord/*") == ""  # nothing made on the way


def test_the_repository_may_be_named_by_a_symlink_or_from_a_linked_worktree(
    tmp_path: Path,
) -> None:
    root = repo(tmp_path)
    os.symlink(root, tmp_path / "alias")
    made = claim(tmp_path / "alias")
    assert made.path == root / ".worktrees" / "3-t7"
    second = claim(made.path, item=4)  # named from inside a worktree: the same root
    assert second.path == root / ".worktrees" / "4-t7"
    assert len(worktrees.list_worktrees(made.path)) == 2
    assert (root / ".git/info/exclude").read_text().count("/.worktrees/") == 1


def test_a_sibling_root_is_not_written_to_the_exclude_file(tmp_path: Path) -> None:
    root = repo(tmp_path)
    exclude = (root / ".git/info/exclude").read_text()
    made = claim(root, root=tmp_path / "trees")
    assert made.path == tmp_path / "trees" / "3-t7"
    assert (root / ".git/info/exclude").read_text() == exclude


def test_a_root_holding_tracked_files_is_refused(tmp_path: Path) -> None:
    root = repo(tmp_path)
    (root / "sub").mkdir()
    (root / "sub" / "f.txt").write_text("f\n")
    git(root, "add", "sub/f.txt")
    git(root, "commit", "-qm", "sub")
    with pytest.raises(InvalidInput, match="tracked files"):
        claim(root, root="sub")


def test_a_reclaim_renames_the_branch_and_keeps_its_worktree_and_work(tmp_path: Path) -> None:
    root = repo(tmp_path)
    first = claim(root, token=7)
    head = commit(first.path, "b.txt", "b\n")
    (first.path / "wip.txt").write_text("uncommitted\n")
    again = claim(root, token=9, reuse="coord/3-t7")
    assert (again.reused, again.moved_from) == ("coord/3-t7", first.path)
    assert again.path == root / ".worktrees" / "3-t9" and again.head == head
    assert git(root, "branch", "--list", "coord/*").split() == ["+", "coord/3-t9"]
    assert (again.path / "wip.txt").read_text() == "uncommitted\n"
    (found,) = worktrees.list_worktrees(root)
    assert found.lock is not None and found.lock.token == 9 and found.branch == "coord/3-t9"
    assert (found.changed, found.untracked) == (0, 1)
    # a retry of the same create (a crash after the branch was made) reuses it too
    assert claim(root, token=9).head == head


def test_a_reclaim_never_moves_a_worktree_from_under_a_live_process(tmp_path: Path) -> None:
    """A zombie still working there would commit onto the new claim's branch."""
    root = repo(tmp_path)
    zombie = subprocess.Popen(["sleep", "30"])
    try:
        first = claim(root, token=7, pid=zombie.pid)
        head = commit(first.path, "b.txt", "b\n")
        with pytest.raises(Conflict, match=f"process {zombie.pid} .* may still run"):
            claim(root, token=9, reuse="coord/3-t7")
        assert git(root, "rev-parse", "coord/3-t7") == head and first.path.is_dir()
    finally:
        zombie.kill()
        zombie.wait()
    assert claim(root, token=9, reuse="coord/3-t7").head == head  # once it is dead


def test_a_reclaim_whose_old_worktree_directory_is_gone_starts_on_the_branch(
    tmp_path: Path,
) -> None:
    root = repo(tmp_path)
    first = claim(root, token=7)
    head = commit(first.path, "b.txt", "b\n")
    subprocess.run(["rm", "-rf", str(first.path)], check=True)
    again = claim(root, token=9, reuse="coord/3-t7")
    assert again.head == head and (again.path / "b.txt").read_text() == "b\n"
    assert [w.path for w in worktrees.list_worktrees(root)] == [again.path]


def test_a_branch_checked_out_by_a_person_is_not_taken(tmp_path: Path) -> None:
    root = repo(tmp_path)
    git(root, "checkout", "-qb", "coord/3-t7")
    with pytest.raises(Conflict, match="not a coord worktree"):
        claim(root, token=9, reuse="coord/3-t7")
    assert git(root, "rev-parse", "--abbrev-ref", "HEAD") == "coord/3-t7"


def test_worktreeinclude_copies_only_matched_ignored_files_with_their_modes(
    tmp_path: Path,
) -> None:
    root = repo(tmp_path)
    (root / ".worktreeinclude").write_text(
        "# local files\n.env\nconfig/*\n*.txt\n.coord/\n!config/skip.json\nout\nin\n"
    )
    (root / ".env").write_text("SECRET=1\n")
    os.chmod(root / ".env", 0o600)
    (root / "config").mkdir()
    (root / "config" / "local.json").write_text("{}\n")
    (root / "config" / "skip.json").write_text("{}\n")  # negated
    (root / "untracked.txt").write_text("u\n")  # matched, not ignored
    (root / "x.log").write_text("ignored, not matched\n")
    (root / "a.txt").write_text("changed in the checkout\n")  # tracked and matched
    (root / ".coord").mkdir()
    (root / ".coord" / "board.sqlite").write_text("board\n")
    (tmp_path / "secret").write_text("outside\n")
    with open(root / ".gitignore", "a") as f:
        f.write("config/skip.json\nout\nin\n")
    git(root, "commit", "-qm", "more ignored", "--", ".gitignore")
    with open(root / ".gitignore", "a") as f:
        f.write("only-here.txt\n")  # ignored in the checkout, not at the worktree's base
    (root / "only-here.txt").write_text("would be committed there\n")
    os.symlink(tmp_path / "secret", root / "out")  # ignored, matched, leads out
    os.symlink(".env", root / "in")  # ignored, matched, stays inside
    first = claim(root, item=1)
    (first.path / ".env").write_text("the first worktree's own\n")
    made = claim(root, item=2)
    assert sorted(made.copied) == [".env", "config/local.json", "in"]
    assert made.not_copied == {
        "out": "an absolute symlink: it would point at the checkout's file",
        "only-here.txt": "not ignored in the worktree (its .gitignore differs)",
    }
    assert (made.path / ".env").read_text() == "SECRET=1\n"
    assert (made.path / ".env").stat().st_mode & 0o777 == 0o600
    assert os.readlink(made.path / "in") == ".env"
    assert (made.path / "a.txt").read_text() == "a\n"  # the tracked file as committed
    for absent in ("untracked.txt", "x.log", ".coord", "config/skip.json", ".worktrees"):
        assert not (made.path / absent).exists(), absent
    assert git(made.path, "status", "--porcelain") == ""  # copies are ignored there too


def test_a_relative_symlink_out_of_the_repository_is_not_copied(tmp_path: Path) -> None:
    root = repo(tmp_path)
    (tmp_path / "secret").write_text("outside\n")
    os.symlink("../secret", root / ".env")
    (root / ".worktreeinclude").write_text(".env\n")
    made = claim(root)
    assert made.not_copied == {".env": "a symlink out of the repository"}
    assert not os.path.lexists(made.path / ".env")


def test_a_worktree_symlink_out_of_it_is_never_written_through(tmp_path: Path) -> None:
    """A tracked symlink ``config -> outside`` at the base: ``config/sub/local.json`` would
    land outside the worktree, and even making ``config/sub`` would write there. git's own
    check-ignore refuses a path beyond a symlink (so it is "not ignored in the worktree");
    the copy's own checks stand behind it."""
    root = repo(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "config" / "sub").mkdir(parents=True)
    (root / "config" / "sub" / "local.json").write_text("{}\n")
    (root / ".gitignore").write_text("config/\n")
    git(root, "commit", "-qam", "config/ ignored")
    (root / ".worktreeinclude").write_text("config/sub/local.json\n")
    other = tmp_path / "other"
    git(root, "worktree", "add", "-q", "--detach", str(other), "main")
    os.symlink(outside, other / "config")
    git(other, "add", "-f", "config")
    git(other, "commit", "-qm", "config is a link")
    linked = git(other, "rev-parse", "HEAD")
    made = worktrees.create(root, "coord/3-t7", linked, item=3, token=7)
    assert list(made.not_copied) == ["config/sub/local.json"]
    assert list(outside.iterdir()) == []
    assert include._copy_one(root, made.path, "config/sub/local.json") == (
        "its directory in the worktree leads out of it (a symlink)"
    )
    assert list(outside.iterdir()) == []


def test_a_failing_setup_is_reported_and_the_worktree_kept(tmp_path: Path) -> None:
    root = repo(tmp_path)
    made = claim(root, setup="touch setup-ran; echo cannot install >&2; exit 3")
    assert made.setup_failed and made.setup is not None
    assert made.setup["exit_code"] == 3 and "cannot install" in made.setup["output_tail"]
    assert (made.path / "setup-ran").exists()  # it ran in the worktree
    assert [w.path for w in worktrees.list_worktrees(root)] == [made.path]
    slow = claim(root, item=4, setup="sleep 30", setup_timeout=0.5)
    assert slow.setup_failed and slow.path.is_dir()
    assert not claim(root, item=5, setup="true").setup_failed


def test_a_dead_owner_and_a_foreign_host_are_told_apart(tmp_path: Path) -> None:
    root = repo(tmp_path)
    gone = subprocess.Popen(["true"])
    gone.wait()
    claim(root, item=1, pid=gone.pid)
    made = claim(root, item=2)
    reason = fast_worktree.lock_reason(2, 7, "coord/2-t7", os.getpid(), "elsewhere", None)
    git(root, "worktree", "unlock", str(made.path))
    git(root, "worktree", "lock", "--reason", reason, str(made.path))
    git(root, "worktree", "add", "-q", "--lock", "--reason", "a person's", str(tmp_path / "p"))
    alive = {w.lock.item: w.alive for w in worktrees.list_worktrees(root) if w.lock}
    assert alive == {1: False, 2: None}  # the person's worktree is not coord's


def test_a_branch_merged_into_main_is_judged_merged(tmp_path: Path) -> None:
    root = repo(tmp_path)
    made = claim(root)
    commit(made.path, "b.txt", "b\n")
    (found,) = worktrees.list_worktrees(root)
    assert found.merged is None and found.ahead == 1
    git(root, "merge", "-q", "--squash", "coord/3-t7")
    git(root, "commit", "-qm", "squashed by hand")
    (found,) = worktrees.list_worktrees(root)
    assert found.merged in ("patch-id", "tree")


def _still_there(root: Path, path: Path, branch: str, head: str) -> None:
    assert git(root, "rev-parse", branch) == head
    assert [w.path for w in worktrees.list_worktrees(root)] == [path]
    assert fast_worktree.lock_of(str(path)) is not None


@pytest.mark.parametrize("work", ["modified", "staged", "untracked", "committed"])
def test_remove_refuses_work_that_is_neither_on_main_nor_snapshotted(
    tmp_path: Path, work: str
) -> None:
    """Invariant 18, each kind of work; nothing of it is lost."""
    root = repo(tmp_path)
    made = claim(root)
    if work == "committed":
        commit(made.path, "b.txt", "b\n")
    else:
        git(root, "merge", "-q", "--ff-only", "coord/3-t7")  # the branch itself is on main
        (made.path / ("new.txt" if work == "untracked" else "a.txt")).write_text("work\n")
        if work == "staged":
            git(made.path, "add", "a.txt")
    head = git(made.path, "rev-parse", "HEAD")
    status = git(made.path, "status", "--porcelain")
    with pytest.raises(Conflict, match="neither on main nor in a snapshot"):
        removal.remove(root, made.path)
    _still_there(root, made.path, "coord/3-t7", head)
    assert git(made.path, "status", "--porcelain") == status


def test_remove_deletes_a_clean_merged_worktree_and_its_branch(tmp_path: Path) -> None:
    root = repo(tmp_path)
    made = claim(root)
    commit(made.path, "b.txt", "b\n")
    (made.path / "x.log").write_text("ignored: goes with the worktree\n")
    git(root, "merge", "-q", "--ff-only", "coord/3-t7")
    done = removal.remove(root, str(made.path) + "/../3-t7")  # however spelled
    assert done.snapshots == [] and not made.path.exists()
    assert git(root, "branch", "--list", "coord/*") == ""
    assert worktrees.list_worktrees(root) == []


def test_remove_with_a_snapshot_keeps_everything_first(tmp_path: Path) -> None:
    root = repo(tmp_path)
    made = claim(root)
    head = commit(made.path, "b.txt", "b\n")
    (made.path / "a.txt").write_text("unstaged\n")
    (made.path / "new.txt").write_text("untracked\n")
    status = git(made.path, "status", "--porcelain")
    done = removal.remove(root, made.path, force_snapshot=True)
    (ref,) = done.snapshots
    assert ref.startswith("refs/coord/snapshots/3-t7-")
    assert not made.path.exists() and git(root, "branch", "--list", "coord/*") == ""
    assert git(root, "rev-parse", f"{ref}^1") == head  # the commit is kept by the ref
    back = tmp_path / "back"
    git(root, "worktree", "add", "-q", "--detach", str(back), head)
    snapshot.restore(back, ref)
    assert git(back, "status", "--porcelain") == status
    assert (back / "new.txt").read_text() == "untracked\n"
    # now kept in a snapshot, a worktree at that commit may go without another one
    assert removal.kept(root, head) == "snapshot"


def test_a_detached_head_in_a_stopped_rebase_keeps_the_branch_too(tmp_path: Path) -> None:
    root = repo(tmp_path)
    made = claim(root)
    branch_head = commit(made.path, "b.txt", "b\n")
    git(made.path, "checkout", "-q", "--detach", "main")
    detached = commit(made.path, "c.txt", "c\n")
    with pytest.raises(Conflict, match=r"HEAD .* is not on main"):
        removal.remove(root, made.path)
    done = removal.remove(root, made.path, force_snapshot=True)
    assert len(done.snapshots) == 2
    assert git(root, "rev-parse", done.snapshots[1]) == branch_head
    assert git(root, "rev-parse", f"{done.snapshots[0]}^1") == detached


def test_only_coord_worktrees_are_removed(tmp_path: Path) -> None:
    root = repo(tmp_path)
    person = tmp_path / "person"
    git(root, "worktree", "add", "-q", "-b", "mine", str(person))
    with pytest.raises(NotFound):
        removal.remove(root, person)
    assert person.is_dir()


def test_the_worktree_holding_a_path_is_found_however_spelled(tmp_path: Path) -> None:
    """The guard's groundwork (item 9): from a path to the claim whose worktree holds it."""
    root = repo(tmp_path)
    made = claim(root, item=3, token=7)
    os.symlink(made.path, tmp_path / "link")
    (made.path / "src").mkdir()
    spellings = [
        made.path / "a.txt",
        made.path / "src" / ".." / "a.txt",
        tmp_path / "link" / "src" / "new.py",  # not made yet
        root / ".worktrees" / "x" / ".." / "3-t7" / "src",
    ]
    for spelled in spellings:
        found = fast_worktree.claim_of(str(spelled), str(root))
        assert found is not None, spelled
        assert found[0] == str(made.path)
        assert (found[1]["item"], found[1]["token"]) == ("3", "7")
        judged = worktrees.containing(root, spelled)
        assert judged is not None and judged.lock is not None and judged.lock.item == 3
    person = tmp_path / "person"
    git(root, "worktree", "add", "-q", "-b", "mine", str(person))
    (tmp_path / "elsewhere").mkdir()
    other = repo(tmp_path / "elsewhere")
    theirs = claim(other, item=3, token=7)  # the same item number, another repository's board
    for outside in (root / "a.txt", person / "a.txt", theirs.path / "a.txt", tmp_path):
        assert fast_worktree.claim_of(str(outside), str(root)) is None, outside
        assert worktrees.containing(root, outside) is None


def test_a_second_snapshot_of_the_same_claim_never_overwrites_the_first(tmp_path: Path) -> None:
    root = repo(tmp_path)
    refs = []
    for text in ("first\n", "second\n"):  # within one second: the same time in the name
        made = claim(root)
        (made.path / "a.txt").write_text(text)
        refs += removal.remove(root, made.path, force_snapshot=True).snapshots
    assert len(set(refs)) == 2
    assert [git(root, "show", f"{ref}:a.txt") for ref in refs] == ["first", "second"]


def test_a_new_snapshot_never_replaces_an_existing_ref(tmp_path: Path) -> None:
    root = repo(tmp_path)
    (root / "a.txt").write_text("first\n")
    first = snapshot.take(root, "3-t7-1", new=True)
    (root / "a.txt").write_text("second\n")
    with pytest.raises(GitError):
        snapshot.take(root, "3-t7-1", new=True)
    assert git(root, "rev-parse", "refs/coord/snapshots/3-t7-1") == first
