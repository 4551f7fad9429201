// coord's live board. Vanilla JavaScript, no build step, nothing fetched from elsewhere.
//
// Data reaches the DOM through textContent and attributes only, never innerHTML: titles,
// questions and names are whatever agents wrote. Time is the board's: the page was served
// with the server's clock, and every countdown is that plus the time since, never the
// browser's own clock. Each column holds one page of rows (PAGE); the rest is paged.
//
// The page's session goes only to its own daemon (coord.server.web.access says why): in a
// header (X-Coord-Session), never a cookie, and only once the daemon at this address has
// proved it made the session (/v1/web/proof, checked with proof.js), before the first
// request and again after every disconnect. A stranger on the port, or the board's next
// daemon, fails the proof; the page then stops and says to run `coord open`.
"use strict";

(() => {
  const boot = JSON.parse(document.getElementById("boot").textContent);
  const SESSION_KEY = "coord-session"; // in sessionStorage: this tab, this origin (port) only
  if (boot.session) {
    sessionStorage.setItem(SESSION_KEY, boot.session);
    history.replaceState(null, "", "/"); // the spent code leaves the address bar
  }
  const session = sessionStorage.getItem(SESSION_KEY);
  let clockOffset = 0; // the board's clock less the browser's, from /v1/web/session
  const boardNow = () => Date.now() + clockOffset;
  const PAGE = 200; // rows a column holds in the DOM
  const DONE_SHOWN = 50;
  const FEED_SHOWN = 300;
  let lastSeq = 0; // the last event applied: the stream resumes after it

  // --- small helpers ----------------------------------------------------------------------

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null) continue;
      if (key === "className") node.className = value;
      else if (key === "text") node.textContent = String(value);
      else if (key.startsWith("data-")) node.setAttribute(key, String(value));
      else node[key] = value;
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }

  // what work.js (a person's changes: add, edit, cancel, reopen, reply) uses of the page;
  // it fills in openItem and onEvent
  const shared = (globalThis.coordPage = { openItem: null, onEvent: null });
  const openItem = (id) => (shared.openItem ? shared.openItem(id) : null);

  // --- the daemon: proved, then trusted with the session -----------------------------------

  let proven = false; // the daemon at this address proved it made this page's session
  let stopped = false; // signed out, or a stranger answered: nothing more is sent
  let retry = null;
  let streamAbort = null;

  function quiet(message) {
    const error = new Error(message);
    error.quiet = true; // the page says it in the header; not an error of the page's
    return error;
  }

  // a read, or a change (POST unless method says PATCH): the same endpoints the CLI calls
  async function api(path, body, method) {
    if (!proven) throw quiet(`not sent (no proven daemon): ${path}`);
    const init = {
      credentials: "omit", // no cookie: whatever the browser holds for this host stays home
      cache: "no-store",
      headers: { accept: "application/json", "x-coord-session": session },
    };
    if (body !== undefined) {
      init.method = method || "POST";
      init.headers["content-type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(path, init);
    } catch (error) {
      lost(); // nobody answers: prove whoever answers next before sending it anything
      throw quiet(`the daemon went away: ${error.message}`);
    }
    const data = await response.json().catch(() => ({}));
    if (response.status === 401) signedOut(data.message);
    if (!response.ok) {
      const error = new Error(data.message || `HTTP ${response.status}`);
      error.status = response.status;
      throw error;
    }
    return data;
  }

  function ms(iso) {
    return iso ? Date.parse(iso) : null;
  }

  // a length of time spelled as coord.times.duration_text spells it (the CLI and watch):
  // 45s, 4m03s, 2h05m, 6d23h (times.js; tests/test_web_times.py holds the two together)
  const span = globalThis.coordTimes.durationText;

  function freshness(ageSeconds) {
    return ageSeconds < 60 ? "fresh" : ageSeconds < 300 ? "stale" : "old";
  }

  // the session opens nothing any more (it ended, or this is not its daemon): stop, forget
  // it, and say what to do
  function signedOut(message) {
    stopped = true;
    proven = false;
    if (streamAbort) streamAbort.abort();
    sessionStorage.removeItem(SESSION_KEY);
    const link = document.getElementById("link");
    link.dataset.state = "lost";
    link.textContent = message || "signed out: run `coord open` again";
    const note = document.getElementById("signed-out"); // said where it cannot be missed
    note.querySelector(".why").textContent = link.textContent;
    note.hidden = false;
  }

  // does the daemon at this address hold the key that made this session? Asked with no
  // credentials: a stranger learns the session's public part and a nonce, nothing else
  async function prove() {
    const nonce = coordProof.newNonce();
    const open = encodeURIComponent(session.slice(0, session.indexOf(".")));
    const response = await fetch(`/v1/web/proof?session=${open}&nonce=${nonce}`, {
      credentials: "omit",
      cache: "no-store",
      headers: { accept: "application/json" },
    });
    const data = await response.json().catch(() => ({}));
    return response.ok && data.proof === coordProof.expectedProof(session, nonce);
  }

  function lost() {
    proven = false;
    if (streamAbort) {
      streamAbort.abort();
      streamAbort = null;
    }
    if (stopped || retry) return;
    setLink("lost", "reconnecting…");
    retry = setTimeout(connect, 1000);
  }

  // the first connection and every one after a disconnect: proof first, then the reads
  let begun = false;
  let connecting = false; // one attempt at a time: a second would open a second stream
  async function connect() {
    retry = null;
    if (stopped || connecting) return;
    connecting = true;
    try {
      await connectOnce();
    } finally {
      connecting = false;
    }
  }

  async function connectOnce() {
    setLink("connecting", "connecting…");
    let proved;
    try {
      proved = await prove();
    } catch (error) {
      lost(); // nobody listens there (yet): the daemon may be starting
      return;
    }
    if (!proved) {
      signedOut(
        "the daemon at this address is not the one this page signed in to (it was restarted, " +
          "or another program took its port): nothing was sent to it; run `coord open` for a new link",
      );
      return;
    }
    proven = true;
    try {
      if (!begun) await begin();
      // back after a disconnect: reads that failed meanwhile are read again
      else queue = queue.then(reloadAll).catch(report);
      begun = true;
    } catch (error) {
      if (!error.quiet) report(error);
      if (!stopped) lost();
      return;
    }
    if (streamAbort) streamAbort.abort();
    follow();
  }

  function setLink(state, text) {
    const link = document.getElementById("link");
    link.dataset.state = state;
    link.textContent = text;
  }

  // --- the columns ------------------------------------------------------------------------

  // where an item belongs, by the board's state and the page's clock: a claim whose lease
  // has run out is claimable again, with no event to say so
  function columnOf(item) {
    if (item.state === "pending") return "ready";
    if (item.state === "claimed") {
      const end = ms(item.lease_expires_at);
      return end !== null && end <= boardNow() ? "ready" : "claimed";
    }
    if (item.state === "needs_human") return "needs";
    if (item.state === "done") return "done";
    return null;
  }

  const columns = {};
  for (const [key, state] of [
    ["ready", "pending"],
    ["claimed", "claimed"],
    ["needs", "needs_human"],
  ]) {
    columns[key] = { key, state, items: new Map(), after: 0, next: null, back: [], beyond: 0 };
  }
  // Done shows the recently done (from the log) until asked for every done item, by id
  columns.done = { key: "done", state: "done", items: new Map(), recent: true, after: 0, next: null, back: [], beyond: 0 };
  const agents = new Map();
  const drafts = new Map(); // item id -> an answer being written
  const keys = new Map(); // item id -> its key (a package's id): P3 reads better than #3
  const named = (id) => keys.get(id) || `#${id}`;

  async function loadPage(column, after) {
    const found = await api(`/v1/items?state=${column.state}&limit=${PAGE}&after=${after}`);
    // claims whose lease ran out stay in Ready: the board still calls them claimed
    const lapsed = [...column.items.values()].filter(
      (item) => item.state !== column.state && columnOf(item) === column.key,
    );
    column.items = new Map(found.items.map((item) => [item.id, item]));
    for (const item of lapsed) if (covers(column, item.id)) column.items.set(item.id, item);
    for (const item of found.items) if (item.key) keys.set(item.id, item.key);
    column.after = after;
    column.next = found.next;
    column.beyond = 0;
    render(column);
  }

  // is item id on the column's current page? (ids ascend; the last page is open-ended)
  function covers(column, id) {
    if (column.recent) return true;
    if (id <= column.after) return false;
    if (column.next === null) return true;
    return id <= column.next;
  }

  function place(item) {
    for (const column of Object.values(columns)) {
      if (column.items.delete(item.id)) render(column);
    }
    const key = columnOf(item);
    if (key === null) return;
    const column = columns[key];
    if (covers(column, item.id)) {
      column.items.set(item.id, item);
      if (column.recent && column.items.size > DONE_SHOWN) {
        const oldest = [...column.items.values()].sort(byClosed).pop();
        column.items.delete(oldest.id);
      }
    } else {
      column.beyond += 1;
    }
    render(column);
  }

  function byClosed(a, b) {
    return (ms(b.closed_at) || 0) - (ms(a.closed_at) || 0);
  }

  // the search box: every word of it somewhere in the card's words (id, key, title, people,
  // labels, kind, state); an empty search shows everything
  let searchWords = [];
  function matches(item) {
    if (!searchWords.length) return true;
    const words = [
      `#${item.id}`, item.key, item.title, item.claimed_by, item.created_by, item.to,
      item.kind, item.state, ...(item.labels || []),
    ].filter(Boolean).join(" ").toLowerCase();
    return searchWords.every((word) => words.includes(word));
  }

  function ordered(column) {
    const items = [...column.items.values()].filter(matches);
    if (column.key === "done") return items.sort(byClosed);
    if (column.key === "claimed") {
      return items.sort((a, b) => ms(a.lease_expires_at) - ms(b.lease_expires_at));
    }
    if (column.key === "ready") {
      const lit = (item) => (item.state === "claimed" || item.ready ? 0 : 1);
      return items.sort((a, b) => lit(a) - lit(b) || a.priority - b.priority || a.id - b.id);
    }
    return items.sort((a, b) => a.id - b.id);
  }

  function render(column) {
    const root = document.getElementById(`col-${column.key}`);
    const rows = root.querySelector(".rows");
    const nodes = ordered(column).map((item) => card(column.key, item));
    const composing = rows.querySelector("textarea:focus");
    if (composing) return; // never wipe an answer being written; the next change redraws
    rows.replaceChildren(...nodes);
    paint(rows);
    pager(column, root.querySelector(".pager"));
  }

  function pager(column, nav) {
    const parts = [];
    if (column.recent) {
      nav.replaceChildren(el("button", { text: "every done item »", onclick: () => everyDone(true) }));
      return;
    }
    if (column.key === "done") parts.push(el("button", { text: "« recent", onclick: () => everyDone(false) }));
    if (column.back.length) {
      parts.push(el("button", { text: "« previous", onclick: () => page(column, -1) }));
    }
    if (column.beyond) parts.push(el("span", { className: "meta", text: `${column.beyond} changed on other pages` }));
    if (column.next !== null) {
      parts.push(el("button", { text: "next »", onclick: () => page(column, 1) }));
    }
    nav.replaceChildren(...parts);
  }

  function everyDone(every) {
    const column = columns.done;
    column.recent = !every;
    column.back = [];
    (every ? loadPage(column, 0) : loadRecentDone()).catch(report);
  }

  function page(column, direction) {
    if (direction > 0) {
      column.back.push(column.after);
      loadPage(column, column.next).catch(report);
    } else {
      loadPage(column, column.back.pop() || 0).catch(report);
    }
  }

  function card(key, item) {
    if (item.key) keys.set(item.id, item.key);
    const node = el("li", { className: "card", "data-id": item.id, "data-state": item.state });
    const title = el(
      "div",
      { className: "title" },
      el("span", { className: "tag", text: item.key || `#${item.id}` }),
      opener(item),
    );
    node.append(title);
    if (key === "ready") readyMeta(node, item);
    else if (key === "claimed") claimedMeta(node, item);
    else if (key === "needs") needsMeta(node, item);
    else if (key === "done") doneMeta(node, item);
    return node;
  }

  // the card's title opens the item (to edit, reply, cancel); not a <button>, so the card's
  // own buttons (an answer's Send) stay its first
  function opener(item) {
    const open = () => openItem(item.id);
    return el("span", {
      className: "open",
      text: item.title,
      title: "open: edit, reply, cancel",
      tabIndex: 0,
      role: "button",
      onclick: open,
      onkeydown: (event) => event.key === "Enter" && open(),
    });
  }

  function readyMeta(node, item) {
    const meta = el("div", { className: "meta" });
    if (item.state === "claimed") {
      node.classList.add("lapsed", "claimable");
      meta.append(el("span", { className: "tag warn", text: "claimable again" }), `${item.claimed_by}'s lease ran out`);
    } else if (item.ready) {
      node.classList.add("claimable");
      meta.append(el("span", { className: "tag lit", text: "claimable" }), `priority ${item.priority}`);
    } else {
      node.classList.add("blocked");
      meta.append(...blockers(item));
    }
    node.append(meta);
  }

  function blockers(item) {
    const reasons = [];
    if (item.blocked_by && item.blocked_by.length) {
      reasons.push(el("div", { text: `waits on ${item.blocked_by.map(named).join(", ")}` }));
    }
    for (const hold of item.files_held_by || []) {
      reasons.push(el("div", { text: `${hold.pattern} held by ${hold.agent}` }));
    }
    if (item.reserved_for) {
      reasons.push(el("div", { text: `reserved in the document for @${item.reserved_for}` }));
    }
    if (!reasons.length) reasons.push(el("div", { text: "not claimable yet" }));
    return reasons;
  }

  function countdown(iso, prefix) {
    return el("span", { className: "countdown", "data-until": ms(iso), "data-prefix": prefix || "" });
  }

  function heartbeat(name) {
    return el("span", { className: "heartbeat", "data-agent": name });
  }

  // the client an agent runs in, where its name says (coord's hooks name it client-8hex)
  function clientOf(name) {
    const prefix = String(name || "").split("-")[0];
    return boot.clients.includes(prefix) ? prefix : null;
  }

  function claimedMeta(node, item) {
    const client = clientOf(item.claimed_by);
    node.append(
      el(
        "div",
        { className: "meta" },
        client ? el("span", { className: "tag", text: client }) : null,
        el("b", { text: item.claimed_by }),
        " · lease ",
        countdown(item.lease_expires_at),
        " · seen ",
        heartbeat(item.claimed_by),
      ),
      ...present(worktreeMeta(item)),
    );
  }

  // a node to append, or none: DOM append writes a null as the text "null"
  function present(node) {
    return node ? [node] : [];
  }

  // a claim with a worktree: its branch and the path it is worked in
  function worktreeMeta(item) {
    if (!item.branch) return null;
    return el(
      "div",
      { className: "meta worktree" },
      el("code", { className: "branch", text: item.branch }),
      item.worktree ? " in " : "",
      item.worktree ? el("code", { className: "path", text: item.worktree }) : null,
    );
  }

  function needsMeta(node, item) {
    node.append(
      el("div", { className: "meta" }, `${item.claimed_by} asks`, item.escalate_to ? ` ${item.escalate_to}` : ""),
      el("div", { className: "question", text: item.question }),
      ...present(worktreeMeta(item)),
    );
    const box = el("textarea", { "aria-label": `answer to item ${item.id}`, placeholder: "your answer" });
    box.value = drafts.get(item.id) || ""; // a redraw keeps what was typed
    box.oninput = () => drafts.set(item.id, box.value);
    const err = el("div", { className: "err" });
    const send = el("button", { text: `Answer as ${boot.as}` });
    send.onclick = async () => {
      const text = box.value.trim();
      if (!text) return;
      send.disabled = true;
      err.textContent = "";
      try {
        const answered = await api(`/v1/items/${item.id}/answer`, { agent: boot.as, text });
        drafts.delete(item.id);
        box.blur();
        place(answered);
      } catch (error) {
        err.textContent = error.message;
        send.disabled = false;
      }
    };
    node.append(el("div", { className: "answer" }, box, send, err));
  }

  function doneMeta(node, item) {
    node.append(el("div", { className: "meta" }, `${item.claimed_by || item.created_by} · `, countdownSince(item.closed_at)));
    if (item.evidence && Object.keys(item.evidence).length) {
      node.append(evidenceNode(item.evidence));
    } else if (item.checks && item.checks.length) {
      node.append(el("div", { className: "meta", text: "checks skipped (reason in the log)" }));
    }
  }

  function countdownSince(iso) {
    return el("span", { className: "ago", "data-since": ms(iso) });
  }

  // checks' evidence as a person reads it: passed or failed, and each run's command, exit
  // code, duration and the tail of its output, as text
  function evidenceNode(evidence) {
    const box = el("div", { className: "evidence" });
    if (evidence.skipped) {
      box.append(
        el("div", {}, el("span", { className: "tag warn", text: "checks skipped" }), `by ${evidence.by}: `, el("span", { className: "why", text: evidence.skipped })),
      );
      return box;
    }
    box.append(
      el(
        "div",
        { className: "verdict" },
        el("span", { className: evidence.passed ? "tag lit" : "tag bad", text: evidence.passed ? "checks passed" : "checks failed" }),
        evidence.by ? `by ${evidence.by}` : "",
      ),
    );
    for (const run of evidence.runs || []) {
      const passed = run.exit_code === 0;
      const line = el(
        "div",
        { className: passed ? "run passed" : "run failed" },
        el("span", { className: passed ? "tag lit" : "tag bad", text: passed ? "passed" : "failed" }),
        el("code", { className: "command", text: run.command }),
        el("span", { className: "exit", text: ` exit ${run.exit_code}` }),
        typeof run.duration_s === "number" ? el("span", { className: "duration", text: ` · ${span(run.duration_s)}` }) : null,
        run.head ? ` · at ${String(run.head).slice(0, 10)}` : "",
      );
      box.append(line);
      if (run.output_tail) {
        box.append(el("details", {}, el("summary", { text: "the output's last lines" }), el("pre", { className: "tail", text: run.output_tail })));
      }
    }
    return box;
  }

  // --- agents, held files, counts ---------------------------------------------------------

  async function loadAgents() {
    const found = await api("/v1/agents");
    agents.clear();
    for (const agent of found.agents) agents.set(agent.name, agent);
    const rows = document.querySelector("#agents .rows");
    const shown = found.agents.filter((a) => a.active || a.holding.length).slice(0, PAGE);
    rows.replaceChildren(
      ...shown.map((agent) =>
        el(
          "li",
          { className: "card", "data-agent": agent.name },
          el("b", { text: agent.name }),
          " · seen ",
          heartbeat(agent.name),
          el("div", { className: "meta", text: agent.holding.length ? `holds ${agent.holding.map(named).join(", ")}` : "holds nothing" }),
        ),
      ),
    );
    tick();
  }

  async function loadFiles() {
    const found = await api("/v1/reservations");
    const root = {};
    for (const hold of found.reservations.slice(0, 500)) {
      let node = root;
      const parts = hold.pattern.split("/").filter(Boolean);
      parts.forEach((part, index) => {
        node[part] = node[part] || { children: {}, holds: [] };
        if (index === parts.length - 1) node[part].holds.push(hold);
        node = node[part].children;
      });
    }
    const tree = document.querySelector("#files .tree");
    tree.replaceChildren(found.reservations.length ? branch(root) : el("div", { className: "meta", text: "no files held" }));
    paint(tree);
  }

  function branch(level) {
    const list = el("ul");
    for (const name of Object.keys(level).sort()) {
      const node = level[name];
      const li = el("li", {}, name);
      for (const hold of node.holds) {
        li.append(
          el(
            "div",
            { className: "hold", "data-agent": hold.agent },
            `${hold.agent} · ${hold.exclusive ? "exclusive" : "shared"}`,
            hold.item ? ` · ${named(hold.item)}` : "",
            " · ",
            countdown(hold.expires_at),
          ),
        );
      }
      if (Object.keys(node.children).length) li.append(branch(node.children));
      list.append(li);
    }
    return list;
  }

  // Ready counts what is claimable now, of the pending (as `coord watch`'s "Ready 0 of 6")
  async function loadCounts() {
    const [found, claimable] = await Promise.all([
      api("/v1/status"),
      api("/v1/items?state=pending&ready=true&limit=1000"), // the most one page holds
    ]);
    const counts = found.board.counts;
    const ready = `${claimable.items.length}${claimable.next === null ? "" : "+"}`;
    const shown = { claimed: counts.claimed, needs: counts.needs_human, done: counts.done };
    for (const [key, value] of Object.entries(shown)) {
      document.querySelector(`#col-${key} .count`).textContent = `(${value || 0})`;
    }
    document.querySelector("#col-ready .count").textContent = `(${ready} of ${counts.pending || 0})`;
    const queued = counts.queued || 0;
    const rework = counts.needs_rework || 0;
    document.querySelector("#landing h2 .count").textContent = `(${queued + rework})`;
    document.querySelector("#queue-queued .count").textContent = `(${queued})`;
    document.querySelector("#queue-rework .count").textContent = `(${rework})`;
  }

  // --- the landing queue ------------------------------------------------------------------
  //
  // A worktree item's way to main (issue 24), in landing order: the item the runner lands
  // now (the head of the queue while the board's landing lease is live), the rest of the
  // queue in submit order, the items landing sent back with why, and the recently merged.
  // Read from /v1/landing, /v1/queue and the needs_rework listing; every landing transition
  // is an event, and one of them (or any event about an item shown) reads the panel again.

  const QUEUE_SHOWN = 100;
  const MERGED_SHOWN = 20;
  const LANDING_KINDS = new Set([
    "submitted",
    "merged",
    "needs_rework",
    "abandoned",
    "landing_acquired",
    "landing_released",
    "landing_waits",
  ]);
  const REWORK_WHY = {
    conflict: "conflict with main",
    check_failed: "a check failed",
    head_moved: "its branch moved after the submit",
    files_held: "it changes files someone else holds",
  };
  const WAIT_WHY = {
    checkout_dirty: "local changes in the checkout of main are in the way",
    main_moved: "main kept moving under every attempt",
  };
  // waits: item id -> the runner's last landing_waits event about it (it stays queued)
  const landing = { lease: null, queued: [], rework: [], merged: new Map(), waits: new Map() };
  const mergedDirty = new Set(); // merged since the last read: read one by one
  let landingTimer = null;
  let landingBusy = false;
  let nextLandingAt = 0;
  let landingLive = false; // the lease as last shown: it lapses with no event

  function leaseLive() {
    const lease = landing.lease;
    return Boolean(lease && lease.holder && ms(lease.expires_at) > boardNow());
  }

  function inLanding(id) {
    return landing.queued.some((item) => item.id === id) || landing.rework.some((item) => item.id === id);
  }

  async function loadLanding() {
    const [lease, queue, rework] = await Promise.all([
      api("/v1/landing"),
      api(`/v1/queue?limit=${QUEUE_SHOWN}`),
      api(`/v1/items?state=needs_rework&limit=${QUEUE_SHOWN}`),
    ]);
    landing.lease = lease;
    landing.queued = queue.items;
    landing.rework = rework.items;
    const queued = new Set(queue.items.map((item) => item.id));
    for (const id of [...landing.waits.keys()]) if (!queued.has(id)) landing.waits.delete(id);
    for (const item of [...queue.items, ...rework.items]) if (item.key) keys.set(item.id, item.key);
    renderLanding();
  }

  // the newest merged items and why queued ones wait, from the log (as Done's recent ones)
  async function loadRecentMerged() {
    const since = Math.max(0, lastSeq - 2000);
    const found = await api(`/v1/events?after=${since}&limit=2000`);
    for (const event of found.events) if (event.kind === "landing_waits") landing.waits.set(event.item_id, event);
    const ids = [...new Set(found.events.filter((e) => e.kind === "merged").map((e) => e.item_id))];
    landing.merged.clear();
    for (const id of ids.slice(-MERGED_SHOWN)) await readMerged(id);
  }

  async function readMerged(id) {
    const item = await api(`/v1/items/${id}?replies_limit=1`).catch(() => null);
    if (!item || item.state !== "merged") return;
    landing.merged.set(item.id, item);
    if (landing.merged.size > MERGED_SHOWN) {
      landing.merged.delete([...landing.merged.values()].sort(byClosed).pop().id);
    }
  }

  function landingSoon() {
    if (!landingTimer) landingTimer = setTimeout(refreshLanding, Math.max(200, nextLandingAt - Date.now()));
  }

  // one read at a time, at most one a second: a busy queue is read at a bounded rate
  async function refreshLanding() {
    landingTimer = null;
    if (landingBusy) {
      landingSoon();
      return;
    }
    landingBusy = true;
    nextLandingAt = Date.now() + 1000;
    try {
      const ids = [...mergedDirty];
      mergedDirty.clear();
      for (const id of ids) await readMerged(id);
      await loadLanding();
    } catch (error) {
      report(error);
    } finally {
      landingBusy = false;
    }
  }

  function renderLanding() {
    landingLive = leaseLive();
    const queued = [...landing.queued];
    const now = landingLive && queued.length ? [queued.shift()] : [];
    fillGroup("landing", now.map((item) => nowCard(item)));
    fillGroup("queued", queued.map((item, index) => queuedCard(item, index ? queued[index - 1] : null)));
    const rework = [...landing.rework].sort(
      (a, b) => (ms(a.rework && a.rework.at) || 0) - (ms(b.rework && b.rework.at) || 0) || a.id - b.id,
    );
    fillGroup("rework", rework.map(reworkCard));
    fillGroup("merged", [...landing.merged.values()].sort(byClosed).map(mergedCard));
  }

  const EMPTY = { queued: "nothing queued", rework: "nothing sent back", merged: "nothing merged lately" };

  function fillGroup(name, nodes) {
    const rows = document.querySelector(`#queue-${name} .rows`);
    if (!nodes.length) {
      const idle = landingLive ? `${landing.lease.holder} holds the landing lease` : "no runner now (`coord land` lands the queue)";
      nodes = [el("li", { className: "meta empty", text: name === "landing" ? idle : EMPTY[name] })];
    }
    rows.replaceChildren(...nodes);
    paint(rows);
  }

  function landingCard(item, ...meta) {
    const node = el("li", { className: "card", "data-id": item.id, "data-state": item.state });
    node.append(
      el("div", { className: "title" }, el("span", { className: "tag", text: item.key || `#${item.id}` }), item.title),
      ...meta,
    );
    return node;
  }

  // the branch, and the head handed over at submit
  function submittedMeta(item) {
    return el(
      "div",
      { className: "meta" },
      el("code", { className: "branch", text: item.branch || "" }),
      item.submitted_head ? ` at ${item.submitted_head.slice(0, 10)}` : "",
    );
  }

  function nowCard(item) {
    const node = landingCard(
      item,
      el("div", { className: "meta" }, el("span", { className: "tag lit", text: "landing now" }), `by ${landing.lease.holder}`),
      waitMeta(item),
      submittedMeta(item),
    );
    node.classList.add("landing-now");
    return node;
  }

  function queuedCard(item, before) {
    const why = before === null ? "next to land" : `after ${named(before.id)}`;
    return landingCard(
      item,
      el(
        "div",
        { className: "meta" },
        el("span", { className: "tag", text: why }),
        el("b", { text: item.claimed_by || "" }),
        " submitted ",
        countdownSince(item.submitted_at),
      ),
      waitMeta(item),
      submittedMeta(item),
    );
  }

  // why the runner's last attempt at this submission had to wait (nothing for its holder)
  function waitMeta(item) {
    const event = landing.waits.get(item.id);
    // this submission's: the log shows no tokens (issue 27), so the wait must come after it
    if (!event || !item.submitted_at || ms(event.at) < ms(item.submitted_at)) return null;
    const files = event.details.files || [];
    const node = el(
      "div",
      { className: "reason waiting" },
      el("span", { className: "tag warn", text: "waiting" }),
      WAIT_WHY[event.details.reason] || String(event.details.reason),
      files.length ? `: ${files.join(", ")}` : "",
      " · ",
      countdownSince(event.at),
    );
    if (event.details.message) node.append(el("div", { className: "meta", text: event.details.message }));
    return node;
  }

  function reworkCard(item) {
    const rework = item.rework || {};
    const files = rework.files || [];
    const why = REWORK_WHY[rework.reason] || String(rework.reason || "sent back");
    const reason = el(
      "div",
      { className: "reason" },
      el("span", { className: "tag warn", text: "needs rework" }),
      why,
      files.length ? ` in ${files.join(", ")}` : "",
      rework.main_commit ? ` (main at ${rework.main_commit.slice(0, 10)})` : "",
    );
    const kept = el("div", { className: "meta" }, "back to ", el("b", { text: item.rework_for || "its holder" }));
    if (item.rework_for && ms(item.rework_until) > boardNow()) {
      kept.append(", theirs alone for ", countdown(item.rework_until));
    }
    const node = landingCard(item, reason, kept, el("div", { className: "meta" }, el("code", { className: "branch", text: rework.branch || item.branch || "" })));
    node.classList.add("rework");
    if (rework.check_output) {
      node.append(el("details", {}, el("summary", { text: "the output" }), el("pre", { text: rework.check_output })));
    }
    return node;
  }

  function mergedCard(item) {
    return landingCard(
      item,
      el(
        "div",
        { className: "meta" },
        el("span", { className: "tag lit", text: "merged" }),
        el("code", { className: "commit", text: (item.merged_commit || "").slice(0, 10) }),
        " · ",
        countdownSince(item.closed_at),
      ),
    );
  }

  // --- the plan of a design document ------------------------------------------------------

  const documents = new Set();
  let planIds = new Set(); // the packages shown: only their changes redraw the plan
  let planDirty = false;
  function noteDocument(item) {
    if (!item.spec) return;
    const path = item.spec.replace(/:\d+$/, "");
    if (documents.has(path)) return;
    documents.add(path);
    document.getElementById("plan-docs").append(el("option", { value: path }));
    const input = document.getElementById("plan-doc");
    if (!input.value) {
      input.value = path; // the first document seen is shown until another is chosen
      loadPlan().catch(report);
    }
  }

  async function loadPlan() {
    const path = document.getElementById("plan-doc").value.trim();
    const graph = document.querySelector("#plan .graph");
    if (!path) {
      graph.replaceChildren();
      return;
    }
    const packages = [];
    let after = 0;
    do {
      const found = await api(`/v1/items?spec=${encodeURIComponent(path)}&limit=1000&after=${after}`);
      packages.push(...found.items);
      after = found.next;
    } while (after !== null && packages.length < 2000);
    planIds = new Set(packages.map((p) => p.id));
    graph.replaceChildren(
      globalThis.coordPlan.draw(packages, {
        named,
        lapsed: (item) => columnOf(item) !== "claimed",
        open: openItem,
      }),
    );
  }

  // --- the activity feed -------------------------------------------------------------------

  const feed = [];
  function feedMatches(event) {
    const agent = document.getElementById("feed-agent").value.trim();
    const item = document.getElementById("feed-item").value.trim().replace(/^#/, "");
    if (agent && event.agent !== agent) return false;
    if (item && String(event.item_id) !== item && named(event.item_id) !== item) return false;
    return true;
  }

  function feedRow(event) {
    const at = new Date(event.at).toISOString().slice(11, 19);
    return el(
      "li",
      { "data-seq": event.seq },
      el("span", { className: "seq", text: event.seq ?? "…" }),
      `${at} `,
      el("b", { text: event.agent || "board" }),
      ` ${event.kind}`,
      event.item_id ? ` ${named(event.item_id)}` : "",
    );
  }

  function renderFeed() {
    const rows = document.querySelector("#feed .rows");
    feedPending.length = 0;
    rows.replaceChildren(...feed.filter(feedMatches).reverse().map(feedRow));
  }

  // new events reach the feed's DOM in batches: a storm of events costs the browser one
  // redraw a quarter second, not one per event
  const feedPending = [];
  let feedTimer = null;
  function addToFeed(event) {
    feed.push(event);
    if (feed.length > FEED_SHOWN) feed.shift();
    if (feedMatches(event)) feedPending.push(event);
    if (!feedTimer) feedTimer = setTimeout(paintFeed, 250);
  }

  function paintFeed() {
    feedTimer = null;
    const rows = document.querySelector("#feed .rows");
    rows.prepend(...feedPending.splice(0).slice(-FEED_SHOWN).reverse().map(feedRow));
    while (rows.children.length > FEED_SHOWN) rows.lastChild.remove();
    document.body.dataset.lastSeq = String(lastSeq); // shown: what tests wait for
  }

  // --- live: the stream -------------------------------------------------------------------

  const dirty = new Set();
  const doneDirty = new Set();
  let flushTimer = null;
  let sideTimer = null;
  let queue = Promise.resolve();

  // when the next reads may go: a burst pushes them back, so a busy board is read at a
  // bounded rate (the daemon serves agents first)
  let nextFlushAt = 0;
  let nextSidesAt = 0;

  function apply(event) {
    if (event.seq <= lastSeq) return; // seen already (a resumed stream may repeat)
    lastSeq = event.seq;
    addToFeed(event);
    if (shared.onEvent) shared.onEvent(event);
    if (event.item_id) dirty.add(event.item_id);
    if (event.item_id && event.kind === "done") doneDirty.add(event.item_id);
    if (planIds.has(event.item_id) || event.kind === "created") planDirty = true;
    if (event.kind === "merged" && event.item_id) mergedDirty.add(event.item_id);
    if (event.kind === "landing_waits" && event.item_id) landing.waits.set(event.item_id, event);
    if (LANDING_KINDS.has(event.kind) || inLanding(event.item_id)) landingSoon();
    if (!flushTimer) flushTimer = setTimeout(flushLater, Math.max(150, nextFlushAt - Date.now()));
    if (!sideTimer) sideTimer = setTimeout(refreshSides, Math.max(600, nextSidesAt - Date.now()));
  }

  // events in order, gaps filled from the log: the page never skips one
  function receive(event) {
    queue = queue.then(async () => {
      if (event.seq > lastSeq + 1) await catchUp(event.seq - 1);
      apply(event);
    }).catch(report);
  }

  async function catchUp(until) {
    while (lastSeq < until) {
      const found = await api(`/v1/events?after=${lastSeq}&limit=500`);
      if (!found.events.length) return;
      found.events.filter((e) => e.seq <= until).forEach(apply);
      if (found.events[found.events.length - 1].seq >= until) return;
    }
  }

  // the items events named, read again one request at a time; a burst of more than
  // FEW_ITEMS reads the column pages instead (three requests), so a storm of claims costs the
  // daemon a bounded trickle of reads per page, not one per event
  const FEW_ITEMS = 30;
  let flushing = false;
  function flushLater() {
    flush().catch(report);
  }

  async function flush() {
    flushTimer = null;
    if (flushing) {
      flushTimer = setTimeout(flushLater, 150);
      return;
    }
    flushing = true;
    try {
      let ids = [...dirty];
      dirty.clear();
      if (ids.length > FEW_ITEMS) {
        nextFlushAt = Date.now() + 1000;
        await Promise.all(["ready", "claimed", "needs"].map((key) => loadPage(columns[key], columns[key].after)));
        ids = [...doneDirty].slice(-DONE_SHOWN); // Done is made of events, not a page
      }
      doneDirty.clear();
      for (const id of ids) await refreshItem(id);
    } finally {
      flushing = false;
    }
  }

  async function refreshItem(id) {
    try {
      const item = await api(`/v1/items/${id}?replies_limit=1`);
      noteDocument(item);
      place(item);
    } catch (error) {
      if (error.status !== 404) report(error);
    }
  }

  // what changes with no event of its own: a dependency done or a file freed unblocks an
  // item, so the Ready page is read again with the panels
  function refreshSides() {
    sideTimer = null;
    nextSidesAt = Date.now() + 2000;
    const ready = columns.ready;
    const plan = planDirty ? loadPlan() : null;
    planDirty = false;
    Promise.all([loadPage(ready, ready.after), loadAgents(), loadFiles(), loadCounts(), plan]).catch(report);
  }

  // the event stream, read with fetch (an EventSource cannot send the session's header),
  // from the last event applied; when it ends, the daemon is proved again before anything more
  async function follow() {
    const controller = new AbortController();
    streamAbort = controller;
    let response;
    try {
      response = await fetch(`/v1/events/stream?after=${lastSeq}`, {
        credentials: "omit",
        cache: "no-store",
        headers: { accept: "text/event-stream", "x-coord-session": session },
        signal: controller.signal,
      });
    } catch (error) {
      if (streamAbort === controller) lost();
      return;
    }
    if (response.status === 401) {
      signedOut((await response.json().catch(() => ({}))).message);
      return;
    }
    if (!response.ok || !response.body) {
      lost();
      return;
    }
    setLink("live", "live");
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          message(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
        }
      }
    } catch (error) {
      // cut: the daemon went away, or the page aborted the read itself
    }
    if (streamAbort === controller) lost();
  }

  // one Server-Sent Events message: `event: coord` is a board event; `event: reload` says
  // this page fell too far behind, so it reads the board afresh and goes on (the stream ends
  // after it; the next one follows from the board's newest event)
  function message(block) {
    let kind = "message";
    const data = [];
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "event") kind = value;
      else if (field === "data") data.push(value);
    }
    if (!data.length) return;
    const payload = JSON.parse(data.join("\n"));
    if (kind === "coord") receive(payload);
    else if (kind === "reload") {
      skipTo(payload.last_seq);
      queue = queue.then(reloadAll).catch(report);
    }
  }

  async function reloadColumns() {
    await Promise.all(["ready", "claimed", "needs"].map((key) => loadPage(columns[key], columns[key].after)));
    const done = columns.done;
    await (done.recent ? loadRecentDone() : loadPage(done, done.after));
  }

  // the page fell too far behind to replay: say so in the feed, and go on from the newest
  function skipTo(newest) {
    if (newest === lastSeq || typeof newest !== "number") return;
    const kind = newest > lastSeq
      ? `… ${newest - lastSeq} events not shown (the page fell behind and read the board again)`
      : `… the board's log now ends at ${newest}, before this page's ${lastSeq} (the board was replaced): read again`;
    addToFeed({ seq: null, at: new Date(boardNow()).toISOString(), agent: null, kind, item_id: null });
    lastSeq = newest;
    document.body.dataset.lastSeq = String(lastSeq);
  }

  async function reloadAll() {
    await reloadColumns();
    await loadRecentMerged();
    refreshSides();
    landingSoon();
  }

  async function loadRecentDone() {
    // the newest done items, from the log: item listings run oldest first
    const since = Math.max(0, lastSeq - 2000);
    const found = await api(`/v1/events?after=${since}&limit=2000`);
    const ids = [...new Set(found.events.filter((e) => e.kind === "done").map((e) => e.item_id))].slice(-DONE_SHOWN);
    const column = columns.done;
    column.items.clear();
    for (const id of ids) {
      const item = await api(`/v1/items/${id}?replies_limit=1`).catch(() => null);
      if (item && item.state === "done") column.items.set(item.id, item);
    }
    render(column);
  }

  async function loadFeed() {
    const since = Math.max(0, boot.last_seq - FEED_SHOWN);
    const found = await api(`/v1/events?after=${since}&limit=${FEED_SHOWN}`);
    for (const event of found.events) if (event.seq <= boot.last_seq) feed.push(event);
    renderFeed();
  }

  // --- the clock: countdowns and claims that run out ---------------------------------------

  function tick() {
    paint(document);
    if (leaseLive() !== landingLive) renderLanding(); // the runner's lease ran out, or began
    for (const item of [...columns.claimed.items.values()]) {
      if (columnOf(item) === "ready") place(item); // its lease ran out: claimable again
    }
  }

  // the clocks shown under root: time left, time since, last seen
  function paint(root) {
    const now = boardNow();
    for (const node of root.querySelectorAll("[data-until]")) {
      const left = (Number(node.dataset.until) - now) / 1000;
      node.textContent = left > 0 ? `${span(left)} left` : "ran out";
      node.classList.toggle("old", left <= 0);
      node.classList.toggle("stale", left > 0 && left < 60);
    }
    for (const node of document.querySelectorAll("[data-since]")) {
      node.textContent = `${span((now - Number(node.dataset.since)) / 1000)} ago`;
    }
    for (const node of document.querySelectorAll(".heartbeat")) {
      const agent = agents.get(node.dataset.agent);
      if (!agent) continue;
      const age = (now - ms(agent.last_seen)) / 1000;
      node.textContent = `${span(age)} ago`;
      node.className = `heartbeat ${freshness(age)}`;
    }
  }

  function report(error) {
    if (!error.quiet) console.error(error);
  }

  // --- start ------------------------------------------------------------------------------

  document.getElementById("plan-doc").addEventListener("change", () => loadPlan().catch(report));
  for (const id of ["feed-agent", "feed-item"]) {
    document.getElementById(id).addEventListener("input", renderFeed);
  }
  const search = document.getElementById("search");
  search.addEventListener("input", () => {
    searchWords = search.value.toLowerCase().split(/\s+/).filter(Boolean);
    for (const column of Object.values(columns)) render(column);
  });
  // Enter on one id or package id opens that item, wherever it is (a cancelled one too)
  search.addEventListener("keydown", (event) => {
    const words = search.value.trim().split(/\s+/);
    if (event.key !== "Enter" || words.length !== 1 || !/^#?[A-Za-z0-9][\w.-]*$/.test(words[0])) return;
    const ref = words[0].replace(/^#/, "");
    if (/^\d+$/.test(ref) || [...keys.values()].includes(ref)) openItem(ref);
  });

  async function start() {
    await Promise.all([
      ...["ready", "claimed", "needs"].map((key) => loadPage(columns[key], 0)),
      loadRecentDone(),
      loadFeed(),
      loadCounts(),
      loadRecentMerged().then(loadLanding),
    ]);
    await Promise.all([loadAgents(), loadFiles()]); // after the columns: they name items
    for (const column of Object.values(columns)) {
      for (const item of column.items.values()) noteDocument(item);
      render(column); // again, now that every column's keys are known
    }
    tick();
    setInterval(tick, 1000);
    document.body.dataset.ready = "1";
  }

  // what the session is (whom the page acts as) and the board's clock, then the board
  Object.assign(shared, { api, el, boot, named, keys, place, evidenceNode, span, report, paint, countdownSince });

  async function begin() {
    const about = await api("/v1/web/session");
    Object.assign(boot, about);
    clockOffset = about.server_now * 1000 - Date.now();
    lastSeq = about.last_seq;
    document.body.dataset.lastSeq = String(lastSeq);
    document.querySelector("header .who b").textContent = about.as;
    await start();
  }

  if (session) connect();
  else signedOut("this tab is not signed in: run `coord open` in the repository for a link");
})();
