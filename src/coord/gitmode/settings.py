"""Where ``coord git`` finds its settings: git config, no new file.

There is no daemon and no board, so the settings live where git keeps a clone's settings
(``git config``, or ``git config --global`` for every clone of a machine):

=================  ==============================================================  =========
key                meaning                                                         default
=================  ==============================================================  =========
``coord.doc``      the design document, a path from the repository root            (none)
``coord.user``     your name in ``**Reserved: ID by @user.**``                     see below
``coord.remote``   the remote whose branch is the lock                             origin
``coord.branch``   that branch                                                     main
``coord.progress`` ``true``: reservations and ticks go to ``PLAN.progress.md``      auto
                   beside the document; ``false``: into the document; unset: the
                   progress file when the branch already has one
``coord.retries``  how often a push refused by a race is tried again               30
=================  ==============================================================  =========

Flags win over settings: ``--doc PATH`` (relative to the current directory), ``--remote``,
``--branch``, ``--as NAME``. The user name is ``--as``, else ``$COORD_AGENT``, else
``coord.user``, else ``user.name`` when it is a valid handle (letters, digits, ``_.-``, no
spaces); otherwise the command says how to set it. Commits are authored as git's own
``user.name``/``user.email``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from coord.errors import GitError, InvalidInput
from coord.fast import identity
from coord.fast.git import Git

HANDLE = re.compile(r"[A-Za-z0-9](?:[\w.-]*[A-Za-z0-9_])?")
DEFAULT_RETRIES = 30


@dataclass(slots=True)
class Settings:
    root: Path  # the working tree's top level
    remote: str
    branch: str
    doc: str  # repository path, with "/"
    user: str | None
    progress: bool | None  # None: use the progress file when the branch has one
    retries: int

    @property
    def tracking_ref(self) -> str:
        return f"refs/remotes/{self.remote}/{self.branch}"

    @property
    def where(self) -> str:
        return f"{self.remote}/{self.branch}"


def repository(cwd: Path) -> Git:
    """The working tree around ``cwd``."""
    git = Git(cwd)
    found = git.run("rev-parse", "--show-toplevel", check=False)
    if found.returncode != 0:
        raise GitError(
            f"{cwd} is not inside a git working tree: run coord git in a clone of the "
            "repository whose remote branch holds the design document"
        )
    return Git(Path(found.stdout.decode().strip()))


def load(
    git: Git,
    *,
    doc: str | None = None,
    remote: str | None = None,
    branch: str | None = None,
    user: str | None = None,
    need_doc: bool = True,
) -> Settings:
    config = _config(git)
    remote = remote or config.get("coord.remote") or "origin"
    if not git.ok("config", "--get", f"remote.{remote}.url"):
        known = git.out("remote", check=False).split()
        hint = f" (this clone has: {', '.join(known)})" if known else ""
        raise GitError(
            f"no git remote named {remote!r}{hint}: add it with `git remote add {remote} URL`, "
            "or name yours with `git config coord.remote NAME` (or --remote NAME)",
            remote=remote,
        )
    return Settings(
        root=git.cwd,
        remote=remote,
        branch=branch or config.get("coord.branch") or "main",
        doc=_doc_path(git.cwd, doc, config.get("coord.doc"), need_doc),
        user=_user(user, config),
        progress=_bool(config.get("coord.progress"), "coord.progress"),
        retries=_int(config.get("coord.retries"), "coord.retries", DEFAULT_RETRIES),
    )


def require_user(settings: Settings) -> str:
    if settings.user:
        return settings.user
    raise InvalidInput(
        "who is reserving? set your handle once with `git config coord.user NAME` (letters, "
        "digits, _ . -), or pass --as NAME; it is written as `**Reserved: ID by @NAME.**`"
    )


def _config(git: Git) -> dict[str, str]:
    done = git.run("config", "--get-regexp", r"^(coord\.|user\.name$)", check=False)
    found: dict[str, str] = {}
    for line in done.stdout.decode("utf-8", "replace").splitlines():
        key, _, value = line.partition(" ")
        found[key.lower()] = value.strip()  # git lists system, global, local: the last wins
    return found


def _doc_path(root: Path, given: str | None, configured: str | None, need: bool) -> str:
    if given:
        path = Path(given)
        absolute = path if path.is_absolute() else Path.cwd() / path
        try:
            relative = os.path.relpath(os.path.realpath(absolute), os.path.realpath(root))
        except ValueError:  # another drive
            relative = ".."
        if relative == ".." or relative.startswith(".." + os.sep):
            raise InvalidInput(f"--doc {given}: not inside the repository {root}")
        return Path(relative).as_posix()
    if configured:
        return configured.strip().lstrip("/").removeprefix("./")
    if need:
        raise InvalidInput(
            "which design document? pass --doc PATH, or set it once for this clone with "
            "`git config coord.doc docs/plan.md` (a path from the repository root)"
        )
    return ""


def _user(given: str | None, config: dict[str, str]) -> str | None:
    for source, name in (
        ("--as", given),
        ("COORD_AGENT", identity.from_env()),
        ("coord.user", config.get("coord.user")),
    ):
        if name:
            name = name.strip().removeprefix("@")
            if not HANDLE.fullmatch(name):
                raise InvalidInput(
                    f"{source} is {name!r}, which cannot be a handle in `**Reserved: ID by "
                    "@NAME.**`: use letters, digits and _ . - only"
                )
            return name
    fallback = config.get("user.name", "").strip()
    return fallback if HANDLE.fullmatch(fallback) else None


def _bool(value: str | None, key: str) -> bool | None:
    if value is None or value == "":
        return None
    lowered = value.lower()
    if lowered in ("true", "yes", "on", "1"):
        return True
    if lowered in ("false", "no", "off", "0"):
        return False
    raise InvalidInput(f"git config {key} is {value!r}: use true or false")


def _int(value: str | None, key: str, default: int) -> int:
    if not value:
        return default
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise InvalidInput(f"git config {key} is {value!r}: use a positive whole number")
    return number
