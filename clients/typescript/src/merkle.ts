// RFC 6962 / RFC 9162 Merkle tree hashing, inclusion and consistency proofs, with the
// same bytes as the Go library (tlog/hash.go, tlog/proof.go). Hashes are 32-byte
// Uint8Arrays; sizes and indexes are numbers (at most 2^53) and the index arithmetic is
// done in BigInt, since JavaScript's bit operators are 32-bit.

import { bytesEqual, concat, fromHex, sha256, toHex } from "./bytes.js";

/** A tree or leaf hash: 32 bytes. */
export type Hash = Uint8Array;

/** The root of the empty tree: SHA-256 of nothing. */
export const EMPTY_ROOT_HEX = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/** A proof that does not verify. */
export class ProofError extends Error {
  override name = "ProofError";
}

/** SHA-256(0x00 || data): the hash of a leaf. */
export function leafHash(data: Uint8Array): Promise<Hash> {
  return sha256(concat(Uint8Array.of(0), data));
}

/** SHA-256(0x01 || left || right): the hash of an interior node. */
export function nodeHash(left: Hash, right: Hash): Promise<Hash> {
  return sha256(concat(Uint8Array.of(1), left, right));
}

/** Parses a lowercase hex hash (64 digits). */
export function parseHash(s: string, what = "hash"): Hash {
  return fromHex(s, 32, what);
}

function checkSize(n: number, what: string): bigint {
  if (!Number.isSafeInteger(n) || n < 0) throw new ProofError(`${what} ${n} is not a non-negative integer`);
  return BigInt(n);
}

// Largest power of two strictly below n (n >= 2).
function split(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/** The Merkle tree hash (root) of the given leaf hashes. */
export async function rootOf(leaves: readonly Hash[]): Promise<Hash> {
  const b = new RootBuilder();
  for (const l of leaves) await b.append(l);
  return b.root();
}

async function mth(leaves: readonly Hash[], lo: number, hi: number): Promise<Hash> {
  const n = hi - lo;
  if (n === 0) return fromHex(EMPTY_ROOT_HEX);
  if (n === 1) return leaves[lo]!;
  const k = split(n);
  return nodeHash(await mth(leaves, lo, lo + k), await mth(leaves, lo + k, hi));
}

/** The inclusion proof of leaf `index` in the tree of the first `size` leaves. */
export async function proveInclusion(leaves: readonly Hash[], index: number, size = leaves.length): Promise<Hash[]> {
  checkSize(index, "index");
  checkSize(size, "size");
  if (size > leaves.length || index >= size) throw new ProofError(`index ${index} not in tree of size ${size}`);
  const path = async (m: number, lo: number, hi: number): Promise<Hash[]> => {
    const n = hi - lo;
    if (n <= 1) return [];
    const k = split(n);
    if (m < k) return [...(await path(m, lo, lo + k)), await mth(leaves, lo + k, hi)];
    return [...(await path(m - k, lo + k, hi)), await mth(leaves, lo, lo + k)];
  };
  return path(index, 0, size);
}

/** The consistency proof from the tree of `oldSize` leaves to the tree of `newSize`. */
export async function proveConsistency(leaves: readonly Hash[], oldSize: number, newSize = leaves.length): Promise<Hash[]> {
  checkSize(oldSize, "old size");
  checkSize(newSize, "new size");
  if (newSize > leaves.length || oldSize > newSize) throw new ProofError(`sizes ${oldSize}→${newSize} out of range`);
  if (oldSize === 0 || oldSize === newSize) return [];
  const sub = async (m: number, lo: number, hi: number, complete: boolean): Promise<Hash[]> => {
    const n = hi - lo;
    if (m === n) return complete ? [] : [await mth(leaves, lo, hi)];
    const k = split(n);
    if (m <= k) return [...(await sub(m, lo, lo + k, complete)), await mth(leaves, lo + k, hi)];
    return [...(await sub(m - k, lo + k, hi, false)), await mth(leaves, lo, lo + k)];
  };
  return sub(oldSize, 0, newSize, true);
}

/** Recomputes the root from a leaf hash and its inclusion proof (RFC 9162 2.1.3.2). */
export async function rootFromInclusion(leaf: Hash, index: number, size: number, proof: readonly Hash[]): Promise<Hash> {
  let fn = checkSize(index, "index");
  let sn = checkSize(size, "size") - 1n;
  if (fn > sn) throw new ProofError(`index ${index} is not below size ${size}`);
  let r = leaf;
  for (const p of proof) {
    if (sn === 0n) throw new ProofError("inclusion proof is too long");
    if ((fn & 1n) === 1n || fn === sn) {
      r = await nodeHash(p, r);
      while ((fn & 1n) === 0n && fn !== 0n) {
        fn >>= 1n;
        sn >>= 1n;
      }
    } else {
      r = await nodeHash(r, p);
    }
    fn >>= 1n;
    sn >>= 1n;
  }
  if (sn !== 0n) throw new ProofError("inclusion proof is too short");
  return r;
}

/** Throws a ProofError unless proof shows leaf at index in the tree (size, root). */
export async function verifyInclusion(leaf: Hash, index: number, size: number, proof: readonly Hash[], root: Hash): Promise<void> {
  const got = await rootFromInclusion(leaf, index, size, proof);
  if (!bytesEqual(got, root)) throw new ProofError(`inclusion proof leads to root ${toHex(got)}, want ${toHex(root)}`);
}

/**
 * Throws a ProofError unless proof shows that the tree (newSize, newRoot) extends the
 * tree (oldSize, oldRoot) (RFC 9162 2.1.4.2).
 */
export async function verifyConsistency(
  oldSize: number,
  newSize: number,
  oldRoot: Hash,
  newRoot: Hash,
  proof: readonly Hash[],
): Promise<void> {
  const o = checkSize(oldSize, "old size");
  const n = checkSize(newSize, "new size");
  if (o > n) throw new ProofError(`old size ${oldSize} is above new size ${newSize}`);
  if (o === n) {
    if (proof.length !== 0) throw new ProofError("consistency proof between equal sizes must be empty");
    if (!bytesEqual(oldRoot, newRoot)) throw new ProofError("two roots for one size");
    return;
  }
  if (o === 0n) {
    if (proof.length !== 0) throw new ProofError("consistency proof from the empty tree must be empty");
    return;
  }
  if (proof.length === 0) throw new ProofError("consistency proof is empty");
  const path = [...proof];
  if ((o & (o - 1n)) === 0n) path.unshift(oldRoot); // old size is a power of two
  let fn = o - 1n;
  let sn = n - 1n;
  while ((fn & 1n) === 1n) {
    fn >>= 1n;
    sn >>= 1n;
  }
  let fr = path[0]!;
  let sr = path[0]!;
  for (const c of path.slice(1)) {
    if (sn === 0n) throw new ProofError("consistency proof is too long");
    if ((fn & 1n) === 1n || fn === sn) {
      fr = await nodeHash(c, fr);
      sr = await nodeHash(c, sr);
      while ((fn & 1n) === 0n && fn !== 0n) {
        fn >>= 1n;
        sn >>= 1n;
      }
    } else {
      sr = await nodeHash(sr, c);
    }
    fn >>= 1n;
    sn >>= 1n;
  }
  if (sn !== 0n) throw new ProofError("consistency proof is too short");
  if (!bytesEqual(fr, oldRoot)) throw new ProofError(`consistency proof leads to old root ${toHex(fr)}, want ${toHex(oldRoot)}`);
  if (!bytesEqual(sr, newRoot)) throw new ProofError(`consistency proof leads to new root ${toHex(sr)}, want ${toHex(newRoot)}`);
}

/** Builds a tree's root incrementally from its leaf hashes, in O(log n) memory. */
export class RootBuilder {
  // Perfect subtrees, largest first, with their sizes.
  #stack: { size: number; hash: Hash }[] = [];
  #size = 0;

  get size(): number {
    return this.#size;
  }

  async append(leaf: Hash): Promise<void> {
    let cur = { size: 1, hash: leaf };
    while (this.#stack.length > 0 && this.#stack[this.#stack.length - 1]!.size === cur.size) {
      const left = this.#stack.pop()!;
      cur = { size: left.size * 2, hash: await nodeHash(left.hash, cur.hash) };
    }
    this.#stack.push(cur);
    this.#size++;
  }

  async root(): Promise<Hash> {
    if (this.#stack.length === 0) return fromHex(EMPTY_ROOT_HEX);
    let r = this.#stack[this.#stack.length - 1]!.hash;
    for (let i = this.#stack.length - 2; i >= 0; i--) r = await nodeHash(this.#stack[i]!.hash, r);
    return r;
  }
}
