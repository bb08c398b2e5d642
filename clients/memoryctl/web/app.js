// memoryd's web view: plain DOM, no build step. Memories are untrusted text: they are
// only ever set as textContent, never parsed as HTML.
"use strict";

// The token lives in this page's memory (and this tab's sessionStorage, for a reload),
// never in a cookie: browsers send cookies to every port of 127.0.0.1.
const TOKEN = new URLSearchParams(location.search).get("token")
  || sessionStorage.getItem("memoryd_token") || "";
if (TOKEN) sessionStorage.setItem("memoryd_token", TOKEN);
let ALLOW_EDIT = false;

async function api(method, params = {}) {
  const response = await fetch("/api/" + method, {
    method: "POST", credentials: "same-origin",
    headers: {"Content-Type": "application/json", "X-Memoryd-Token": TOKEN},
    body: JSON.stringify(params),
  });
  const data = await response.json();
  if (!response.ok) throw new Error(data.error ? data.error.message : response.statusText);
  return data.result;
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "onclick") node.addEventListener("click", value);
    else if (key === "class") node.className = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function short(id) { return id ? id.slice(0, 8) : "-"; }
function when(iso) { return iso ? new Date(iso).toLocaleString() : "-"; }
// What a list shows of a memory: its title; a turn's words (its title is its session,
// role and time).
function label(m) {
  return oneLine(m.kind === "turn" || !m.title ? m.content : m.title);
}
function oneLine(text, n = 140) {
  const flat = (text || "").replace(/\s+/g, " ").trim();
  return flat.length > n ? flat.slice(0, n - 1) + "…" : flat;
}
function fail(target, error) {
  target.replaceChildren(el("span", {class: "error"}, error.message || String(error)));
}

function table(target, headers, rows) {
  target.replaceChildren(el("tr", {}, ...headers.map((h) => el("th", {}, h))), ...rows);
}

function by(counts) {
  return Object.entries(counts || {}).sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${v}`).join(", ") || "-";
}

// -- overview, reminders ------------------------------------------------------------
async function loadStats() {
  const counts = document.getElementById("counts");
  try {
    const s = await api("stats");
    document.getElementById("daemon").textContent =
      `memoryd ${s.version} · pid ${s.pid} · ${s.root}`;
    counts.replaceChildren(el("div", {class: "kv"},
      el("b", {}, "memories"), el("span", {id: "total"}, s.memories),
      el("b", {}, "by category"), el("span", {}, by(s.by_category)),
      el("b", {}, "by kind"), el("span", {}, by(s.by_kind)),
      el("b", {}, "by phase"), el("span", {}, by(s.by_phase)),
      el("b", {}, "llm"), el("span", {}, s.llm.configured ? s.llm.endpoint : "none"),
      el("b", {}, "backlog"), el("span", {}, `${s.backlog} turns waiting`)));
    const index = s.index;
    document.getElementById("index").replaceChildren(index ? el("p", {class: index.in_step ? "muted" : "error"},
      (index.in_step ? "index in step: " : "index out of step: ") +
      `${index.files} files, ${index.keyword_rows} keyword rows, ${index.vectors.own || 0} vectors` +
      (index.differs.length ? " — " + index.differs.join("; ") : "")) : "");
    loadProjects(s.by_scope || {});
    const categories = document.getElementById("f-category");
    if (categories.options.length === 1) {
      for (const name of Object.keys(s.by_category).sort()) categories.append(el("option", {}, name));
    }
    const r = s.reminders;
    const list = (items) => el("ul", {}, ...items.map((m) => el("li", {},
      el("a", {class: "link", onclick: () => showMemory(m.id)}, when(m.due_at)), " ", m.content)));
    document.getElementById("reminders").replaceChildren(
      el("h3", {}, `Due (${r.due.length})`), r.due.length ? list(r.due) : el("p", {class: "muted"}, "nothing is due"),
      el("h3", {}, "Next"), r.upcoming.length ? list(r.upcoming) : el("p", {class: "muted"}, "none set"));
  } catch (error) { fail(counts, error); }
}

// -- recent memories with filters ----------------------------------------------------
const PAGE = 50;
let pageStart = 0;  // the offset of the page of memories shown

async function loadMemories(offset = 0) {
  const target = document.getElementById("memories");
  pageStart = Math.max(0, offset);
  const params = {limit: PAGE, offset: pageStart,
    order: document.getElementById("f-order").value};
  const category = document.getElementById("f-category").value;
  const phase = document.getElementById("f-phase").value;
  const tags = document.getElementById("f-tags").value.split(",").map((t) => t.trim()).filter(Boolean);
  const source = document.getElementById("f-source").value.trim();
  if (category) params.category = category;
  if (phase) params.phase = phase;
  if (tags.length) params.tags = tags;
  if (source) params.source = source;
  try {
    const result = await api("memory_list", params);
    table(target, ["id", "scope", "category", "created", "tags", "title"], result.memories.map((m) =>
      el("tr", {class: "clickable memory-row", onclick: () => showMemory(m.id)},
        el("td", {}, short(m.id)), el("td", {class: "scope"}, m.scope), el("td", {}, m.category),
        el("td", {}, when(m.created_at)),
        el("td", {}, (m.tags || []).join(", ")), el("td", {}, label(m)))));
    const last = Math.min(pageStart + result.memories.length, result.total);
    document.getElementById("page-info").textContent =
      result.total ? `${pageStart + 1}–${last} of ${result.total}` : "none";
    document.getElementById("page-prev").disabled = pageStart === 0;
    document.getElementById("page-next").disabled = last >= result.total;
  } catch (error) { fail(target, error); }
}

// -- search: memory_explain's whole trace ---------------------------------------------
async function search(query) {
  const target = document.getElementById("trace");
  const summary = document.getElementById("search-summary");
  try {
    const r = await api("memory_explain", {query});
    const stages = Object.entries(r.timings_ms).map(([k, v]) => `${k} ${v} ms`).join(", ");
    summary.textContent = `${r.searched} memories searched (${r.mode}), reranker ` +
      `${r.reranker ? "on" : "off"}, ${r.candidates.length} candidates; ${stages}`;
    const score = (v) => (typeof v === "number" ? v.toFixed(3) : "-");
    table(target, ["rank", "id", "lexical", "dense", "relevance", "score", "why", "content"],
      r.candidates.map((c) => el("tr", {class: "clickable candidate " + (c.kept ? "kept" : "dropped"),
          onclick: () => showMemory(c.id)},
        el("td", {}, c.rank || "-"), el("td", {}, short(c.id)), el("td", {}, score(c.scores.lexical)),
        el("td", {}, score(c.scores.dense)), el("td", {}, score(c.scores.relevance)),
        el("td", {}, score(c.scores.score)), el("td", {class: "reason"}, c.reason),
        el("td", {}, oneLine(c.content)))));
  } catch (error) { fail(summary, error); target.replaceChildren(); }
}

// -- one memory: its file, links, history ---------------------------------------------
async function showMemory(id) {
  const target = document.getElementById("detail");
  try {
    const [m, back, history] = await Promise.all([
      // Looking at a memory here is not using it: no access counted (decay, upgrade).
      api("memory_read", {id, count_access: false}), api("memory_backlinks", {id}),
      api("memory_history", {id})]);
    const fields = ["id", "kind", "phase", "category", "type", "scope", "session", "role",
      "tags", "source", "source_path", "importance", "created_at", "updated_at", "due_at",
      "expires_at", "access_count", "version"];
    const kv = el("div", {class: "kv", id: "memory-fields"});
    for (const key of fields) {
      const value = m[key];
      if (value === null || value === undefined || (Array.isArray(value) && !value.length)) continue;
      kv.append(el("b", {}, key), el("span", {}, Array.isArray(value) ? value.join(", ") : value));
    }
    const graph = await linkGraph(m);
    const links = (ids) => ids.length ? el("ul", {}, ...ids.map((other) =>
      el("li", {}, el("a", {class: "link", onclick: () => showMemory(other)},
        graph.titles[other] || short(other))))) :
      el("p", {class: "muted"}, "none");
    const versions = el("ol", {});
    for (const v of history.versions) {
      const item = el("li", {}, `${when(v.updated_at)} v${v.version} ${v.event}${v.current ? " (current)" : ""}: `,
        oneLine(v.content, 200));
      for (const rev of v.revisions || []) {
        const diff = el("pre", {});
        for (const line of rev.diff.split("\n")) {
          diff.append(el("span", {class: line.startsWith("+") ? "diff-add" : line.startsWith("-") ? "diff-del" : ""},
            line + "\n"));
        }
        item.append(el("div", {class: "muted"}, `commit ${rev.commit.slice(0, 12)} ${when(rev.date)} ${rev.message}`), diff);
      }
      versions.append(item);
    }
    const named = (m.entities || []).length ? el("p", {id: "memory-entities"},
      ...m.entities.flatMap((name, i) => [i ? ", " : "",
        el("a", {class: "link", onclick: () => showEntity(name)}, name)])) :
      el("p", {class: "muted"}, "none");
    const parts = [el("h2", {id: "memory-title"}, m.title || short(m.id)), kv,
      el("h3", {}, "Content"), el("pre", {id: "memory-content"}, m.content),
      el("h3", {}, "Entities"), named,
      el("h3", {}, "Links"), links(m.links || []),
      ...(m.links && m.links.length ? [graph.svg] : []),
      el("h3", {}, "Linked from"), links(back.memories.map((b) => b.id)),
      el("h3", {}, history.git ? "History (git)" : "History"), versions,
      el("h3", {}, "Versions side by side"), sideBySide(history.versions)];
    if (ALLOW_EDIT) parts.push(editor(m));
    target.replaceChildren(...parts);
  } catch (error) { fail(target, error); }
  reveal();
}

function editor(m) {
  const area = el("textarea", {rows: "6", cols: "70"});
  area.value = m.content;
  const save = el("button", {onclick: async () => {
    try { await api("memory_update", {id: m.id, content: area.value, version: m.version}); showMemory(m.id); loadMemories(); }
    catch (error) { alert(error.message); }
  }}, "Save");
  const remove = el("button", {onclick: async () => {
    if (!confirm("Move this memory to the trash?")) return;
    try { await api("memory_delete", {id: m.id}); document.getElementById("detail").textContent = "Deleted (in trash/)."; loadMemories(); }
    catch (error) { alert(error.message); }
  }}, "Delete");
  return el("div", {}, el("h3", {}, "Edit"), area, el("div", {}, save, " ", remove));
}

// -- entities: who and what the memories name -----------------------------------------
async function loadEntities() {
  const target = document.getElementById("entities");
  try {
    const r = await api("memory_entities", {limit: 100});
    table(target, ["entity", "memories", "first", "last", "may be short for"], r.entities.map((e) =>
      el("tr", {class: "clickable entity-row", onclick: () => showEntity(e.name)},
        el("td", {}, e.name), el("td", {}, e.memories), el("td", {}, when(e.first)),
        el("td", {}, when(e.last)), el("td", {}, e.aliases.join(", ") || "-"))));
  } catch (error) { fail(target, error); }
}

async function showEntity(name) {
  const target = document.getElementById("detail");
  try {
    const r = await api("memory_entities", {name});
    if (!r.entities.length) {
      target.replaceChildren(el("p", {class: "muted"}, `No memory names ${name}.`));
      return;
    }
    const e = r.entities[0];
    const beside = r.beside.length ? el("ul", {}, ...r.beside.map((b) => el("li", {},
      el("a", {class: "link", onclick: () => showEntity(b.name)}, b.name), ` (${b.memories})`))) :
      el("p", {class: "muted"}, "nothing");
    target.replaceChildren(
      el("h3", {id: "entity-name"}, e.name),
      el("p", {}, `${e.memories} memor${e.memories === 1 ? "y" : "ies"}, ${when(e.first)} to ${when(e.last)}` +
        (e.aliases.length ? `; may be short for ${e.aliases.join(", ")}` : "")),
      el("ol", {id: "entity-memories"}, ...r.memories.map(overTime)),
      el("h3", {}, "Named beside it"), beside);
  } catch (error) { fail(target, error); }
  reveal();
}

// One line of a timeline: when, what; a fact a newer one replaced struck through.
function overTime(m) {
  return el("li", {class: m.superseded_at ? "superseded" : ""},
    el("a", {class: "link", onclick: () => showMemory(m.id)}, when(m.created_at)), " ",
    oneLine(m.content, 200),
    m.superseded_at ? el("span", {class: "muted"}, ` (superseded ${when(m.superseded_at)})`) : "");
}

// What a click on a list opens (a memory, an entity, a project) is shown where the user
// is looking: the detail section scrolled into view, not far up the page.
function reveal() {
  document.getElementById("detail-section").scrollIntoView({block: "start"});
}

// -- projects: a project's facts over time --------------------------------------------
function loadProjects(byScope) {
  const target = document.getElementById("projects");
  const scopes = Object.keys(byScope).filter((s) => s.startsWith("project:")).sort();
  target.replaceChildren(scopes.length ? el("ul", {}, ...scopes.map((scope) => el("li", {},
    el("a", {class: "link project-link", onclick: () => showProject(scope)}, scope),
    ` (${byScope[scope]})`))) : el("p", {class: "muted"},
    "No project memory yet (memoryctl hooks install … remembers coding sessions)."));
}

// What the project's facts said over time, oldest first, the replaced ones struck through.
async function showProject(scope) {
  const target = document.getElementById("detail");
  try {
    const r = await api("memory_list", {scope, kind: "fact", order: "oldest", replaced: true,
      limit: 200});
    target.replaceChildren(el("h3", {id: "project-name"}, scope),
      el("p", {}, `${r.total} current fact${r.total === 1 ? "" : "s"}, with what they replaced`),
      el("ol", {id: "project-facts"}, ...r.memories.map(overTime)));
  } catch (error) { fail(target, error); }
  reveal();
}

// -- the topic graph ------------------------------------------------------------------
async function loadTopics() {
  const svg = document.getElementById("topics");
  const summary = document.getElementById("topics-summary");
  try {
    const g = await api("graph/topics");
    summary.textContent = `${g.nodes.length} topics, ${g.edges.length} co_occurs edges` +
      (g.truncated ? " (the largest shown)" : "");
    svg.replaceChildren();
    const place = onCircle(g.nodes.map((node) => node.id), 300, 210, 170);
    const heaviest = Math.max(1, ...g.edges.map((e) => e.weight));
    for (const e of g.edges) {
      const [x1, y1] = place[e.source], [x2, y2] = place[e.target];
      svg.append(make("line", {x1, y1, x2, y2, stroke: "#9aa7c2",
        "stroke-width": 0.5 + 3 * e.weight / heaviest, class: "edge"}));
    }
    const largest = Math.max(1, ...g.nodes.map((node) => node.members));
    for (const node of g.nodes) {
      const [x, y] = place[node.id];
      const circle = make("circle", {cx: x, cy: y, r: 4 + 14 * Math.sqrt(node.members / largest),
        fill: "#2f6fde", "fill-opacity": 0.7, class: "node"});
      const title = make("title", {});
      title.textContent = `${node.label} (${node.members} episodes, ${node.scope})`;
      circle.append(title);
      const label = make("text", {x: x + 8, y: y - 8});
      label.textContent = oneLine(node.label, 28);
      svg.append(circle, label);
    }
  } catch (error) { fail(summary, error); }
}

// -- the link graph of the whole store -----------------------------------------------
// The most linked memories, grouped by category around the circle (within one, in id
// order: the hubs spread out instead of crowding one arc); the 20 with the most links
// are labelled (more would hide each other), every node names itself on hover.
const LABELLED = 20;
async function loadLinks() {
  const svg = document.getElementById("links");
  const summary = document.getElementById("links-summary");
  try {
    const g = await api("graph/links");
    summary.textContent = g.nodes.length
      ? `${g.linked} linked memories, ${g.edges.length} links shown` +
        (g.truncated ? ` (the ${g.nodes.length} most linked)` : "")
      : "No memory links to another yet.";
    svg.replaceChildren();
    const grouped = [...g.nodes].sort((a, b) =>
      a.category.localeCompare(b.category) || a.id.localeCompare(b.id));
    const place = onCircle(grouped.map((node) => node.id), 300, 210, 180);
    for (const e of g.edges) {
      const [x1, y1] = place[e.source], [x2, y2] = place[e.target];
      svg.append(make("line", {x1, y1, x2, y2, stroke: "#9aa7c2", class: "edge"}));
    }
    const most = Math.max(1, ...g.nodes.map((node) => node.links));
    const labelled = new Set(g.nodes.slice(0, LABELLED).map((node) => node.id));
    for (const node of grouped) {
      const [x, y] = place[node.id];
      const circle = make("circle", {cx: x, cy: y, r: 2 + 9 * Math.sqrt(node.links / most),
        fill: categoryColour(node.category), "fill-opacity": 0.8, class: "node store-link"});
      const title = make("title", {});
      title.textContent = `${node.title} (${node.category}, ${node.links} links)`;
      circle.append(title);
      circle.addEventListener("click", () => showMemory(node.id));
      svg.append(circle);
      if (labelled.has(node.id)) {
        const outward = x >= 300;  // labels point away from the circle's middle
        const label = make("text", {x: x + (outward ? 8 : -8), y: y + (y >= 210 ? 12 : -6),
          "text-anchor": outward ? "start" : "end", class: "link-label"});
        label.textContent = oneLine(node.title, 22);
        svg.append(label);
      }
    }
  } catch (error) { fail(summary, error); }
}
function categoryColour(category) {
  let hash = 0;
  for (const ch of category) hash = (hash * 31 + ch.charCodeAt(0)) % 360;
  return `hsl(${hash}, 55%, 45%)`;
}

// -- drawing ----------------------------------------------------------------------------
function make(tag, attrs) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  return node;
}
// Nodes on a circle, in the order given (the first on the right): readable without
// physics. A lone node goes in the middle unless something else is there (`centred`).
function onCircle(ids, cx, cy, radius, centred = false) {
  const place = {};
  ids.forEach((id, i) => {
    const angle = (2 * Math.PI * i) / Math.max(ids.length, 1);
    const r = ids.length > 1 || centred ? radius : 0;
    place[id] = [cx + r * Math.cos(angle), cy + r * Math.sin(angle)];
  });
  return place;
}

// A memory's links two steps out (at most LINKED memories), drawn around it.
const LINKED = 30;
async function linkGraph(m) {
  const nodes = new Map([[m.id, m]]);
  const edges = [];
  let frontier = [m];
  for (let step = 0; step < 2 && nodes.size < LINKED; step++) {
    const next = [];
    for (const from of frontier) {
      for (const to of from.links || []) {
        if (!nodes.has(to) && nodes.size < LINKED) {
          try { nodes.set(to, await api("memory_read", {id: to, count_access: false})); }
          catch (error) { continue; }  // deleted meanwhile
          next.push(nodes.get(to));
        }
        if (nodes.has(to)) edges.push([from.id, to]);  // both ends list it: drawn once
      }
    }
    frontier = next;
  }
  const svg = make("svg", {id: "link-graph", viewBox: "0 0 600 360", role: "img",
    "aria-label": "link graph"});
  const others = [...nodes.keys()].filter((id) => id !== m.id);
  const place = {...onCircle(others, 300, 180, 140, true), [m.id]: [300, 180]};
  const drawn = new Set();
  for (const [a, b] of edges) {
    const key = a < b ? `${a} ${b}` : `${b} ${a}`;
    if (drawn.has(key)) continue;
    drawn.add(key);
    const [x1, y1] = place[a], [x2, y2] = place[b];
    svg.append(make("line", {x1, y1, x2, y2, stroke: "#9aa7c2", class: "edge"}));
  }
  for (const [id, node] of nodes) {
    const [x, y] = place[id];
    const circle = make("circle", {cx: x, cy: y, r: id === m.id ? 9 : 6,
      fill: id === m.id ? "#de6f2f" : "#2f6fde", "fill-opacity": 0.8, class: "node link-node"});
    circle.addEventListener("click", () => showMemory(id));
    const text = make("text", {x: x + 9, y: y - 9});
    text.textContent = oneLine(node.title || short(id), 28);
    svg.append(circle, text);
  }
  return {svg, titles: Object.fromEntries([...nodes].map(([id, n]) => [id, n.title]))};
}

// The versions of a memory next to each other, oldest on the left.
function sideBySide(versions) {
  if (versions.length < 2) return el("p", {class: "muted"}, "one version");
  return el("div", {class: "side-by-side"}, el("table", {id: "versions-side", class: "data"},
    el("tr", {}, ...versions.map((v) => el("th", {},
      `${when(v.created_at)} ${v.event}${v.current ? " (current)" : ""}`))),
    el("tr", {}, ...versions.map((v) => el("td", {}, el("pre", {}, v.content))))));
}

// -- jobs -----------------------------------------------------------------------------
async function loadJobs() {
  const target = document.getElementById("jobs");
  try {
    const {jobs} = await api("jobs/list");
    table(target, ["job", "trigger", "last run", "next run", "changed", "error"], jobs.map((j) => {
      const last = j.last_result || {};
      return el("tr", {}, el("td", {}, j.name), el("td", {}, j.trigger), el("td", {}, when(j.last_run)),
        el("td", {}, when(j.next_run)), el("td", {}, last.changes ?? "-"), el("td", {class: "error"}, last.error || ""));
    }));
  } catch (error) { fail(target, error); }
}

document.addEventListener("DOMContentLoaded", async () => {
  if (TOKEN) history.replaceState(null, "", "/");  // out of the address bar and history
  let categories = [];
  try { ({allow_edit: ALLOW_EDIT, categories} = await api("config")); }
  catch (error) { ALLOW_EDIT = false; }
  const choices = document.getElementById("new-category");
  for (const name of categories.filter((c) => c !== "inbox")) choices.append(el("option", {}, name));
  document.getElementById("mode").textContent = ALLOW_EDIT ? "editing allowed" : "read-only";
  document.getElementById("search-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const query = document.getElementById("search").value.trim();
    if (query) search(query);
  });
  document.getElementById("page-prev").addEventListener("click", () => loadMemories(pageStart - PAGE));
  document.getElementById("page-next").addEventListener("click", () => loadMemories(pageStart + PAGE));
  const create = document.getElementById("create-form");
  create.hidden = !ALLOW_EDIT;
  create.addEventListener("submit", async (event) => {
    event.preventDefault();
    const content = document.getElementById("new-content").value.trim();
    const category = document.getElementById("new-category").value;
    if (!content) return;
    try {
      const made = await api("memory_write", category ? {content, category} : {content});
      document.getElementById("new-content").value = "";
      await loadMemories(0);
      showMemory(made.id);
    } catch (error) { fail(document.getElementById("detail"), error); }
  });
  document.getElementById("filters").addEventListener("submit", (event) => {
    event.preventDefault();
    loadMemories();
  });
  await Promise.all([loadStats(), loadMemories(), loadEntities(), loadLinks(), loadTopics(),
    loadJobs()]);
  document.body.dataset.loaded = "yes";
});
