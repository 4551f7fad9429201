"""Running git: one runner for every git call, with one environment, timeouts and errors.

Every command coord runs goes through ``Git.run``: ``coord git`` (``coord.gitmode``), the age
of a reservation line by ``git blame`` (``coord.spec.age``), finding a working tree's top
level. Failures a person can act on (git missing, a command that hangs, a command that fails
when ``check``) are ``coord.errors.GitError`` (exit 1, code ``git_error``).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from coord.errors import GitError

LOCAL_TIMEOUT = 60.0
# stable messages to read (porcelain reasons, "lock"), never a prompt an agent cannot answer
# (GIT_OPTIONAL_LOCKS=0: `git status` must not even refresh the user's index)
_BASE_ENV = {"LC_ALL": "C", "LANGUAGE": "C", "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}
# we never write the user's index: a private one is set explicitly where one is needed
_OURS = ("GIT_INDEX_FILE",)
# the umask git runs with; -1: this process's. The daemon keeps its own files private
# (umask 077) but lands the queue into the user's checkout of main, whose new files must get
# the user's usual modes, not owner-only ones: it sets the umask it was started with.
_child_umask = -1


def set_child_umask(mask: int) -> None:
    global _child_umask
    _child_umask = mask


class Git:
    """git commands in one directory; ``env`` is added to every command's environment."""

    def __init__(self, cwd: Path, env: dict[str, str] | None = None) -> None:
        self.cwd = cwd
        self.env = env or {}

    def with_env(self, **env: str) -> Git:
        return Git(self.cwd, {**self.env, **env})

    def run(
        self,
        *args: str,
        input: bytes | None = None,
        check: bool = True,
        timeout: float = LOCAL_TIMEOUT,
    ) -> subprocess.CompletedProcess[bytes]:
        env = {k: v for k, v in os.environ.items() if k not in _OURS}
        env.update(_BASE_ENV)
        env.update(self.env)
        try:
            done = subprocess.run(
                ["git", *args],
                cwd=self.cwd,
                input=input,
                stdin=None if input is not None else subprocess.DEVNULL,
                capture_output=True,
                env=env,
                timeout=timeout,
                umask=_child_umask,
            )
        except (FileNotFoundError, NotADirectoryError):
            if not Path(self.cwd).is_dir():  # the same error as a missing git
                raise GitError(f"{self.cwd} is not a directory: cannot run git there") from None
            raise GitError("git is not installed (or not on PATH): install git") from None
        except subprocess.TimeoutExpired:
            raise GitError(
                f"`git {' '.join(args[:2])}` did not finish in {timeout:g} s: check the network "
                "and the remote, then run the command again",
                command=["git", *args],
            ) from None
        if check and done.returncode != 0:
            raise GitError(
                f"`git {' '.join(args)}` failed: {stderr(done) or 'no message'}",
                command=["git", *args],
                exit_status=done.returncode,
            )
        return done

    def out(self, *args: str, check: bool = True) -> str:
        return self.run(*args, check=check).stdout.decode("utf-8", "replace").strip()

    def ok(self, *args: str) -> bool:
        return self.run(*args, check=False).returncode == 0


def toplevel(cwd: Path) -> Path | None:
    """The top level of the working tree around ``cwd``; None outside one (or without git)."""
    try:
        found = Git(cwd).run("rev-parse", "--show-toplevel", check=False, timeout=10)
    except GitError:
        return None
    if found.returncode != 0:
        return None
    return Path(found.stdout.decode("utf-8", "surrogateescape").strip())


def stderr(done: subprocess.CompletedProcess[bytes]) -> str:
    """The last meaningful lines of git's stderr (hints dropped), as one line."""
    lines = [
        line.strip()
        for line in done.stderr.decode("utf-8", "replace").splitlines()
        if line.strip() and not line.startswith("hint:")
    ]
    return " / ".join(lines[-4:])
