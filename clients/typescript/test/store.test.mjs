// The pinned-head stores on their own: memory (copies, not references) and file
// (round trip, atomic replace, errors reported by load and save).
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as st from "../dist/index.js";
import { FileSTHStore } from "../dist/node.js";

const head = (n) => ({
  sth: { v: 1, projectId: "p", stream: "events", treeSize: n, rootHash: "ab".repeat(32), timestamp: "2026-11-21T10:00:00.000Z", signature: "cd".repeat(64) },
  servicePublicKey: "ef".repeat(32),
});

test("MemorySTHStore keeps copies", () => {
  const m = new st.MemorySTHStore();
  const h = head(1);
  assert.equal(m.load("k"), null);
  m.save("k", h);
  h.sth.treeSize = 99;
  assert.equal(m.load("k").sth.treeSize, 1);
  m.load("k").sth.treeSize = 98;
  assert.equal(m.load("k").sth.treeSize, 1);
});

test("FileSTHStore: round trip, replace, one file per key", async () => {
  const top = mkdtempSync(join(tmpdir(), "sealtrail-ts-fs-"));
  const dir = join(top, "pins", "nested");
  const s = new FileSTHStore(dir);
  assert.equal(await s.load("http://a|events"), null);
  await s.save("http://a|events", head(1));
  await s.save("http://a|events", head(2));
  await s.save("http://a|project-audit", head(3));
  assert.deepEqual(await s.load("http://a|events"), head(2));
  assert.deepEqual(await new FileSTHStore(dir).load("http://a|project-audit"), head(3));
  assert.equal((await readdir(dir)).filter((f) => f.endsWith(".json")).length, 2);
  assert.deepEqual((await readdir(dir)).filter((f) => f.endsWith(".tmp")), []);
  await rm(top, { recursive: true });
  await assert.rejects(s.save("http://a|events", head(4)), /head store/);
});

test("FileSTHStore: a directory that cannot be made is an error of load and save", async () => {
  const s = new FileSTHStore("/dev/null/pins");
  await assert.rejects(s.load("k"), /head store/);
  await assert.rejects(s.save("k", head(1)), /head store/);
});
