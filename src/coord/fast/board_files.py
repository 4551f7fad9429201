"""Where a board lives, and the small files beside it.

A board is a ``.coord/`` directory at the repository root, found the way git finds ``.git``:
walk up from the current directory. ``COORD_DIR`` names it outright.

    .coord/board.db       the SQLite board (plus -wal and -shm while in use); a team board
                          lives in PostgreSQL instead, named by config.json's ``database``
    .coord/token          the token for the HTTP API (reads and writes)
    .coord/config.json    settings (default lease, durability)
    .coord/daemon.json    where the running daemon listens (written by ``coord serve``)
    .coord/claims/NAME.json  tokens of the claims the CLI made for agent NAME

All of it is its owner's alone: the directories 0700, the files 0600 (``PRIVATE_DIR``,
``PRIVATE_FILE``), whatever the umask, since the board holds item bodies, replies and check
output, and the token opens them all. ``tighten_modes`` brings a board made before that in line.

Stdlib only, and pathlib only where a ``Path`` is made: the CLI imports this on every call,
and the guard and the edit hooks, which run before every edit, find the board with ``locate``
alone (pathlib costs ~3 ms to import: it brings urllib.parse and ipaddress).
"""

from __future__ import annotations

import os
import stat  # os imports it: free

from coord.errors import BoardNotFound, InvalidInput
from coord.fast import jsontext

TYPE_CHECKING = False  # typing costs ~10 ms at import; the CLI path avoids it
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

BOARD_DIRNAME = ".coord"
DB_FILENAME = "board.db"
SESSIONS_DIRNAME = "sessions"
DEFAULT_CONFIG: dict[str, Any] = {"default_lease_seconds": 900, "synchronous": "NORMAL"}
PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600


def locate(start: str | os.PathLike[str] | None = None, *, env: bool = True) -> str | None:
    """The board directory for ``start`` (default: the current directory), as a real path:
    ``COORD_DIR`` when set (and ``env``), else the nearest ``.coord/`` from ``start`` up, as
    git finds ``.git``, else the main working tree's when ``start`` is in a linked worktree
    outside it. None: no board."""
    named = os.environ.get("COORD_DIR") if env else None
    if named:
        return os.path.realpath(os.path.expanduser(named))
    here = os.path.realpath(os.getcwd() if start is None else start)
    directory = here
    while True:
        candidate = os.path.join(directory, BOARD_DIRNAME)
        if os.path.isdir(candidate):
            return candidate
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    from coord.fast import worktree  # a linked worktree outside the main one shares its board

    main = worktree.board_root_for(here)
    if main is not None and os.path.isdir(os.path.join(main, BOARD_DIRNAME)):
        return os.path.join(main, BOARD_DIRNAME)
    return None


def find_board_dir(start: str | Path | None = None) -> Path | None:
    """``locate`` as a ``Path``, for the faces that work with paths."""
    found = locate(start)
    if found is None:
        return None
    from pathlib import Path

    return Path(found)


def require_board_dir(coord_dir: str | Path | None = None, *, must_exist: bool = True) -> Path:
    """The board directory (``coord_dir``, else the one found from here); with ``must_exist``,
    one that holds a board: a SQLite ``board.db``, or a config that names a database."""
    from pathlib import Path

    if coord_dir is not None:
        path = Path(coord_dir).expanduser().resolve()
    else:
        found = find_board_dir()
        if found is None:
            raise BoardNotFound(
                "no coord board here or in any parent directory: run `coord init` at the "
                "repository root (or set COORD_DIR)"
            )
        path = found
    if must_exist and not has_board(path):
        raise BoardNotFound(f"{path} holds no board: run `coord init` (or check COORD_DIR)")
    return path


def new_board_dir(start: str | Path | None = None) -> Path:
    """Where ``coord init`` puts a board: COORD_DIR, else the git root, else the cwd."""
    from pathlib import Path

    env = os.environ.get("COORD_DIR")
    if env:
        return Path(env).expanduser().resolve()
    here = Path(start or Path.cwd()).resolve()
    from coord.fast import worktree

    main = worktree.board_root_for(str(here))  # in a linked worktree: the main one's board
    if main is not None:
        return Path(main) / BOARD_DIRNAME
    for directory in (here, *here.parents):
        if (directory / ".git").exists():
            return directory / BOARD_DIRNAME
    return here / BOARD_DIRNAME


def repo_root(board_dir: Path) -> Path:
    return board_dir.parent


def db_path(board_dir: Path) -> Path:
    return board_dir / DB_FILENAME


def has_board(board_dir: str | os.PathLike[str]) -> bool:
    """Whether the directory holds a board: a SQLite file, or a PostgreSQL board's name (a
    config that cannot be read counts as one: the guard protects it all the same)."""
    if os.path.exists(os.path.join(board_dir, DB_FILENAME)):
        return True
    try:
        return database_url(board_dir) is not None
    except InvalidInput:
        return True


def database_url(board_dir: str | os.PathLike[str]) -> str | None:
    """The PostgreSQL board this ``.coord/`` names (config.json's ``database``), or None for
    the SQLite board beside it. Cheap (one small file read, no check of the other settings):
    the guard asks it before every edit. A config that cannot be read is InvalidInput, never
    taken for "SQLite": a caller that must decide fails closed."""
    path = os.path.join(board_dir, "config.json")
    try:
        with open(path, "rb") as source:
            loaded = jsontext.loads(source.read())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise InvalidInput(f"cannot read {path}: {err}; fix or delete it") from err
    url = loaded.get("database") if isinstance(loaded, dict) else None
    return url if isinstance(url, str) and url else None


def token_path(board_dir: Path) -> Path:
    return board_dir / "token"


def daemon_record_path(board_dir: Path) -> Path:
    return board_dir / "daemon.json"


def claims_dir(board_dir: Path) -> Path:
    return board_dir / "claims"


def sessions_dir(board_dir: Path) -> Path:
    """Which agent each client process is (written by the SessionStart hook)."""
    return board_dir / SESSIONS_DIRNAME


# Every setting .coord/config.json may hold (docs/reference/settings.md is generated from it).
CONFIG_KEYS = (
    "default_lease_seconds",
    "synchronous",
    "escalate_to",
    "humans",
    "escalation_hold_seconds",
    "idle_exit_seconds",
    "database",
    # a worktree item's way to main (issue 24)
    "main_branch",
    "worktree_root",
    "worktree_setup",
    "start_in_worktree",
    "land_strategy",
    "land_remote",
    "land_in_daemon",
    # who tells a person a person is needed (issue 26): a command run with the event on stdin
    "notify",
    "notify_timeout_seconds",
)
LAND_STRATEGIES = ("rebase", "merge", "squash")
DATABASE_SCHEMES = ("postgresql", "postgres")  # what libpq takes as a connection URL
PASSWORD_FIX = (
    "keep the password out of the URL: libpq reads it from the PGPASSWORD environment "
    "variable or a password file (~/.pgpass, or the file PGPASSFILE names)"
)
SYNCHRONOUS = ("NORMAL", "FULL")  # SQLite's durability settings coord supports


def read_config(board_dir: Path) -> dict[str, Any]:
    """The board's settings, checked: a wrong one is refused here, by the command that read
    it, naming the file, the setting and what it may be (it once surfaced only in
    daemon.log, as "could not start the coord daemon")."""
    path = board_dir / "config.json"
    try:
        loaded = jsontext.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return dict(DEFAULT_CONFIG)
    except (OSError, ValueError) as err:
        raise InvalidInput(f"cannot read {path}: {err}; fix or delete it") from err
    if not isinstance(loaded, dict):
        raise InvalidInput(f"{path} must hold a JSON object")
    return check_config({**DEFAULT_CONFIG, **loaded}, path)


# Settings only a SQLite board reads: a config that names a database is written without them
# (`coord migrate --switch` and `coord init --database` once left `synchronous` behind).
SQLITE_ONLY_KEYS = ("synchronous",)


def write_config(board_dir: Path, config: dict[str, Any]) -> None:
    """Write the settings, checked first: a wrong value is never written, nor a SQLite-only
    setting beside a database."""
    path = board_dir / "config.json"
    checked = check_config(config, path)
    if checked.get("database"):
        checked = {key: value for key, value in checked.items() if key not in SQLITE_ONLY_KEYS}
    write_json_atomic(path, checked)


def check_config(config: dict[str, Any], path: Path) -> dict[str, Any]:
    """``config`` if every setting is known and valid; else InvalidInput naming the first
    wrong one. Typos (``"colour": 1``) are refused, not ignored."""
    from coord import model

    unknown = sorted(set(config) - set(CONFIG_KEYS))
    if unknown:
        raise InvalidInput(
            f"{path}: unknown setting {', '.join(repr(k) for k in unknown)}; the settings are "
            f"{', '.join(CONFIG_KEYS)} (docs/reference/settings.md says what each means)",
            field=unknown[0],
        )
    synchronous = config.get("synchronous")
    if not isinstance(synchronous, str) or synchronous.upper() not in SYNCHRONOUS:
        raise InvalidInput(
            f"{path}: synchronous {synchronous!r} is not one of {', '.join(SYNCHRONOUS)}",
            field="synchronous",
        )
    for key in ("default_lease_seconds", "escalation_hold_seconds"):
        if key in config:
            try:
                model.check_lease(config[key], 0)
            except InvalidInput as err:
                raise InvalidInput(f"{path}: {key}: {err.message}", field=key) from None
    idle_exit = config.get("idle_exit_seconds", 0)
    if isinstance(idle_exit, bool) or not isinstance(idle_exit, int | float) or idle_exit < 0:
        raise InvalidInput(
            f"{path}: idle_exit_seconds {idle_exit!r} is not a number of seconds (0: never)",
            field="idle_exit_seconds",
        )
    if config.get("escalate_to") is not None:
        try:
            model.check_agent(config["escalate_to"])
        except InvalidInput as err:
            raise InvalidInput(f"{path}: escalate_to: {err.message}", field="escalate_to") from None
    try:
        model.check_humans(config.get("humans"))
    except InvalidInput as err:
        raise InvalidInput(f"{path}: {err.message}", field="humans") from None
    if config.get("database") is not None:
        try:
            check_database_url(config["database"])
        except InvalidInput as err:
            raise InvalidInput(f"{path}: database: {err.message}", field="database") from None
    _check_landing_settings(config, path)
    _check_notify_settings(config, path)
    return config


NOTIFY_FORMS = (
    "a shell command as a string (`notify-send coord`), or its words as a list of strings "
    '(["/usr/local/bin/tell-me", "--urgent"]); the event comes on its standard input'
)


def _check_notify_settings(config: dict[str, Any], path: Path) -> None:
    command = config.get("notify")
    if command is not None:
        words = command if isinstance(command, list) else [command]
        if not words or not all(isinstance(w, str) and w.strip() for w in words):
            raise InvalidInput(
                f"{path}: notify {command!r} is not a command: write {NOTIFY_FORMS}",
                field="notify",
            )
    timeout = config.get("notify_timeout_seconds")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= 600
    ):
        raise InvalidInput(
            f"{path}: notify_timeout_seconds {timeout!r} is not a number of seconds from "
            "more than 0 to 600 (how long the notify command may run before it is stopped)",
            field="notify_timeout_seconds",
        )


def _check_landing_settings(config: dict[str, Any], path: Path) -> None:
    for key, what in (
        ("main_branch", "a branch name (main)"),
        ("worktree_root", "a directory, relative to the repository or absolute"),
        ("worktree_setup", "a shell command run in each new worktree"),
        ("land_remote", "a git remote's name (origin)"),
    ):
        value = config.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise InvalidInput(f"{path}: {key} {value!r} is not {what}", field=key)
    branch = config.get("main_branch")
    if branch is not None and (branch.startswith(("-", "refs/")) or " " in branch):
        raise InvalidInput(
            f"{path}: main_branch {branch!r} is not a branch name (write it as `main`, not "
            "`refs/heads/main`)",
            field="main_branch",
        )
    for flag in ("start_in_worktree", "land_in_daemon"):
        value = config.get(flag)
        if value is not None and not isinstance(value, bool):
            raise InvalidInput(f"{path}: {flag} must be true or false", field=flag)
    strategy = config.get("land_strategy")
    if strategy is not None and strategy not in LAND_STRATEGIES:
        raise InvalidInput(
            f"{path}: land_strategy {strategy!r} is not one of {', '.join(LAND_STRATEGIES)}",
            field="land_strategy",
        )


def check_database_url(url: Any, field: str = "database") -> str:
    """``url`` if it names a PostgreSQL database without a password; else InvalidInput that
    never repeats the URL (it may hold the password). ``field``: the setting or option that
    gave it, named by the error."""
    if not isinstance(url, str) or not url.strip():
        raise InvalidInput(
            "must be a PostgreSQL URL, postgresql://USER@HOST:PORT/DATABASE", field=field
        )
    from urllib.parse import parse_qs, urlsplit

    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (a port that is not a number raises here)
    except ValueError as err:
        raise InvalidInput(f"not a valid URL ({err})", field=field) from None
    if parts.scheme not in DATABASE_SCHEMES:
        raise InvalidInput(
            "must be a PostgreSQL URL starting postgresql:// "
            "(postgresql://USER@HOST:PORT/DATABASE)",
            field=field,
        )
    if parts.password is not None or "password" in parse_qs(parts.query):
        raise InvalidInput(f"the URL holds a password; {PASSWORD_FIX}", field=field)
    if not parts.path.strip("/") and "dbname" not in parse_qs(parts.query):
        raise InvalidInput(
            "the URL names no database: postgresql://USER@HOST:PORT/DATABASE", field=field
        )
    return url


def read_token(board_dir: Path) -> str:
    try:
        return token_path(board_dir).read_text(encoding="utf-8").strip()
    except FileNotFoundError as err:
        raise BoardNotFound(
            f"{token_path(board_dir)} is missing: run `coord init` to create it"
        ) from err


def read_token_file(path: str) -> str:
    """A person's token from ``COORD_TOKEN_FILE``: refused when others may read the file."""
    try:
        mode = os.stat(path).st_mode
        with open(path, encoding="utf-8") as f:
            text = f.read().strip()
    except OSError as err:
        raise InvalidInput(
            f"COORD_TOKEN_FILE={path} cannot be read ({err.strerror}): point it at the file "
            "holding your token (`coord token create` printed it), or unset it"
        ) from None
    if mode & 0o077:
        raise InvalidInput(
            f"COORD_TOKEN_FILE={path} may be read by others (mode {mode & 0o777:o}): "
            f"`chmod 600 {path}` first"
        )
    return text


def init_board_files(board_dir: Path) -> bool:
    """Create the directory, token and config if missing, and make what is there its owner's
    alone (``tighten_modes``). Returns True if anything was new."""
    created = not board_dir.exists()
    board_dir.mkdir(PRIVATE_DIR, parents=True, exist_ok=True)
    tighten_modes(board_dir)
    # The board is local state, never something to commit.
    _create_private(board_dir / ".gitignore", "*\n")
    import secrets

    created = _create_private(token_path(board_dir), secrets.token_urlsafe(32) + "\n") or created
    import json  # indented: only jsontext's compact form skips the package

    _create_private(board_dir / "config.json", json.dumps(DEFAULT_CONFIG, indent=2) + "\n")
    return created


def _create_private(path: Path, text: str) -> bool:
    """Write ``path`` (mode 0600) unless it exists. True if it was created."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    return True


def private_dir(path: Path) -> Path:
    """``path`` made if missing, a directory of the board (0700)."""
    path.mkdir(PRIVATE_DIR, parents=True, exist_ok=True)
    return path


def daemon_lock_held(board_dir: Path) -> bool:
    """Whether a daemon holds this board's lock (``coord.server.daemon`` keeps
    ``daemon.lock`` locked for its whole life): tried without waiting, and let go at once."""
    import fcntl

    try:
        fd = os.open(board_dir / "daemon.lock", os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # and the lock with it, if this took it
    return False


def open_private(path: Path, flags: int) -> int:
    """``os.open`` of a file of the board: a new one is created 0600 whatever the umask."""
    return os.open(path, flags | os.O_CREAT, PRIVATE_FILE)


def tighten_modes(board_dir: Path) -> list[str]:
    """Make the board directory and everything in it its owner's alone: group and others lose
    every permission (a board made by an older coord had 0755 and 0644 under the usual umask).
    Symbolic links are left alone. Returns what changed, relative to ``board_dir``."""
    changed = []
    for directory, subdirs, filenames in os.walk(board_dir):
        if directory == str(board_dir) and _restrict(directory):
            changed.append("./")
        for name in subdirs:
            if _restrict(os.path.join(directory, name)):
                changed.append(os.path.relpath(os.path.join(directory, name), board_dir) + "/")
        for name in filenames:
            if _restrict(os.path.join(directory, name)):
                changed.append(os.path.relpath(os.path.join(directory, name), board_dir))
    return changed


def _restrict(path: str) -> bool:
    """Take group's and others' permissions away; True if they had any."""
    try:
        found = os.lstat(path)
        if stat.S_ISLNK(found.st_mode) or found.st_mode & 0o077 == 0:
            return False
        os.chmod(path, stat.S_IMODE(found.st_mode) & ~0o077)
    except FileNotFoundError:  # gone meanwhile (a -shm, a temporary file)
        return False
    return True


def write_json_atomic(path: Path, data: Any, mode: int = PRIVATE_FILE) -> None:
    from coord.fast import files

    files.write_atomic(path, jsontext.dumps(data).encode(), mode)
