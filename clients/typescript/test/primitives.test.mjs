// Unit tests of the primitives beyond the published vectors: what JCS rejects, ids and
// nonces, leaves, proofs over every size pair, STH and receipt checks.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as st from "../dist/index.js";

test("jcs: rejects what the Go library rejects", () => {
  const cases = [
    ['{"a":1,"\\u0061":2}', "duplicate_key"],
    ['"\\ud800"', "lone_surrogate"],
    ['"\\udc00\\ud800"', "lone_surrogate"],
    ["9007199254740993", "integer_range"],
    ["-9007199254740993", "integer_range"],
    ["1e16", "integer_range"],
    ["12345678901234567890.5", "integer_range"],
    ["1e400", "non_finite"],
    ["NaN", "syntax"],
    ["01", "syntax"],
    ["1.", "syntax"],
    ['{"a":1}x', "syntax"],
    ['{"a" 1}', "syntax"],
    ['"a\nb"', "syntax"],
    ["[".repeat(300) + "]".repeat(300), "syntax"],
  ];
  for (const [input, kind] of cases) {
    assert.throws(() => st.canonicalizeJSON(input), (e) => e instanceof st.CanonError && e.kind === kind, input);
  }
  assert.throws(() => st.canonicalizeJSON(Uint8Array.of(0x22, 0xc0, 0xaf, 0x22)), (e) => e.kind === "invalid_utf8");
  assert.throws(() => st.canonicalize({ a: 1n }), (e) => e.kind === "unsupported");
  assert.throws(() => st.canonicalize({ a: Infinity }), (e) => e.kind === "non_finite");
  assert.throws(() => st.canonicalize(1e16), (e) => e.kind === "integer_range");
});

test("jcs: accepts and normalises", () => {
  const cases = [
    ["9007199254740992", "9007199254740992"],
    ["1e21", "1e+21"],
    ["1E30", "1e+30"],
    ["-0", "0"],
    ["1e-400", "0"],
    ["0.000001", "0.000001"],
    ["1e-7", "1e-7"],
    ['"\\u00e9\\/\\u001f"', '"é/\\u001f"'],
    [' { "b" : [ true , null ] , "a" : { } } ', '{"a":{},"b":[true,null]}'],
    ['{"\\ud83d\\ude02":1,"\\u20ac":2}', '{"€":2,"😂":1}'],
    ["0." + "0".repeat(1500) + "1", "0"],
  ];
  for (const [input, want] of cases) assert.equal(st.canonicalizeJSON(input), want, input);
  assert.equal(st.canonicalize({ b: undefined, a: [undefined, 1.5], d: new Date(0) }), '{"a":[null,1.5],"d":"1970-01-01T00:00:00.000Z"}');
  assert.deepEqual(st.parseStrict('{"z":1,"a":[2]}'), { a: [2], z: 1 });
});

test("ids and nonces", () => {
  const seen = new Set();
  const t = Date.UTC(2026, 10, 21, 10, 0, 0, 123);
  let prev = "";
  for (let i = 0; i < 200; i++) {
    const id = st.newEventId(t + i);
    assert.match(id, /^evt_[0-9A-HJKMNP-TV-Z]{26}$/);
    assert.ok(st.validEventId(id));
    assert.ok(id.slice(0, 14) >= prev.slice(0, 14), "ids sort by mint time");
    prev = id;
    seen.add(id);
    const n = st.newNonce();
    assert.match(n, /^[0-9a-f]{64}$/);
    seen.add(n);
  }
  assert.equal(seen.size, 400);
  // The first 10 digits (3 + 9×5 bits) are the 48-bit milliseconds, as the Go library mints them.
  const ms = [...st.newEventId(t).slice(4, 14)].reduce((v, c) => v * 32 + "0123456789ABCDEFGHJKMNPQRSTVWXYZ".indexOf(c), 0);
  assert.equal(ms, t);
  for (const bad of ["evt_", "evt_a b", "evt_é", "x_abc", "evt_" + "a".repeat(125)]) assert.equal(st.validEventId(bad), false, bad);
  assert.ok(st.validEventId("evt_" + "a".repeat(124)));
});

test("keys: seed and seed||public forms, bad input", async () => {
  const kp = await st.generateKeyPair();
  const seedHex = st.toHex(kp.seed);
  const a = await st.parsePrivateKey(seedHex);
  const b = await st.parsePrivateKey(seedHex + st.toHex(kp.publicKey));
  assert.deepEqual(a.publicKey, kp.publicKey);
  assert.deepEqual(b.publicKey, kp.publicKey);
  const other = await st.generateKeyPair();
  await assert.rejects(st.parsePrivateKey(seedHex + st.toHex(other.publicKey)), /public half/);
  await assert.rejects(st.parsePrivateKey(seedHex.toUpperCase()), /lowercase hex/);
  await assert.rejects(st.parsePrivateKey("abcd"), /64 or 128/);
  assert.throws(() => st.parsePublicKey("00"), /bytes/);
  const id = st.newEventId();
  const ph = await st.commitment(st.newNonce(), '{"action":"a"}');
  const sig = await st.signEvent(a, id, ph);
  assert.ok(await st.verifyEventSignature(st.toHex(kp.publicKey), id, ph, sig));
  assert.equal(await st.verifyEventSignature(st.toHex(other.publicKey), id, ph, sig), false);
  assert.equal(await st.verifyEventSignature(st.toHex(kp.publicKey), id, ph, sig.toUpperCase()), false);
});

test("commitments: payload object and text agree; the nonce matters", async () => {
  const n1 = st.newNonce();
  const a = await st.commitPayload(n1, { actor: { type: "u", id: "1" }, action: "x", metadata: { n: 1.0 } });
  const b = await st.commitPayload(n1, '{"metadata":{"n":1.0},"action":"x","actor":{"id":"1","type":"u"}}');
  assert.deepEqual(a, b);
  assert.notEqual((await st.commitPayload(st.newNonce(), a.canonical)).payloadHash, a.payloadHash);
  await assert.rejects(st.commitPayload(n1, "[1]"), /JSON object/);
  await assert.rejects(st.commitment("00", a.canonical), /bytes/);
});

test("timestamps and leaves", async () => {
  assert.equal(st.parseTime("2026-11-21T10:00:00.123Z").getTime(), Date.UTC(2026, 10, 21, 10, 0, 0, 123));
  for (const bad of ["2026-11-21T10:00:00Z", "2026-11-21T10:00:00.123+00:00", "2026-02-30T10:00:00.000Z", "2026-11-21t10:00:00.000Z"]) {
    assert.throws(() => st.parseTime(bad), /RFC 3339/, bad);
  }
  const leaf = { projectId: "p", stream: "events", sequence: 1, id: "evt_x", timestamp: "2026-11-21T10:00:00.123Z", payloadHash: "00".repeat(32) };
  assert.equal(st.encodeLeaf(leaf), `{"id":"evt_x","payloadHash":"${"00".repeat(32)}","projectId":"p","sequence":1,"stream":"events","timestamp":"2026-11-21T10:00:00.123Z","v":1}`);
  for (const [k, v] of [["stream", "project-audit"], ["sequence", 0], ["id", "x"], ["projectId", ""], ["signature", "ab".repeat(64)]]) {
    assert.throws(() => st.encodeLeaf({ ...leaf, [k]: v }), /invalid leaf|bytes|hex/, k);
  }
});

test("proofs: every inclusion and consistency proof of trees up to 33 leaves", async () => {
  const leaves = [];
  for (let i = 0; i < 33; i++) leaves.push(await st.leafHash(Uint8Array.of(i)));
  const roots = [];
  for (let n = 0; n <= leaves.length; n++) roots.push(await st.rootOf(leaves.slice(0, n)));
  const b = new st.RootBuilder();
  for (let n = 1; n <= leaves.length; n++) {
    await b.append(leaves[n - 1]);
    assert.deepEqual(await b.root(), roots[n]);
    for (let i = 0; i < n; i++) {
      const p = await st.proveInclusion(leaves, i, n);
      await st.verifyInclusion(leaves[i], i, n, p, roots[n]);
      if (p.length > 0) {
        await assert.rejects(st.verifyInclusion(leaves[i], i, n, p.slice(1), roots[n]), st.ProofError);
        await assert.rejects(st.verifyInclusion(leaves[i], i, n, [...p, p[0]], roots[n]), st.ProofError);
      }
    }
    for (let m = 0; m <= n; m++) {
      const p = await st.proveConsistency(leaves, m, n);
      await st.verifyConsistency(m, n, roots[m], roots[n], p);
      if (m > 0 && m < n) {
        await assert.rejects(st.verifyConsistency(m, n, roots[m], roots[n - 1], p), st.ProofError);
        await assert.rejects(st.verifyConsistency(m, n, roots[m], roots[n], p.slice(0, -1)), st.ProofError);
      }
    }
  }
  await assert.rejects(st.verifyInclusion(leaves[0], 5, 5, [], roots[5]), st.ProofError);
  await assert.rejects(st.verifyConsistency(3, 3, roots[3], roots[4], []), /two roots/);
  await assert.rejects(st.verifyConsistency(4, 3, roots[4], roots[3], []), st.ProofError);
  assert.equal(st.toHex(await st.rootOf([])), st.EMPTY_ROOT_HEX);
});

test("sth and receipt: shape checks before signatures", async () => {
  const kp = await st.generateKeyPair();
  const key = await st.importSeed(kp.seed);
  const pub = st.toHex(kp.publicKey);
  const sth = await st.signSTH(key, { v: 1, projectId: "p", stream: "events", treeSize: 2, rootHash: "11".repeat(32), timestamp: "2026-11-21T10:00:00.000Z" });
  await st.verifySTH(pub, sth);
  for (const [k, v] of [["v", 2], ["stream", "project-audit"], ["treeSize", -1], ["rootHash", "AB".repeat(32)], ["timestamp", "yesterday"], ["signature", "00"]]) {
    await assert.rejects(st.verifySTH(pub, { ...sth, [k]: v }), st.SignatureError, k);
  }
  const rec = await st.signReceipt(key, {
    receiptVersion: 2, stream: "events", projectId: "p", valid: true, checkedCount: 2, treeSize: 2,
    rootHash: sth.rootHash, firstBreak: null, verifiedAt: "2026-11-21T10:00:00.000Z",
  });
  await st.verifyReceipt(pub, rec);
  await assert.rejects(st.verifyReceipt(pub, { ...rec, valid: false }), /valid must be true exactly/);
  await assert.rejects(st.verifyReceipt(pub, { ...rec, firstBreak: { sequence: 1, reason: "x", detail: "" } }), st.SignatureError);
});

test("export lines: strict decoding", () => {
  const line = {
    ciphertextHash: null, clientSignature: null, id: "evt_a", leafHash: "00".repeat(32), payloadHash: "11".repeat(32),
    payloadNonce: "22".repeat(32), projectId: "p", sequence: 1, signingKeyId: null, stream: "events",
    timestamp: "2026-11-21T10:00:00.000Z", action: "x", actor: { type: "u", id: "1" },
  };
  const r = st.decodeExportLine(JSON.stringify(line));
  assert.equal(r.payload, '{"action":"x","actor":{"id":"1","type":"u"}}');
  assert.equal(r.nonce, "22".repeat(32));
  assert.throws(() => st.decodeExportLine(JSON.stringify({ ...line, extra: 1 })), /unknown member/);
  assert.throws(() => st.decodeExportLine(JSON.stringify({ ...line, payloadNonce: null })), /shredded event/);
  assert.throws(() => st.decodeExportLine(JSON.stringify({ ...line, sequence: "1" })), /sequence/);
  assert.throws(() => st.decodeExportLine('{"id":"evt_a","id":"evt_b"}'), /duplicate_key/);
  const { action, actor, ...shredded } = line;
  assert.equal(st.decodeExportLine({ ...shredded, payloadNonce: null }).payload, null);
});
