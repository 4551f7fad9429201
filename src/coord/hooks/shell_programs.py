"""The programs the shell guard knows by name, and how it reads each kind.

- ``WRAPPERS`` run the command that follows their own options (``sudo``, ``nice -n 5``,
  ``timeout 10``, ``flock FILE``, ``taskset MASK``): the guard judges that command.
  ``STRING_WRAPPERS`` take it as one string (``su -c 'CMD'``, ``script -qc 'CMD'``, ``watch
  CMD``) and ``xargs``/``parallel`` add operands it cannot know.
- ``READERS`` write nothing but their redirections: their operands are read, not judged.
- ``RUNNERS`` run code the guard cannot see (a build file, a package's scripts): unread,
  they reach the whole working tree. ``LET_THROUGH`` are the few runner commands allowed
  unread all the same, because agents run them all day and they are meant to write no
  source file: the list in docs/files-and-the-guard.md names exactly these (a test holds it
  to this table).
- ``INTERPRETERS`` run a program given as a file (unread, the whole working tree) or as
  ``-c``/``-e`` code, which is judged by the paths its string literals name.

Stdlib only: it runs before every shell command an agent runs.
"""

from __future__ import annotations

# wrapper -> (its options that take a value, how many operands come before the command)
WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "sudo": (frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-R", "-T"}), 0),
    "doas": (frozenset({"-u", "-C"}), 0),
    "env": (frozenset({"-u", "--unset", "-a", "--argv0"}), 0),  # -C and -S: shell.py
    "command": (frozenset(), 0),
    "builtin": (frozenset(), 0),
    "exec": (frozenset({"-a"}), 0),
    "nohup": (frozenset(), 0),
    "time": (frozenset({"-f", "-o", "--format", "--output"}), 0),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "stdbuf": (frozenset({"-i", "-o", "-e"}), 0),
    "timeout": (frozenset({"-s", "-k", "--signal", "--kill-after"}), 1),
    "setsid": (frozenset(), 0),
    "flock": (frozenset({"-w", "--timeout", "-E", "--conflict-exit-code"}), 1),
    "ionice": (frozenset({"-c", "--class", "-n", "--classdata", "-p", "--pid", "-P", "-u"}), 0),
    "taskset": (frozenset(), 1),
    "chrt": (frozenset({"-T", "-P", "-D", "--sched-runtime", "--sched-period"}), 1),
    "runuser": (frozenset({"-u", "--user", "-g", "--group", "-G", "--supp-group"}), 0),
    "strace": (frozenset({"-e", "-o", "-p", "-s", "-u", "-E", "-a", "-b", "-I", "-O", "-S"}), 0),
    "ltrace": (frozenset({"-e", "-o", "-p", "-s", "-u", "-a", "-n"}), 0),
    "unbuffer": (frozenset(), 0),
    "firejail": (frozenset(), 0),
    "nocache": (frozenset(), 0),
    "eatmydata": (frozenset(), 0),
    "fakeroot": (frozenset({"-l", "-s", "-i", "--lib", "--faked"}), 0),
    "proxychains": (frozenset({"-f"}), 0),
    "proxychains4": (frozenset({"-f"}), 0),
    "torsocks": (frozenset(), 0),
    "catchsegv": (frozenset(), 0),
    "valgrind": (frozenset(), 0),
    "unshare": (frozenset(), 0),
    "prlimit": (frozenset({"-p", "--pid"}), 0),
    "systemd-run": (frozenset({"-p", "--property", "-u", "--unit", "-E", "--setenv"}), 0),
    "caffeinate": (frozenset({"-t", "-w"}), 0),
    "chronic": (frozenset(), 0),
    "ifne": (frozenset(), 0),
    "sem": (frozenset({"-j", "--id"}), 0),
}
# wrappers whose options attach to the word before the command and are given as --opt=value
# (firejail --private=dir, unshare --mount): any word starting with '-' is theirs

# wrappers that run one string as a shell command: the option that gives it
STRING_WRAPPERS: dict[str, str] = {"su": "-c", "script": "-c", "sg": "-c", "runuser": "-c"}
# run their operands joined by blanks through sh -c
JOINING_WRAPPERS = frozenset({"watch"})
WATCH_VALUE = frozenset({"-n", "--interval", "-d", "--differences", "-q", "--equexit"})

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox", "fish"})
# shell options that take the next word as their value
SHELL_VALUE = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})

# programs that write nothing but what their redirections name (never their operands)
READERS = frozenset(
    """
    : ls ll la dir vdir cat tac nl head tail less more most grep egrep fgrep rg ag
    ack zgrep
    wc cut tr paste join comm fold fmt column expand unexpand rev diff diff3 cmp colordiff
    file stat du df tree realpath readlink basename dirname pwd echo printf true false
    test [ which whereis type hash date cal uname hostname whoami id groups uptime ps pgrep
    top htop free env printenv locale tput clear sleep wait jobs fg bg kill pkill seq yes
    jq yq xmllint od hexdump xxd strings md5sum sha1sum sha256sum sha512sum b2sum cksum
    sum base64 base32 zcat bzcat xzcat zless zmore lsof nproc getconf history alias
    unalias set unset export declare typeset local readonly shift ulimit umask
    let return break continue exit read mapfile readarray getopts times logout disown
    mypy pyright flake8 pylint pyflakes pycodestyle pydocstyle shellcheck hadolint
    yamllint markdownlint codespell vulture bandit
    shopt enable help caller compgen complete compopt dirs suspend
    """.split()  # noqa: SIM905 (a list of names reads better as words)
)

# coord's own commands that write the board and nothing in the working tree: their operands
# are paths or items they ask the board about (`coord wait src/a.py` while another holds it
# is the point of waiting), read, not written. `coord` with any other first word is a
# program the guard does not know (init, start, done and land write files or run checks).
COORD_BOARD_ONLY = frozenset(
    "wait ask asks answer-ask who reservations inbox show ls log agents".split()  # noqa: SIM905
)

# unread runners: they run a build file's or a package's code; the first word's next word
# names what they run, and None means any
RUNNERS = frozenset(
    """
    make gmake bmake just task rake gradle gradlew mvn mvnw ant npm yarn pnpm npx bun bunx
    deno tox nox invoke inv poetry pipenv uv hatch pdm cargo go dotnet bazel bazelisk
    cmake ninja meson scons pre-commit lefthook husky composer bundle mix sbt lein
    """.split()  # noqa: SIM905 (a list of names reads better as words)
)
# runner commands allowed unread (the list of docs/files-and-the-guard.md; test_shell_limits.py)
LET_THROUGH: tuple[tuple[str, ...], ...] = (
    ("pytest",),
    ("python", "-m", "pytest"),
    ("make", "test"),
    ("make", "check"),
    ("make", "-n"),
    ("npm", "test"),
    ("yarn", "test"),
    ("pnpm", "test"),
    ("cargo", "test"),
    ("go", "test"),
)
LET_THROUGH_NAMES = frozenset(words[0] for words in LET_THROUGH)

INTERPRETERS = frozenset(
    """
    python python2 python3 pypy pypy3 node nodejs ruby perl php lua luajit Rscript r julia
    tclsh osascript jshell
    """.split()  # noqa: SIM905 (a list of names reads better as words)
)
# an interpreter's option that gives its program as code, not a file
CODE_OPTIONS = frozenset({"-c", "-e", "-E", "--eval", "-p", "--print", "-r", "--run"})
# interpreter options that take the next word as their value (not the program)
INTERPRETER_VALUE = frozenset({"-W", "-X", "-I", "-M", "-r", "--require", "-x", "--import"})


def python_like(name: str) -> bool:
    """``python3.11`` and ``python3`` are ``python``."""
    return name.startswith(("python", "pypy")) and name.rstrip("0123456789.") in (
        "python",
        "pypy",
    )


def let_through(words: list[str]) -> bool:
    """Is this command one of ``LET_THROUGH`` (any further words are its own operands)?
    A runner's options before its target are skipped (``make -s test``), a flag-only entry
    (``make -n``) is found among them."""
    name = words[0].rsplit("/", 1)[-1]
    if python_like(name):
        return any(words[1:3] == list(e[1:]) for e in LET_THROUGH if e[0] == "python")
    rest = [w for w in words[1:] if not w.startswith("-")]
    for entry in LET_THROUGH:
        if entry[0] != name:
            continue
        if len(entry) == 1:
            return True
        if entry[1].startswith("-"):
            if entry[1] in words[1:] or (name == "make" and "--dry-run" in words[1:]):
                return True
        elif rest[: len(entry) - 1] == list(entry[1:]):
            return True
    return False


# a path that stands for the whole working tree a command runs in (what a script may reach)
WHOLE_TREE = "\0tree"
# a directory the guard cannot know (cd $DIR): relative paths after it reach the whole tree
UNKNOWN_DIR = "\0dir"
MAX_SCRIPT = 64 * 1024  # bytes of a script file the guard reads to judge it (bash x.sh)
