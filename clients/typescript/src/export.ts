// Export lines (stored events) and the rebuild of a whole stream from its export, as
// the Go library and the offline verifier do it (tlog/export.go, docs/formats.md
// "Export line and stored event", "Rebuild order and break reasons").

import { fromHex, toHex } from "./bytes.js";
import { PAYLOAD_MEMBERS, commitment, hashLeaf, validateLeaf, verifyEventSignature } from "./event.js";
import type { Leaf } from "./event.js";
import { canonicalize, canonicalizeJSON } from "./jcs.js";
import { RootBuilder } from "./merkle.js";
import { BREAK_CONTENT_TAMPERED, BREAK_INVALID_CLIENT_SIGNATURE, BREAK_LEAF_MISMATCH, BREAK_ROOT_MISMATCH, BREAK_SEQUENCE_GAP } from "./sth.js";
import type { ChainBreak } from "./sth.js";

const IDENTITY_MEMBERS = [
  "id", "sequence", "timestamp", "projectId", "stream", "leafHash", "payloadHash",
  "payloadNonce", "ciphertextHash", "signingKeyId", "clientSignature",
];

/** A malformed export line or stored event (not tampering: it cannot be read at all). */
export class ExportLineError extends Error {
  override name = "ExportLineError";
}

/** One decoded export line. */
export interface ExportRecord {
  leaf: Leaf;
  /** The stored leaf hash (hex). */
  leafHash: string;
  /** The canonical payload, rebuilt from the payload members; null when shredded. */
  payload: string | null;
  /** hex; null when shredded */
  nonce: string | null;
  ciphertextHash: string | null;
}

/**
 * Decodes one export line or stored event (JSON text, or an object as parsed from the
 * API), strictly: unknown members, a missing identity member, or a shredded event that
 * still carries payload members are ExportLineErrors.
 */
export function decodeExportLine(line: string | Uint8Array | Record<string, unknown>): ExportRecord {
  let m: Record<string, unknown>;
  try {
    m = JSON.parse(typeof line === "object" && !(line instanceof Uint8Array) ? canonicalize(line) : canonicalizeJSON(line));
  } catch (e) {
    throw new ExportLineError(`malformed export line: ${(e as Error).message}`);
  }
  if (m === null || typeof m !== "object" || Array.isArray(m)) throw new ExportLineError("malformed export line: not a JSON object");
  const payloadKeys: string[] = [];
  for (const k of Object.keys(m)) {
    if (PAYLOAD_MEMBERS.includes(k)) payloadKeys.push(k);
    else if (!IDENTITY_MEMBERS.includes(k)) throw new ExportLineError(`malformed export line: unknown member ${JSON.stringify(k)}`);
  }
  const bad = (member: string, why: string): never => {
    throw new ExportLineError(`malformed export line: member ${JSON.stringify(member)}: ${why}`);
  };
  const req = (k: string): string => {
    if (!(k in m)) bad(k, "missing");
    if (typeof m[k] !== "string") bad(k, "not a string");
    return m[k] as string;
  };
  const opt = (k: string): string | null => {
    const v = m[k];
    if (v === undefined || v === null) return null;
    if (typeof v !== "string") bad(k, "not a string or null");
    if (v === "") bad(k, "empty string");
    return v as string;
  };
  const seq = m.sequence;
  if (seq === undefined) bad("sequence", "missing");
  if (typeof seq !== "number" || !Number.isInteger(seq) || seq < 0) bad("sequence", "not a positive integer");
  const leaf: Leaf = {
    id: req("id"),
    sequence: seq as number,
    timestamp: req("timestamp"),
    projectId: req("projectId"),
    stream: req("stream"),
    payloadHash: req("payloadHash"),
    signingKeyId: null,
    signature: null,
  };
  const leafHash = req("leafHash");
  if (!/^[0-9a-f]{64}$/.test(leafHash)) bad("leafHash", "not a lowercase hex hash");
  if (!("payloadNonce" in m)) bad("payloadNonce", "missing (null when shredded)");
  const nonce = opt("payloadNonce");
  const ciphertextHash = opt("ciphertextHash");
  leaf.signingKeyId = opt("signingKeyId");
  leaf.signature = opt("clientSignature");
  try {
    validateLeaf(leaf);
  } catch (e) {
    throw new ExportLineError(`malformed export line: ${(e as Error).message}`);
  }
  if (nonce === null) {
    if (payloadKeys.length > 0) throw new ExportLineError("malformed export line: shredded event (payloadNonce null) carries payload members");
    return { leaf, leafHash, payload: null, nonce: null, ciphertextHash };
  }
  if (!/^[0-9a-f]{64}$/.test(nonce)) bad("payloadNonce", "not 32 bytes of lowercase hex");
  const payload: Record<string, unknown> = {};
  for (const k of payloadKeys) payload[k] = m[k];
  return { leaf, leafHash, payload: canonicalize(payload), nonce, ciphertextHash };
}

/** Options of a rebuild. */
export interface RebuildOptions {
  /** Public keys (hex) a signing key id may have; given, every customer signature is checked. */
  signingKeys?: (signingKeyId: string) => readonly string[];
  projectId?: string;
  /** events or project_audit */
  stream?: string;
}

/** A chain break found by a rebuild. */
export class ChainBreakError extends Error implements ChainBreak {
  override name = "ChainBreakError";
  constructor(
    readonly sequence: number,
    readonly reason: string,
    readonly detail: string,
  ) {
    super(`${reason} at sequence ${sequence}: ${detail}`);
  }
}

/** Counters of a rebuild. */
export interface RebuildStats {
  events: number;
  rederived: number;
  shredded: number;
  signatures: number;
}

/**
 * Rebuilds a project-stream's tree from its records, in sequence order, checking for
 * each: sequence contiguity, the commitment (unless shredded), the customer signature
 * (when keys are given) and the leaf hash. The first break stops the rebuild.
 */
export class Rebuilder {
  readonly stats: RebuildStats = { events: 0, rederived: 0, shredded: 0, signatures: 0 };
  #roots = new RootBuilder();
  #broken: ChainBreakError | null = null;
  #project: string;
  #stream: string;

  constructor(readonly opts: RebuildOptions = {}) {
    this.#project = opts.projectId ?? "";
    this.#stream = opts.stream ?? "";
  }

  get size(): number {
    return this.#roots.size;
  }
  get projectId(): string {
    return this.#project;
  }
  get stream(): string {
    return this.#stream;
  }

  #fail(seq: number, reason: string, detail: string): never {
    this.#broken = new ChainBreakError(seq, reason, detail);
    throw this.#broken;
  }

  /** Adds the next record; throws a ChainBreakError at the first break. */
  async add(r: ExportRecord): Promise<void> {
    if (this.#broken) throw this.#broken;
    if (!this.#project) this.#project = r.leaf.projectId;
    if (!this.#stream) this.#stream = r.leaf.stream;
    if (r.leaf.projectId !== this.#project || r.leaf.stream !== this.#stream) {
      throw new Error(`records of more than one project-stream: ${r.leaf.projectId}/${r.leaf.stream} after ${this.#project}/${this.#stream}`);
    }
    const next = this.#roots.size + 1;
    if (r.leaf.sequence !== next) this.#fail(next, BREAK_SEQUENCE_GAP, `expected sequence ${next}, found ${r.leaf.sequence}`);
    if (r.nonce === null || r.payload === null) {
      this.stats.shredded++;
    } else {
      const got = await commitment(r.nonce, r.payload);
      if (got !== r.leaf.payloadHash) {
        this.#fail(next, BREAK_CONTENT_TAMPERED, `content re-derives commitment ${got}, recorded ${r.leaf.payloadHash}`);
      }
      this.stats.rederived++;
    }
    if (r.leaf.signature && this.opts.signingKeys) {
      let ok = false;
      for (const k of this.opts.signingKeys(r.leaf.signingKeyId!)) {
        if (await verifyEventSignature(k, r.leaf.id, r.leaf.payloadHash, r.leaf.signature)) {
          ok = true;
          break;
        }
      }
      if (!ok) {
        this.#fail(next, BREAK_INVALID_CLIENT_SIGNATURE, `signature by ${JSON.stringify(r.leaf.signingKeyId)} does not verify under any given signing key`);
      }
      this.stats.signatures++;
    }
    const lh = await hashLeaf(r.leaf);
    if (lh !== r.leafHash) this.#fail(next, BREAK_LEAF_MISMATCH, `leaf re-hashes to ${lh}, recorded ${r.leafHash}`);
    await this.#roots.append(fromHex(lh));
    this.stats.events++;
  }

  /** The rebuilt root (hex). */
  async root(): Promise<string> {
    return toHex(await this.#roots.root());
  }

  /** Throws a ChainBreakError unless the rebuilt tree has `size` leaves and root `rootHex`. */
  async checkRoot(size: number, rootHex: string): Promise<void> {
    if (this.#broken) throw this.#broken;
    if (this.size < size) this.#fail(this.size + 1, BREAK_SEQUENCE_GAP, `records end at sequence ${this.size}, trusted tree has ${size} leaves`);
    if (this.size !== size) throw new Error(`rebuilt ${this.size} leaves, trusted size ${size}: compare at equal sizes`);
    const got = await this.root();
    if (got !== rootHex) this.#fail(size, BREAK_ROOT_MISMATCH, `rebuilt root ${got}, trusted root ${rootHex}`);
  }
}

/** The outcome of verifyExport. */
export interface ExportVerification {
  projectId: string;
  stream: string;
  size: number;
  /** hex */
  root: string;
  stats: RebuildStats;
}

/**
 * Verifies a whole stream's newline-delimited JSON export, as `sealtrail verify full`
 * does: rebuilds every leaf, re-derives every unshredded commitment, checks sequence
 * contiguity and, with `signingKeys`, every customer signature; with `root` (and
 * `size`, default the number of lines) it compares the rebuilt root with the trusted
 * one. Throws a ChainBreakError at the first break, an ExportLineError for a malformed
 * line.
 */
export async function verifyExport(
  ndjson: string,
  opts: RebuildOptions & { root?: string; size?: number } = {},
): Promise<ExportVerification> {
  const b = new Rebuilder(opts);
  const lines = ndjson.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  for (const [i, line] of lines.entries()) {
    let rec: ExportRecord;
    try {
      rec = decodeExportLine(line);
    } catch (e) {
      throw new ExportLineError(`line ${i + 1}: ${(e as Error).message}`);
    }
    await b.add(rec);
  }
  if (opts.root !== undefined) await b.checkRoot(opts.size ?? b.size, opts.root);
  return { projectId: b.projectId, stream: b.stream, size: b.size, root: await b.root(), stats: { ...b.stats } };
}
