// Signed tree heads, verify receipts and C2SP checkpoints, with the same bytes as the
// Go library (tlog/sth.go, tlog/checkpoint.go).

import { concat, ed25519Sign, ed25519Verify, sha256, toHex, utf8 } from "./bytes.js";
import type { SigningKey } from "./bytes.js";
import { RECEIPT_VERSION, SIGNED_STREAM_EVENTS, SIGNED_STREAM_PROJECT_AUDIT, TREE_HEAD_VERSION, parsePublicKey, parseSignature, parseTime } from "./event.js";
import { canonicalize } from "./jcs.js";
import { parseHash } from "./merkle.js";

/** A signed tree head as the API returns it. */
export interface STH {
  v: number;
  projectId: string;
  /** events or project_audit */
  stream: string;
  treeSize: number;
  rootHash: string;
  timestamp: string;
  /** Ed25519 by the service key over the JCS of the other members. */
  signature: string;
}

/** The first break a verification found. */
export interface ChainBreak {
  sequence: number;
  reason: string;
  detail: string;
}

/** The signed receipt of GET /verify. */
export interface Receipt {
  receiptVersion: number;
  stream: string;
  projectId: string;
  valid: boolean;
  checkedCount: number;
  treeSize: number;
  rootHash: string;
  firstBreak: ChainBreak | null;
  verifiedAt: string;
  servicePublicKey: string;
  signature: string;
}

/** Chain-break reasons of receipts and the offline verifier. */
export const BREAK_SEQUENCE_GAP = "sequence_gap";
export const BREAK_CONTENT_TAMPERED = "content_tampered";
export const BREAK_LEAF_MISMATCH = "leaf_mismatch";
export const BREAK_INVALID_CLIENT_SIGNATURE = "invalid_client_signature";
export const BREAK_ROOT_MISMATCH = "root_mismatch";

/** A signature or signed object that does not verify. */
export class SignatureError extends Error {
  override name = "SignatureError";
}

function validStream(s: unknown): boolean {
  return s === SIGNED_STREAM_EVENTS || s === SIGNED_STREAM_PROJECT_AUDIT;
}

function validSize(n: unknown): boolean {
  return typeof n === "number" && Number.isInteger(n) && n >= 0 && n <= 2 ** 53;
}

function validateSTH(s: STH): void {
  if (s === null || typeof s !== "object") throw new SignatureError("tree head is not an object");
  if (s.v !== TREE_HEAD_VERSION) throw new SignatureError(`tree head version ${s.v}, want ${TREE_HEAD_VERSION}`);
  if (!validStream(s.stream)) throw new SignatureError(`tree head stream ${JSON.stringify(s.stream)}`);
  if (typeof s.projectId !== "string") throw new SignatureError("tree head projectId is not a string");
  if (!validSize(s.treeSize)) throw new SignatureError(`tree size ${s.treeSize} out of range`);
  try {
    parseHash(s.rootHash, "tree head root");
    parseTime(s.timestamp);
  } catch (e) {
    throw new SignatureError((e as Error).message);
  }
}

/** The bytes an STH's signature covers: the JCS of the STH without `signature`. */
export function sthSigningBytes(s: STH): string {
  return canonicalize({ v: s.v, projectId: s.projectId, stream: s.stream, treeSize: s.treeSize, rootHash: s.rootHash, timestamp: s.timestamp });
}

/** Signs an STH (sets its signature). */
export async function signSTH(key: SigningKey, s: Omit<STH, "signature"> & { signature?: string }): Promise<STH> {
  const out = { ...s, signature: "" } as STH;
  validateSTH(out);
  out.signature = toHex(await ed25519Sign(key, utf8(sthSigningBytes(out))));
  return out;
}

export async function verifyJCS(publicKeyHex: string, sigHex: unknown, body: string): Promise<void> {
  let pub: Uint8Array, sig: Uint8Array;
  try {
    pub = parsePublicKey(publicKeyHex);
    sig = parseSignature(sigHex as string);
  } catch (e) {
    throw new SignatureError((e as Error).message);
  }
  if (!(await ed25519Verify(pub, utf8(body), sig))) throw new SignatureError("signature does not verify");
}

/** Throws a SignatureError unless the STH is well-formed and signed by publicKeyHex. */
export async function verifySTH(publicKeyHex: string, s: STH): Promise<void> {
  validateSTH(s);
  await verifyJCS(publicKeyHex, s.signature, sthSigningBytes(s));
}

function validateReceipt(r: Receipt): void {
  if (r === null || typeof r !== "object") throw new SignatureError("receipt is not an object");
  if (r.receiptVersion !== RECEIPT_VERSION) throw new SignatureError(`receipt version ${r.receiptVersion}, want ${RECEIPT_VERSION}`);
  if (!validStream(r.stream)) throw new SignatureError(`receipt stream ${JSON.stringify(r.stream)}`);
  if (r.valid !== (r.firstBreak === null)) throw new SignatureError("receipt: valid must be true exactly when firstBreak is null");
  if (!validSize(r.treeSize) || !validSize(r.checkedCount)) throw new SignatureError("receipt sizes out of range");
  try {
    parseHash(r.rootHash, "receipt root");
    parseTime(r.verifiedAt);
    parsePublicKey(r.servicePublicKey);
  } catch (e) {
    throw new SignatureError((e as Error).message);
  }
}

/** The bytes a receipt's signature covers: the JCS of the receipt without `signature`. */
export function receiptSigningBytes(r: Receipt): string {
  const fb = r.firstBreak === null ? null : { sequence: r.firstBreak.sequence, reason: r.firstBreak.reason, detail: r.firstBreak.detail };
  return canonicalize({
    receiptVersion: r.receiptVersion,
    stream: r.stream,
    projectId: r.projectId,
    valid: r.valid,
    checkedCount: r.checkedCount,
    treeSize: r.treeSize,
    rootHash: r.rootHash,
    firstBreak: fb,
    verifiedAt: r.verifiedAt,
    servicePublicKey: r.servicePublicKey,
  });
}

/** Signs a receipt; servicePublicKey is set to the signer's key. */
export async function signReceipt(key: SigningKey, r: Omit<Receipt, "signature" | "servicePublicKey">): Promise<Receipt> {
  const out = { ...r, servicePublicKey: toHex(key.publicKey), signature: "" } as Receipt;
  validateReceipt(out);
  out.signature = toHex(await ed25519Sign(key, utf8(receiptSigningBytes(out))));
  return out;
}

/**
 * Throws a SignatureError unless the receipt is well-formed, names publicKeyHex as its
 * servicePublicKey and is signed by it.
 */
export async function verifyReceipt(publicKeyHex: string, r: Receipt): Promise<void> {
  validateReceipt(r);
  if (r.servicePublicKey !== publicKeyHex) throw new SignatureError("receipt: servicePublicKey is not the expected service key");
  await verifyJCS(publicKeyHex, r.signature, receiptSigningBytes(r));
}

// ---- C2SP tlog-checkpoint signed notes ----

/** The origin of a project-stream's checkpoint: `<serviceOrigin>/<projectId>/<stream>`. */
export function checkpointOrigin(serviceOrigin: string, projectId: string, stream: string): string {
  return `${serviceOrigin}/${projectId}/${stream}`;
}

function b64(b: Uint8Array): string {
  let s = "";
  for (const c of b) s += String.fromCharCode(c);
  return btoa(s);
}

function unb64(s: string): Uint8Array {
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

// The note key hash: the first 4 bytes of SHA-256(name || "\n" || 0x01 || key).
async function noteKeyHash(name: string, pub: Uint8Array): Promise<Uint8Array> {
  return (await sha256(concat(utf8(name + "\n"), Uint8Array.of(1), pub))).subarray(0, 4);
}

/** The signed-note verifier key of a checkpoint origin: `<origin>+<keyhash>+<base64 key>`. */
export async function checkpointVerifierKey(publicKeyHex: string, origin: string): Promise<string> {
  const pub = parsePublicKey(publicKeyHex);
  return `${origin}+${toHex(await noteKeyHash(origin, pub))}+${b64(concat(Uint8Array.of(1), pub))}`;
}

/** A checkpoint's body. */
export interface Checkpoint {
  origin: string;
  size: number;
  /** hex */
  rootHash: string;
}

/** Signs a checkpoint note with the key named by the origin. */
export async function signCheckpoint(key: SigningKey, origin: string, size: number, rootHashHex: string): Promise<string> {
  const body = `${origin}\n${size}\n${b64(parseHash(rootHashHex))}\n`;
  const sig = await ed25519Sign(key, utf8(body));
  return `${body}\n— ${origin} ${b64(concat(await noteKeyHash(origin, key.publicKey), sig))}\n`;
}

/**
 * Opens a signed checkpoint note: it must be for `origin` and carry a valid signature by
 * publicKeyHex under the key name `origin`. Returns the checkpoint body.
 */
export async function openCheckpoint(publicKeyHex: string, origin: string, note: string): Promise<Checkpoint> {
  const pub = parsePublicKey(publicKeyHex);
  const sep = note.indexOf("\n\n");
  if (sep < 0) throw new SignatureError("checkpoint: no signature block");
  const body = note.slice(0, sep + 1);
  const lines = note.slice(sep + 2).split("\n");
  if (lines[lines.length - 1] !== "") throw new SignatureError("checkpoint: note does not end in a newline");
  const hash = toHex(await noteKeyHash(origin, pub));
  let ok = false;
  for (const line of lines.slice(0, -1)) {
    const m = /^— (\S+) (\S+)$/.exec(line);
    if (!m) throw new SignatureError("checkpoint: malformed signature line");
    if (m[1] !== origin) continue;
    let raw: Uint8Array;
    try {
      raw = unb64(m[2]!);
    } catch {
      throw new SignatureError("checkpoint: signature is not base64");
    }
    if (raw.length !== 68 || toHex(raw.subarray(0, 4)) !== hash) continue;
    if (await ed25519Verify(pub, utf8(body), raw.subarray(4))) ok = true;
  }
  if (!ok) throw new SignatureError(`checkpoint: no valid signature by ${origin}`);
  const b = body.split("\n");
  if (b.length < 4 || b[0] !== origin || !/^(0|[1-9][0-9]*)$/.test(b[1]!)) throw new SignatureError("checkpoint: malformed body");
  const root = unb64(b[2]!);
  if (root.length !== 32) throw new SignatureError("checkpoint: root is not 32 bytes");
  return { origin, size: Number(b[1]), rootHash: toHex(root) };
}
