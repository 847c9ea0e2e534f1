// Events: version constants, ids, nonces, payload commitments, customer signatures and
// leaves, with the same bytes as the Go library (tlog/event.go, tlog/leaf.go,
// docs/formats.md).

import { bytesEqual, concat, ed25519Sign, ed25519Verify, fromHex, importSeed, randomBytes, sha256, toHex, utf8 } from "./bytes.js";
import type { SigningKey } from "./bytes.js";
import { canonicalize, canonicalizeJSON } from "./jcs.js";
import { leafHash } from "./merkle.js";

/** Version of the leaf encoding (the leaf's `v`). */
export const LEAF_VERSION = 1;
/** Version of the signed tree head (the STH's `v`). */
export const TREE_HEAD_VERSION = 1;
/** Version of the customer event-signature message (`sealtrail/event/v1`). */
export const SIGNING_PROTOCOL_VERSION = 1;
/** Version of the verify receipt (`receiptVersion`). */
export const RECEIPT_VERSION = 2;
/** The one signature algorithm. */
export const SIGNATURE_ALGORITHM = "Ed25519";

/** Stream names inside signed objects (tree heads, receipts, leaves). */
export const SIGNED_STREAM_EVENTS = "events";
export const SIGNED_STREAM_PROJECT_AUDIT = "project_audit";

/** The members of an event's payload: what the commitment covers. */
export const PAYLOAD_MEMBERS: readonly string[] = [
  "action", "actor", "status", "target", "risk", "context", "metadata",
  "requestId", "sessionId", "ipAddress", "userAgent",
  "agentId", "model", "toolName", "toolCallId", "approvalId", "policyVersion",
  "inputHash", "outputHash",
];

/** Size of a payload nonce in bytes. */
export const NONCE_SIZE = 32;

const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const MAX_EVENT_ID_LEN = 128;

/**
 * A new event id for time `now`: `evt_` and 26 Crockford base32 digits of 48 bits of
 * Unix milliseconds then 80 random bits, so ids sort by mint time.
 */
export function newEventId(now: Date | number = Date.now()): string {
  const ms = BigInt(typeof now === "number" ? now : now.getTime());
  let v = (ms & 0xffffffffffffn) << 80n;
  const r = randomBytes(10);
  for (let i = 0; i < 10; i++) v |= BigInt(r[i]!) << BigInt(8 * (9 - i));
  let out = "";
  for (let i = 0; i < 26; i++) {
    out = CROCKFORD[Number(v & 31n)]! + out;
    v >>= 5n;
  }
  return "evt_" + out;
}

/** Whether id is a well-formed event id: `evt_` then 1 to 124 of [A-Za-z0-9_-]. */
export function validEventId(id: string): boolean {
  return typeof id === "string" && id.length <= MAX_EVENT_ID_LEN && /^evt_[A-Za-z0-9_-]+$/.test(id);
}

/** A new 32-byte payload nonce, lowercase hex. */
export function newNonce(): string {
  return toHex(randomBytes(NONCE_SIZE));
}

/** payloadHash = hex(SHA-256(nonce || canonicalPayload)). The payload must already be JCS. */
export async function commitment(nonceHex: string, canonicalPayload: string): Promise<string> {
  return toHex(await sha256(concat(fromHex(nonceHex, NONCE_SIZE, "nonce"), utf8(canonicalPayload))));
}

/**
 * Canonicalizes a payload (a JSON text or a JavaScript object) and commits to it with
 * the nonce: the canonical bytes and the payloadHash.
 */
export async function commitPayload(
  nonceHex: string,
  payload: string | Uint8Array | object,
): Promise<{ canonical: string; payloadHash: string }> {
  const canonical = typeof payload === "string" || payload instanceof Uint8Array ? canonicalizeJSON(payload) : canonicalize(payload);
  if (!canonical.startsWith("{")) throw new TypeError("payload must be a JSON object");
  return { canonical, payloadHash: await commitment(nonceHex, canonical) };
}

/** The message a customer signs: `sealtrail/event/v1\n<eventId>\n<payloadHash>`. */
export function eventSigningMessage(eventId: string, payloadHash: string): string {
  if (!validEventId(eventId)) throw new TypeError(`event id ${JSON.stringify(eventId)} is not well-formed`);
  fromHex(payloadHash, 32, "payloadHash");
  return `sealtrail/event/v${SIGNING_PROTOCOL_VERSION}\n${eventId}\n${payloadHash}`;
}

/**
 * Parses a hex Ed25519 private key, the 32-byte seed or the 64-byte seed || public form
 * (whose public half must match), into a signing key.
 */
export async function parsePrivateKey(hex: string): Promise<SigningKey> {
  if (typeof hex !== "string" || (hex.length !== 64 && hex.length !== 128)) {
    throw new TypeError("private key: want 64 or 128 lowercase hex digits");
  }
  const raw = fromHex(hex, undefined, "private key");
  const key = await importSeed(raw.subarray(0, 32));
  if (raw.length === 64 && !bytesEqual(raw.subarray(32), key.publicKey)) {
    throw new TypeError("private key: public half does not match the seed");
  }
  return key;
}

/** Parses a hex Ed25519 public key (64 lowercase digits). */
export function parsePublicKey(hex: string): Uint8Array {
  return fromHex(hex, 32, "public key");
}

/** Parses a hex Ed25519 signature (128 lowercase digits). */
export function parseSignature(hex: string): Uint8Array {
  return fromHex(hex, 64, "signature");
}

/** The customer signature (hex) of an event id and its payloadHash. */
export async function signEvent(key: SigningKey, eventId: string, payloadHash: string): Promise<string> {
  return toHex(await ed25519Sign(key, utf8(eventSigningMessage(eventId, payloadHash))));
}

/** Whether sigHex is the customer signature of (eventId, payloadHash) under publicKeyHex. */
export async function verifyEventSignature(publicKeyHex: string, eventId: string, payloadHash: string, sigHex: string): Promise<boolean> {
  let pub: Uint8Array, sig: Uint8Array, msg: string;
  try {
    pub = parsePublicKey(publicKeyHex);
    sig = parseSignature(sigHex);
    msg = eventSigningMessage(eventId, payloadHash);
  } catch {
    return false;
  }
  return ed25519Verify(pub, utf8(msg), sig);
}

const TIME_RE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{3})Z$/;

/** Formats a time the one way Sealtrail does: RFC 3339 UTC with milliseconds. */
export function formatTime(t: Date | number): string {
  return new Date(t).toISOString();
}

/** Parses a Sealtrail timestamp (`2026-11-21T10:00:00.123Z`); any other spelling throws. */
export function parseTime(s: string): Date {
  const m = typeof s === "string" ? TIME_RE.exec(s) : null;
  const d = m ? new Date(s) : null;
  if (!m || !d || Number.isNaN(d.getTime()) || d.toISOString() !== s) {
    throw new TypeError(`timestamp ${JSON.stringify(s)} is not RFC 3339 UTC with milliseconds`);
  }
  return d;
}

/** A leaf of a project-stream's tree. */
export interface Leaf {
  projectId: string;
  /** events or project_audit */
  stream: string;
  /** 1-based */
  sequence: number;
  id: string;
  timestamp: string;
  payloadHash: string;
  /** Both absent (or empty) when the event is unsigned. */
  signingKeyId?: string | null;
  signature?: string | null;
}

/** Throws a TypeError unless the leaf is well-formed. */
export function validateLeaf(l: Leaf): void {
  const bad = (d: string): never => {
    throw new TypeError(`invalid leaf: ${d}`);
  };
  if (!l.projectId) bad("empty projectId");
  if (l.stream !== SIGNED_STREAM_EVENTS && l.stream !== SIGNED_STREAM_PROJECT_AUDIT) bad(`stream ${JSON.stringify(l.stream)}`);
  if (!Number.isSafeInteger(l.sequence) && l.sequence !== 2 ** 53) bad(`sequence ${l.sequence}`);
  if (l.sequence < 1 || l.sequence > 2 ** 53) bad(`sequence ${l.sequence} out of range`);
  if (!validEventId(l.id)) bad(`event id ${JSON.stringify(l.id)}`);
  if (!l.signingKeyId !== !l.signature) bad("signingKeyId and signature go together");
  parseTime(l.timestamp);
  fromHex(l.payloadHash, 32, "payloadHash");
  if (l.signature) parseSignature(l.signature);
}

/** The leaf data: the JCS of the leaf members (signature members only when signed). */
export function encodeLeaf(l: Leaf): string {
  validateLeaf(l);
  const o: Record<string, unknown> = {
    id: l.id,
    payloadHash: l.payloadHash,
    projectId: l.projectId,
    sequence: l.sequence,
    stream: l.stream,
    timestamp: l.timestamp,
    v: LEAF_VERSION,
  };
  if (l.signature) {
    o.signature = l.signature;
    o.signingKeyId = l.signingKeyId;
  }
  return canonicalize(o);
}

/** The leaf hash (hex): SHA-256(0x00 || leaf data). */
export async function hashLeaf(l: Leaf): Promise<string> {
  return toHex(await leafHash(utf8(encodeLeaf(l))));
}
