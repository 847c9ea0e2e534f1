// Client construction and signing without a service: option checks, the signed body.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as st from "../dist/index.js";

test("options are checked at construction", () => {
  assert.throws(() => new st.SealtrailClient({}), /apiKey is required/);
  assert.throws(() => new st.SealtrailClient({ apiKey: "k", signingKeyId: "sk" }), /together/);
  assert.throws(() => new st.SealtrailClient({ apiKey: "k", signingPrivateKey: "00".repeat(32) }), /together/);
  assert.throws(() => new st.SealtrailClient({ apiKey: "k", signingKeyId: "sk", signingPrivateKey: "0".repeat(63) }), /64 or 128/);
  assert.throws(() => new st.SealtrailClient({ apiKey: "k", signingKeyId: "sk", signingPrivateKey: "AA".repeat(32) }), /lowercase hex/);
  assert.throws(() => new st.SealtrailClient({ apiKey: "k", baseUrl: "ftp://x" }), /http\(s\)/);
  assert.throws(() => new st.SealtrailClient({ apiKey: "k", baseUrl: "not a url" }), /http\(s\)/);
  assert.throws(() => new st.SealtrailClient({ apiKey: "k", servicePublicKey: "ab" }), /bytes/);
  assert.equal(new st.SealtrailClient({ apiKey: "k" }).baseUrl, st.DEFAULT_BASE_URL);
  assert.equal(new st.SealtrailClient({ apiKey: "k", baseUrl: "https://a.example///" }).baseUrl, "https://a.example");
});

test("a private key whose public half does not match fails the first log, before any request", async () => {
  const a = await st.generateKeyPair();
  const b = await st.generateKeyPair();
  let requests = 0;
  const c = new st.SealtrailClient({
    apiKey: "k",
    signingKeyId: "sk",
    signingPrivateKey: st.toHex(a.seed) + st.toHex(b.publicKey),
    fetch: async () => {
      requests++;
      throw new Error("no network in this test");
    },
  });
  await assert.rejects(c.log({ action: "x", actor: { type: "u", id: "1" } }), /public half/);
  assert.equal(requests, 0);
});

test("signed body: canonical payload plus transport members, status set, unknown members refused", async () => {
  const kp = await st.generateKeyPair();
  const key = await st.importSeed(kp.seed);
  const t = Date.UTC(2026, 10, 21);
  const s = await st.signedEventBody(key, "sk_1", { actor: { id: "1", type: "u" }, action: "a", metadata: { b: 1, a: undefined } }, t);
  assert.equal(s.payload, '{"action":"a","actor":{"id":"1","type":"u"},"metadata":{"b":1},"status":"success"}');
  const body = JSON.parse(s.body);
  assert.deepEqual(Object.keys(body), ["action", "actor", "metadata", "status", "id", "nonce", "signingKeyId", "signature"]);
  assert.equal(body.signingKeyId, "sk_1");
  assert.equal(st.newEventId(t).slice(0, 14), s.id.slice(0, 14), "the id is minted for the given time");
  assert.equal(await st.commitment(body.nonce, s.payload), s.payloadHash);
  assert.ok(await st.verifyEventSignature(st.toHex(kp.publicKey), s.id, s.payloadHash, body.signature));
  await assert.rejects(st.signedEventBody(key, "sk_1", { action: "a", actor: { type: "u", id: "1" }, extra: 1 }), /not an event member/);
});

test("log sends its body in RFC 8785 form, signed or not", async () => {
  const kp = await st.generateKeyPair();
  const sent = [];
  const fetch = async (_url, init) => {
    sent.push(init.body);
    return new Response('{"id":"evt_a","status":"sealed"}', { status: 202, headers: { "content-type": "application/json" } });
  };
  const input = { status: "success", actor: { type: "user", id: "u<1>", display: "A & B" }, action: "doc.share", metadata: { z: 1.5, a: ["x", 2] } };
  for (const opts of [{}, { signingKeyId: "sk_1", signingPrivateKey: st.toHex(kp.seed) }]) {
    const c = new st.SealtrailClient({ apiKey: "k", baseUrl: "http://127.0.0.1:1", autoVerify: false, fetch, ...opts });
    await c.log(input);
    await c.close();
  }
  assert.equal(sent.length, 2);
  for (const body of sent) assert.equal(body, st.canonicalizeJSON(body));
  assert.equal(sent[0], '{"action":"doc.share","actor":{"display":"A & B","id":"u<1>","type":"user"},"metadata":{"a":["x",2],"z":1.5},"status":"success"}');
});
