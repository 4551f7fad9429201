"""Shell syntax, as far as the guard needs it: a command line split into simple commands.

``items`` turns the text an agent's shell tool runs into a stream of ``Simple`` commands (each
one's words, the paths it redirects output to, what it reads on its standard input) and the
operators between them (``;``, ``&&``, ``||``, ``|``, ``&``, ``(``, ``)``, ``;;``). Newlines
and backticks separate commands too; a backtick substitution reads as ``$( ... )``; a
``$( ... )`` or backtick inside double quotes is read as a command of its own as well (it runs
where the word is expanded). Heredoc bodies and here-strings are data, not commands: they
become the command's ``stdin`` (a shell fed one runs it). Comments are dropped, line
continuations joined, ``$'...'`` strings read with their escapes. The shell's keywords and
compound commands are ``coord.hooks.shell_compound``'s; what the words mean (which files
``rm`` or ``cp`` write) is ``coord.hooks.shell``'s business.

Stdlib only: it runs before every shell command an agent runs.
"""

from __future__ import annotations

import re
import shlex

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

_OPERATORS = re.compile(r";;&|;;|;&|&&|\|\||\|&|&>>|&>|>>|>\||>&|<<<|<<|<>|<&|[();<>|&]")
_PUNCTUATION = frozenset("();<>|&")
SEPARATORS = frozenset({";", ";;", ";&", ";;&", "&&", "||", "|", "|&", "&", "(", ")"})
_WRITES = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})
_READS = frozenset({"<", "<<<", "<&"})
_HEREDOC = re.compile(r"<<(-?)[ \t]*(?:'([^'\n]*)'|\"([^\"\n]*)\"|\\?([^\s;&|()<>'\"]+))")
# where a heredoc's body is put back as a here-string: NUL never occurs in a command
_BODY = "\0body{}\0"
_BODY_RE = re.compile("\0body([0-9]+)\0")


class Simple:
    """One simple command: ``words``; ``writes``, the paths its output goes to; ``stdin``,
    the text a here-string or heredoc feeds it (None: none); ``stdin_file``, a file it reads
    with ``<``."""

    __slots__ = ("stdin", "stdin_file", "words", "writes")

    def __init__(self) -> None:
        self.words: list[str] = []
        self.writes: list[str] = []
        self.stdin: str | None = None
        self.stdin_file: str | None = None

    def __repr__(self) -> str:
        return f"Simple({self.words!r}, writes={self.writes!r}, stdin={self.stdin!r})"


def items(text: str) -> Iterator[Simple | str]:
    """The simple commands of ``text`` and the operators between them, in order."""
    flat, bodies = _flatten(text)
    return _segments(_tokens(flat), bodies)


def _flatten(text: str) -> tuple[str, list[str]]:
    """The command with heredoc bodies taken out (each replaced by a here-string of a marker
    that indexes the bodies), comments dropped, line continuations joined, unquoted newlines
    turned into ``;`` and backticks into ``$( )``, so that shlex sees separate commands."""
    out: list[str] = []
    bodies: list[str] = []
    later: list[str] = []  # substitutions inside double quotes: read as commands of their own
    pending: list[tuple[str, bool, int]] = []  # heredocs whose bodies start on the next line
    quote = ""
    backtick = False
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if quote == "'":
            quote = "" if c == "'" else quote
            out.append(c)
            i += 1
        elif quote == '"':
            if c == "\\" and i + 1 < n:
                out.append(text[i : i + 2])
                i += 2
                continue
            if c == "$" and text.startswith("$(", i) and not text.startswith("$((", i):
                end = _substitution_end(text, i + 2)
                later.append(text[i + 2 : end])
            elif c == "`":
                end = text.find("`", i + 1)
                later.append(text[i + 1 : n if end < 0 else end])
            quote = "" if c == '"' else quote
            out.append(c)
            i += 1
        elif c == "\\" and i + 1 < n:
            if text[i + 1] != "\n":  # a backslash-newline joins the lines
                out.append(text[i : i + 2])
            i += 2
        elif c == "$" and text.startswith("$'", i):  # ANSI-C quoting: \' does not end it
            body, i = _ansi_c(text, i + 2)
            out.append('"' + body.replace("\\", "\\\\").replace('"', '\\"') + '"')
        elif c in "'\"":
            quote = c
            out.append(c)
            i += 1
        elif c == "#" and (not out or out[-1][-1:] in " \t\n;&|()<>"):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif c == "<" and text.startswith("<<<", i):
            out.append("<<<")
            i += 3
        elif c == "<" and text.startswith("<<", i):
            match = _HEREDOC.match(text, i)
            if match is None:
                out.append(c)
                i += 1
                continue
            delimiter = next(g for g in match.groups()[1:] if g is not None)
            pending.append((delimiter, match.group(1) == "-", len(bodies)))
            out.append(" <<< " + _BODY.format(len(bodies)) + " ")
            bodies.append("")
            i = match.end()
        elif c == "`":
            out.append(" ) " if backtick else " $( ")
            backtick = not backtick
            i += 1
        elif c == "\n":
            out.append(" ; ")
            i += 1
            for delimiter, strip_tabs, k in pending:  # each body through its last line
                lines: list[str] = []
                while i < n:
                    end = text.find("\n", i)
                    line = text[i:] if end < 0 else text[i:end]
                    i = n if end < 0 else end + 1
                    if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                        break
                    lines.append(line.lstrip("\t") if strip_tabs else line)
                bodies[k] = "\n".join(lines) + "\n"
            pending = []
        else:
            out.append(c)
            i += 1
    if backtick:
        out.append(" ) ")
    for inner in later:
        out.append(" ; ( " + _flatten_inner(inner, bodies) + " ) ")
    return "".join(out), bodies


def _flatten_inner(text: str, bodies: list[str]) -> str:
    flat, inner_bodies = _flatten(text)
    base = len(bodies)
    bodies += inner_bodies
    return _BODY_RE.sub(lambda m: _BODY.format(base + int(m.group(1))), flat)


def _substitution_end(text: str, i: int) -> int:
    """Where the ``$( ... )`` whose text starts at ``i`` ends (its closing parenthesis)."""
    depth, quote = 1, ""
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c == "\\":
            i += 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return len(text)


def _ansi_c(text: str, i: int) -> tuple[str, int]:
    """The text of a ``$'...'`` string starting at ``i`` (escapes kept but ``\\'``), and
    where it ends."""
    body: list[str] = []
    while i < len(text) and text[i] != "'":
        if text[i] == "\\" and i + 1 < len(text):
            body.append(text[i + 1] if text[i + 1] in "'\\" else text[i : i + 2])
            i += 2
        else:
            body.append(text[i])
            i += 1
    return "".join(body), i + 1


def _tokens(text: str) -> list[str]:
    """Words and operators. Quoting shlex cannot balance (``$'it\\'s'``) is closed at the
    end, and failing that the text is split on blanks: read as much as can be read."""
    for attempt in (text, text + "'", text + '"'):
        lexer = shlex.shlex(attempt, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = ""
        tokens: list[str] = []
        try:
            for token in lexer:
                if token and set(token) <= _PUNCTUATION:
                    tokens += _OPERATORS.findall(token)
                else:
                    tokens.append(token)
        except ValueError:  # No closing quotation
            continue
        return tokens
    return text.split()


def _segments(tokens: list[str], bodies: list[str]) -> Iterator[Simple | str]:
    """Each simple command, and each operator between two. A ``$( … )`` inside a word is
    handed on as ``(``, its commands, ``)`` before the command whose word it is, which goes
    on after it (``$(echo rm) src/a.py`` is one command, ``$ src/a.py``)."""
    simple = Simple()
    outer: list[Simple | None] = []  # per open '(': the command a $( … ) is inside, or None
    previous = ""
    at = -1
    while at + 1 < len(tokens):
        at += 1
        token = tokens[at]
        if token in ("<", ">") and tokens[at + 1 : at + 2] == ["("]:
            # <( … ) and >( … ): a file the shell makes of the commands' output or input,
            # a word the guard cannot know
            simple.words.append("$")
            previous = "$"
            continue
        if token == "(" and previous.endswith("$"):
            outer.append(simple)
            yield "("
            simple = Simple()
        elif token == ")" and outer and outer[-1] is not None:
            yield simple
            yield ")"
            simple = outer.pop() or Simple()
        elif token in SEPARATORS:
            if token == "(":
                outer.append(None)
            elif token == ")" and outer:
                outer.pop()
            yield simple
            yield token
            simple = Simple()
        elif token in _WRITES or token in _READS or token == ">&" or token == "<<":
            if simple.words and simple.words[-1].isdigit():  # 2> file: a descriptor
                simple.words.pop()
            if at + 1 >= len(tokens):
                break
            at += 1
            target = tokens[at]
            if token in _WRITES or (token == ">&" and not (target.isdigit() or target == "-")):
                simple.writes.append(target)
            elif token == "<<<":
                marker = _BODY_RE.fullmatch(target)
                simple.stdin = bodies[int(marker.group(1))] if marker else target + "\n"
            elif token == "<":
                simple.stdin_file = target
            previous = target
            continue
        else:
            simple.words.append(token)
        previous = token
    yield simple


def split_words(text: str) -> list[str]:
    """``text`` split into words as the shell would (for ``env -S``, ``watch``, ``su -c``
    strings read as one command line)."""
    return [w for w in _tokens(text) if w not in SEPARATORS]
