"""Shell syntax, as far as the guard needs it: a command line split into simple commands.

``commands`` turns the text an agent's shell tool runs into each simple command's words and
the paths it redirects output to (``>``, ``>>``, ``>|``, ``&>``, ``&>>``, ``<>``, ``>&`` to a
path, not to a descriptor like ``2>&1``). ``;``, ``&&``, ``||``, ``|``, ``&``, ``( ... )``,
newlines and backticks separate commands; heredoc bodies and comments are data, not commands;
line continuations are joined; ``$'...'`` strings are read with their escapes. What the words
mean (which files ``rm`` or ``cp`` write) is ``coord.hooks.shell``'s business.

Stdlib only: it runs before every shell command an agent runs.
"""

from __future__ import annotations

import re
import shlex

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

_OPERATORS = re.compile(r"&&|\|\||;;|\|&|&>>|&>|>>|>\||>&|<<<|<<|<>|<&|[();<>|&]")
_PUNCTUATION = frozenset("();<>|&")
_SEPARATORS = frozenset({";", ";;", "&&", "||", "|", "|&", "&", "(", ")"})
_WRITES = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})
_READS = frozenset({"<", "<<<", "<&"})
_HEREDOC = re.compile(r"<<(-?)[ \t]*(?:'([^'\n]*)'|\"([^\"\n]*)\"|\\?([^\s;&|()<>'\"]+))")


def commands(text: str) -> Iterator[tuple[list[str], list[str]]]:
    """Each simple command of ``text``: (its words, the paths it redirects output to)."""
    return _segments(_tokens(_flatten(text)))


def _flatten(text: str) -> str:
    """The command with heredoc bodies and comments dropped, line continuations joined,
    and unquoted newlines and backticks turned into ``;`` so shlex sees separate commands."""
    out: list[str] = []
    pending: list[tuple[str, bool]] = []  # heredoc delimiters whose bodies start next line
    quote = ""
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
        elif c == "<" and text.startswith("<<", i) and not text.startswith("<<<", i):
            match = _HEREDOC.match(text, i)
            if match is None:
                out.append(c)
                i += 1
                continue
            delimiter = next(g for g in match.groups()[1:] if g is not None)
            pending.append((delimiter, match.group(1) == "-"))
            out.append(" ")
            i = match.end()
        elif c == "`":
            out.append(" ; ")
            i += 1
        elif c == "\n":
            out.append(" ; ")
            i += 1
            for delimiter, strip_tabs in pending:  # skip each body through its last line
                while i < n:
                    end = text.find("\n", i)
                    line = text[i:] if end < 0 else text[i:end]
                    i = n if end < 0 else end + 1
                    if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                        break
            pending = []
        else:
            out.append(c)
            i += 1
    return "".join(out)


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


def _segments(tokens: list[str]) -> Iterator[tuple[list[str], list[str]]]:
    """Each simple command: (its words, the paths it redirects output to)."""
    words: list[str] = []
    writes: list[str] = []
    stream = iter(tokens)
    for token in stream:
        if token in _SEPARATORS:
            yield words, writes
            words, writes = [], []
        elif token in _WRITES or token in _READS or token == ">&" or token == "<<":
            if words and words[-1].isdigit():  # 2> file: the 2 names a descriptor
                words.pop()
            target = next(stream, None)
            if target is None:
                break
            if token in _WRITES or (token == ">&" and not (target.isdigit() or target == "-")):
                writes.append(target)
        else:
            words.append(token)
    yield words, writes
