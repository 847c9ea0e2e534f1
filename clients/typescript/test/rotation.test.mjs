// Service key rotation on a real sealtraild (docs/key-rotation.md): a client pinned
// before `sealtraild rotate-key` accepts the announced key, and an unannounced key is
// still service_key_changed.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { writeFile, rm } from "node:fs/promises";
import { join } from "node:path";
import * as st from "../dist/index.js";
import { Service, binaries, runBin } from "./harness.mjs";

let svc;
let project;
before(async () => {
  svc = await Service.start();
  project = await svc.newProject("rotation");
});
after(async () => {
  await svc?.destroy();
});

const client = (opts = {}) => new st.SealtrailClient({ apiKey: project.apiKey, baseUrl: svc.base, autoVerify: false, ...opts });

test("rotation: an announced key is followed, an unannounced one refused", async () => {
  const c = client();
  for (let i = 0; i < 3; i++) await c.log({ action: "rotation.before", actor: { type: "user", id: `u${i}` } });
  const oldKey = svc.servicePublicKey;
  const configured = client({ servicePublicKey: oldKey });
  await c.checkConsistency();
  await configured.checkConsistency();

  await svc.stop();
  const { sealtraild } = await binaries();
  const r = await runBin(sealtraild, ["rotate-key", "--data", svc.dataDir]);
  assert.equal(r.code, 0, r.stderr);
  await svc.launch();
  assert.notEqual(svc.servicePublicKey, oldKey);
  await c.log({ action: "rotation.after", actor: { type: "user", id: "u9" } });

  const h = await c.checkConsistency(); // pinned under the old key
  assert.equal(h.treeSize, 4);
  const h2 = await configured.checkConsistency(); // configured with the old key
  assert.equal(h2.treeSize, 4);
  const receipt = await configured.verify();
  assert.equal(receipt.servicePublicKey, svc.servicePublicKey);

  const history = await (await fetch(svc.base + "/api/v1/key-history")).json();
  const verified = await st.verifyKeyHistory(history);
  assert.equal(st.keyMoveRefusal(verified, oldKey, svc.servicePublicKey), null);
  assert.match(st.keyMoveRefusal(verified, svc.servicePublicKey, oldKey), /retired before/);
  const forged = structuredClone(history);
  forged.transitions[0].newKey = st.toHex((await st.generateKeyPair()).publicKey);
  await assert.rejects(st.verifyKeyHistory(forged));

  // Unannounced: another key, and no history that names it.
  await svc.stop();
  const kp = await st.generateKeyPair();
  await writeFile(join(svc.dataDir, "service.key"), st.toHex(kp.seed) + "\n", { mode: 0o600 });
  await rm(join(svc.dataDir, "service-key-history.json"));
  await svc.launch();
  await assert.rejects(c.checkConsistency(), (e) => e instanceof st.TamperError && e.reason === "service_key_changed");
  await assert.rejects(configured.checkConsistency(), (e) => e instanceof st.TamperError && e.reason === "service_key_changed");
});
