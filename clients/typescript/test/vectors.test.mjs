// The published byte-level vectors (testdata/vectors/), the same the Go library pins.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import * as st from "../dist/index.js";

const dir = fileURLToPath(new URL("../../../testdata/vectors/", import.meta.url));
const vec = (name) => JSON.parse(readFileSync(dir + name, "utf8"));
const seedKey = (seed) => st.parsePrivateKey(seed);

test("jcs.json: canonical forms", () => {
  for (const c of vec("jcs.json").cases) {
    if (c.Rejected !== undefined) continue;
    assert.equal(st.canonicalizeJSON(c.Input), c.Canonical);
    assert.equal(st.canonicalize(JSON.parse(c.Input)), c.Canonical);
  }
});

test("jcs.json: rejected inputs", () => {
  const rejected = vec("jcs.json").cases.filter((c) => c.Rejected !== undefined);
  assert.ok(rejected.length > 0);
  for (const c of rejected) {
    assert.throws(() => st.canonicalizeJSON(c.Input), (e) => e instanceof st.CanonError && e.kind === "integer_range", c.Input);
  }
});

test("commitment.json: canonical payloads and payloadHash", async () => {
  for (const c of vec("commitment.json").cases) {
    const { canonical, payloadHash } = await st.commitPayload(c.Nonce, c.Payload);
    assert.equal(canonical, c.CanonicalPayload);
    assert.equal(payloadHash, c.PayloadHash);
    assert.equal(await st.commitment(c.Nonce, c.CanonicalPayload), c.PayloadHash);
  }
});

test("event-signature.json: message, signature, verification", async () => {
  for (const c of vec("event-signature.json").cases) {
    const key = await seedKey(c.PrivateKeySeed);
    assert.equal(st.toHex(key.publicKey), c.PublicKey);
    assert.equal(st.eventSigningMessage(c.EventID, c.PayloadHash), c.Message);
    assert.equal(await st.signEvent(key, c.EventID, c.PayloadHash), c.Signature); // Ed25519 is deterministic
    assert.equal(await st.verifyEventSignature(c.PublicKey, c.EventID, c.PayloadHash, c.Signature), true);
    const other = c.PayloadHash.replace(/^./, (d) => (d === "0" ? "1" : "0"));
    assert.equal(await st.verifyEventSignature(c.PublicKey, c.EventID, other, c.Signature), false);
  }
});

test("leaf.json: leaf data and leaf hash", async () => {
  for (const c of vec("leaf.json").cases) {
    const l = c.Leaf;
    const leaf = { ...l, signingKeyId: l.signingKeyId ?? null, signature: l.signature ?? null };
    assert.equal(st.encodeLeaf(leaf), c.LeafData);
    assert.equal(await st.hashLeaf(leaf), c.LeafHash);
    assert.equal(st.toHex(await st.leafHash(st.utf8(c.LeafData))), c.LeafHash);
  }
});

test("merkle.json: roots, inclusion and consistency proofs", async () => {
  const c = vec("merkle.json").cases;
  const leaves = await Promise.all(c.Leaves.map((h) => st.leafHash(st.fromHex(h))));
  for (let n = 0; n < c.Roots.length; n++) {
    assert.equal(st.toHex(await st.rootOf(leaves.slice(0, n))), c.Roots[n], `root of ${n}`);
  }
  for (const p of c.Inclusion) {
    const proof = p.Proof.map((h) => st.fromHex(h));
    assert.deepEqual((await st.proveInclusion(leaves, p.Index, p.Size)).map(st.toHex), p.Proof, `prove ${p.Index}/${p.Size}`);
    await st.verifyInclusion(leaves[p.Index], p.Index, p.Size, proof, st.fromHex(c.Roots[p.Size]));
    await assert.rejects(st.verifyInclusion(leaves[(p.Index + 1) % 7], p.Index, p.Size, proof, st.fromHex(c.Roots[p.Size])), st.ProofError);
  }
  assert.ok(c.Consistency.length > 0);
  for (const p of c.Consistency) {
    const proof = p.Proof.map((h) => st.fromHex(h));
    assert.deepEqual((await st.proveConsistency(leaves, p.OldSize, p.NewSize)).map(st.toHex), p.Proof, `prove ${p.OldSize}→${p.NewSize}`);
    await st.verifyConsistency(p.OldSize, p.NewSize, st.fromHex(c.Roots[p.OldSize]), st.fromHex(c.Roots[p.NewSize]), proof);
    if (p.OldSize > 0 && p.OldSize < p.NewSize) {
      await assert.rejects(st.verifyConsistency(p.OldSize, p.NewSize, st.fromHex(c.Roots[p.OldSize - 1]), st.fromHex(c.Roots[p.NewSize]), proof), st.ProofError);
    }
  }
});

test("sth.json: signing bytes, signature, verification", async () => {
  for (const c of vec("sth.json").cases) {
    const key = await seedKey(c.PrivateKeySeed);
    assert.equal(st.sthSigningBytes(c.STH), c.SigningBytes);
    const { signature, ...body } = c.STH;
    assert.equal((await st.signSTH(key, body)).signature, signature);
    await st.verifySTH(c.PublicKey, c.STH);
    await assert.rejects(st.verifySTH(c.PublicKey, { ...c.STH, treeSize: c.STH.treeSize + 1 }), st.SignatureError);
  }
});

test("receipt.json: signing bytes, signature, verification", async () => {
  for (const c of vec("receipt.json").cases) {
    const key = await seedKey(c.PrivateKeySeed);
    assert.equal(st.receiptSigningBytes(c.Receipt), c.SigningBytes);
    const { signature, servicePublicKey, ...body } = c.Receipt;
    const signed = await st.signReceipt(key, body);
    assert.equal(signed.signature, signature);
    assert.equal(signed.servicePublicKey, servicePublicKey);
    await st.verifyReceipt(servicePublicKey, c.Receipt);
    await assert.rejects(st.verifyReceipt(servicePublicKey, { ...c.Receipt, checkedCount: 4 }), st.SignatureError);
    const other = st.toHex((await st.generateKeyPair()).publicKey);
    await assert.rejects(st.verifyReceipt(other, c.Receipt), /not the expected service key/);
  }
});

test("checkpoint.json: verifier key, note signature, opening", async () => {
  for (const c of vec("checkpoint.json").cases) {
    const key = await seedKey(c.PrivateKeySeed);
    assert.equal(await st.checkpointVerifierKey(c.PublicKey, c.Origin), c.VerifierKey);
    assert.equal(await st.signCheckpoint(key, c.Origin, c.Size, c.RootHash), c.Note);
    assert.deepEqual(await st.openCheckpoint(c.PublicKey, c.Origin, c.Note), { origin: c.Origin, size: c.Size, rootHash: c.RootHash });
    await assert.rejects(st.openCheckpoint(c.PublicKey, c.Origin, c.Note.replace(`\n${c.Size}\n`, `\n${c.Size + 1}\n`)), st.SignatureError);
  }
});

test("export/: the sample verifies, each tampered file names its reason and sequence", async () => {
  const m = vec("export/manifest.json");
  const keys = (id) => (id === m.signingKeyId ? [m.signingPublicKey] : []);
  const root = vec("export/root.json");
  await st.verifySTH(root.servicePublicKey, root.sth);
  const ok = await st.verifyExport(readFileSync(dir + "export/" + m.export, "utf8"), { root: m.root, size: m.size, signingKeys: keys });
  assert.equal(ok.size, m.size);
  assert.equal(ok.root, m.root);
  assert.equal(ok.projectId, m.projectId);
  assert.equal(ok.stats.signatures, m.counts.signed);
  assert.equal(ok.stats.shredded, m.counts.shredded);
  assert.equal(ok.stats.rederived, m.counts.events - m.counts.shredded);
  for (const t of m.tampered) {
    await assert.rejects(
      st.verifyExport(readFileSync(dir + "export/" + t.file, "utf8"), { root: m.root, size: m.size, signingKeys: keys }),
      (e) => e instanceof st.ChainBreakError && e.reason === t.reason && e.sequence === t.sequence,
      t.file,
    );
  }
});
