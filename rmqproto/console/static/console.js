// The rmqproto console: draws each snapshot pushed on /events (docs/observability.md).
"use strict";

const COLOURS = ["#2563eb", "#d97706", "#059669", "#7c3aed", "#db2777", "#0891b2"];
const SVG = "http://www.w3.org/2000/svg";

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value !== null && value !== undefined) node.setAttribute(name, value);
  }
  for (const child of children) {
    node.append(child instanceof Node ? child : document.createTextNode(child === null || child === undefined ? "—" : String(child)));
  }
  return node;
}

function svg(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, value);
  return node;
}

function num(value) {
  return el("td", {class: "num"}, value === null || value === undefined ? "—" : Number(value).toLocaleString("en"));
}

function fill(id, rows) {
  document.getElementById(id).replaceChildren(...rows);
}

function showView() {
  const wanted = (location.hash || "#cluster").slice(1);
  for (const section of document.querySelectorAll(".view")) {
    section.classList.toggle("current", section.id === "view-" + wanted);
  }
  for (const link of document.querySelectorAll("nav a")) {
    link.classList.toggle("current", link.dataset.view === wanted);
  }
}

function drawBrokers(snapshot) {
  fill("brokers", snapshot.brokers.map(b => el("tr", {"data-broker": b.address, "data-role": b.role},
    el("td", {}, b.cluster), el("td", {}, b.name), num(b.id), el("td", {}, b.role),
    el("td", {}, b.address), el("td", {}, b.version))));
}

function drawTopics(snapshot) {
  const rows = [];
  for (const topic of snapshot.topics) {
    for (const q of topic.queues) {
      rows.push(el("tr", {"data-topic": topic.topic},
        el("td", {}, topic.topic), el("td", {}, q.broker), num(q.queueId), num(q.minOffset), num(q.maxOffset)));
    }
  }
  fill("topics", rows);
}

function drawGroups(snapshot) {
  fill("groups", snapshot.groups.map(g => el("tr", {"data-group": g.group, "data-lag": g.lag},
    el("td", {}, g.group), num(g.queues), num(g.lag), num(g.tps.toFixed(1)))));
}

// A line per series over the last minutes: series are [[time ms, value], ...].
function chart(series, now, marks) {
  const width = 640, height = 160, pad = 30;
  const start = Math.min(now - 60000, ...series.flatMap(s => s.points.map(p => p[0])));
  const top = Math.max(1, ...series.flatMap(s => s.points.map(p => p[1])));
  const x = t => pad + (width - 2 * pad) * (t - start) / Math.max(1, now - start);
  const y = v => height - pad + (2 * pad - height) * v / top;
  const box = svg("svg", {class: "chart", width: width, height: height, viewBox: `0 0 ${width} ${height}`});
  box.append(svg("line", {x1: pad, y1: height - pad, x2: width - pad, y2: height - pad, stroke: "#aab"}));
  const label = svg("text", {x: 2, y: pad - 8});
  label.textContent = top.toLocaleString("en");
  box.append(label);
  for (const mark of marks || []) {
    box.append(svg("line", {class: "election", x1: x(mark.time), y1: pad, x2: x(mark.time), y2: height - pad}));
  }
  series.forEach((s, i) => {
    box.append(svg("polyline", {stroke: COLOURS[i % COLOURS.length],
      points: s.points.map(p => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(" ")}));
  });
  return box;
}

function drawReplication(snapshot) {
  const blocks = [];
  for (const master of snapshot.ha) {
    const rows = master.slaves.map(s => el("tr", {"data-slave": s.address, "data-lag": s.lagBytes,
        "data-in-sync": String(s.inSync === true), "data-connected": String(s.connected)},
      el("td", {}, s.address), num(s.ackOffset), num(s.lagBytes),
      el("td", {class: s.inSync ? "ok" : "bad"}, s.inSync ? "in sync" : (s.connected ? "behind" : "not connected"))));
    const legend = el("div", {class: "legend"}, ...master.slaves.map((s, i) =>
      el("span", {style: "color:" + COLOURS[i % COLOURS.length]}, "— " + s.address)));
    blocks.push(el("div", {"data-master": master.broker},
      el("h3", {}, `${master.broker} (master ${master.master}, max offset ${master.maxOffset.toLocaleString("en")})`),
      el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "Slave"), el("th", {}, "Ack offset"),
        el("th", {}, "Lag (bytes)"), el("th", {}, "State"))), el("tbody", {}, ...rows)),
      chart(master.slaves.map(s => ({points: s.series})), snapshot.time), legend));
  }
  if (!blocks.length) blocks.push(el("p", {}, "No master reports slaves."));
  document.getElementById("ha").replaceChildren(...blocks);
}

function drawDLedger(snapshot) {
  const blocks = [];
  for (const group of snapshot.dledger) {
    const rows = group.members.map(m => el("tr", {"data-member": m.id, "data-role": m.role},
      el("td", {}, m.id), el("td", {}, m.address), el("td", {class: m.role === "UNREACHABLE" ? "bad" : ""}, m.role),
      num(m.term), num(m.ledgerEnd), num(m.committed), num(m.waterMark)));
    const elections = group.elections.map(e => el("li", {}, `${new Date(e.time).toLocaleTimeString("en-GB")}: term ${e.term}, leader ${e.leader}`));
    blocks.push(el("div", {"data-group": group.group, "data-leader": group.leader, "data-term": group.term},
      el("h3", {}, "Group ", group.group, ": leader ", el("span", {class: "leader"}, group.leader),
        ", term ", el("span", {class: "term"}, group.term)),
      el("table", {}, el("thead", {}, el("tr", {}, ...["Member", "Address", "Role", "Term", "Ledger end",
        "Committed", "Water mark"].map(h => el("th", {}, h)))), el("tbody", {}, ...rows)),
      chart([], snapshot.time, group.elections),
      el("ul", {class: "elections"}, ...elections)));
  }
  if (!blocks.length) blocks.push(el("p", {}, "No DLedger group is known here."));
  document.getElementById("dledger").replaceChildren(...blocks);
}

// The ACL admin's actions (rmqproto/console/actions.py): signed in with HTTP Basic.
let credentials = null;

async function call(path, body) {
  const answer = await fetch(path, {method: body ? "POST" : "GET", body: body ? JSON.stringify(body) : undefined,
    headers: {"Authorization": "Basic " + btoa(credentials.join(":")), "Content-Type": "application/json"}});
  const result = await answer.json();
  return {ok: answer.ok, result: result};
}

function showResult(form, ok, text) {
  const span = form.querySelector(".result");
  span.className = "result " + (ok ? "ok" : "bad");
  span.textContent = text;
}

document.getElementById("signin").addEventListener("submit", async event => {
  event.preventDefault();
  credentials = [document.getElementById("access-key").value, document.getElementById("secret-key").value];
  const {result} = await call("api/session");
  const ok = result.admin === true;
  document.getElementById("who").textContent = ok ? "admin " + result.accessKey : result.error;
  document.body.dataset.admin = String(ok);
  for (const form of document.querySelectorAll("form.admin")) form.hidden = !ok;
});

document.getElementById("create-topic").addEventListener("submit", async event => {
  event.preventDefault();
  const form = event.target;
  const {ok, result} = await call("api/topics", {topic: document.getElementById("new-topic").value,
    queues: Number(document.getElementById("new-topic-queues").value)});
  showResult(form, ok, ok ? `created ${result.topic} on ${result.brokers.join(", ")}` : result.error);
});

document.getElementById("reset-offset").addEventListener("submit", async event => {
  event.preventDefault();
  const form = event.target;
  const when = document.getElementById("reset-time").value;
  const {ok, result} = await call("api/offsets", {group: document.getElementById("reset-group").value,
    topic: document.getElementById("reset-topic").value, timestamp: when ? new Date(when).getTime() : 0});
  showResult(form, ok, ok ? `${result.queues} queue(s) reset (consumers ${result.consumers})` : result.error);
});

function draw(snapshot) {
  document.getElementById("signin").hidden = !snapshot.acl;
  drawBrokers(snapshot);
  drawTopics(snapshot);
  drawGroups(snapshot);
  drawReplication(snapshot);
  drawDLedger(snapshot);
  fill("errors", snapshot.errors.map(e => el("li", {}, e)));
  const status = document.getElementById("status");
  status.textContent = "updated " + new Date(snapshot.time).toLocaleTimeString("en-GB");
  document.body.dataset.updated = String(snapshot.time);
}

window.addEventListener("hashchange", showView);
showView();
const events = new EventSource("events");
events.onmessage = message => draw(JSON.parse(message.data));
events.onerror = () => { document.getElementById("status").textContent = "reconnecting…"; };
