"""A git command line as git reads it: the global options, the subcommand, its options.

git's own commands read their options with one parser (``parse-options``), so one reader
here follows it: ``--name``, ``--name=value``, ``--name value`` for an option that needs a
value, any unique abbreviation of a long name (``git reset --ha`` is ``--hard``), ``--no-name``,
short options clustered (``-fdx``) with a value as the rest of the cluster or the next word
(``-bnew``, ``-b new``), options after operands, and ``--`` ending them. An option the
command does not have (or an ambiguous abbreviation) is ``Unsure``: git would refuse it, but
coord's table could be the one that is short, so the caller treats the command as one it
cannot read.

A command's options are written as a spec: words separated by spaces, ``x|name`` for a short
and a long name, ``=`` after it when it takes a value, ``?`` when the value is optional
(attached only: ``--track=direct``). Stdlib only: the shell guard reads every git command.
"""

from __future__ import annotations

import os

# git's global options that take the next word as their value
_GLOBAL_VALUE = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix"}
)
_GLOBAL_ATTACHED = ("--git-dir=", "--work-tree=", "--namespace=", "--config-env=", "--exec-path")
# what of the user's own `-c` settings an oracle run keeps: those that change which files a
# command sees or touches. Any other (core.fsmonitor, filters, diff drivers) could run a
# program of the user's choice before coord has judged the command: dropped.
_KEPT_SETTINGS = (
    "alias.",
    "core.ignorecase",
    "core.excludesfile",
    "core.precomposeunicode",
    "core.autocrlf",
    "core.eol",
    "status.showuntrackedfiles",
    "merge.autostash",
    "rebase.autostash",
)
# settings under which git runs no program of its own choosing. Any other given with `-c` (or
# written by `git config`) may: core.fsmonitor, core.hooksPath, filters, diff drivers and
# textconv, editors, pagers, ssh and credential helpers run what the guard cannot read.
_INERT_SETTINGS = (
    "alias.",  # expanded where used, and one that runs a shell is refused there
    "user.",
    "author.",
    "committer.",
    "color.",
    "advice.",
    "init.",
    "log.",
    "pretty.",
    "column.",
    "i18n.",
    "status.",
    "core.quotepath",
    "core.autocrlf",
    "core.eol",
    "core.safecrlf",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.excludesfile",
    "core.abbrev",
    "core.filemode",
    "core.hookspath=/dev/null",  # no hooks at all
    "diff.renames",
    "diff.algorithm",
    "diff.context",
    "diff.noprefix",
    "diff.relative",
    "merge.ff",
    "merge.conflictstyle",
    "merge.autostash",
    "rebase.autostash",
    "pull.rebase",
    "pull.ff",
    "push.default",
    "push.autosetupremote",
    "fetch.prune",
    "tag.sort",
    "branch.sort",
    "commit.gpgsign=false",
    "gc.auto",
    "safe.directory",
    "protocol.version",
    "http.sslverify",
)


def runs_a_program(name: str, value: str) -> bool:
    """Could git run a program of the setting's choosing under ``name=value``?"""
    return not f"{name.lower()}={value}".startswith(_INERT_SETTINGS)


_KEPT_FLAGS = frozenset(
    {
        "--bare",
        "--literal-pathspecs",
        "--glob-pathspecs",
        "--noglob-pathspecs",
        "--icase-pathspecs",
        "--no-replace-objects",
    }
)


# commands that change no file of the working tree (their own --output aside)
READERS = frozenset(
    """add stage annotate blame branch bugreport bundle cat-file check-attr check-ignore
    check-mailmap check-ref-format cherry column commit commit-graph commit-tree
    count-objects credential credential-cache credential-store describe diagnose diff
    diff-files diff-index diff-tree difftool fast-export fast-import fetch fetch-pack
    fmt-merge-msg for-each-ref format-patch fsck gc get-tar-commit-id grep hash-object
    help index-pack init init-db interpret-trailers log ls-files ls-remote ls-tree mailinfo
    mailsplit maintenance merge-base merge-tree mktag mktree multi-pack-index name-rev
    notes pack-objects pack-redundant pack-refs patch-id prune prune-packed push
    range-diff reflog remote repack replace request-pull rev-list rev-parse send-email
    send-pack shortlog show show-branch show-index show-ref status stripspace symbolic-ref
    tag unpack-file unpack-objects update-index update-ref update-server-info var
    verify-commit verify-pack verify-tag version whatchanged write-tree""".split()  # noqa: SIM905
)
# readers whose --output=FILE writes that file
OUTPUT_READERS = frozenset(
    {"diff", "diff-files", "diff-index", "diff-tree", "log", "show", "range-diff", "whatchanged"}
)


class Unsure(Exception):
    """coord cannot tell what the command would change; the message says why."""


class Call:
    """One ``git`` command: ``sub`` and its ``args``, the directory it runs in (``cwd``, after
    every ``-C``), ``oracle``: the global options an oracle run repeats (with ``-C`` and the
    settings that are safe to repeat), what ``--git-dir`` / ``--work-tree`` said, and what an
    earlier ``git stash`` of the same command line put away (``stashed``)."""

    __slots__ = (
        "args",
        "cwd",
        "git_dir",
        "oracle",
        "settings",
        "shown",
        "stashed",
        "sub",
        "where",
        "work_tree",
    )

    def __init__(self, where: str) -> None:
        self.where = where  # the directory the shell runs git in
        self.cwd = where
        self.sub: str | None = None
        self.args: list[str] = []
        self.oracle: list[str] = []
        self.settings: dict[str, str] = {}  # -c name=value, names lowercased
        self.git_dir: str | None = None
        self.work_tree: str | None = None
        self.shown = "git"
        # what a `git stash push` earlier on the same command line put away: its stash is
        # stash@{0} by the time this command runs
        self.stashed: list[tuple[str, bool]] | None = None

    def reads_only(self) -> bool:
        """Is it a command that changes no file (``status``, ``log``, ``commit``...), told from
        its name alone: the shell guard's everyday path, with nothing more imported or run."""
        if self.sub is None:
            return True  # `git`, `git --version`
        if self.sub not in READERS or (self.sub == "bundle" and self.args[:1] == ["create"]):
            return False
        if self.sub in OUTPUT_READERS:
            return not any(a == "--output" or a.startswith("--output=") for a in self.args)
        return True

    def program_setting(self) -> str | None:
        """A ``-c`` setting under which git could run a program (``core.fsmonitor=CMD``)."""
        for name, value in self.settings.items():
            if runs_a_program(name, value):
                return name
        return None


def read_call(args: list[str], where: str) -> Call:
    """The git command ``git ARGS`` run from ``where``."""
    call = Call(where)
    i = 0
    while i < len(args) and args[i].startswith("-"):
        arg = args[i]
        value: str | None = None
        if arg in _GLOBAL_VALUE:
            value = args[i + 1] if i + 1 < len(args) else ""
            i += 2
        else:
            if "=" in arg and arg.startswith(_GLOBAL_ATTACHED):
                arg, _, value = arg.partition("=")
            elif arg.startswith("-c") and len(arg) > 2:
                arg, value = "-c", arg[2:]
            i += 1
        if arg == "-C":  # the shell expanded a leading ~ before git saw it
            call.cwd = os.path.join(call.cwd, os.path.expanduser(value or ""))
            call.oracle += ["-C", os.path.expanduser(value or "")]
        elif arg == "-c":
            name, _, setting = (value or "").partition("=")
            call.settings[name.lower()] = setting
            if name.lower().startswith(_KEPT_SETTINGS):
                call.oracle += ["-c", value or ""]
        elif arg in ("--git-dir", "--work-tree", "--namespace"):
            call.oracle.append(f"{arg}={value}")
            if arg == "--git-dir":
                call.git_dir = os.path.join(call.cwd, value or "")
            elif arg == "--work-tree":
                call.work_tree = os.path.join(call.cwd, value or "")
        elif arg in _KEPT_FLAGS:
            call.oracle.append(arg)
    if i < len(args):
        call.sub, call.args = args[i], args[i + 1 :]
    if "--help" in args[:i] or "-h" in args[:i]:
        call.sub = "help"  # git --help stash: the manual, nothing run
    words = " ".join(["git", *args])
    call.shown = words if len(words) <= 72 else words[:69] + "..."
    return call


class Spec:
    """A command's options, from their spec (see the module's docstring)."""

    __slots__ = ("long", "short")

    def __init__(self, text: str) -> None:
        self.long: dict[str, tuple[str, str]] = {}  # long name -> (canonical name, arity)
        self.short: dict[str, tuple[str, str]] = {}  # letter -> (canonical name, arity)
        for word in text.split():
            arity = word[-1] if word[-1] in "=?" else ""
            names = word.rstrip("=?").split("|")
            canonical = names[-1]
            for name in names:
                (self.short if len(name) == 1 else self.long)[name] = (canonical, arity)


class Parsed:
    """A command's options as read: ``opts`` (canonical name -> every value given in order:
    True for a flag, False for ``--no-name``, text for a value), the operands before ``--``
    (``operands``) and after it (``paths``; None when there was no ``--``)."""

    __slots__ = ("operands", "opts", "order", "paths")

    def __init__(self) -> None:
        self.opts: dict[str, list[str | bool]] = {}
        self.order: list[str] = []  # the canonical names as given, in order
        self.operands: list[str] = []
        self.paths: list[str] | None = None

    def has(self, name: str) -> bool:
        """Is the option on: given, and its last mention not ``--no-name``?"""
        values = self.opts.get(name)
        return values is not None and bool(values) and values[-1] is not False

    def last_of(self, names: tuple[str, ...]) -> str | None:
        """Which of these options was given last (``reset --hard --soft`` is ``--soft``)."""
        given = [n for n in self.order if n in names]
        return given[-1] if given else None

    def value(self, name: str) -> str | None:
        values = [v for v in self.opts.get(name, ()) if isinstance(v, str)]
        return values[-1] if values else None

    def values(self, name: str) -> list[str]:
        return [v for v in self.opts.get(name, ()) if isinstance(v, str)]

    def count(self, name: str) -> int:
        return sum(1 for v in self.opts.get(name, ()) if v is not False)

    def pathspecs(self, cwd: str) -> list[str]:
        """Every pathspec: the operands after ``--``, and those ``--pathspec-from-file``
        names (``Unsure`` when that file is standard input or cannot be read)."""
        given = list(self.paths or [])
        source = self.value("pathspec-from-file")
        if source is not None:
            if source == "-":
                raise Unsure("it reads its paths from standard input")
            try:
                with open(os.path.join(cwd, source), encoding="utf-8") as f:
                    text = f.read()
            except (OSError, UnicodeDecodeError):
                raise Unsure(f"coord cannot read {source}, which names its paths") from None
            split = "\0" if self.has("pathspec-file-nul") else "\n"
            given += [p for p in text.split(split) if p.strip()]
        return given


def parse(args: list[str], spec: Spec, *, stop_at_operand: bool = False) -> Parsed:
    """``args`` read by ``spec``; ``stop_at_operand``: everything from the first operand on
    is an operand (``git stash`` reads its subcommand's options itself)."""
    parsed = Parsed()
    rest = iter(args)
    for arg in rest:
        if arg == "--":
            parsed.paths = list(rest)
            break
        if arg.startswith("--"):
            name, eq, attached = arg[2:].partition("=")
            canonical, arity, negated = _long(spec, name, arg)
            if arity == "=" and not eq:
                value: str | bool = next(rest, "")
            elif eq and not arity:
                raise Unsure(f"`{arg}` takes no value")
            else:
                value = attached if eq else not negated
            parsed.opts.setdefault(canonical, []).append(value)
            parsed.order.append(canonical)
        elif arg.startswith("-") and arg != "-":
            cluster = arg[1:]
            for k, letter in enumerate(cluster):
                if letter not in spec.short:
                    raise Unsure(f"coord does not know the option -{letter}")
                canonical, arity = spec.short[letter]
                if arity:
                    tail = cluster[k + 1 :]
                    taken = tail if tail or arity == "?" else next(rest, "")
                    parsed.opts.setdefault(canonical, []).append(taken or True)
                    parsed.order.append(canonical)
                    break
                parsed.opts.setdefault(canonical, []).append(True)
                parsed.order.append(canonical)
        else:
            parsed.operands.append(arg)
            if stop_at_operand:
                parsed.operands += list(rest)
                break
    return parsed


def _long(spec: Spec, name: str, arg: str) -> tuple[str, str, bool]:
    """(canonical name, arity, negated) of a long option as typed, abbreviations included."""
    if name in spec.long:
        return (*spec.long[name], False)
    if name.startswith("no-") and name[3:] in spec.long:
        return (*spec.long[name[3:]], True)
    found = {spec.long[n] for n in spec.long if n.startswith(name)}
    negated = False
    if not found and name.startswith("no-"):
        found = {spec.long[n] for n in spec.long if n.startswith(name[3:])}
        negated = True
    if len(found) != 1:
        what = "does not know" if not found else "cannot tell which option is meant by"
        raise Unsure(f"coord {what} the option {arg.partition('=')[0]}")
    canonical, arity = found.pop()
    return canonical, arity, negated
