"""How a program's options are read: short letters clustered (``cp -rT``), a value attached
(``-oFILE``, ``--output=FILE``) or the next word, and the operands that remain.

Stdlib only: it runs before every shell command an agent runs.
"""

from __future__ import annotations


def letters(args: list[str]) -> str:
    """The letters of every short-option cluster (``-rT`` gives ``rT``), up to ``--``."""
    out = []
    for arg in args:
        if arg == "--":
            break
        if arg.startswith("-") and not arg.startswith("--") and len(arg) > 1:
            out.append(arg[1:])
    return "".join(out)


def operands(args: list[str], takes: frozenset[str]) -> list[str]:
    """The arguments that are not options (nor an option's value); all of them after --."""
    found: list[str] = []
    rest = iter(args)
    for arg in rest:
        if arg == "--":
            found += list(rest)
        elif arg in takes:
            next(rest, None)
        elif not arg.startswith("-") or arg == "-":
            found.append(arg)
    return [a for a in found if a != "-"]


def option_values(args: list[str], names: tuple[str, ...]) -> list[str]:
    """Values of these options, given as ``-t DIR``, ``-tDIR`` or ``--target-directory=DIR``
    (a short one also at the end of a cluster: ``-sSLo FILE``)."""
    found: list[str] = []
    for i, arg in enumerate(args):
        if arg == "--":
            break
        for name in names:
            if arg == name and i + 1 < len(args):
                found.append(args[i + 1])
            elif name.startswith("--"):
                if arg.startswith(name + "="):
                    found.append(arg[len(name) + 1 :])
            elif arg.startswith("-") and not arg.startswith("--") and name[1] in arg[1:]:
                at = arg.index(name[1], 1)
                if at + 1 < len(arg):
                    if at == 1:
                        found.append(arg[2:])
                elif i + 1 < len(args):
                    found.append(args[i + 1])
    return found
