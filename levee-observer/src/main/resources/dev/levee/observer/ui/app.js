// The observer's live page (issue 14 item 3; docs/stats-page.md). At load, fills its plots from the limiters'
// per-second history (../v1/stats/history: the longest window, 60 s by default; issue 26 item 3); then polls
// ../v1/stats every second, shows the table of `levee top`, keeps the last HISTORY_SECONDS of each entry's rates
// in this page and plots them. Plain DOM and SVG: no library, no inline script or style (CSP 'self').
"use strict";
(function () {
  const POLL_MS = 1000;
  const HISTORY_SECONDS = 300;
  const MAX_PLOTS = 12;
  const SVG = "http://www.w3.org/2000/svg";
  const SERIES = ["offered", "admitted", "refused", "shadow"];
  const NUMERIC = new Set(["offered", "admitted", "refused", "share", "shadow", "limiters"]);

  const state = {
    sortKey: "offered",
    sortDesc: true,
    windowSeconds: null, // the shortest window until one is chosen
    history: new Map(),  // entry key -> {entry, samples: [{t, offered, admitted, refused, shadow} | {t, gap}]}
    polls: 0,
    last: null,
  };

  const $ = (id) => document.getElementById(id);

  // How `levee top` names an entry (TopCommand.entry): bucket "prefix", bucket "prefix" Op, bucket default…
  function entryName(r) {
    switch (String(r.level)) {
      case "prefix": return r.resource + " \"" + r.prefix + "\"";
      case "prefix_method": return r.resource + " \"" + r.prefix + "\" " + r.operation;
      case "resource": return r.resource;
      case "methods_default": return r.resource + " methods_default" + (r.operation == null ? "" : "." + r.operation);
      default: return r.resource + " " + r.level;
    }
  }

  function entryKey(r) {
    return [r.resource, r.level, r.prefix, r.operation].join("\u0000");
  }

  function num(v) {
    if (v < 10000) return v.toFixed(1);
    if (v < 1e8) return v.toFixed(0);
    return (v / 1e6).toFixed(0) + "M";
  }

  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text != null) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  }

  function lineOf(r) {
    const offered = r.offeredPerS || 0;
    const refused = r.refusedPerS || 0;
    return {
      key: entryKey(r), entry: entryName(r), level: String(r.level), offered: offered,
      admitted: r.admittedPerS || 0, refused: refused, share: offered > 0 ? refused / offered : 0,
      shadow: r.wouldRejectPerS || 0, limiters: r.limiters || 0,
    };
  }

  function windows(stats) {
    return (stats.windows || []).slice().sort((a, b) => a.seconds - b.seconds);
  }

  function record(stats, now) {
    const ws = windows(stats);
    const seen = new Set();
    if (ws.length > 0) {
      for (const r of ws[0].rows || []) {
        const l = lineOf(r);
        seen.add(l.key);
        let h = state.history.get(l.key);
        if (!h) {
          h = { entry: l.entry, samples: [] };
          state.history.set(l.key, h);
        }
        h.samples.push({ t: now, offered: l.offered, admitted: l.admitted, refused: l.refused, shadow: l.shadow });
      }
    }
    for (const [key, h] of state.history) {
      if (!seen.has(key)) h.samples.push({ t: now, gap: true }); // out of the top rows or no answer: unknown
      while (h.samples.length > 0 && h.samples[0].t < now - HISTORY_SECONDS * 1000) h.samples.shift();
      if (!h.samples.some((s) => !s.gap)) state.history.delete(key);
    }
  }

  // The server's history as samples of the same kind the polls record: at each past second, the rates over the
  // shortest window ending there (fewer seconds at the history's start, as a young limiter's coveredSeconds).
  function seed(history, now) {
    const n = history.seconds || 0;
    const w = Math.max(1, (history.windows || [])[0] || 1);
    for (const r of history.rows || []) {
      const key = entryKey(r);
      if (n === 0 || state.history.has(key)) continue;
      const samples = [];
      for (let i = 0; i < n; i++) {
        const from = Math.max(0, i - w + 1);
        const span = i - from + 1;
        const sum = (a) => {
          let t = 0;
          for (let j = from; j <= i; j++) t += (a || [])[j] || 0;
          return t / span;
        };
        const offered = sum(r.offered);
        const refused = sum(r.refused);
        samples.push({ t: now - (n - 1 - i) * 1000, offered: offered, admitted: Math.max(0, offered - refused),
          refused: refused, shadow: sum(r.wouldReject), server: true });
      }
      state.history.set(key, { entry: entryName(r), samples: samples });
    }
  }

  async function loadHistory() {
    try {
      const resp = await fetch("../v1/stats/history", { cache: "no-store", headers: { Accept: "application/json" } });
      if (resp.ok) seed(await resp.json(), Date.now());
    } catch (e) {
      // an observer without the history (older) or unreachable: the plots start from the first poll
    }
  }

  function renderSummary(stats) {
    const total = (stats.limiters || []).length;
    $("membership").textContent = stats.answered + "/" + total + " limiters answered (membership rev "
      + stats.membershipRevision + ", factor " + stats.factor + ")";
    const revs = stats.configRevisions || [];
    $("config-revision").textContent = revs.length === 0 ? "–"
      : revs.join(", ") + (revs.length > 1 ? " (the limiters are not all at the same revision)" : "");
    const missing = (stats.limiters || []).filter((l) => !l.answered).map((l) => l.id + " (" + l.error + ")");
    const warn = $("not-answering");
    warn.hidden = missing.length === 0;
    warn.textContent = missing.length === 0 ? "" : "not answering: " + missing.join(", ");

    const sel = $("window");
    const ws = windows(stats);
    const wanted = ws.map((w) => String(w.seconds)).join(",");
    if (sel.dataset.options !== wanted) {
      sel.replaceChildren(...ws.map((w) => {
        const o = el("option", w.seconds + " s");
        o.value = String(w.seconds);
        return o;
      }));
      sel.dataset.options = wanted;
    }
    if (state.windowSeconds == null || !ws.some((w) => w.seconds === state.windowSeconds)) {
      state.windowSeconds = ws.length > 0 ? ws[0].seconds : null;
    }
    if (state.windowSeconds != null) sel.value = String(state.windowSeconds);
  }

  function renderTable(stats) {
    const w = windows(stats).find((x) => x.seconds === state.windowSeconds);
    const body = document.querySelector("#stats tbody");
    const empty = $("empty");
    const lines = w ? (w.rows || []).map(lineOf) : [];
    const k = state.sortKey;
    lines.sort((a, b) => {
      const c = NUMERIC.has(k) ? a[k] - b[k] : String(a[k]).localeCompare(String(b[k]));
      return (state.sortDesc ? -c : c) || a.entry.localeCompare(b.entry);
    });
    body.replaceChildren(...lines.map((l) => {
      const tr = el("tr");
      tr.dataset.entry = l.entry;
      tr.dataset.key = l.key;
      const cells = [
        ["entry", l.entry, "text"], ["level", l.level, "text"], ["offered", num(l.offered)],
        ["admitted", num(l.admitted)], ["refused", num(l.refused), l.refused > 0 ? "refusing" : null],
        ["share", (l.share * 100).toFixed(1) + " %"], ["shadow", num(l.shadow)], ["limiters", String(l.limiters)],
      ];
      for (const [field, text, cls] of cells) {
        const td = el("td", text, cls);
        td.dataset.field = field;
        if (NUMERIC.has(field)) td.dataset.value = String(l[field]);
        tr.appendChild(td);
      }
      return tr;
    }));
    for (const th of document.querySelectorAll("#stats thead th")) {
      if (th.dataset.sort === k) th.setAttribute("aria-sort", state.sortDesc ? "descending" : "ascending");
      else th.removeAttribute("aria-sort");
    }
    empty.hidden = lines.length > 0;
    empty.textContent = !w ? "no statistics (no limiter answered, or statistics are off)"
      : "no traffic in the last " + w.seconds + " s";
    if (w) {
      const covered = Math.max(1, w.coveredSeconds || 0);
      const offered = (w.offered || 0) / covered;
      const refused = (w.refused || 0) / covered;
      $("totals").textContent = "offered " + num(offered) + "/s, refused " + num(refused) + "/s ("
        + (offered > 0 ? (refused / offered * 100).toFixed(1) : "0.0") + " %), shadow "
        + num((w.wouldReject || 0) / covered) + "/s, over " + covered + " s";
    } else {
      $("totals").textContent = "–";
    }
    return lines;
  }

  function renderLimiters(stats) {
    const body = document.querySelector("#limiters tbody");
    body.replaceChildren(...(stats.limiters || []).map((l) => {
      const tr = el("tr");
      tr.dataset.id = l.id;
      tr.append(el("td", l.id, "text"), el("td", l.address, "text"),
        el("td", l.answered ? "yes" : "no: " + l.error, "text"),
        el("td", l.revision == null ? "–" : String(l.revision), "text"));
      return tr;
    }));
  }

  function svg(tag, attrs, text) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
    if (text != null) e.textContent = text;
    return e;
  }

  function niceMax(v) {
    if (v <= 0) return 1;
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 2, 2.5, 5, 10]) if (v <= m * p) return m * p;
    return 10 * p;
  }

  function renderPlots(lines, now) {
    const box = $("plots");
    const keys = lines.map((l) => l.key).filter((k) => state.history.has(k)).slice(0, MAX_PLOTS);
    const present = new Map([...box.children].map((c) => [c.dataset.key, c]));
    // the time axis: from one minute up to HISTORY_SECONDS, in whole minutes, as the history grows
    let oldest = now;
    for (const h of state.history.values()) if (h.samples.length > 0) oldest = Math.min(oldest, h.samples[0].t);
    const span = Math.min(HISTORY_SECONDS, Math.max(60, Math.ceil((now - oldest) / 60000) * 60));
    box.dataset.span = String(span);
    const ordered = [];
    for (const key of keys) {
      let card = present.get(key);
      if (!card) {
        card = el("div", null, "plot");
        card.dataset.key = key;
        card.append(el("div", null, "title"), el("div", null, "now"), svg("svg", { role: "img" }));
      }
      ordered.push(card);
    }
    // in the document before drawing: a new card's width is known only then (it drew 200 px wide at first)
    box.replaceChildren(...ordered);
    for (const card of ordered) drawPlot(card, state.history.get(card.dataset.key), now, span);
    box.dataset.polls = String(state.polls);
  }

  function tick(v) {
    return v >= 10000 ? num(v) : Number.isInteger(v) ? String(v) : v.toFixed(1);
  }

  function drawPlot(card, h, now, span) {
    const width = Math.max(200, card.clientWidth - 10 || 360);
    const height = 120;
    const left = 44;
    const right = 6;
    const top = 8;
    const bottom = 16;
    const pts = h.samples.filter((s) => !s.gap);
    const max = niceMax(Math.max(0, ...pts.map((s) => Math.max(s.offered, s.admitted, s.refused, s.shadow))));
    const x = (t) => left + (width - left - right) * (1 - (now - t) / (span * 1000));
    const y = (v) => top + (height - top - bottom) * (1 - v / max);
    const last = pts[pts.length - 1];
    card.dataset.entry = h.entry;
    card.dataset.samples = String(pts.length);
    card.dataset.serverSamples = String(pts.filter((p) => p.server).length);
    card.dataset.seconds = pts.length > 0 ? String(Math.round((now - pts[0].t) / 1000)) : "0";
    card.dataset.lastOffered = last ? String(last.offered) : "";
    card.querySelector(".title").textContent = h.entry;
    card.querySelector(".title").title = h.entry;
    card.querySelector(".now").textContent = last ? "now: offered " + num(last.offered) + "/s, admitted "
      + num(last.admitted) + "/s, refused " + num(last.refused) + "/s" + (last.shadow > 0 ? ", shadow "
      + num(last.shadow) + "/s" : "") : "";
    const s = card.querySelector("svg");
    s.setAttribute("width", String(width));
    s.setAttribute("height", String(height));
    s.setAttribute("aria-label", "rates of " + h.entry + " over the last " + span / 60 + " minutes");
    const parts = [
      svg("line", { x1: left, y1: y(0), x2: width - right, y2: y(0), class: "axis" }),
      svg("line", { x1: left, y1: top, x2: left, y2: y(0), class: "axis" }),
      svg("text", { x: left - 4, y: top + 8, "text-anchor": "end", class: "tick" }, tick(max)),
      svg("text", { x: left - 4, y: y(0), "text-anchor": "end", class: "tick" }, "0"),
      svg("text", { x: left, y: height - 3, class: "tick" }, "-" + span / 60 + " min"),
      svg("text", { x: width - right, y: height - 3, "text-anchor": "end", class: "tick" }, "now"),
    ];
    for (const series of SERIES) {
      if (series === "shadow" && !pts.some((p) => p.shadow > 0)) continue;
      let d = "";
      let pen = "M";
      for (const p of h.samples) {
        if (p.t < now - span * 1000) continue;
        if (p.gap) {
          pen = "M";
          continue;
        }
        d += pen + x(p.t).toFixed(1) + "," + y(p[series]).toFixed(1) + " ";
        pen = "L";
      }
      const path = svg("path", { d: d.trim(), class: "series " + series });
      path.dataset.series = series;
      parts.push(path);
    }
    s.replaceChildren(...parts);
  }

  function setStatus(kind, text) {
    const st = $("status");
    st.dataset.state = kind;
    st.textContent = text;
  }

  async function poll() {
    const started = Date.now();
    try {
      const resp = await fetch("../v1/stats", { cache: "no-store", headers: { Accept: "application/json" } });
      if (!resp.ok) throw new Error("the observer answered HTTP " + resp.status);
      const stats = await resp.json();
      const now = Date.now();
      state.polls++;
      state.last = stats;
      record(stats, now);
      render(now);
      setStatus("live", "live · updated " + new Date(now).toLocaleTimeString());
    } catch (e) {
      setStatus("error", "observer unreachable: " + e.message + " (retrying every second)");
    }
    setTimeout(poll, Math.max(0, POLL_MS - (Date.now() - started)));
  }

  function render(now) {
    if (!state.last) return;
    renderSummary(state.last);
    const lines = renderTable(state.last);
    renderLimiters(state.last);
    renderPlots(lines, now);
  }

  function init() {
    for (const th of document.querySelectorAll("#stats thead th")) {
      th.addEventListener("click", () => {
        const k = th.dataset.sort;
        if (state.sortKey === k) state.sortDesc = !state.sortDesc;
        else {
          state.sortKey = k;
          state.sortDesc = NUMERIC.has(k);
        }
        render(Date.now());
      });
    }
    $("window").addEventListener("change", (e) => {
      state.windowSeconds = Number(e.target.value);
      render(Date.now());
    });
    loadHistory().then(poll);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
