"""How the repository's file system compares file names: the one key every comparison of
repository paths goes through.

On macOS (APFS, HFS+) and Windows (NTFS) ``SRC/A.py`` and ``src/a.py`` are one file, and on
macOS so are the composed (NFC) and decomposed (NFD) spellings of ``café.py``. A hold on one
spelling must meet the other, or two agents get an exclusive hold and a guard yes on one file.

- Unicode: every comparison is of the NFC form, on every file system. A name typed by an
  agent and a name read from disk may be in different forms for one intended file (macOS
  hands out NFD, editors and models type NFC); on Linux two files whose names differ only in
  form can exist, and treating them as one refuses an edit that was safe, never lets a held
  one through.
- Case: folded only where the board's file system folds it. ``probe`` finds out once per
  board (``coord init`` and daemon start) and ``record`` keeps the answer in
  ``.coord/fs.json``; the guard and the daemon read it there and never probe on the way. With
  no readable record the fold is applied: a needless refusal costs a question, a missed one
  costs the file.
- The case fold is per character and keeps a name's length (simple case folding, as NTFS's
  upcase table and APFS compare), so a glob's ``?`` still stands for one character.

Keys are for comparing only: the user's spelling is what the board stores and shows.

Stdlib only (``unicodedata`` only for a name that is not ASCII): the guard reads the record
before every edit.
"""

from __future__ import annotations

import os
from functools import lru_cache

from coord.fast import jsontext

TYPE_CHECKING = False  # typing costs ~10 ms at import; the guard runs before every edit
if TYPE_CHECKING:
    from collections.abc import Callable

    Fold = Callable[[str], str]

FS_FILENAME = "fs.json"
# what a probe answers, each a bool
ANSWER_KEYS = ("case_insensitive", "unicode_normalising")


def nfc(text: str) -> str:
    """``text`` in Unicode NFC: the key on a file system that keeps case apart."""
    if text.isascii():
        return text
    import unicodedata

    return unicodedata.normalize("NFC", text)


def caseless(text: str) -> str:
    """``text`` in NFC with its case folded: the key on a case-insensitive file system, and
    the widest key, which the prefix searches (``coord.fast.holds``) index by."""
    if text.isascii():
        return text.lower()
    import unicodedata

    decomposed = unicodedata.normalize("NFD", text)
    return unicodedata.normalize("NFC", "".join(map(_fold_char, decomposed)))


@lru_cache(maxsize=4096)
def _fold_char(char: str) -> str:
    """One character's case fold, keeping it one character: through its upper case, so
    that what NTFS uppercases to one letter (``ı`` and ``i`` to ``I``) is one key; a
    character whose other case is longer (``ß``, ``İ``) stays as it is."""
    upper = char.upper()
    if len(upper) == 1:
        char = upper
    lower = char.lower()
    return lower if len(lower) == 1 else char


def fold_for(case_insensitive: bool) -> Fold:
    return caseless if case_insensitive else nfc


def recorded(board_dir: str | os.PathLike[str]) -> dict[str, bool] | None:
    """The probe's answer kept for this board, or None when there is none to trust."""
    try:
        with open(os.path.join(board_dir, FS_FILENAME), "rb") as kept:
            answer = jsontext.loads(kept.read())
    except (OSError, ValueError):
        return None
    if not isinstance(answer, dict) or not all(
        isinstance(answer.get(key), bool) for key in ANSWER_KEYS
    ):
        return None
    return {key: answer[key] for key in ANSWER_KEYS}


def board_fold(board_dir: str | os.PathLike[str]) -> Fold:
    """The key for paths of this board's repository, from its recorded answer (case folded
    when there is none)."""
    answer = recorded(board_dir)
    return fold_for(answer is None or answer["case_insensitive"])


def probe(directory: str | os.PathLike[str]) -> dict[str, bool] | None:
    """Does this directory's file system fold case, and Unicode forms? Found by creating a
    file with a mixed-case NFD name and looking it up by its other spellings. None when no
    file can be created there (then nothing is recorded)."""
    import secrets

    # 'e' + U+0301 (combining acute) is the NFD of 'é'
    name = f".fsprobe-{os.getpid()}-{secrets.token_hex(4)}-Case-e\u0301"
    path = os.path.join(directory, name)
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError:
        return None
    try:
        return {
            "case_insensitive": _same_file(path, os.path.join(directory, name.swapcase())),
            "unicode_normalising": _same_file(path, os.path.join(directory, nfc(name))),
        }
    finally:
        os.unlink(path)


def _same_file(path: str, other: str) -> bool:
    try:
        return os.path.samefile(path, other)
    except OSError:
        return False


def record(
    board_dir: str | os.PathLike[str], answer: dict[str, bool] | None = None
) -> dict[str, bool] | None:
    """Probe the board's file system (in the board directory, inside the repository) and
    keep the answer in ``fs.json``; ``answer`` records a given one instead (tests). Returns
    what was recorded, None when the probe could not run (an older record stays)."""
    from pathlib import Path

    from coord.fast import files

    found = probe(board_dir) if answer is None else answer
    if found is not None:
        import json  # indented: only jsontext's compact form skips the package

        body = json.dumps({key: bool(found[key]) for key in ANSWER_KEYS}, indent=2) + "\n"
        files.write_atomic(Path(board_dir, FS_FILENAME), body.encode(), mode=0o600)
    return found
