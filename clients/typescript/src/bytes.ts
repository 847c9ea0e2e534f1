// Byte helpers and the two cryptographic primitives, SHA-256 and Ed25519, taken from
// the Web Crypto API (globalThis.crypto.subtle), so that the package runs unchanged in
// Node >= 20, browsers and edge runtimes that implement Ed25519 in Web Crypto.

const encoder = new TextEncoder();

/** UTF-8 bytes of a string. */
export function utf8(s: string): Uint8Array {
  return encoder.encode(s);
}

const HEX = "0123456789abcdef";

/** Lowercase hex of bytes. */
export function toHex(b: Uint8Array): string {
  let out = "";
  for (const c of b) out += HEX[c >> 4]! + HEX[c & 15]!;
  return out;
}

/**
 * Bytes of a lowercase hex string of exactly `size` bytes (any length when size is
 * omitted). Upper-case hex is rejected rather than normalised, as in the Go library:
 * one value has one spelling.
 */
export function fromHex(s: string, size?: number, what = "hex"): Uint8Array {
  if (typeof s !== "string" || s.length % 2 !== 0 || !/^[0-9a-f]*$/.test(s)) {
    throw new TypeError(`${what}: not lowercase hex`);
  }
  if (size !== undefined && s.length !== size * 2) {
    throw new TypeError(`${what}: ${s.length / 2} bytes, want ${size}`);
  }
  const out = new Uint8Array(s.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(s.slice(2 * i, 2 * i + 2), 16);
  return out;
}

/** Concatenation of byte arrays. */
export function concat(...parts: Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

/** Constant-structure equality of two byte arrays. */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a[i]! ^ b[i]!;
  return d === 0;
}

function subtle(): SubtleCrypto {
  const s = globalThis.crypto?.subtle;
  if (!s) throw new Error("sealtrail: this runtime has no Web Crypto (globalThis.crypto.subtle)");
  return s;
}

/** Random bytes from the runtime's CSPRNG. */
export function randomBytes(n: number): Uint8Array {
  const out = new Uint8Array(n);
  globalThis.crypto.getRandomValues(out);
  return out;
}

// BufferSource view of a Uint8Array, for the Web Crypto calls' parameter types.
function src(b: Uint8Array): ArrayBuffer {
  return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
}

/** SHA-256 of data. */
export async function sha256(data: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await subtle().digest("SHA-256", src(data)));
}

// PKCS#8 prefix of an Ed25519 private key: the 32-byte seed follows (RFC 8410).
const PKCS8_ED25519 = fromHex("302e020100300506032b657004220420");

/** An Ed25519 key pair: the 32-byte seed and the 32-byte public key. */
export interface KeyPair {
  seed: Uint8Array;
  publicKey: Uint8Array;
}

/** Ed25519 signing key held in the runtime's Web Crypto, with its public key. */
export interface SigningKey {
  readonly publicKey: Uint8Array;
  /** The runtime's CryptoKey (typed opaquely so that declarations need no DOM types). */
  readonly key: object;
}

function base64urlDecode(s: string): Uint8Array {
  const b64 = s.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((s.length + 3) % 4);
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** Imports an Ed25519 seed as a signing key and derives its public key. */
export async function importSeed(seed: Uint8Array): Promise<SigningKey> {
  if (seed.length !== 32) throw new TypeError("ed25519 seed: want 32 bytes");
  const key = await subtle().importKey("pkcs8", src(concat(PKCS8_ED25519, seed)), { name: "Ed25519" }, true, ["sign"]);
  const jwk = await subtle().exportKey("jwk", key);
  if (!jwk.x) throw new Error("ed25519: runtime did not export the public key");
  return { key, publicKey: base64urlDecode(jwk.x) };
}

/** Ed25519 signature of msg. */
export async function ed25519Sign(key: SigningKey, msg: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await subtle().sign({ name: "Ed25519" }, key.key as CryptoKey, src(msg)));
}

/** Whether sig is a valid Ed25519 signature of msg under the 32-byte public key pub. */
export async function ed25519Verify(pub: Uint8Array, msg: Uint8Array, sig: Uint8Array): Promise<boolean> {
  if (pub.length !== 32 || sig.length !== 64) return false;
  let key: CryptoKey;
  try {
    key = await subtle().importKey("raw", src(pub), { name: "Ed25519" }, false, ["verify"]);
  } catch {
    return false; // not a point on the curve
  }
  return subtle().verify({ name: "Ed25519" }, key, src(sig), src(msg));
}

/** A new random Ed25519 key pair. */
export async function generateKeyPair(): Promise<KeyPair> {
  const seed = randomBytes(32);
  const k = await importSeed(seed);
  return { seed, publicKey: k.publicKey };
}
