"""A Makefile read as far as the shell guard needs: the recipe lines ``make GOALS`` would run.

``make build`` runs the recipes of ``build`` and of the prerequisites the Makefile has rules
for, each line in its own shell; this finds those lines, with ``$(VAR)``, ``$@``, ``$<`` and
``$^`` filled in and ``$$`` as ``$``, so that ``coord.hooks.shell`` judges them like any
command. A Makefile it cannot follow (``include``, conditionals, ``define``, ``$(shell …)``
or ``!=``, a goal only a pattern rule makes, a goal it has no rule for) gives None: the
guard then treats ``make`` as code it does not read. A ``$(…)`` it cannot fill in stays a
``$``: the guard cannot know that word.

Stdlib only: it runs before every shell command an agent runs.
"""

from __future__ import annotations

import re

_ASSIGN = re.compile(
    r"^\s*(?:override\s+|export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*(::?=|\?=|\+=|!=|=)\s*(.*)$"
)
_RULE = re.compile(r"^([^:=#\t][^:=#]*?)\s*(::?)(?!=)\s*(.*)$")
_DIRECTIVES = (
    "include",
    "-include",
    "sinclude",
    "ifeq",
    "ifneq",
    "ifdef",
    "ifndef",
    "define",
    "vpath",
)
_REFERENCE = re.compile(r"\$\(([^()$]*)\)|\$\{([^{}$]*)\}|\$([@<^*?$])")
MAX_RECIPES = 200


def recipes(text: str, goals: list[str], overrides: dict[str, str]) -> list[str] | None:
    """The recipe lines ``make GOALS`` would run, in order (each for its own shell), or
    None when the Makefile cannot be followed."""
    rules: dict[str, tuple[list[str], list[str]]] = {}
    variables: dict[str, str] = {}
    first = ""
    current: list[str] = []
    for line in text.replace("\\\n", " ").splitlines():
        if line.startswith("\t"):
            for target in current:
                rules[target][1].append(line[1:])
            continue
        line = line.split("#", 1)[0].rstrip()
        if not line.strip():
            continue
        if line.split()[0] in _DIRECTIVES or "$(shell" in line:
            return None
        assignment = _ASSIGN.match(line)
        if assignment:
            name, op, value = assignment.groups()
            if op == "!=":
                return None
            if op == "+=":
                value = (variables.get(name, "") + " " + value).strip()
            if op != "?=" or name not in variables:
                variables[name] = value
            current = []
            continue
        rule = _RULE.match(line)
        if rule is None:
            return None
        targets, _, rest = rule.groups()
        prerequisites, _, inline = rest.partition(";")
        current = targets.split()
        for target in current:
            entry = rules.setdefault(target, ([], []))
            entry[0].extend(prerequisites.split())
            if inline.strip():
                entry[1].append(inline.strip())
            if not first and not target.startswith(".") and "%" not in target:
                first = target
    variables.update(overrides)
    out: list[str] = []
    done: set[str] = set()

    def walk(goal: str, depth: int) -> bool:
        if goal in done:
            return True
        done.add(goal)
        if goal not in rules:
            return depth > 0  # a prerequisite with no rule is a file; a goal with none: no
        prerequisites, lines = rules[goal]
        for prerequisite in prerequisites:
            if not walk(_expand(prerequisite, variables, goal, prerequisites), depth + 1):
                return False
        out.extend(_expand(x.lstrip("@-+ \t"), variables, goal, prerequisites) for x in lines)
        return len(out) <= MAX_RECIPES

    for goal in goals or [first]:
        if not goal or not walk(goal, 0):
            return None
    return out


def _expand(text: str, variables: dict[str, str], target: str, prerequisites: list[str]) -> str:
    automatic = {
        "@": target,
        "<": prerequisites[0] if prerequisites else "",
        "^": " ".join(prerequisites),
        "?": " ".join(prerequisites),
        "*": target.rsplit(".", 1)[0],
        "$": "\0dollar",
    }

    def one(match: re.Match[str], depth: int) -> str:
        name = match.group(1) or match.group(2)
        if name is None:
            return automatic.get(match.group(3), "$")
        if name in variables and depth < 8:
            return _REFERENCE.sub(lambda m: one(m, depth + 1), variables[name])
        if name in automatic:
            return automatic[name]
        return "$" if " " in name or name not in variables else ""  # a function: unknown

    return _REFERENCE.sub(lambda m: one(m, 0), text).replace("\0dollar", "$")
