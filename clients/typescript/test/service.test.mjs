// The client against a real sealtraild that the harness starts: every method, signed
// logging, the cross-check with the Go side (the service, `sealtrail verify full` and
// the Go client), opportunistic checks, the wrappers and the file store.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readdir, writeFile, readFile } from "node:fs/promises";
import { mkdtempSync } from "node:fs";
import { createHash } from "node:crypto";
import { join } from "node:path";
import * as st from "../dist/index.js";
import { FileSTHStore } from "../dist/node.js";
import { Service, binaries, runBin } from "./harness.mjs";

let svc;
let signed; // a project that requires signed events
before(async () => {
  svc = await Service.start();
  signed = await svc.newProject("signed", { signing: true, generateKeyPair: st.generateKeyPair, toHex: st.toHex });
});
after(async () => {
  await svc?.destroy();
});

const HOUR = 3_600_000;
const tmp = () => mkdtempSync(join(svc.root, "store-")); // removed with the service

// fetch that counts requests by path and can hold /root until released.
function countingFetch() {
  const counts = {};
  let gate = null;
  const f = async (url, init) => {
    const path = new URL(url).pathname.replace("/api/v1", "");
    counts[path] = (counts[path] ?? 0) + 1;
    if (path === "/root" && gate) await gate.promise;
    return fetch(url, init);
  };
  f.counts = counts;
  f.hold = () => {
    let release;
    gate = { promise: new Promise((r) => (release = r)) };
    return () => {
      gate = null;
      release();
    };
  };
  return f;
}

test("unsigned: log, query, verifyEvent, root, proofs, checkConsistency, verify, export, anchors", async () => {
  const store = new st.MemorySTHStore();
  const c = new st.SealtrailClient({ apiKey: svc.apiKey, baseUrl: svc.base + "/", sthStore: store, autoVerifyIntervalMs: HOUR });
  assert.equal(c.baseUrl, svc.base);
  const ids = [];
  for (let i = 0; i < 5; i++) {
    const r = await c.log({
      action: "ts.unsigned",
      actor: { type: "user", id: `u${i}`, display: "Zoë 😂" },
      target: { type: "doc", id: "d1" },
      risk: "low",
      metadata: { i, ratio: i / 3, big: 2 ** 53, nested: { b: [1, "x", null], a: true } },
    });
    assert.equal(r.status, "sealed");
    assert.ok(st.validEventId(r.id));
    ids.push(r.id);
  }
  await c.idle();
  const pin = await store.load(st.pinKey(svc.base, "events"));
  assert.ok(pin, "the opportunistic check after the first log pinned a head");
  assert.equal(pin.servicePublicKey, svc.servicePublicKey);

  const page = await c.query({ action: "ts.unsigned", limit: 3 });
  assert.equal(page.events.length, 3);
  assert.ok(page.nextCursor);
  const rest = await c.query({ action: "ts.unsigned", cursor: page.nextCursor });
  const events = [...page.events, ...rest.events];
  assert.deepEqual(events.map((e) => e.id), [...ids].reverse(), "newest first, all five");
  for (const ev of events) {
    assert.equal(ev.status, "success");
    const v = await c.verifyEvent(ev);
    assert.equal(v.proof.leafIndex, ev.sequence - 1);
    assert.equal(v.head.treeSize >= ev.sequence, true);
  }
  const byEntity = await c.query({ entityType: "user", entityId: "u2" });
  assert.deepEqual(byEntity.events.map((e) => e.id), [ids[2]]);

  // A tampered copy of a stored event fails locally, without poisoning.
  const edited = { ...events[0], actor: { ...events[0].actor, id: "mallory" } };
  await assert.rejects(c.verifyEvent(edited), (e) => e instanceof st.VerificationError && /re-derive/.test(e.message));
  assert.equal(c.error, undefined);

  const root = await c.getRoot();
  assert.equal(root.servicePublicKey, svc.servicePublicKey);
  await st.verifySTH(svc.servicePublicKey, root.sth);
  const n = root.sth.treeSize;
  assert.equal(n >= 5, true);
  const inc = await c.getInclusionProof({ leafIndex: 0, treeSize: n });
  await st.verifyInclusion(st.parseHash(inc.leafHash), 0, n, inc.proof.map((h) => st.parseHash(h)), st.parseHash(root.sth.rootHash));
  const byId = await c.getInclusionProof({ eventId: ids[4] });
  assert.equal(byId.treeSize, n);
  const cons = await c.getConsistencyProof({ oldSize: 2 });
  assert.equal(cons.newSize, n);
  const old = await c.getInclusionProof({ leafIndex: 0, treeSize: 2 }); // a proof at size 2 ...
  const root2 = await st.rootFromInclusion(st.parseHash(old.leafHash), 0, 2, old.proof.map((h) => st.parseHash(h))); // ... gives its root
  await st.verifyConsistency(2, n, root2, st.parseHash(root.sth.rootHash), cons.proof.map((h) => st.parseHash(h)));

  const head = await c.checkConsistency("events");
  assert.equal(head.treeSize, n);
  assert.deepEqual((await store.load(st.pinKey(svc.base, "events"))).sth, head);
  const audit = await c.checkConsistency("project-audit");
  assert.equal(audit.stream, "project_audit");

  const rec = await c.verify();
  assert.equal(rec.valid, true);
  assert.equal(rec.treeSize, n);
  assert.equal(rec.stream, "events");
  assert.equal((await c.verify({ stream: "project-audit" })).stream, "project_audit");

  const ex = await c.exportEvents({ format: "json" });
  const text = await ex.text();
  const out = await st.verifyExport(text, { root: root.sth.rootHash, size: n });
  assert.equal(out.size, n);
  assert.equal(out.stats.rederived, n);
  const csv = await (await c.exportEvents({ action: "ts.unsigned", max: 2 })).text();
  assert.equal(csv.trim().split("\n").length, 3, "header and two rows");

  const anchors = await c.getAnchors("events", 5);
  assert.ok(Array.isArray(anchors.heads));

  // API errors.
  const bad = new st.SealtrailClient({ apiKey: "nope", baseUrl: svc.base, autoVerify: false });
  await assert.rejects(bad.query(), (e) => e instanceof st.APIError && e.status === 401 && e.message === "Invalid API key");
  await assert.rejects(c.log({ actor: { type: "user", id: "x" } }), (e) => e instanceof st.APIError && e.status === 400 && e.details !== undefined);
  await assert.rejects(c.getInclusionProof({ leafIndex: n + 10 }), (e) => e instanceof st.APIError && e.status === 400);
  await assert.rejects(c.getRoot("audit"), TypeError);
  const down = new st.SealtrailClient({ apiKey: "k", baseUrl: "http://127.0.0.1:1", autoVerify: false });
  await assert.rejects(down.getRoot(), (e) => e instanceof st.APIError && e.status === 0 && e.cause !== undefined);
  await c.close();
});

test("signed: TypeScript-signed events are accepted by the service and verify in Go", async () => {
  const c = new st.SealtrailClient({ apiKey: signed.apiKey, baseUrl: svc.base, signingKeyId: signed.signingKeyId, signingPrivateKey: signed.signingPrivateKey, autoVerify: false });
  const ids = [];
  for (let i = 0; i < 4; i++) {
    const r = await c.log({
      action: "ts.signed",
      actor: { type: "agent", id: "agt_ts" },
      status: i === 3 ? "approved" : undefined,
      toolName: "search",
      metadata: { i, f: 0.1 + 0.2, s: "é\u2028😂", e: 1e21, neg: -0 },
      context: { z: 1, a: 2 },
    });
    ids.push(r.id);
  }
  const { events } = await c.query({ action: "ts.signed" });
  assert.deepEqual(events.map((e) => e.id).sort(), [...ids].sort(), "client-minted ids are kept");
  for (const ev of events) {
    assert.equal(ev.signingKeyId, signed.signingKeyId);
    assert.equal(await st.verifyEventSignature(signed.signingPublicKey, ev.id, ev.payloadHash, ev.clientSignature), true);
    await c.verifyEvent(ev);
  }
  assert.deepEqual(events.map((e) => e.status).sort(), ["approved", "success", "success", "success"]);

  // An unsigned event is refused by a project that requires signatures.
  const unsigned = new st.SealtrailClient({ apiKey: signed.apiKey, baseUrl: svc.base, autoVerify: false });
  await assert.rejects(unsigned.log({ action: "x", actor: { type: "u", id: "1" } }), (e) => e instanceof st.APIError && e.status === 400 && /signed/.test(e.message));

  // Go: the offline verifier re-checks every signature of the whole-stream export ...
  const { sealtrail, gosign } = await binaries();
  const root = await c.checkConsistency();
  const file = join(svc.root, "signed-export.ndjson");
  await writeFile(file, await (await c.exportEvents({ format: "json" })).text());
  const r = await runBin(sealtrail, ["verify", "full", "--export", file, "--root", root.rootHash, "--size", String(root.treeSize), "--signing-key", signed.signingPublicKey]);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /OK/);
  // ... and the Go client proves each event and checks each signature with package tlog.
  const env = { SEALTRAIL_URL: svc.base, SEALTRAIL_API_KEY: signed.apiKey, SEALTRAIL_SIGNING_KEY_ID: signed.signingKeyId, SEALTRAIL_SIGNING_PRIVATE_KEY: signed.signingPrivateKey };
  const g = await runBin(gosign, ["verify", signed.signingPublicKey], env);
  assert.equal(g.code, 0, g.stderr);
  const counts = JSON.parse(g.stdout);
  assert.equal(counts.signed >= 4, true, g.stdout);

  // A signature by another key is what the offline verifier reports as invalid_client_signature.
  const other = st.toHex((await st.generateKeyPair()).publicKey);
  const bad = await runBin(sealtrail, ["verify", "full", "--export", file, "--root", root.rootHash, "--size", String(root.treeSize), "--signing-key", other]);
  assert.equal(bad.code, 1);
  assert.match(bad.stdout + bad.stderr, /invalid_client_signature/);
});

test("cross-check: Go-signed events verify in TypeScript", async () => {
  const { gosign } = await binaries();
  const env = { SEALTRAIL_URL: svc.base, SEALTRAIL_API_KEY: signed.apiKey, SEALTRAIL_SIGNING_KEY_ID: signed.signingKeyId, SEALTRAIL_SIGNING_PRIVATE_KEY: signed.signingPrivateKey };
  const g = await runBin(gosign, ["log", "3", "go.signed"], env);
  assert.equal(g.code, 0, g.stderr);
  const ids = JSON.parse(g.stdout);
  assert.equal(ids.length, 3);
  const c = new st.SealtrailClient({ apiKey: signed.apiKey, baseUrl: svc.base, autoVerify: false });
  const { events } = await c.query({ action: "go.signed" });
  assert.deepEqual(events.map((e) => e.id).sort(), [...ids].sort());
  for (const ev of events) {
    assert.equal(ev.metadata.lang, "go");
    assert.equal(await st.verifyEventSignature(signed.signingPublicKey, ev.id, ev.payloadHash, ev.clientSignature), true);
    const { payloadHash } = await st.commitPayload(ev.payloadNonce, Object.fromEntries(Object.entries(ev).filter(([k]) => st.PAYLOAD_MEMBERS.includes(k))));
    assert.equal(payloadHash, ev.payloadHash, "TypeScript re-derives the Go client's commitment");
    await c.verifyEvent(ev);
  }
  const root = await c.checkConsistency();
  const text = await (await c.exportEvents({ format: "json" })).text();
  const out = await st.verifyExport(text, { root: root.rootHash, size: root.treeSize, signingKeys: (id) => (id === signed.signingKeyId ? [signed.signingPublicKey] : []) });
  assert.equal(out.stats.signatures, root.treeSize, "every event of the signed project, Go- and TypeScript-signed, checked");
});

test("opportunistic checks: never block the call, throttled, failures swallowed and retried", async () => {
  const f = countingFetch();
  const store = new st.MemorySTHStore();
  const checkErrors = [];
  const c = new st.SealtrailClient({ apiKey: svc.apiKey, baseUrl: svc.base, fetch: f, sthStore: store, autoVerifyIntervalMs: HOUR, onCheckError: (s, e) => checkErrors.push(e) });
  const release = f.hold();
  await c.log({ action: "ts.bg", actor: { type: "u", id: "1" } }); // resolves while /root is held
  await c.query({ action: "ts.bg" });
  await c.log({ action: "ts.bg", actor: { type: "u", id: "1" } });
  assert.equal(f.counts["/root"], 1, "one check in flight; none started while it runs");
  assert.equal(await store.load(st.pinKey(svc.base, "events")), null, "nothing pinned while /root is held");
  release();
  await c.idle();
  assert.ok(await store.load(st.pinKey(svc.base, "events")));
  await c.log({ action: "ts.bg", actor: { type: "u", id: "1" } });
  assert.equal(f.counts["/root"], 1, "within the interval: no new check");
  assert.deepEqual(checkErrors, []);

  // A transport failure in a background check is swallowed, reported and retried.
  let fail = true;
  const flaky = async (url, init) => {
    if (fail && new URL(url).pathname.endsWith("/root")) throw new Error("connection reset");
    return fetch(url, init);
  };
  const errs = [];
  const d = new st.SealtrailClient({ apiKey: svc.apiKey, baseUrl: svc.base, fetch: flaky, autoVerifyIntervalMs: 1, onCheckError: (s, e) => errs.push([s, e]) });
  await d.log({ action: "ts.bg", actor: { type: "u", id: "2" } });
  await d.idle();
  assert.equal(errs.length, 1);
  assert.equal(errs[0][0], "events");
  assert.ok(errs[0][1] instanceof st.APIError && errs[0][1].status === 0);
  assert.equal(d.error, undefined, "not poisoned");
  fail = false;
  await new Promise((r) => setTimeout(r, 5)); // let the 1 ms interval pass
  await d.query();
  await d.idle();
  assert.equal(errs.length, 1);
  assert.ok((await d.checkConsistency()).treeSize > 0);

  // autoVerify false: no checks at all.
  const g = countingFetch();
  const e = new st.SealtrailClient({ apiKey: svc.apiKey, baseUrl: svc.base, fetch: g, autoVerify: false });
  await e.log({ action: "ts.bg", actor: { type: "u", id: "3" } });
  await e.query();
  await e.idle();
  assert.equal(g.counts["/root"], undefined);
  // close: no new checks afterwards.
  const h = countingFetch();
  const k = new st.SealtrailClient({ apiKey: svc.apiKey, baseUrl: svc.base, fetch: h });
  await k.close();
  await k.log({ action: "ts.bg", actor: { type: "u", id: "4" } });
  await k.idle();
  assert.equal(h.counts["/root"], undefined);
});

test("wrappers: tool calls with reasons and authorization, run, failClosed, onAuditError", async () => {
  const c = new st.SealtrailClient({ apiKey: svc.apiKey, baseUrl: svc.base, autoVerify: false });
  const audited = [];
  const a = new st.Auditor({ client: c, onAuditError: (e, ev) => audited.push([e, ev]) });
  let ran = 0;
  const search = a.tool({ name: "ts_search", requireReason: true, hashIO: true, risk: "low", authorize: (call) => call.actor.id !== "mallory" }, async (q) => {
    ran++;
    if (q.query === "boom") throw new Error("backend down");
    return { hits: [q.query] };
  });
  const actor = { type: "agent", id: "agt_1" };
  assert.deepEqual(await search({ id: "call_1", actor, reason: "user asked", model: "m1" }, { query: "cats" }), { hits: ["cats"] });
  await assert.rejects(search({ id: "call_2", actor }, { query: "dogs" }), (e) => e instanceof st.ReasonRequiredError && e.toolName === "ts_search");
  await assert.rejects(search({ id: "call_3", actor: { type: "agent", id: "mallory" }, reason: "r" }, { query: "x" }), (e) => e instanceof st.DeniedError && e.toolName === "ts_search");
  await assert.rejects(search({ id: "call_4", actor, reason: "r" }, { query: "boom" }), /backend down/);
  assert.equal(ran, 2, "refused calls do not run the tool");
  assert.equal(await a.run({ action: "ts.job", actor }, () => 42), 42);
  const wrapped = a.wrap((x) => ({ action: "ts.wrapped", actor, metadata: { x } }), (x) => x * 2);
  assert.equal(await wrapped(21), 42);
  assert.deepEqual(audited, []);

  const { events } = await c.query({ action: "tool.call", actorId: "agt_1" });
  const byCall = Object.fromEntries(events.map((e) => [e.toolCallId, e]));
  assert.equal(byCall.call_1.status, "success");
  assert.equal(byCall.call_1.metadata.reason, "user asked");
  assert.equal(byCall.call_1.model, "m1");
  assert.equal(byCall.call_1.inputHash, await st.hashJSON({ query: "cats" }));
  assert.equal(byCall.call_1.outputHash, await st.hashJSON({ hits: ["cats"] }));
  assert.equal(typeof byCall.call_1.metadata.durationMs, "number");
  assert.equal(byCall.call_2.status, "failed");
  assert.equal(byCall.call_2.metadata.error, "reason required");
  assert.equal(byCall.call_4.status, "failed");
  assert.equal(byCall.call_4.metadata.error, "backend down");
  const denied = (await c.query({ action: "tool.call", actorId: "mallory" })).events;
  assert.equal(denied.length, 1);
  assert.equal(denied[0].status, "denied");
  assert.equal(denied[0].target.id, "ts_search");
  assert.equal((await c.query({ action: "ts.wrapped" })).events[0].metadata.x, 21);

  // A client that cannot write: fail open by default, fail closed on request.
  const broken = new st.SealtrailClient({ apiKey: "revoked", baseUrl: svc.base, autoVerify: false });
  const errs = [];
  const open = new st.Auditor({ client: broken, onAuditError: (e, ev) => errs.push([e, ev]) });
  assert.equal(await open.run({ action: "ts.open", actor }, () => "done"), "done");
  assert.equal(errs.length, 1);
  assert.ok(errs[0][0] instanceof st.APIError && errs[0][0].status === 401);
  assert.equal(errs[0][1].action, "ts.open");
  const closed = new st.Auditor({ client: broken, failClosed: true });
  await assert.rejects(closed.run({ action: "ts.closed", actor }, () => "done"), (e) => e instanceof st.AuditError && e.cause instanceof st.APIError);
  await assert.rejects(closed.tool({ name: "t" }, () => 1)({ actor }, {}), (e) => e instanceof st.AuditError);

  // A poisoned client: with failClosed the operation is not even started.
  const tampering = async (url, init) => {
    const r = await fetch(url, init);
    if (!new URL(url).pathname.endsWith("/root")) return r;
    const body = await r.json();
    body.sth.signature = body.sth.signature.replace(/^./, (d) => (d === "0" ? "1" : "0"));
    return new Response(JSON.stringify(body), { status: 200, headers: { "Content-Type": "application/json" } });
  };
  const p = new st.SealtrailClient({ apiKey: svc.apiKey, baseUrl: svc.base, fetch: tampering });
  await assert.rejects(p.checkConsistency(), (e) => e instanceof st.TamperError && e.reason === "bad_sth_signature");
  let started = false;
  const guarded = new st.Auditor({ client: p, failClosed: true });
  await assert.rejects(guarded.run({ action: "ts.never", actor }, () => (started = true)), (e) => e instanceof st.AuditError && e.cause === p.error);
  assert.equal(started, false);
  assert.throws(() => new st.Auditor({}), /client or a config/);
  const built = new st.Auditor({ config: { apiKey: svc.apiKey, baseUrl: svc.base, autoVerify: false } });
  assert.ok(built.client instanceof st.SealtrailClient);
});

test("FileSTHStore: pins survive a new client, atomic files, shared format with the Go store", async () => {
  const dir = tmp();
  const store = new FileSTHStore(dir);
  const c = new st.SealtrailClient({ apiKey: svc.apiKey, baseUrl: svc.base, sthStore: store, autoVerify: false });
  const head = await c.checkConsistency();
  const key = st.pinKey(svc.base, "events");
  const name = createHash("sha256").update(key).digest("hex").slice(0, 32) + ".json";
  assert.deepEqual(await readdir(dir), [name], "one file named as the Go FileHeadStore names it, no temp file left");
  const onDisk = JSON.parse(await readFile(join(dir, name), "utf8"));
  assert.deepEqual(onDisk, { key, sth: head, servicePublicKey: svc.servicePublicKey });
  const again = new st.SealtrailClient({ apiKey: svc.apiKey, baseUrl: svc.base, sthStore: new FileSTHStore(dir), autoVerify: false });
  const g = countingFetch();
  const third = new st.SealtrailClient({ apiKey: svc.apiKey, baseUrl: svc.base, sthStore: new FileSTHStore(dir), autoVerify: false, fetch: g });
  await again.log({ action: "ts.file", actor: { type: "u", id: "1" } });
  assert.equal((await third.checkConsistency()).treeSize, head.treeSize + 1);
  assert.equal(g.counts["/proof/consistency"], 1, "the pin from the first client was extended with a proof");
  // A file holding another key's pin is an error, not a trust anchor.
  await writeFile(join(dir, name), JSON.stringify({ ...onDisk, key: "other|events" }));
  await assert.rejects(new FileSTHStore(dir).load(key), /holds the pin of/);
  // A corrupted pin is an error, not tampering.
  await writeFile(join(dir, name), JSON.stringify({ ...onDisk, sth: { ...onDisk.sth, treeSize: 1 } }));
  const d = new st.SealtrailClient({ apiKey: svc.apiKey, baseUrl: svc.base, sthStore: new FileSTHStore(dir), autoVerify: false });
  await assert.rejects(d.checkConsistency(), (e) => !(e instanceof st.TamperError) && /does not verify under its pinned key/.test(e.message));
  assert.equal(d.error, undefined);

  // Stores may be synchronous or asynchronous.
  const m = new Map();
  const sync = { load: (k) => m.get(k) ?? null, save: (k, v) => void m.set(k, v) };
  const asyncStore = { load: async (k) => m.get("a" + k), save: async (k, v) => void m.set("a" + k, v) };
  for (const s of [sync, asyncStore]) {
    const x = new st.SealtrailClient({ apiKey: svc.apiKey, baseUrl: svc.base, sthStore: s, autoVerify: false });
    await x.checkConsistency();
    await x.log({ action: "ts.store", actor: { type: "u", id: "1" } });
    assert.equal((await x.checkConsistency()).treeSize, (await x.getRoot()).sth.treeSize);
  }
  assert.equal(m.size, 2);
});

test("not tampering: a store shared by two projects, a proof for other sizes", async () => {
  const store = new st.MemorySTHStore();
  const dev = new st.SealtrailClient({ apiKey: svc.apiKey, baseUrl: svc.base, sthStore: store, autoVerify: false });
  const pinned = await dev.checkConsistency();
  const other = new st.SealtrailClient({ apiKey: signed.apiKey, baseUrl: svc.base, sthStore: store, autoVerify: false });
  await assert.rejects(other.checkConsistency(), st.ProjectMismatchError);
  assert.equal(other.error, undefined);
  assert.deepEqual((await store.load(st.pinKey(svc.base, "events"))).sth, pinned, "nothing pinned");

  await dev.log({ action: "ts.sizes", actor: { type: "u", id: "1" } });
  const wrongSizes = async (url, init) => {
    const r = await fetch(url, init);
    if (!new URL(url).pathname.endsWith("/proof/consistency")) return r;
    const body = await r.json();
    body.oldSize += 1;
    return new Response(JSON.stringify(body), { status: 200, headers: { "Content-Type": "application/json" } });
  };
  const c = new st.SealtrailClient({ apiKey: svc.apiKey, baseUrl: svc.base, sthStore: store, autoVerify: false, fetch: wrongSizes });
  await assert.rejects(c.checkConsistency(), st.UnexpectedResponseError);
  assert.equal(c.error, undefined);
  assert.deepEqual((await store.load(st.pinKey(svc.base, "events"))).sth, pinned, "nothing pinned");
  assert.equal((await dev.checkConsistency()).treeSize, pinned.treeSize + 1);
});
