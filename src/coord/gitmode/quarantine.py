"""A commit that leaves no trace unless it lands: private objects, a private index, one push.

``coord git`` makes each attempt's commit here (plumbing: ``read-tree`` of the tip into a
private index, ``hash-object``, ``update-index``, ``write-tree``, ``commit-tree``) in a private
object directory (``GIT_OBJECT_DIRECTORY`` in a temporary directory, the repository's objects
as an alternate), and pushes it without force. Only after the push landed are the commit's
objects copied into the repository; otherwise the temporary directory goes, and with it every
object: no commit, object, ref or reflog entry is left behind.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coord.errors import GitError
from coord.fast.files import write_atomic
from coord.fast.git import Git, stderr
from coord.gitmode.settings import Settings

NETWORK_TIMEOUT = 120.0


@dataclass(slots=True)
class Change:
    """What a command wants on the branch: whole new texts of the files it changes."""

    files: dict[str, str]  # repository path -> new text
    subject: str
    body: str = ""
    facts: dict[str, Any] = field(default_factory=dict)  # for the command's answer


class Quarantine:
    """Private object directories and index: a commit made here leaves no trace in the
    repository unless ``keep()`` copies its objects in (after it landed). Each attempt gets a
    fresh object directory, so only the objects of the commit that landed are kept."""

    def __init__(self, git: Git) -> None:
        objects = git.out("rev-parse", "--git-path", "objects")
        self.real = (git.cwd / objects).resolve()
        self.base = git
        self.git = git
        self.tmp = Path()
        self.objects = Path()
        self.attempts = 0

    def __enter__(self) -> Quarantine:
        self.tmp = Path(tempfile.mkdtemp(prefix="coord-git-"))
        return self

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _fresh(self) -> None:
        self.attempts += 1
        self.objects = self.tmp / f"objects-{self.attempts}"
        self.objects.mkdir()
        alternates = [str(self.real)]
        if os.environ.get("GIT_ALTERNATE_OBJECT_DIRECTORIES"):
            alternates.append(os.environ["GIT_ALTERNATE_OBJECT_DIRECTORIES"])
        self.git = self.base.with_env(
            GIT_OBJECT_DIRECTORY=str(self.objects),
            GIT_ALTERNATE_OBJECT_DIRECTORIES=os.pathsep.join(alternates),
            GIT_INDEX_FILE=str(self.tmp / f"index-{self.attempts}"),
        )

    def commit(self, tip: str, change: Change) -> str:
        self._fresh()
        self.git.run("read-tree", tip)
        for path, text in change.files.items():
            blob = (
                self.git.run(
                    "hash-object", "-w", "--no-filters", "--stdin", input=text.encode("utf-8")
                )
                .stdout.decode()
                .strip()
            )
            listed = self.git.out("ls-files", "-s", "--", path)
            mode = listed.split(" ", 1)[0] if listed else "100644"
            self.git.run("update-index", "--add", "--cacheinfo", f"{mode},{blob},{path}")
        tree = self.git.out("write-tree")
        message = ["-m", change.subject] + (["-m", change.body] if change.body else [])
        return self.git.out("commit-tree", tree, "-p", tip, *message)

    def push(self, settings: Settings, commit: str) -> tuple[str, str]:
        """("landed" | "refused" | "unknown", the reason as git gives it)."""
        target = f"refs/heads/{settings.branch}"
        try:
            done = self.git.run(
                "push",
                "--porcelain",
                "--no-verify",
                settings.remote,
                f"{commit}:{target}",
                check=False,
                timeout=NETWORK_TIMEOUT,
            )
        except GitError as error:  # no answer in time: it may have landed
            return "unknown", error.message
        for row in done.stdout.decode("utf-8", "replace").splitlines():
            parts = row.split("\t")
            if len(parts) >= 3 and parts[1].endswith(":" + target):
                if parts[0] == "!":
                    return "refused", parts[2]
                if done.returncode == 0:
                    return "landed", parts[2]
        return "unknown", stderr(done) or f"git push exited {done.returncode}"

    def is_ancestor(self, commit: str, tip: str) -> bool:
        return self.git.ok("merge-base", "--is-ancestor", commit, tip)

    def keep(self) -> None:
        """Copy the last attempt's objects into the repository (they are on the remote now)."""
        source = self.objects
        for directory in source.iterdir():
            if len(directory.name) != 2 or not directory.is_dir():
                continue
            for item in directory.iterdir():
                target = self.real / directory.name / item.name
                if target.exists():
                    continue
                target.parent.mkdir(exist_ok=True)
                write_atomic(target, item.read_bytes(), mode=0o444)
