// The plan of a design document as a drawing (SVG), for the live board's Plan panel.
//
// Drawn at its own size, never shrunk to fit: 12 px text however many packages, the panel
// scrolls. Left to right by depth of dependency; each box holds the package id, who holds it
// or what it waits on, and the whole title, wrapped. One class a box, the legend's words:
// claimable (lit), claimed, needs (a human), landing, waiting, done. Text goes in through
// textContent only: titles are whatever the document says.
"use strict";

(() => {
  // a package's state in the plan, one class each (the legend's words): needs-human is not
  // claimed, and a claim whose lease ran out is claimable again
  function planStatus(item, page) {
    if (item.state === "done" || item.state === "merged") return "done";
    if (item.state === "needs_human") return "needs";
    if (item.state === "queued" || item.state === "needs_rework") return "landing";
    if (item.state === "claimed") return page.lapsed(item) ? "claimable" : "claimed";
    if (item.state === "pending" && item.ready) return "claimable";
    return "waiting";
  }

  // the line under a package's id: who holds it, or what it waits on
  function planWho(item, status, named) {
    if (status === "done") return item.state === "merged" ? "merged" : `done${item.claimed_by ? ` by ${item.claimed_by}` : ""}`;
    if (status === "needs") return `${item.claimed_by} asks a human`;
    if (status === "landing") return item.state === "queued" ? `${item.claimed_by || ""} · landing` : "needs rework";
    if (status === "claimed") return `claimed by ${item.claimed_by}`;
    if (status === "claimable") return item.state === "claimed" ? "claimable again" : "claimable now";
    if (item.blocked_by && item.blocked_by.length) return `waits on ${item.blocked_by.map(named).join(", ")}`;
    if (item.reserved_for) return `reserved for ${item.reserved_for}`;
    if (item.files_held_by && item.files_held_by.length) return `files held by ${item.files_held_by[0].agent}`;
    return item.state;
  }

  // words into lines of at most width characters (a word longer than that is cut in pieces)
  function wrap(text, width) {
    const lines = [];
    let line = "";
    for (let word of String(text).split(/\s+/).filter(Boolean)) {
      while (word.length > width) {
        if (line) lines.push(line);
        lines.push(word.slice(0, width));
        word = word.slice(width);
        line = "";
      }
      if (!line) line = word;
      else if (line.length + 1 + word.length <= width) line += ` ${word}`;
      else {
        lines.push(line);
        line = word;
      }
    }
    if (line) lines.push(line);
    return lines.length ? lines : [""];
  }

  // the plan drawn at its own size (readable text, never shrunk to fit: the panel scrolls),
  // left to right by depth of dependency, each box as tall as its whole title
  function draw(packages, page) {
    const named = page.named;
    const byId = new Map(packages.map((p) => [p.id, p]));
    const layer = new Map();
    const depth = (item, seen = new Set()) => {
      if (layer.has(item.id)) return layer.get(item.id);
      seen.add(item.id);
      let d = 0;
      for (const dep of item.deps) {
        const other = byId.get(dep);
        if (other && !seen.has(dep)) d = Math.max(d, depth(other, seen) + 1);
      }
      layer.set(item.id, d);
      return d;
    };
    packages.forEach((p) => depth(p));
    const layers = [];
    for (const p of packages) (layers[layer.get(p.id)] = layers[layer.get(p.id)] || []).push(p);
    const W = 220, LINE = 16, PAD = 7, GX = 44, GY = 12, CHARS = 28;
    const where = new Map();
    let tall = 0;
    layers.forEach((members, x) => {
      let y = 0;
      members.sort((a, b) => a.id - b.id);
      for (const p of members) {
        const lines = wrap(p.title, CHARS);
        const h = PAD * 2 + LINE * (lines.length + 1);
        where.set(p.id, { x: x * (W + GX), y, h, lines });
        y += h + GY;
      }
      tall = Math.max(tall, y);
    });
    const NS = "http://www.w3.org/2000/svg";
    const make = (tag, attrs) => {
      const node = document.createElementNS(NS, tag);
      for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
      return node;
    };
    const wide = Math.max(1, layers.length * (W + GX) - GX + 4);
    const high = Math.max(1, tall + 4);
    const svg = make("svg", { width: wide, height: high, viewBox: `-2 -2 ${wide} ${high}`, role: "img" });
    const arrow = make("marker", { id: "plan-arrow", viewBox: "0 0 8 8", refX: 8, refY: 4, markerWidth: 7, markerHeight: 7, orient: "auto" });
    arrow.append(make("path", { d: "M0,0 L8,4 L0,8 z", class: "head" }));
    const defs = make("defs", {});
    defs.append(arrow);
    svg.append(defs);
    for (const p of packages) {
      const to = where.get(p.id);
      for (const dep of p.deps) {
        const from = where.get(dep);
        if (!from) continue;
        const x1 = from.x + W, y1 = from.y + from.h / 2, x2 = to.x, y2 = to.y + to.h / 2, bend = GX / 2;
        svg.append(make("path", { class: "edge", d: `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}`, "marker-end": "url(#plan-arrow)" }));
      }
    }
    for (const p of packages) {
      const { x, y, h, lines } = where.get(p.id);
      const status = planStatus(p, page);
      const group = make("g", { class: status, "data-id": p.id });
      group.append(make("rect", { x, y, width: W, height: h, rx: 5 }));
      const head = make("text", { x: x + PAD, y: y + PAD + 12, class: "who" });
      const key = make("tspan", { class: "key" });
      key.textContent = p.key || `#${p.id}`;
      const who = make("tspan", {});
      who.textContent = ` · ${planWho(p, status, named)}`;
      head.append(key, who);
      group.append(head);
      lines.forEach((line, index) => {
        const text = make("text", { x: x + PAD, y: y + PAD + 12 + LINE * (index + 1), class: "name" });
        text.textContent = line;
        group.append(text);
      });
      const tip = make("title", {});
      tip.textContent = `${p.key || "#" + p.id}: ${p.title} (${planWho(p, status, named)})`;
      group.append(tip);
      group.addEventListener("click", () => page.open(p.id));
      svg.append(group);
    }
    return svg;
  }

  globalThis.coordPlan = { draw, planStatus, wrap };
})();
