"""The spellings that escaped the shell guard (issue 22), each judged and then run.

Each case is judged by the shell guard as bob while alice holds ``src/a.py`` and ``lib/``,
then run with bash in a scratch repository: a command that must be refused must also be
one that really changes alice's files (else the case proves nothing), and a command that
must be allowed must leave them alone. The ``JUDGED_ONLY`` cases need a program this
machine may lack or another user, and are only judged.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from shell_cases import make_repo, run, verdict

REFUSED = [
    # globs (the regression of 0b1d0a3)
    "sed -i 's/A/B/' src/*.py",
    "rm src/a*",
    "truncate -s0 src/*.py",
    "echo x | tee src/?.py",
    "cd src && sed -i 's/A/B/' *.py",
    "rm -f src/[a]*.py",
    "echo x | tee docs/new?.md",
    "sed -i 's/g/G/' docs/*.md",
    # keywords and compound commands
    "if true; then cp src/b.py src/a.py; fi",
    "if false; then :; elif true; then rm src/a.py; fi",
    "if false; then :; else rm src/a.py; fi",
    "for f in 1; do rm src/a.py; done",
    'for f in src/a.py; do rm "$f"; done',
    "i=0; while [ $i -lt 1 ]; do rm src/a.py; i=1; done",
    "until true; do :; done; until rm src/a.py; do :; done",
    "case x in x) rm src/a.py;; esac",
    "case y in (x|y) rm src/a.py ;; *) : ;; esac",
    "{ rm src/a.py; }",
    "! rm src/a.py",
    "{ cd src; echo x > a.py; }",
    "(cd src; echo x > a.py)",
    "pushd src >/dev/null; rm a.py; popd",
    "coproc rm src/a.py; wait",
    "f() { rm src/a.py; }; f",
    "function f { rm src/a.py; }; f",
    "[[ -f src/a.py ]] && rm src/a.py",
    # spellings of where and how a command runs
    "env -C src rm a.py",
    "env --chdir=src rm a.py",
    "bash -o pipefail -c 'rm src/a.py'",
    "bash -eu -c 'rm src/a.py'",
    "bash --norc -c 'rm src/a.py'",
    "env -S 'rm src/a.py'",
    "bash <<< 'rm src/a.py'",
    "bash -s <<EOF\nrm src/a.py\nEOF",
    "echo 'rm src/a.py' | bash",
    "echo rm src/a.py | sh",
    "printf 'rm src/a.py\\n' | bash",
    "cat cmds.txt | bash",
    "bash < cmds.txt",
    "bash scripts/clean.sh",
    "./scripts/clean.sh",
    "source scripts/clean.sh",
    ". scripts/clean.sh",
    "eval 'rm src/a.py'",
    "x='rm src/a.py'; eval \"$x\"",
    "rm src/a.p{y,}",
    "rm src/{a,b}.py",
    "f=src/a.py; rm $f",
    "rm $(cat names.txt)",
    "rm `cat names.txt`",
    'echo "$(rm src/a.py)"',
    # clustered short flags
    "cp -rT src/b.py src/a.py",
    "perl -0pi -e 's/A/B/' src/a.py",
    "perl -lpi -e 's/A/B/' src/a.py",
    "sed -Ei 's/A/B/' src/a.py",
    "sed -ni '/X/p' src/a.py",
    # wrappers
    "setsid rm src/a.py",
    "flock /tmp/coord-test.lock rm src/a.py",
    "flock /tmp/coord-test.lock -c 'rm src/a.py'",
    "ionice -c3 rm src/a.py",
    "taskset 0x1 rm src/a.py",
    "chrt -o 0 rm src/a.py",
    "script -qc 'rm src/a.py' /dev/null",
    "su -c 'rm src/a.py' root",
    "runuser -u root -- rm src/a.py",
    "echo src/a.py | xargs rm",
    "cat names.txt | xargs rm",
    "xargs rm < names.txt",
    "strace -f -o /dev/null rm src/a.py",
    "timeout 5 nice -n 5 rm src/a.py",
    # writers
    "rsync lib/core.py src/a.py",
    "rsync -a --delete free/ lib/",
    "tar xzf a.tgz",
    "tar -xzf a.tgz -C .",
    "unzip -o a.zip",
    "curl -s -o src/a.py file:///etc/hostname",
    "curl -so src/a.py file:///etc/hostname",
    "sort -r -o src/a.py src/a.py src/b.py",
    "gzip lib/core.py",
    "gzip -k lib/core.py && rm lib/core.py",
    "gunzip -f src/a.py.gz",
    "bzip2 src/a.py",
    "xz src/a.py",
    "awk -i inplace '{print \"x\"}' src/a.py",
    "awk '{print > \"src/a.py\"}' src/b.py",
    "ex -sc '%s/A/B/|x' src/a.py",
    "vim -es -c '%s/A/B/' -c 'wq' src/a.py",
    "ed -s src/a.py <<< $'1d\\nw\\nq'",
    "chmod 600 src/a.py",
    "chmod -R 700 lib",
    "patch -p1 < fix.patch",
    "patch -p1 -i fix.patch",
    "find src -name a.py -delete",
    "find . -name '*.py' -exec sed -i 's/A/B/' {} +",
    "find lib -type f -exec rm {} \\;",
    "split -l 1 src/b.py lib/part.",
    "install -m 644 src/b.py src/a.py",
    "python3 -c \"open('src/a.py', 'w').write('x')\"",
    "python3 -c \"import os; os.remove(os.path.join('src', 'a.py'))\"",
    "python3 scripts/gen.py",
    "python3 - <<EOF\nopen('src/a.py', 'w').write('x')\nEOF",
    "node -e \"require('fs').writeFileSync('src/a.py', 'x')\"",
    "perl -e 'unlink \"src/a.py\"'",
    "make -f /dev/stdin <<< $'all:\\n\\trm -f src/a.py'",
    "cd lib && cat > core.py <<< x",
    "make clean",
    "make hello OUT=src && make -s clean",
    "make -f Makefile hello OUT=lib",
    "npm run wipe --silent",
    "mkdir lib/new",
    "mktemp -p lib",
    "trap 'rm src/a.py' EXIT",
    "$(echo rm) src/a.py",
    "\"${SHELL:-bash}\" -c 'rm src/a.py'",
    "node -e \"require('fs').rmSync('lib', {recursive: true})\"",
    "chmod -w src/a.py",
    "find . -name a.py | xargs rm",
    "touch free/x free/y && echo x > free/link.py",  # the link, beside files placed before
    "cp src/b.py free/z && cat src/b.py > free/link.py",
    "source <(echo rm src/a.py)",
    "bash <(echo rm src/a.py)",
    "xargs -I{} rm {} <<< src/a.py",
    "xargs -a names.txt rm",
]

# refused, and only judged: they need a program this machine may lack (ruby), or another
# user (su to someone else)
JUDGED_ONLY = [
    "ruby -i -pe 'sub(/A/, \"B\")' src/a.py",
    "ruby -pi.bak -e 'x' src/a.py",
    'ruby -e \'File.write("src/a.py", "x")\'',
    "su nobody -s /bin/sh -c 'rm src/a.py'",
    "sudo -u nobody rm -f lib/core.py",
]

ALLOWED = [
    "ls src lib",
    "cat src/a.py lib/core.py",
    "grep -rn A src lib",
    "head -1 src/a.py && tail -1 lib/core.py && wc -l src/*.py",
    "git status && git diff && git log --oneline -1",
    "echo hello",
    "pytest --version",
    "python3 -m pytest --version",
    "make test -n -f /dev/null 2>/dev/null; true",
    "sed -i 's/B/C/' src/b.py",
    "sed 's/A/B/' src/a.py > free/out.py",
    'for f in src/b.py free/notes.txt; do cp "$f" free/; done',
    "if true; then cp src/a.py free/copy.py; fi",
    "{ cd free; echo x > a.py; }",
    "(cd src; echo x > b.py)",
    "(cd src); echo x > a.py.new",
    "env -C free touch x.txt",
    "bash -c 'echo x > free/x'",
    "echo 'echo hi' | bash",
    "bash scripts/hello.sh",
    "./scripts/hello.sh",
    "rm src/b.p{y,}",
    "echo x | tee docs/new?.txt",
    "tar czf free/backup.tgz src",
    "gzip -c src/a.py > free/a.py.gz",
    "sort src/a.py -o free/sorted.txt",
    "curl -s -o free/page file:///etc/hostname",
    "python3 -c 'print(1)'",
    "python3 -c \"import json,sys; print(json.dumps({'a': 1}))\"",
    "find src -name '*.py' -print",
    "find free -name '*.txt' -delete",
    "chmod 644 src/b.py",
    "echo src/b.py | xargs rm",
    "foo=free/x; echo hi > $foo",
    "unzip -l a.zip",
    "cd src && ls && cd .. && rm -f free/notes.txt",
    "rm -f src/b.py # rm src/a.py",
    "echo 'rm src/a.py' > free/note.txt",
    "awk '{print $1}' src/a.py",
    "diff src/a.py src/b.py; true",
    "make hello",
    "npm run hi --silent",
    "mkdir -p free/new/dir",
    'echo x > "$TMPDIR/coord-x.txt"',
    "python3 -c \"print(open('src/a.py').read())\"",
    "perl -ne 'print if /A/' src/a.py",
    "printf '%s\\n' ',p' q | ed -s src/a.py",
    "find free -name '*.txt' | xargs cat",
    "ruff check --no-cache src lib 2>/dev/null; true",
    "cp src/*.py free/",
    "sed -i 's/A/B/' free/link.py",  # sed -i replaces the link, the held file stays
]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("template") / "repo"
    make_repo(root)
    return root


@pytest.fixture
def repo(template: Path, tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(template, root, symlinks=True)
    return root


@pytest.mark.parametrize("command", REFUSED)
def test_a_command_that_changes_a_held_file_is_refused(repo: Path, command: str) -> None:
    reason = verdict(repo / ".coord", command)
    assert reason is not None and "alice" in reason, command
    assert "\n" not in reason or all(line.startswith("coord: ") for line in reason.splitlines())
    assert run(repo, command), f"the case proves nothing: {command!r} left alice's files alone"


@pytest.mark.parametrize("command", JUDGED_ONLY)
def test_a_command_that_would_change_a_held_file_is_refused_judged_only(
    repo: Path, command: str
) -> None:
    reason = verdict(repo / ".coord", command)
    assert reason is not None and "alice" in reason, command


@pytest.mark.parametrize("command", ALLOWED)
def test_a_command_that_leaves_held_files_alone_is_allowed(repo: Path, command: str) -> None:
    assert verdict(repo / ".coord", command) is None, command
    assert not run(repo, command), f"{command!r} changed alice's files"
