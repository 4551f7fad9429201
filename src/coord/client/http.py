"""How the CLI reaches the daemon: find it from ``.coord/daemon.json``, start it if needed.

Every request carries the board's token, reads included, so the client first makes sure the
process at the recorded address is this board's daemon: a record left by a daemon that died
names a pid and a port that another program may hold by now. The daemon proves it knows the
token without the client sending it (``coord.fast.daemon_proof``), once per client and
address; a record that fails is treated as stale: the client starts a daemon of its own, or
says why it cannot.

The request itself is a few lines of HTTP/1.1 over a socket rather than ``http.client``:
that module drags in the email package and ssl, which cost more than a whole claim
(``python -X importtime``). The daemon is ours and always answers with a Content-Length and
``Connection: close`` when asked, so a tiny client is enough and stays correct. For the same
reason it opens the connection with ``_socket``, the C module under ``socket``: the Python
wrapper builds its enums at import (enum's functional API), ~2 ms of every ``coord next``.
"""

from __future__ import annotations

import json
import os
import sys
import time

try:
    import _socket as sockets  # what socket.create_connection needs, without the wrapper
except ImportError:  # an interpreter without it: the wrapper offers the same names
    import socket as sockets  # type: ignore[no-redef]

from coord.errors import CoordError, DaemonUnavailable, error_from_dict
from coord.fast import board_files, daemon_proof, processes

TYPE_CHECKING = False  # typing costs ~10 ms at import; the CLI path avoids it
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

START_TIMEOUT_SECONDS = 20.0
# The daemon answers /v1/identity without touching the board; a stranger that accepts the
# connection and never answers must not hold the command for the whole request timeout.
PROOF_TIMEOUT_SECONDS = 10.0
PROOF_MAX_BYTES = 64 * 1024
# 503 board_busy: another process holds the board's write lock, and nothing was applied, so
# the request is sent again after the daemon's Retry-After, up to this many times (and never
# past the request's own timeout), each wait at most MAX_BUSY_WAIT seconds.
BUSY_RETRIES = 5
MAX_BUSY_WAIT = 5.0


class Client:
    def __init__(
        self,
        board_dir: Path,
        *,
        autostart: bool = True,
        timeout: float = 30.0,
        on_busy: Callable[[str, float], None] | None = None,
        headers: tuple[str, ...] = (),
    ) -> None:
        self.board_dir = board_dir
        # sent with every request, as "Name: value" lines (the daemon's own landing runner
        # says who it is, so that its polling is not activity: coord.server.idle)
        self.headers = headers
        self.autostart = autostart
        self.timeout = timeout
        # told (the daemon's message, the seconds to wait) before the first retry of a busy
        # board: the CLI says so on stderr
        self.on_busy = on_busy
        self._address: tuple[str, int] | None = None
        self._token: str | None = None
        # records that failed the identity proof (pid, port, instance), and why
        self._rejected: set[tuple[object, object, object]] = set()
        self._refusal = ""
        # the recorded daemon runs but did not answer the proof in time: another daemon
        # could not take its lock, so none is started, and this is what is said
        self._unresponsive = ""

    def get(self, path: str, timeout: float | None = None) -> Any:
        return self.call("GET", path, timeout=timeout)

    def post(self, path: str, body: Any = None) -> Any:
        return self.call("POST", path, body)

    def call(self, method: str, path: str, body: Any = None, timeout: float | None = None) -> Any:
        """One request; raises the board's own error on a non-2xx answer. A board busy with
        another process's write (503 board_busy: nothing applied) is asked again after the
        daemon's Retry-After, a bounded number of times, before its error is raised."""
        timeout = timeout or self.timeout
        waited = 0.0
        for tries in range(1, BUSY_RETRIES + 2):
            status, payload, wait = self._send(method, path, body, timeout)
            busy = _board_busy(status, payload)
            if not busy or wait is None or tries > BUSY_RETRIES or waited + wait > timeout:
                break
            if tries == 1 and self.on_busy is not None:
                self.on_busy(str(payload.get("message", "the board is busy")), wait)
            time.sleep(wait)
            waited += wait
        if busy and tries > 1:
            payload = {
                **payload,
                "message": f"{payload.get('message')} (asked {tries} times over {waited:g} s)",
            }
        return answer(status, payload)

    def close(self) -> None:
        """Nothing to release: each request uses its own connection."""

    def _send(
        self, method: str, path: str, body: Any, timeout: float
    ) -> tuple[int, Any, float | None]:
        """(status, answer, the Retry-After it gave in seconds or None)."""
        data = b"" if body is None else json.dumps(body).encode()
        for attempt in (1, 2):
            host, port = self._daemon_address(fresh=attempt == 2)
            lines = [
                f"{method} {path} HTTP/1.1",
                _host_header(host, port),
                "Connection: close",
                f"Content-Length: {len(data)}",
            ]
            if body is not None:
                lines.append("Content-Type: application/json")
            lines.extend(self.headers)
            # every route but the open ones needs it; the address passed the identity proof
            lines.append(f"Authorization: Bearer {self._board_token()}")
            request = ("\r\n".join(lines) + "\r\n\r\n").encode() + data
            try:
                # bytes work at run time (getaddrinfo takes them); typeshed says str only
                sock = _connect(host, port, timeout)
            except OSError:
                # Nothing was sent: the daemon is gone (crash, restart). Find or start it.
                if attempt == 2:
                    raise DaemonUnavailable(
                        "cannot reach the coord daemon; see .coord/daemon.log"
                    ) from None
                continue
            # Once the request is out it is never sent twice: a claim might have been applied.
            try:
                try:
                    sock.sendall(request)
                    raw = _read_all(sock)
                finally:
                    sock.close()
            except OSError as err:
                raise DaemonUnavailable(
                    f"the coord daemon went away during {method} {path} ({err}); it may or may "
                    "not have been applied: check with `coord show` or `coord log`"
                ) from None
            return (*_parse_response(raw), _retry_after(raw))
        raise AssertionError("unreachable")

    def address(self, *, fresh: bool = False, start: bool = True) -> tuple[str, int]:
        """Where this board's daemon listens, proven (started on demand if ``start`` and the
        client may); ``fresh`` reads daemon.json again (the event stream, after its
        connection broke, finds the next daemon without starting one: ``start=False``)."""
        return self._daemon_address(fresh=fresh, start=start)

    def token(self) -> str:
        return self._board_token()

    def _board_token(self) -> str:
        """The board's own token, or a person's (``COORD_TOKEN_FILE``: a file only they may
        read; a token never goes on a command line, where `ps` shows it to everyone)."""
        if self._token is None:
            given = os.environ.get("COORD_TOKEN_FILE")
            self._token = (
                board_files.read_token_file(given)
                if given
                else board_files.read_token(self.board_dir)
            )
        return self._token

    def _daemon_address(self, *, fresh: bool = False, start: bool = True) -> tuple[str, int]:
        if self._address is None or fresh:
            record = self.daemon_record()
            if record is None or not self._proven(record):
                if self._unresponsive:
                    raise DaemonUnavailable(self._unresponsive)
                if not (self.autostart and start):
                    raise DaemonUnavailable(
                        self._refusal or "no coord daemon is running: start one with `coord serve`"
                    )
                record = self._start_daemon()
            self._address = (str(record["host"]), int(record["port"]))
        return self._address

    def _proven(self, record: dict[str, Any]) -> bool:
        """Whether the process at the record's address proves it is this board's daemon, the
        one that wrote the record. Nothing secret is sent: a nonce, and the answer checked."""
        key = (record.get("pid"), record.get("port"), record.get("instance"))
        if key in self._rejected:
            return False
        host, port, instance = str(record["host"]), int(record["port"]), record.get("instance")
        nonce = daemon_proof.new_nonce()
        proof_key, person = self._board_token(), ""
        if os.environ.get("COORD_TOKEN_FILE"):  # a person's token: proven by its hash
            person = f"&person={daemon_proof.person_ref(proof_key)}"
            proof_key = daemon_proof.person_key(proof_key)
        request = (
            f"GET /v1/identity?nonce={nonce}{person} HTTP/1.1\r\n{_host_header(host, port)}\r\n"
            "Connection: close\r\n\r\n"
        ).encode()
        try:
            sock = _connect(host, port, min(self.timeout, PROOF_TIMEOUT_SECONDS))
        except OSError:
            self._refusal = (
                f"no coord daemon answers at {record['url']}: start one with `coord serve`"
            )
            return False  # nothing listens: a daemon gone (crash, restart)
        try:
            try:
                sock.sendall(request)
                status, answer = _parse_response(_read_all(sock, PROOF_MAX_BYTES))
            finally:
                sock.close()
        except TimeoutError:
            status, answer = 0, None
            if board_files.daemon_lock_held(self.board_dir):
                # this board's daemon runs (it holds its lock for its whole life) and took the
                # connection, but said nothing: not a stale record, and another daemon could
                # not start beside it
                self._unresponsive = (
                    f"the coord daemon at {record['url']} (pid {record.get('pid')}) is running "
                    "but did not answer within "
                    f"{min(self.timeout, PROOF_TIMEOUT_SECONDS):g} s; see "
                    f"{self.board_dir / 'daemon.log'}; `coord stop` stops it, and the next "
                    "command starts a new one"
                )
                return False
        except (OSError, CoordError):  # a reset, no HTTP
            status, answer = 0, None
        if (
            status == 200
            and isinstance(instance, str)
            and daemon_proof.proves(answer, proof_key, nonce, instance, port)
        ):
            return True
        self._rejected.add(key)
        if person:
            self._refusal = (
                f"the daemon at {record['url']} did not prove it knows the token in "
                f"COORD_TOKEN_FILE={os.environ['COORD_TOKEN_FILE']}, so it was not sent: it "
                "was revoked (`coord token list` shows when), is another board's, or that "
                "process is not this board's daemon; ask the board's owner for a new one"
            )
            return False
        self._refusal = (
            f"the process listening at {record['url']} (pid {record.get('pid')} in "
            f"{board_files.daemon_record_path(self.board_dir)}) did not prove it is this "
            "board's coord daemon, so the board's token was not sent to it: the record is stale "
            "(the daemon is gone and another program holds its pid and port) or the daemon "
            "comes from an older coord; stop that daemon if it is one, or delete the record"
        )
        return False

    def daemon_url(self) -> str | None:
        record = self.daemon_record()
        return None if record is None else str(record["url"])

    def daemon_record(self) -> dict[str, Any] | None:
        """The running daemon's record, or None if there is none (stale records ignored)."""
        try:
            record = json.loads(board_files.daemon_record_path(self.board_dir).read_text("utf-8"))
            running = processes.alive(int(record["pid"]))
            str(record["host"]), int(record["port"]), str(record["url"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return record if running else None

    def _start_daemon(self) -> dict[str, Any]:
        import subprocess

        # A daemon would refuse a wrong setting into daemon.log; said here, by the command
        # that needs the daemon, it names the file, the setting and what it may be.
        config = board_files.read_config(self.board_dir)
        # a team board's daemon never idles out: asked to, it would say in daemon.log that it
        # ignores an --idle-exit nobody gave
        idle_exit = None if config.get("database") else config.get("idle_exit_seconds", 1800)

        log_fd = board_files.open_private(self.board_dir / "daemon.log", os.O_WRONLY | os.O_APPEND)
        log = os.fdopen(log_fd, "ab")
        log_start = os.fstat(log_fd).st_size  # what this daemon says starts here
        env = {**os.environ, "COORD_DIR": str(self.board_dir)}
        process = subprocess.Popen(
            [sys.executable, "-m", "coord", "serve", "--port", "0"]
            # started on demand, so it goes once unused (0: the board asks it never to)
            + (["--idle-exit", str(idle_exit)] if idle_exit else []),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env=env,
            cwd=self.board_dir.parent,
            start_new_session=True,  # outlive this command; no terminal signals
        )
        log.close()
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        exited_at: float | None = None
        while time.monotonic() < deadline:
            record = self.daemon_record()
            if record is not None and self._proven(record):
                return record
            # Ours may have lost the start race to another CLI's daemon (it exits at once):
            # give the winner a few seconds to write its record.
            if process.poll() is not None:
                exited_at = exited_at or time.monotonic()
                if time.monotonic() - exited_at > 5:
                    break
            time.sleep(0.02)
        said = _last_line(self.board_dir / "daemon.log", log_start) if exited_at else ""
        raise DaemonUnavailable(
            "could not start the coord daemon"
            + (f" ({said})" if said else "")
            + "; see "
            + str(self.board_dir / "daemon.log")
            + (f". Before that, {self._refusal}" if self._rejected else "")
        )


def _last_line(path: Path, start: int) -> str:
    """The last line a daemon that exited wrote to its log (from ``start``), e.g. that its
    board's database cannot be reached; empty when it said nothing."""
    try:
        with open(path, "rb") as log:
            log.seek(start)
            lines = log.read(65536).decode(errors="replace").strip().splitlines()
    except OSError:
        return ""
    last = lines[-1].strip() if lines else ""
    return last.removeprefix("coord: ")


def answer(status: int, payload: Any) -> Any:
    """The daemon's answer, or the board's own error raised (an error object on a non-2xx)."""
    if status >= 400:
        if isinstance(payload, dict) and "error" in payload:
            raise error_from_dict(payload)
        raise CoordError(f"the daemon answered {status}: {payload!r}")
    return payload


def _host_header(host: str, port: int) -> str:
    return f"Host: [{host}]:{port}" if ":" in host else f"Host: {host}:{port}"


def _connect(host: str, port: int, timeout: float) -> sockets.socket:
    """``socket.create_connection``: the first of the host's addresses that accepts."""
    found = sockets.getaddrinfo(_ascii(host), port, 0, sockets.SOCK_STREAM)
    failure: OSError = OSError(f"{host} has no address")
    for family, kind, proto, _, address in found:
        sock = sockets.socket(family, kind, proto)
        try:
            sock.settimeout(timeout)
            sock.connect(address)
            return sock
        except OSError as err:
            sock.close()
            failure = err
    raise failure


def _read_all(sock: sockets.socket, limit: int | None = None) -> bytes:
    """The whole answer, up to the peer closing; past ``limit`` bytes, what came so far."""
    chunks: list[bytes] = []
    size = 0
    while limit is None or size <= limit:
        chunk = sock.recv(65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _parse_response(raw: bytes) -> tuple[int, Any]:
    head, sep, body = raw.partition(b"\r\n\r\n")
    status_line = head.split(b"\r\n", 1)[0].split()
    if not sep or len(status_line) < 2 or not status_line[1].isdigit():
        raise DaemonUnavailable("the coord daemon sent a malformed answer; see .coord/daemon.log")
    headers = head.lower()
    if b"transfer-encoding: chunked" in headers:
        body = _dechunk(body)
    try:
        return int(status_line[1]), json.loads(body) if body else None
    except ValueError:
        return int(status_line[1]), body.decode(errors="replace")


def _board_busy(status: int, payload: Any) -> bool:
    """Another process holds the board's write lock: nothing was applied, ask again."""
    return status == 503 and isinstance(payload, dict) and payload.get("error") == "board_busy"


def _retry_after(raw: bytes) -> float | None:
    """The answer's Retry-After in seconds (bounded by MAX_BUSY_WAIT), or None."""
    head = raw.partition(b"\r\n\r\n")[0].lower()
    _, found, rest = head.partition(b"\r\nretry-after:")
    if not found:
        return None
    try:
        seconds = float(rest.split(b"\r\n", 1)[0].strip())
    except ValueError:
        return None  # an HTTP date: the daemon sends seconds
    return min(max(seconds, 0.0), MAX_BUSY_WAIT)


def _dechunk(body: bytes) -> bytes:
    out: list[bytes] = []
    rest = body
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out.append(rest[:size])
        rest = rest[size + 2 :]
    return b"".join(out)


def _ascii(host: str) -> str | bytes:
    # getaddrinfo encodes a str host with the idna codec, whose import costs ~1 ms of every
    # CLI call; the daemon's address is an IP or a plain host name, so bytes do.
    try:
        return host.encode("ascii")
    except UnicodeEncodeError:
        return host
