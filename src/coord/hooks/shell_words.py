"""A shell word as the shell expands it before the command runs, as far as the guard can know.

- Brace expansion: ``src/{a,b}.py`` is ``src/a.py src/b.py``, ``a.p{y,}`` is ``a.py a.p``,
  ``f{1..3}`` is ``f1 f2 f3``; past ``MAX_WORDS`` the braces read as ``*`` (a glob of what
  they could give, judged as a pattern).
- Variables: ``$NAME`` and ``${NAME}`` assigned earlier in the command (``f=src/a.py; rm
  $f``, ``for f in a b``: each of its words), else the environment's (``$HOME``); ``$PWD``
  is the directory the command is in. Any other expansion (``$1``, ``${X:-y}``, ``$(…)``)
  stays as written: a ``$`` in a word means the guard cannot know it.
- A leading ``~`` or ``~/`` is the home directory.

Quotes are gone by now (``shlex``): a quoted ``'{a,b}'`` expands here too, which only ever
makes the guard judge more names.

Stdlib only: it runs before every shell command an agent runs.
"""

from __future__ import annotations

import os
import re

MAX_WORDS = 256
_VARIABLE = r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::?[-=]([^{}$`]*))?\}|([A-Za-z_][A-Za-z0-9_]*))"
_RANGE = r"(-?[0-9]+)\.\.(-?[0-9]+)(?:\.\.(-?[0-9]+))?|([A-Za-z])\.\.([A-Za-z])"
# not taken from the guard's own environment: the command's shell has its own
_OWN = frozenset({"PWD", "OLDPWD", "IFS", "_"})
# unset here, a directory outside any repository all the same (the shell's own value, or ''
# then '/x'): the temporary and per-user directories
_OUTSIDE = {
    "TMPDIR": "/tmp",
    "TMP": "/tmp",
    "TEMP": "/tmp",
    "TEMPDIR": "/tmp",
    "XDG_RUNTIME_DIR": "/run/user",
    "XDG_CACHE_HOME": "~/.cache",
    "XDG_CONFIG_HOME": "~/.config",
    "XDG_DATA_HOME": "~/.local/share",
    "XDG_STATE_HOME": "~/.local/state",
}


def expand(
    word: str, variables: dict[str, list[str] | None], cwd: str, environ: bool = True
) -> list[str]:
    """The words ``word`` becomes (one, unless braces or a loop's variable make more)."""
    out: list[str] = []
    for w in braces(word) if "{" in word else [word]:
        if w.startswith("~") and (len(w) == 1 or w[1] == "/"):
            w = os.path.expanduser("~") + w[1:]
        out += _variables(w, variables, cwd, environ) if "$" in w else [w]
    return out[:MAX_WORDS]


def _variables(
    word: str, variables: dict[str, list[str] | None], cwd: str, environ: bool
) -> list[str]:
    results = [""]
    at = 0
    for match in re.finditer(_VARIABLE, word):
        name = match.group(1) or match.group(3)
        default = match.group(2)
        values: list[str] | None
        if name in variables:
            values = variables[name]
        elif name == "PWD" and not cwd.startswith("\0"):
            values = [cwd]
        elif environ and name not in _OWN and os.environ.get(name):
            values = [os.environ[name]]
        elif default is not None and "$" not in default and name not in os.environ:
            values = [default]  # ${NAME:-word}: unset here, the word
        elif name in _OUTSIDE:
            values = [os.path.expanduser(_OUTSIDE[name])]
        else:
            values = None
        text = word[at : match.start()]
        if values is None:
            values = [match.group(0)]  # unknown: stays, and its '$' says so
        results = [r + text + v for r in results for v in values][:MAX_WORDS]
        at = match.end()
    return [r + word[at:] for r in results]


def braces(word: str) -> list[str]:
    """Brace expansion of ``word``; past ``MAX_WORDS`` words, the braces as ``*``."""
    words = _braces(word, [MAX_WORDS])
    return words if words is not None else [_starred(word)]


def _braces(word: str, budget: list[int]) -> list[str] | None:
    found = _first_expansion(word)
    if found is None:
        return [word]
    start, end, alternatives = found
    out: list[str] = []
    for alternative in alternatives:
        more = _braces(word[:start] + alternative + word[end + 1 :], budget)
        if more is None:
            return None
        budget[0] -= len(more)
        if budget[0] < 0:
            return None
        out += more
    return out


def _first_expansion(word: str) -> tuple[int, int, list[str]] | None:
    """(where the first ``{…}`` that expands opens, where it closes, its alternatives)."""
    i = 0
    while i < len(word):
        if word.startswith("${", i):
            close = word.find("}", i)
            i = len(word) if close < 0 else close + 1
            continue
        if word[i] == "{":
            end = _closing(word, i)
            if end < 0:
                return None
            body = word[i + 1 : end]
            parts = _split_top(body)
            if len(parts) > 1:
                return i, end, parts
            sequence = _sequence(body)
            if sequence is not None:
                return i, end, sequence
        i += 1
    return None


def _closing(word: str, start: int) -> int:
    depth = 0
    for k in range(start, len(word)):
        if word[k] == "{":
            depth += 1
        elif word[k] == "}":
            depth -= 1
            if depth == 0:
                return k
    return -1


def _split_top(body: str) -> list[str]:
    parts, depth, at = [], 0, 0
    for k, c in enumerate(body):
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(body[at:k])
            at = k + 1
    parts.append(body[at:])
    return parts


def _sequence(body: str) -> list[str] | None:
    match = re.fullmatch(_RANGE, body)
    if match is None:
        return None
    if match.group(4):
        a, b = ord(match.group(4)), ord(match.group(5))
        step = 1 if a <= b else -1
        return [chr(c) for c in range(a, b + step, step)][: MAX_WORDS + 1]
    a, b = int(match.group(1)), int(match.group(2))
    step = abs(int(match.group(3) or 1)) or 1
    step = step if a <= b else -step
    if abs(b - a) // abs(step) > MAX_WORDS:
        return [str(a)] * (MAX_WORDS + 1)  # too many: the caller reads the braces as '*'
    width = max(len(match.group(1)), len(match.group(2)))
    padded = match.group(1).lstrip("-").startswith("0") or match.group(2).lstrip("-").startswith(
        "0"
    )
    return [str(n).zfill(width) if padded else str(n) for n in range(a, b + step, step)]


def _starred(word: str) -> str:
    """Each top-level ``{…}`` as ``*``: every name the braces could give, and more."""
    out, i = [], 0
    while i < len(word):
        if word[i] == "{" and (i == 0 or word[i - 1] != "$"):
            end = _closing(word, i)
            if end > 0:
                out.append("*")
                i = end + 1
                continue
        out.append(word[i])
        i += 1
    return "".join(out)
