// What a person does on the live board: add an item, open one, edit it (title, details,
// priority, labels, dependencies), cancel or reopen it with a reason, reply, answer.
//
// Each is one request to the endpoint the CLI calls (POST /v1/items, PATCH /v1/items/{id},
// .../cancel, .../reopen, .../replies, .../answer), as the page's person (the session's
// name is the body's agent), so the board's rules, permissions and events are the CLI's: a
// refusal comes back as the daemon's own message, shown beside the button. Everything shown
// is text (textContent), never markup: titles are whatever agents wrote.
"use strict";

(() => {
  const page = globalThis.coordPage;
  const { api, el, boot, named, keys } = page;

  const words = (text) => text.split(/[\s,]+/).filter(Boolean);
  const labelsOf = (text) => text.split(",").map((label) => label.trim()).filter(Boolean);

  // "#3, 4, P2" as item ids: a number is an id, anything else a package id the board knows
  async function itemIds(text) {
    const ids = [];
    for (const word of words(text)) {
      const ref = word.replace(/^#/, "");
      if (/^\d+$/.test(ref)) ids.push(Number(ref));
      else ids.push((await api(`/v1/items/${encodeURIComponent(ref)}?replies_limit=1`)).id);
    }
    return ids;
  }

  // a button that sends one change; its refusal, word for word, beside it
  function sender(label, send) {
    const err = el("span", { className: "err", role: "alert" });
    const button = el("button", { type: "button", text: label });
    button.onclick = async () => {
      button.disabled = true;
      err.textContent = "";
      try {
        await send();
      } catch (error) {
        err.textContent = error.message;
      } finally {
        button.disabled = false;
      }
    };
    return [button, err];
  }

  // --- a new item -------------------------------------------------------------------------

  const compose = document.getElementById("compose");
  const form = compose.querySelector("form");
  document.getElementById("new-item").onclick = () => {
    // whom the page acts as is known once the daemon proved itself: named here, not at load
    form.querySelector('button[type="submit"]').textContent = `Add as ${boot.as}`;
    compose.hidden = false;
    form.elements.title.focus();
  };
  compose.querySelector(".close").onclick = () => (compose.hidden = true);

  form.addEventListener("submit", async (event) => {
    event.preventDefault(); // sent by script: the page allows no form actions
    const f = form.elements;
    const err = form.querySelector(".err");
    const ok = form.querySelector(".ok");
    err.textContent = ok.textContent = "";
    try {
      const body = {
        agent: boot.as,
        title: f.title.value.trim(),
        kind: f.kind.value,
        priority: Number(f.priority.value),
        labels: labelsOf(f.labels.value),
        deps: await itemIds(f.deps.value),
        body: f.body.value,
      };
      if (f.to.value.trim()) body.to = f.to.value.trim();
      const item = await api("/v1/items", body);
      form.reset();
      ok.textContent = `added ${named(item.id)}`;
      page.place(item);
    } catch (error) {
      err.textContent = error.message;
    }
  });

  // --- one item, opened ---------------------------------------------------------------------

  const detail = document.getElementById("detail");
  let shown = null; // the item open, as last read
  let reading = null;

  async function openItem(ref) {
    const item = await api(`/v1/items/${encodeURIComponent(ref)}?replies_limit=100`);
    if (item.key) keys.set(item.id, item.key);
    shown = item;
    detail.replaceChildren(...facts(item), ...actions(item));
    detail.dataset.id = String(item.id);
    detail.dataset.state = item.state;
    detail.hidden = false;
    detail.scrollIntoView({ block: "nearest" });
  }

  // another's change to the open item: its facts read again; what the person is typing stays
  function onEvent(event) {
    if (!shown || event.item_id !== shown.id || reading) return;
    reading = setTimeout(async () => {
      reading = null;
      try {
        const item = await api(`/v1/items/${shown.id}?replies_limit=100`);
        shown = item;
        detail.dataset.state = item.state;
        const [head, list] = facts(item);
        detail.querySelector(".head")?.replaceWith(head);
        detail.querySelector(".facts")?.replaceWith(list);
        toggleStateActions(item);
      } catch (error) {
        page.report(error);
      }
    }, 200);
  }

  function facts(item) {
    const close = el("button", { type: "button", className: "close", text: "Close" });
    close.onclick = () => {
      detail.hidden = true;
      shown = null;
    };
    const head = el(
      "div",
      { className: "head" },
      el("span", { className: "tag", text: named(item.id) }),
      el("h3", { className: "title", text: item.title }),
      el("span", { className: `tag state ${item.state}`, text: item.state }),
      close,
    );
    const rows = [
      ["kind", item.kind],
      ["priority", String(item.priority)],
      ["labels", item.labels.join(", ") || "none"],
      ["waits on", item.deps.map(named).join(", ") || "nothing"],
      ["created by", item.created_by],
      ["for", item.to],
      ["held by", item.claimed_by && ["claimed", "needs_human", "queued"].includes(item.state) ? item.claimed_by : null],
      ["files", item.files.join(", ") || null],
      ["checks", item.checks.join("; ") || null],
      ["question", item.question],
    ].filter(([, value]) => value);
    const list = el("dl", { className: "facts" });
    for (const [name, value] of rows) list.append(el("dt", { text: name }), el("dd", { text: value }));
    if (item.body) list.append(el("dt", { text: "details" }), el("dd", { className: "body", text: item.body }));
    if (item.evidence && Object.keys(item.evidence).length) {
      list.append(el("dt", { text: "evidence" }), el("dd", {}, page.evidenceNode(item.evidence)));
    }
    const thread = el("ol", { className: "replies" });
    for (const reply of item.replies || []) {
      thread.append(el("li", {}, el("b", { text: reply.author }), ` ${reply.created_at.slice(0, 16).replace("T", " ")}Z `, el("div", { className: "reply-body", text: reply.body })));
    }
    list.append(el("dt", { text: "thread" }), el("dd", {}, item.replies && item.replies.length ? thread : "no replies yet"));
    return [head, list];
  }

  function field(label, input) {
    return el("label", {}, `${label} `, input);
  }

  function actions(item) {
    return [editForm(item), stateActions(item), answerForm(item), replyForm(item)].filter(Boolean);
  }

  // only the fields the person changed are sent: an edit by someone else meanwhile stays
  function editForm(item) {
    const title = el("input", { name: "title", value: item.title });
    const priority = el("select", { name: "priority" });
    for (const n of [0, 1, 2, 3, 4]) priority.append(el("option", { value: String(n), text: String(n), selected: n === item.priority }));
    const labels = el("input", { name: "labels", value: item.labels.join(", ") });
    const deps = el("input", { name: "deps", value: item.deps.map(named).join(", "), placeholder: "#3, P2" });
    const body = el("textarea", { name: "body", value: item.body || "" });
    const [save, err] = sender("Save", async () => {
      const change = {};
      if (title.value.trim() !== item.title) change.title = title.value.trim();
      if (Number(priority.value) !== item.priority) change.priority = Number(priority.value);
      const newLabels = labelsOf(labels.value);
      if (newLabels.join("\n") !== item.labels.join("\n")) change.labels = newLabels;
      if (body.value !== (item.body || "")) change.body = body.value;
      const wanted = await itemIds(deps.value);
      const add = wanted.filter((id) => !item.deps.includes(id));
      const remove = item.deps.filter((id) => !wanted.includes(id));
      if (add.length) change.add_deps = add;
      if (remove.length) change.remove_deps = remove;
      if (!Object.keys(change).length) throw new Error("nothing changed: edit a field first");
      const edited = await api(`/v1/items/${item.id}`, { agent: boot.as, ...change }, "PATCH");
      page.place(edited);
      await openItem(edited.id);
    });
    return el(
      "form",
      { className: "form edit", autocomplete: "off", onsubmit: (event) => event.preventDefault() },
      el("h4", { text: "Edit" }),
      field("Title", title),
      field("Priority", priority),
      field("Labels", labels),
      field("Waits on", deps),
      el("label", { className: "wide" }, "Details ", body),
      el("div", { className: "buttons" }, save, err),
    );
  }

  // cancel while it is open, reopen once cancelled: each with the reason the log keeps
  function stateActions(item) {
    const reason = el("input", { name: "reason", placeholder: "the reason (kept in the log)" });
    const why = () => {
      const text = reason.value.trim();
      if (!text) throw new Error("say why: the reason is kept in the log");
      return text;
    };
    const [cancel, cancelErr] = sender("Cancel the item", async () => {
      const cancelled = await api(`/v1/items/${item.id}/cancel`, { agent: boot.as, reason: why() });
      page.place(cancelled);
      await openItem(cancelled.id);
    });
    cancel.className = "cancel";
    const [reopen, reopenErr] = sender("Reopen", async () => {
      const reopened = await api(`/v1/items/${item.id}/reopen`, { agent: boot.as, reason: why() });
      page.place(reopened);
      await openItem(reopened.id);
    });
    reopen.className = "reopen";
    const box = el("div", { className: "form state-actions" }, el("h4", { text: "Cancel or reopen" }), field("Reason", reason), el("div", { className: "buttons" }, cancel, cancelErr, reopen, reopenErr));
    toggleStateActions(item, box);
    return box;
  }

  function toggleStateActions(item, box = detail.querySelector(".state-actions")) {
    if (!box) return;
    const closed = ["done", "merged", "cancelled"].includes(item.state);
    box.querySelector(".cancel").hidden = closed;
    box.querySelector(".reopen").hidden = item.state !== "cancelled";
    box.hidden = closed && item.state !== "cancelled";
  }

  function answerForm(item) {
    if (item.state !== "needs_human") return null;
    const text = el("textarea", { name: "answer", placeholder: "your answer" });
    const [send, err] = sender(`Answer as ${boot.as}`, async () => {
      if (!text.value.trim()) throw new Error("write the answer first");
      const answered = await api(`/v1/items/${item.id}/answer`, { agent: boot.as, text: text.value.trim() });
      page.place(answered);
      await openItem(answered.id);
    });
    return el("div", { className: "form answer-form" }, el("h4", { text: "Answer the question" }), el("label", { className: "wide" }, text), el("div", { className: "buttons" }, send, err));
  }

  function replyForm(item) {
    const text = el("textarea", { name: "reply", placeholder: "a reply on the thread (@name reaches that agent's inbox)" });
    const [send, err] = sender("Reply", async () => {
      if (!text.value.trim()) throw new Error("write the reply first");
      await api(`/v1/items/${item.id}/replies`, { agent: boot.as, body: text.value });
      await openItem(item.id);
    });
    return el("div", { className: "form reply-form" }, el("h4", { text: "Reply" }), el("label", { className: "wide" }, text), el("div", { className: "buttons" }, send, err));
  }

  page.openItem = (ref) => openItem(ref).catch((error) => {
    page.report(error);
    const note = el("div", { className: "err", role: "alert", text: error.message });
    detail.replaceChildren(note);
    detail.hidden = false;
  });
  page.onEvent = onEvent;
})();
