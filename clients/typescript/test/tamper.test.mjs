// Tampering on real storage: a real sealtraild is stopped, its data directory rolled
// back, forked or given another service key, and restarted on the same address; the
// client must name the reason, poison itself, call onTamper once, and a new client with
// the same persisted pins must find it again.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { writeFile, cp } from "node:fs/promises";
import { join } from "node:path";
import * as st from "../dist/index.js";
import { FileSTHStore } from "../dist/node.js";
import { Service } from "./harness.mjs";

let svc;
let project;
let snapshot3; // the data directory when the events stream had 3 leaves
before(async () => {
  svc = await Service.start();
  project = await svc.newProject("tamper");
  await logN(3, "before");
  await svc.stop();
  snapshot3 = await svc.snapshot("at-3");
  await svc.launch();
  await logN(3, "after");
});
after(async () => {
  await svc?.destroy();
});

function client(opts = {}) {
  return new st.SealtrailClient({ apiKey: project.apiKey, baseUrl: svc.base, autoVerify: false, ...opts });
}

async function logN(n, tag) {
  const c = client();
  for (let i = 0; i < n; i++) await c.log({ action: `tamper.${tag}`, actor: { type: "user", id: `u${i}` } });
}

const storeDir = () => mkdtempSync(join(svc.root, "pins-")); // removed with the service

// A copy of a pin directory, so each scenario starts from the same pins.
async function copyPins(dir) {
  const to = storeDir();
  await cp(dir, to, { recursive: true });
  return to;
}

// Requires a tamper error with the reason, then checks poisoning: every call throws the
// same error without a request, onTamper ran once, a fresh client with the pins agrees.
async function expectTamper(c, calls, reason, dir, pinnedSize) {
  let err;
  await assert.rejects(c.checkConsistency(), (e) => {
    err = e;
    return e instanceof st.TamperError && e.reason === reason && e.stream === "events";
  });
  assert.equal(err.pinnedSth.treeSize, pinnedSize);
  assert.ok(err.currentSth);
  assert.deepEqual(calls, [err], "onTamper called once with the error");
  assert.equal(c.error, err);
  for (const call of [
    () => c.checkConsistency(),
    () => c.checkConsistency("project-audit"),
    () => c.log({ action: "x", actor: { type: "u", id: "1" } }),
    () => c.query(),
    () => c.verify(),
    () => c.getRoot(),
    () => c.exportEvents(),
    () => c.getInclusionProof({ leafIndex: 0 }),
    () => c.getConsistencyProof({ oldSize: 1 }),
  ]) {
    await assert.rejects(call(), (e) => e === err);
  }
  assert.equal(calls.length, 1);
  const again = client({ sthStore: new FileSTHStore(dir) });
  await assert.rejects(again.checkConsistency(), (e) => e instanceof st.TamperError && e.reason === reason);
  return err;
}

test("rollback, fork and key change on real storage", async (t) => {
  // An honest client pins the 6-leaf head (and the project-audit head) in a file store.
  const pins = storeDir();
  const honest = client({ sthStore: new FileSTHStore(pins) });
  const pinned = await honest.checkConsistency();
  assert.equal(pinned.treeSize, 6);
  await honest.checkConsistency("project-audit");

  await t.test("rollback: the data directory restored to 3 leaves is tree_shrunk", async () => {
    await svc.stop();
    await svc.restore(snapshot3);
    await svc.launch();
    assert.equal((await client().getRoot()).sth.treeSize, 3, "the service itself sees nothing wrong");
    const calls = [];
    const dir = await copyPins(pins);
    const c = client({ sthStore: new FileSTHStore(dir), onTamper: (e) => calls.push(e) });
    await expectTamper(c, calls, "tree_shrunk", dir, 6);
  });

  await t.test("fork, same size: three other events on the rolled-back log are inconsistent_tree", async () => {
    await logN(3, "forked");
    const root = await client().getRoot();
    assert.equal(root.sth.treeSize, 6);
    assert.notEqual(root.sth.rootHash, pinned.rootHash);
    assert.equal((await client().verify()).valid, true, "the fork is internally consistent");
    const calls = [];
    const dir = await copyPins(pins);
    const e = await expectTamper(client({ sthStore: new FileSTHStore(dir), onTamper: (e) => calls.push(e) }), calls, "inconsistent_tree", dir, 6);
    assert.match(e.detail, /two roots for size 6/);
  });

  await t.test("fork, grown: no consistency proof from the pinned head, found by an opportunistic check", async () => {
    await logN(2, "forked");
    const calls = [];
    const dir = await copyPins(pins);
    const c = client({ sthStore: new FileSTHStore(dir), onTamper: (e) => calls.push(e), autoVerify: true });
    const r = await c.log({ action: "tamper.bg", actor: { type: "u", id: "1" } }); // the call itself succeeds
    assert.equal(r.status, "sealed");
    await c.idle();
    assert.ok(c.error instanceof st.TamperError);
    assert.equal(c.error.reason, "inconsistent_tree");
    assert.equal(c.error.currentSth.treeSize, 9);
    assert.deepEqual(calls, [c.error]);
    await assert.rejects(c.query(), (e) => e === calls[0]);
    const again = client({ sthStore: new FileSTHStore(dir) });
    await assert.rejects(again.checkConsistency(), (e) => e instanceof st.TamperError && e.reason === "inconsistent_tree" && /size 6 to 9/.test(e.detail));
  });

  await t.test("key change: a new service key is service_key_changed, pinned or configured", async () => {
    const dir = storeDir();
    const before = client({ sthStore: new FileSTHStore(dir) });
    const head = await before.checkConsistency();
    const oldKey = svc.servicePublicKey;
    await svc.stop();
    const kp = await st.generateKeyPair();
    await writeFile(join(svc.dataDir, "service.key"), st.toHex(kp.seed) + "\n", { mode: 0o600 });
    await svc.launch();
    assert.equal(svc.servicePublicKey, st.toHex(kp.publicKey));
    const root = await client().getRoot();
    await st.verifySTH(svc.servicePublicKey, root.sth); // validly signed, by another key

    const calls = [];
    const c = client({ sthStore: new FileSTHStore(dir), onTamper: (e) => calls.push(e) });
    const e = await expectTamper(c, calls, "service_key_changed", dir, head.treeSize);
    assert.match(e.detail, new RegExp(oldKey));

    // With the key configured, first use already fails, and so does a receipt.
    const configured = client({ servicePublicKey: oldKey });
    await assert.rejects(configured.checkConsistency(), (e) => e instanceof st.TamperError && e.reason === "service_key_changed" && e.pinnedSth === null);
    const receipt = client({ servicePublicKey: oldKey });
    await assert.rejects(receipt.verify(), (e) => e instanceof st.TamperError && e.reason === "service_key_changed" && e.currentSth === null);
    // The other stream of the same service: its key was trusted once, through the sibling pin.
    const sibling = client({ sthStore: new FileSTHStore(dir) });
    await assert.rejects(sibling.checkConsistency("project-audit"), (e) => e instanceof st.TamperError && e.reason === "service_key_changed" && e.stream === "project-audit");
    // A client that trusts the new key on first use sees a consistent log.
    assert.equal((await client().checkConsistency()).treeSize, root.sth.treeSize);
  });

  await t.test("bad signature: a head whose signature was altered in transit is bad_sth_signature", async () => {
    const dir = storeDir();
    await client({ sthStore: new FileSTHStore(dir) }).checkConsistency();
    const flip = async (url, init) => {
      const r = await fetch(url, init);
      if (!new URL(url).pathname.endsWith("/root")) return r;
      const body = await r.json();
      body.sth.timestamp = "2000-01-01T00:00:00.000Z";
      return new Response(JSON.stringify(body), { status: 200, headers: { "Content-Type": "application/json" } });
    };
    const calls = [];
    const c = client({ sthStore: new FileSTHStore(dir), onTamper: (e) => calls.push(e), fetch: flip });
    let err;
    await assert.rejects(c.checkConsistency(), (e) => (err = e) instanceof st.TamperError && e.reason === "bad_sth_signature");
    assert.deepEqual(calls, [err]);
    await assert.rejects(c.log({ action: "x", actor: { type: "u", id: "1" } }), (e) => e === err);
  });
});
