"""The flow from claim to main under load: a plan of packages worked by K agents at once.

    python bench/landing.py [--packages 40] [--agents 4 8] [--unit 0.4 1 2] [--seed 7]

A random DAG of packages with known work times (``unit`` seconds times 1-4), some creating
files in one new directory and some editing one shared file in sequence through their
dependencies. K scripted agents (separate OS processes) each loop: claim the best ready
item with a worktree (``POST /v1/claim-next``), make the worktree (``coord.landing.
worktrees.create``), sleep the package's work time, write its file, commit, submit; with
nothing ready, block on the event log's long poll (``GET /v1/events?wait=``) until the board
changes, as a waiting agent would (no polling interval of the bench's own in the figures).
One landing runner (``coord land --watch``'s loop, in its own process: woken by each submit,
merged worktrees removed on a thread of their own) lands what is queued. The clock starts
once every process has imported what it needs and ends at the last ``merged`` event.

Printed beside the reference of the same DAG and times: the makespan of the ideal list
schedule (K machines, a package ready when its dependencies are done, landing free and
instant), and the efficiency ideal / measured (target >= 0.9 with checks of 0 s); landings
per minute; and how long the runner spent landing (its ``land_one`` calls), which bounds the
makespan from below however many agents work: a landing is a few dozen git commands, so with
work of a second a package the runner, not the agents, sets the pace. Each ``unit`` is a run
of its own (a package's work is 1-4 units). Not a test: nothing is asserted about speed.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import random
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import CLEANUP, PYTHON, new_board_dir, start_daemon
from coord.cli.land_cmd import SWEEP_SECONDS, WATCH_SECONDS
from coord.fast import board_files

SHARED = "src/shared/registry.py"


def plan(count: int, seed: int) -> list[dict]:
    """Packages P1..Pn: each depends on up to two earlier ones; every fifth edits the
    shared registry after the previous fifth (a chain through dependencies)."""
    rng = random.Random(seed)
    packages: list[dict] = []
    last_shared: str | None = None
    for n in range(1, count + 1):
        key = f"P{n}"
        deps = sorted(
            {f"P{rng.randint(1, n - 1)}" for _ in range(rng.randint(0, 2))} if n > 1 else set()
        )
        path = f"src/new/p{n}.py"
        if n % 5 == 0:
            path = SHARED
            if last_shared is not None and last_shared not in deps:
                deps.append(last_shared)
            last_shared = key
        packages.append({"key": key, "deps": deps, "file": path, "weight": rng.randint(1, 4)})
    return packages


def ideal(packages: list[dict], agents: int, unit: float) -> tuple[float, float]:
    """The list schedule's makespan: K machines, ready when every dependency is done,
    the ready package of lowest number first (claim-next's order: all priorities equal);
    and its mean wait from ready to started (no machine free), to set beside the run's."""
    done_at: dict[str, float] = {}
    pending = list(packages)
    now = 0.0
    running: list[tuple[float, str]] = []
    waits: list[float] = []
    while pending or running:
        ready = [p for p in pending if all(d in done_at for d in p["deps"])]
        while ready and len(running) < agents:
            package = ready.pop(0)
            pending.remove(package)
            waits.append(now - max((done_at[d] for d in package["deps"]), default=0.0))
            heapq.heappush(running, (now + package["weight"] * unit, package["key"]))
        finish, key = heapq.heappop(running)
        now = finish
        done_at[key] = finish
    return now, sum(waits) / len(waits)


def _started(board_dir: Path, name: str) -> None:
    """Say this process is ready (its imports done), then wait for the start: the clock
    runs from the moment every process is ready, not from their spawn (starting Python on
    a loaded machine is no part of the flow from claim to main)."""
    (board_dir / f"ready-{name}").touch()
    while not (board_dir / "go").exists():
        time.sleep(0.01)


def agent(board_dir: Path, repo: Path, name: str, weights: dict[str, int], unit: float) -> None:
    """One scripted agent: claim with a worktree, work, commit, submit, until nothing is
    left to claim."""
    from coord.client.http import Client
    from coord.errors import NothingReady
    from coord.landing import worktrees

    client = Client(board_dir)
    root = repo / ".worktrees"
    _started(board_dir, name)
    while True:
        # the board's last event before asking: whatever changes after it wakes the wait
        seen = client.get("/v1/events?after=0&limit=1")["last_seq"]
        base = _git(repo, "rev-parse", "main")
        spec = {"base_commit": base, "path_root": str(root)}
        try:
            won = client.post("/v1/claim-next", {"agent": name, "worktree": spec})
        except NothingReady:
            if not client.get("/v1/items?state=pending&limit=1")["items"]:
                return  # nothing left to claim: the others finish what they hold
            # blocked until the board changes (a merge makes a dependent ready), as an agent
            # waiting on `GET /v1/events?wait=` is: no polling interval added to the figure
            client.get(f"/v1/events?after={seen}&limit=1&wait=30", timeout=60)
            continue
        item, token = won["item"], won["token"]
        made = worktrees.create(repo, item["branch"], base, item=item["id"], token=token, root=root)
        time.sleep(weights[item["key"]] * unit)
        path = Path(made.path) / item["files"][0]
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a") as out:
            out.write(f"{item['key']} = True\n")
        _git(made.path, "add", "-A")
        _git(made.path, "commit", "-qm", item["key"])
        head = _git(made.path, "rev-parse", "HEAD")
        body = {"agent": name, "token": token, "head": head}
        client.post(f"/v1/items/{item['id']}/submit", body)


def lander(board_dir: Path, repo: Path) -> None:
    """The landing runner, as `coord land --watch` runs it; each landing's time appended to
    ``busy.log`` in the board directory (the run is killed at the end: a line at a time)."""
    from coord.client.http import Client
    from coord.landing.runner import Runner

    del repo  # the board's own, with its settings
    runner = Runner.for_board(Client(board_dir), board_dir, "lander")
    land_one = runner.land_one
    busy = open(board_dir / "busy.log", "a", buffering=1)  # noqa: SIM115 (until killed)

    def timed(item: dict) -> object:
        began = time.perf_counter()
        try:
            return land_one(item)
        finally:
            busy.write(f"{time.perf_counter() - began:.6f}\n")

    runner.land_one = timed  # type: ignore[method-assign]
    clean = runner._clean

    def cleaned(item: dict) -> str:
        began = time.perf_counter()
        try:
            return clean(item)
        finally:
            busy.write(f"clean {time.perf_counter() - began:.6f}\n")

    runner._clean = cleaned  # type: ignore[method-assign]
    _started(board_dir, "lander")
    # as `coord land --watch` runs it: woken by the event log's long poll, merged items
    # tidied in the background
    runner.watch(WATCH_SECONDS, SWEEP_SECONDS, lambda landed: None)


def _git(cwd: Path, *args: str) -> str:
    identity = ["-c", "user.name=agent", "-c", "user.email=agent@example.com"]
    done = subprocess.run(
        ["git", *identity, *args], cwd=cwd, check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


def run(packages: list[dict], agents: int, unit: float) -> tuple[float, int, list[float], str]:
    board_dir = new_board_dir(f"landing-{agents}")
    repo = board_dir.parent
    # the runner measured is this bench's own process: the daemon lands nothing beside it
    config = board_files.read_config(board_dir)
    board_files.write_config(board_dir, {**config, "land_in_daemon": False})
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    (repo / ".git/info/exclude").write_text(".coord/\n")
    (repo / "src/shared").mkdir(parents=True)
    (repo / SHARED).write_text("# shared\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(
        ["git", "-c", "user.name=b", "-c", "user.email=b@example.com", "commit", "-qm", "base"],
        cwd=repo,
        check=True,
    )
    doc = ["# Plan", ""]
    for p in packages:
        deps = ", ".join(p["deps"]) or "none"
        doc += [f"- [ ] **{p['key']} — work.** Dependencies: {deps}.", f"  - Files: `{p['file']}`"]
    (repo / "docs").mkdir()
    (repo / "docs/plan.md").write_text("\n".join(doc) + "\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(
        ["git", "-c", "user.name=b", "-c", "user.email=b@example.com", "commit", "-qm", "plan"],
        cwd=repo,
        check=True,
    )
    daemon = start_daemon(board_dir)
    url, token = f"http://127.0.0.1:{daemon.port}", daemon.token
    env = {**os.environ, "COORD_DIR": str(board_dir)}
    subprocess.run(
        [PYTHON, "-m", "coord", "spec", "import", "docs/plan.md", "--as", "lead"],
        cwd=repo,
        env=env,
        check=True,
        capture_output=True,
    )
    weights = json.dumps({p["key"]: p["weight"] for p in packages})
    me = [PYTHON, __file__, "--as-process"]
    runner = subprocess.Popen([*me, "lander", str(board_dir), str(repo)], env=env)
    workers = [
        subprocess.Popen(
            [*me, "agent", str(board_dir), str(repo), f"agent-{k}", weights, str(unit)], env=env
        )
        for k in range(agents)
    ]
    while len(list(board_dir.glob("ready-*"))) < agents + 1:
        if any(p.poll() is not None for p in (*workers, runner)):
            break
        time.sleep(0.01)
    began = time.time()  # the board's clock: the events' times are read against it
    (board_dir / "go").touch()

    def merged() -> int:
        req = urllib.request.Request(f"{url}/v1/items?state=merged&limit=1000")
        req.add_header("Authorization", f"Bearer {token}")
        with urllib.request.urlopen(req, timeout=30) as answer:
            return len(json.loads(answer.read())["items"])

    while merged() < len(packages):
        if runner.poll() is not None:  # the runner died (it never ends of itself): say so
            print(f"   the landing runner exited with {runner.returncode}", file=sys.stderr)
            break
        if any(w.poll() not in (None, 0) for w in workers):  # an agent failed: its item waits
            print("   an agent failed: the run is cut short", file=sys.stderr)
            break
        time.sleep(0.1)
    for proc in (*workers, runner):
        proc.kill()
        proc.wait()
    count = merged()
    where, last_merged = _where_the_time_went(url, token, packages, unit)
    took = last_merged - began  # to the last merge, as the board recorded it
    daemon.stop()
    lines = (board_dir / "busy.log").read_text().splitlines()
    landings = [float(x) for x in lines if not x.startswith("clean")]
    cleans = [float(x.split()[1]) for x in lines if x.startswith("clean")]
    where += f"; removing merged worktrees {sum(cleans):.1f} s in all (in the background)"
    return took, count, landings, where


def _where_the_time_went(
    url: str, token: str, packages: list[dict], unit: float
) -> tuple[str, float]:
    """Mean seconds per package, from the board's events: ready (its last dependency
    merged) to claimed, claimed to submitted less its work, submitted to merged; and when
    the last one merged."""
    events: list[dict] = []
    after = 0
    while True:
        req = urllib.request.Request(f"{url}/v1/events?after={after}&limit=1000")
        req.add_header("Authorization", f"Bearer {token}")
        with urllib.request.urlopen(req, timeout=30) as answer:
            page = json.loads(answer.read())["events"]
        if not page:
            break
        events += page
        after = page[-1]["seq"]
    at: dict[tuple[str, int], float] = {}
    for e in events:
        if e["kind"] in ("claimed", "submitted", "merged") and e.get("item_id"):
            at.setdefault((e["kind"], e["item_id"]), _epoch(e["at"]))
    ids = {e["item_id"]: e for e in events if e["kind"] == "claimed" and e.get("item_id")}
    keys = {p["key"]: p for p in packages}
    item_of = _items_by_key(url, token)
    began = min(at[("claimed", i)] for i in ids) if ids else 0.0
    waits, overheads, landings = [], [], []
    for key, package in keys.items():
        item = item_of.get(key)
        if item is None or ("merged", item) not in at:
            continue
        deps = [at.get(("merged", item_of[d]), began) for d in package["deps"] if d in item_of]
        ready = max(deps, default=began)
        waits.append(at[("claimed", item)] - ready)
        overheads.append(at[("submitted", item)] - at[("claimed", item)] - package["weight"] * unit)
        landings.append(at[("merged", item)] - at[("submitted", item)])
    if not waits:
        return "no package merged", time.time()
    last = max(at[("merged", item_of[k])] for k in keys if ("merged", item_of.get(k)) in at)

    def mean(xs: list[float]) -> str:
        return f"{sum(xs) / len(xs) * 1000:.0f} ms"

    return (
        f"per package: ready to claimed {mean(waits)}, claimed to submitted beyond its work "
        f"{mean(overheads)} (worktree, commit, submit), submitted to merged {mean(landings)}"
    ), last


def _items_by_key(url: str, token: str) -> dict[str, int]:
    req = urllib.request.Request(f"{url}/v1/items?limit=1000")
    req.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(req, timeout=30) as answer:
        return {i["key"]: i["id"] for i in json.loads(answer.read())["items"] if i.get("key")}


def _epoch(text: str) -> float:
    from coord.times import epoch_of_iso

    return epoch_of_iso(text)


def main() -> int:
    if sys.argv[1:2] == ["--as-process"]:  # one of the run's own processes
        role, board_dir, repo, *rest = sys.argv[2:]
        if role == "agent":
            agent(Path(board_dir), Path(repo), rest[0], json.loads(rest[1]), float(rest[2]))
        else:
            lander(Path(board_dir), Path(repo))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--packages", type=int, default=40)
    parser.add_argument("--agents", type=int, nargs="+", default=[4, 8])
    parser.add_argument(
        "--unit", type=float, nargs="+", default=[0.4, 1.0, 2.0], help="seconds of work per weight"
    )
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    packages = plan(args.packages, args.seed)
    weight = sum(p["weight"] for p in packages)
    print(f"== landing: {len(packages)} packages, checks of 0 s, one landing runner")
    try:
        for unit in args.unit:
            print(f"-- {weight * unit:.1f} s of work in all ({unit:g} s a unit)")
            for agents in args.agents:
                reference, ideal_wait = ideal(packages, agents, unit)
                took, count, landings, where = run(packages, agents, unit)
                busy = sum(landings)
                each = busy / len(landings) * 1000 if landings else 0.0
                print(
                    f"   K={agents}: makespan {took:6.1f} s beside the ideal list schedule's "
                    f"{reference:6.1f} s: efficiency {reference / took:.2f} (target >= 0.90); "
                    f"{count} of {len(packages)} merged, {count / took * 60:.0f} landings a "
                    f"minute; the runner landed for {busy:.1f} s ({each:.0f} ms a landing, "
                    f"{len(landings)} landings tried)\n          {where}; the ideal's ready "
                    f"to started {ideal_wait * 1000:.0f} ms (no agent free)",
                    flush=True,
                )
    finally:
        CLEANUP.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
