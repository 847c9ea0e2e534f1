// Sealtrail dashboard script: loads log data through the project's /api (the public
// API's read routes, with the signed-in member's role) and checks proofs and
// signatures in the browser with Web Crypto (SHA-256, Ed25519). No dependencies.
"use strict";

const base = document.body.dataset.base || "";

function hexToBytes(hex) {
  if (typeof hex !== "string" || hex.length % 2 !== 0 || /[^0-9a-f]/.test(hex)) throw new Error("bad hex: " + hex);
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.substr(2 * i, 2), 16);
  return out;
}

function bytesToHex(b) {
  return Array.from(new Uint8Array(b), (x) => x.toString(16).padStart(2, "0")).join("");
}

async function sha256(...parts) {
  const len = parts.reduce((n, p) => n + p.length, 0);
  const buf = new Uint8Array(len);
  let off = 0;
  for (const p of parts) { buf.set(p, off); off += p.length; }
  return new Uint8Array(await crypto.subtle.digest("SHA-256", buf));
}

// rootFromInclusion recomputes a Merkle root from a leaf hash and its RFC 6962
// inclusion proof (the algorithm of RFC 9162, section 2.1.3.2).
async function rootFromInclusion(leafHash, index, size, path) {
  if (index >= size) throw new Error("leaf index " + index + " is not below the tree size " + size);
  let fn = index, sn = size - 1, r = leafHash;
  const one = new Uint8Array([1]);
  for (const p of path) {
    if (sn === 0) throw new Error("proof is too long");
    if (fn % 2 === 1 || fn === sn) {
      r = await sha256(one, p, r);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) { fn = Math.floor(fn / 2); sn = Math.floor(sn / 2); }
      }
    } else {
      r = await sha256(one, r, p);
    }
    fn = Math.floor(fn / 2); sn = Math.floor(sn / 2);
  }
  if (sn !== 0) throw new Error("proof is too short");
  return r;
}

// jcs is RFC 8785 canonical JSON for the objects the service signs (strings, integers,
// booleans, null, nested objects): ECMAScript serialization with sorted keys.
function jcs(v) {
  if (v === null || typeof v !== "object") return JSON.stringify(v);
  if (Array.isArray(v)) return "[" + v.map(jcs).join(",") + "]";
  return "{" + Object.keys(v).sort().map((k) => JSON.stringify(k) + ":" + jcs(v[k])).join(",") + "}";
}

// verifySigned checks obj.signature (hex Ed25519) over the JCS of obj without it.
async function verifySigned(obj, publicKeyHex) {
  const body = Object.assign({}, obj);
  delete body.signature;
  const key = await crypto.subtle.importKey("raw", hexToBytes(publicKeyHex), { name: "Ed25519" }, false, ["verify"]);
  return crypto.subtle.verify({ name: "Ed25519" }, key, hexToBytes(obj.signature), new TextEncoder().encode(jcs(body)));
}

async function api(path) {
  const res = await fetch(base + "/api" + path, { credentials: "same-origin", headers: { Accept: "application/json" } });
  const body = await res.json().catch(() => ({ error: "HTTP " + res.status }));
  if (!res.ok) throw new Error(body.error || "HTTP " + res.status);
  return body;
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(c == null ? "" : String(c)));
  return e;
}

function result(node, ok, text) {
  node.textContent = text;
  node.className = ok ? "ok" : "bad";
}

// heads shows both streams' signed tree heads, each signature checked here.
async function loadHeads(node) {
  const table = el("table", { id: "heads-table" },
    el("thead", {}, el("tr", {}, el("th", {}, "Stream"), el("th", {}, "Size"), el("th", {}, "Root hash"), el("th", {}, "Signed at"), el("th", {}, "Signature"))));
  const tbody = el("tbody");
  table.append(tbody);
  node.append(table);
  for (const stream of ["events", "project-audit"]) {
    try {
      const { sth, servicePublicKey } = await api("/root?stream=" + stream);
      const ok = await verifySigned(sth, servicePublicKey);
      const sig = el("td", { class: ok ? "ok" : "bad" }, ok ? "valid (Ed25519, service key " + servicePublicKey.slice(0, 16) + "…)" : "INVALID");
      tbody.append(el("tr", { "data-stream": stream }, el("td", {}, stream), el("td", {}, sth.treeSize), el("td", {}, el("code", {}, sth.rootHash)), el("td", {}, sth.timestamp), sig));
    } catch (e) {
      tbody.append(el("tr", {}, el("td", {}, stream), el("td", { colspan: "4", class: "bad" }, e.message)));
    }
  }
}

async function loadAnchors(node) {
  try {
    const { heads } = await api("/anchors?stream=events");
    if (heads.length === 0) { node.append(el("p", { id: "no-anchors" }, "No tree heads recorded yet: not yet anchored.")); return; }
    const tbody = el("tbody");
    for (const h of heads) {
      tbody.append(el("tr", {}, el("td", {}, h.treeSize), el("td", {}, el("code", {}, h.rootHash)), el("td", {}, h.timestamp),
        el("td", {}, h.anchorType ? h.anchorType + " " + h.anchorRef + " (" + h.anchoredAt + ")" : "not yet anchored")));
    }
    node.append(el("table", { id: "anchors-table" }, el("thead", {}, el("tr", {}, el("th", {}, "Size"), el("th", {}, "Root hash"), el("th", {}, "Time"), el("th", {}, "Anchor"))), tbody));
  } catch (e) {
    node.append(el("p", { class: "bad" }, e.message));
  }
}

// The event browser: the page's query string is passed to /events as is.
function eventBrowser() {
  const table = document.getElementById("events");
  if (!table) return;
  const tbody = table.querySelector("tbody");
  const status = document.getElementById("events-status");
  const more = document.getElementById("more");
  const selectable = !!document.getElementById("create-hold");
  const params = new URLSearchParams(location.search);
  for (const [k, v] of Array.from(params.entries())) if (v === "") params.delete(k);
  let shown = 0;
  const load = async (cursor) => {
    const q = new URLSearchParams(params);
    if (cursor) q.set("cursor", cursor);
    try {
      const body = await api("/events?" + q.toString());
      for (const ev of body.events) {
        const row = el("tr", { "data-id": ev.id, class: "event" });
        if (selectable) {
          const cb = el("input", { type: "checkbox", name: "event", value: ev.id, class: "select" });
          cb.addEventListener("click", (e) => e.stopPropagation());
          row.append(el("td", {}, cb));
        }
        row.append(el("td", {}, ev.sequence), el("td", {}, ev.timestamp), el("td", { class: "action" }, ev.action), el("td", {}, ev.status || ""),
          el("td", {}, ev.actor ? ev.actor.type + ":" + ev.actor.id : ""), el("td", {}, ev.target ? ev.target.type + ":" + ev.target.id : ""),
          el("td", {}, el("code", {}, ev.id)));
        row.addEventListener("click", () => showEvent(ev));
        tbody.append(row);
        shown++;
      }
      status.textContent = shown + " event" + (shown === 1 ? "" : "s") + " shown, newest first.";
      status.className = "hint";
      more.hidden = !body.nextCursor;
      more.onclick = () => load(body.nextCursor);
    } catch (e) {
      status.textContent = e.message;
      status.className = "bad";
    }
  };
  load("");
}

let current = null;

function showEvent(ev) {
  current = ev;
  document.getElementById("detail").hidden = false;
  document.getElementById("detail-id").textContent = ev.id;
  document.getElementById("detail-json").textContent = JSON.stringify(ev, null, 2);
  document.getElementById("proof-result").textContent = "";
}

// checkProof checks the shown event's inclusion proof against a signed tree head.
async function checkProof() {
  const out = document.getElementById("proof-result");
  const ev = current;
  try {
    const { sth, servicePublicKey } = await api("/root?stream=" + encodeURIComponent(ev.stream));
    if (!(await verifySigned(sth, servicePublicKey))) throw new Error("the tree head's signature is invalid");
    const p = await api("/proof/inclusion?stream=" + encodeURIComponent(ev.stream) + "&eventId=" + encodeURIComponent(ev.id) + "&treeSize=" + sth.treeSize);
    if (p.leafHash !== ev.leafHash) throw new Error("the proof's leaf hash is not the event's");
    if (p.leafIndex !== ev.sequence - 1) throw new Error("the proof is for another position");
    const root = await rootFromInclusion(hexToBytes(p.leafHash), p.leafIndex, p.treeSize, p.proof.map(hexToBytes));
    if (bytesToHex(root) !== sth.rootHash) throw new Error("the recomputed root " + bytesToHex(root) + " is not the signed head's");
    result(out, true, "Included: leaf " + p.leafIndex + " of the signed tree head of size " + sth.treeSize + " (root " + sth.rootHash.slice(0, 16) + "…, " + p.proof.length + " hashes, SHA-256 and Ed25519 checked in this browser).");
  } catch (e) {
    result(out, false, "Proof check FAILED: " + e.message);
  }
}

async function runVerify(stream) {
  const out = document.getElementById("verify-result");
  const pre = document.getElementById("receipt");
  out.textContent = "Verifying " + stream + "…";
  out.className = "hint";
  try {
    const rec = await api("/verify?stream=" + stream);
    pre.textContent = JSON.stringify(rec, null, 2);
    const sigOK = await verifySigned(rec, rec.servicePublicKey);
    if (!sigOK) { result(out, false, "The receipt's signature is INVALID."); return; }
    if (rec.valid) result(out, true, "Valid: " + rec.checkedCount + " events of " + stream + " rebuilt to root " + rec.rootHash.slice(0, 16) + "…; receipt signature checked in this browser.");
    else result(out, false, "BROKEN at " + JSON.stringify(rec.firstBreak) + " (receipt signature checked).");
  } catch (e) {
    result(out, false, e.message);
  }
}

// checkReceipt checks a pasted receipt's signature under this service's key (from a
// signed head), and that it names this project.
async function checkReceipt() {
  const out = document.getElementById("receipt-check");
  try {
    let rec;
    try { rec = JSON.parse(document.getElementById("receipt-input").value); } catch (e) { throw new Error("not JSON: " + e.message); }
    if (!rec || typeof rec !== "object" || typeof rec.signature !== "string") throw new Error("not a receipt (no signature)");
    const { servicePublicKey } = await api("/root?stream=events");
    if (rec.servicePublicKey !== servicePublicKey) throw new Error("signed by another key (" + String(rec.servicePublicKey).slice(0, 16) + "…)");
    if (rec.projectId !== document.body.dataset.project) throw new Error("the receipt is for project " + rec.projectId);
    if (!(await verifySigned(rec, servicePublicKey))) throw new Error("the signature does not verify: the receipt was altered");
    result(out, true, "Genuine: signed by this service; it says " + rec.stream + " was " + (rec.valid ? "valid" : "BROKEN") + " at size " + rec.treeSize + " (" + rec.verifiedAt + ").");
  } catch (e) {
    result(out, false, "Receipt check FAILED: " + e.message);
  }
}

async function checkMembership(node) {
  const out = document.getElementById("membership-result");
  try {
    const leafData = hexToBytes(node.dataset.leaf);
    const leaf = await sha256(new Uint8Array([0]), leafData);
    const path = node.dataset.path ? node.dataset.path.split(",").map(hexToBytes) : [];
    const root = await rootFromInclusion(leaf, Number(node.dataset.index), Number(node.dataset.size), path);
    if (bytesToHex(root) !== node.dataset.root) throw new Error("recomputed root " + bytesToHex(root));
    result(out, true, "Member: the proof leads to the hold's membership root (checked in this browser).");
  } catch (e) {
    result(out, false, "Membership proof FAILED: " + e.message);
  }
}

document.addEventListener("DOMContentLoaded", () => {
  for (const node of document.querySelectorAll("[data-load=heads]")) loadHeads(node);
  for (const node of document.querySelectorAll("[data-load=anchors]")) loadAnchors(node);
  eventBrowser();
  const receipt = document.getElementById("check-receipt");
  if (receipt) receipt.addEventListener("click", checkReceipt);
  const check = document.getElementById("check-proof");
  if (check) check.addEventListener("click", checkProof);
  for (const b of document.querySelectorAll("button.verify")) b.addEventListener("click", () => runVerify(b.dataset.stream));
  for (const b of document.querySelectorAll("button.copy")) {
    b.addEventListener("click", async () => {
      const text = document.getElementById(b.dataset.copy).textContent;
      try { await navigator.clipboard.writeText(text); b.textContent = "Copied"; } catch (e) { b.textContent = "Select and copy by hand"; }
    });
  }
  const mp = document.getElementById("membership-proof");
  if (mp) checkMembership(mp);
});
