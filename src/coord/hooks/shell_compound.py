"""The shell's keywords and compound commands, read through to the simple commands inside.

``if …; then …; elif …; else …; fi``, ``for/while/until …; do …; done``, ``case … in P) …;;
esac``, ``{ …; }``, ``( … )``, ``!``, ``coproc``, ``[[ … ]]`` and function definitions
(``f() { …; }``, ``function f { …; }``) all run simple commands: each is handed on with the
keywords before it taken off (``then cp x y`` is ``cp x y``), so that ``coord.hooks.shell``
judges it as if it stood alone. A function's body is judged where it is defined (it may be
called later in the same command). ``for NAME in WORDS`` is handed on as a ``Loop`` so that
``$NAME`` in the body stands for each word. A case pattern (``a|b)``) is no command. Subshell
parentheses are handed on as ``(`` and ``)`` (a ``cd`` inside one ends at its close); a
pipe as ``|`` (the next command reads what the one before writes).

Stdlib only: it runs before every shell command an agent runs.
"""

from __future__ import annotations

from coord.hooks import shell_syntax
from coord.hooks.shell_syntax import Simple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

# words that open or continue a compound command: what follows them is a command
_LEADING = frozenset({"if", "then", "elif", "else", "do", "while", "until", "!", "{"})
# words that close one: nothing follows them but redirections
_CLOSING = frozenset({"fi", "done", "esac", "}"})
_CASE_NEXT = frozenset({";;", ";&", ";;&"})


class Loop:
    """``for NAME in WORDS``: in the loop's body ``$NAME`` is each of ``words`` in turn."""

    __slots__ = ("name", "words")

    def __init__(self, name: str, words: list[str]) -> None:
        self.name = name
        self.words = words


def commands(text: str) -> Iterator[Simple | Loop | str]:
    """The simple commands of ``text`` with their keywords taken off, each ``Loop``, and the
    operators ``(``, ``)``, ``|`` and ``|&`` between them."""
    case_depth = 0
    in_pattern = False
    for item in shell_syntax.items(text):
        if isinstance(item, str):
            if in_pattern:
                in_pattern = item != ")"  # the pattern's own ')' ends it: no subshell
            elif case_depth and item in _CASE_NEXT:
                in_pattern = True
            elif item in ("(", ")", "|", "|&"):
                yield item
            continue
        if in_pattern:
            if item.words[:1] == ["esac"]:
                case_depth -= 1
                in_pattern = False
                item.words = item.words[1:]
                yield item  # esac > out: its redirections
            continue
        loop, opens_case = _strip(item)
        if opens_case:
            case_depth += 1
            in_pattern = True
            if "in" in item.words:  # the first pattern on the same line: skip it
                item.words = []
            continue
        if loop is not None:
            yield loop
            continue
        if item.words or item.writes or item.stdin is not None:
            yield item


def _strip(simple: Simple) -> tuple[Loop | None, bool]:
    """Take the keywords off ``simple``'s words; (its ``for`` loop, does it open a
    ``case``)."""
    words = simple.words
    while words:
        head = words[0]
        if head in _LEADING or head in _CLOSING:
            words = words[1:]
        elif head == "coproc":
            words = words[1:]
            if (len(words) >= 2 and words[1] in ("{", "(")) or len(words) == 1:
                words = words[1:]  # coproc NAME { …; }: the name is no command
        elif head == "function":
            words = words[2:]
        elif head in ("for", "select"):
            simple.words = []
            if len(words) >= 3 and words[2] == "in":
                return Loop(words[1], words[3:]), False
            return None, False  # for NAME; do (the positional parameters) or for ((…))
        elif head == "case":
            simple.words = words
            return None, True
        elif head == "[[":
            words = []  # a test writes nothing
        else:
            break
    simple.words = words
    return None, False
