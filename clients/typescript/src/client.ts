// The Sealtrail client: every /api/v1 route a project API key can use, with the
// verification rules of the spec (pinned heads per base address and stream, trust on
// first use of the service key, the four tamper reasons, poisoning, throttled
// opportunistic checks that never block the call). It mirrors the Go client
// (client/client.go, client/verify.go, client/methods.go).

import { keyIntroducedAt, keyMoveRefusal, verifyKeyHistory } from "./keyhistory.js";
import type { KeyHistory } from "./keyhistory.js";
import type { SigningKey } from "./bytes.js";
import { fromHex } from "./bytes.js";
import { APIError, ProjectMismatchError, TamperError, UnexpectedResponseError, VerificationError } from "./errors.js";
import type { FieldError, Stream, TamperReason } from "./errors.js";
import { SIGNED_STREAM_EVENTS, SIGNED_STREAM_PROJECT_AUDIT, commitment, hashLeaf, parsePrivateKey, parsePublicKey } from "./event.js";
import { decodeExportLine } from "./export.js";
import { canonicalize, canonicalizeJSON } from "./jcs.js";
import { parseHash, verifyConsistency, verifyInclusion } from "./merkle.js";
import { signedEventBody } from "./sign.js";
import { MemorySTHStore, pinKey } from "./store.js";
import type { PinnedHead, STHStore } from "./store.js";
import { verifyReceipt, verifySTH } from "./sth.js";
import type { Receipt, STH } from "./sth.js";
import type {
  Anchors,
  CallOptions,
  ConsistencyProof,
  ConsistencyProofInput,
  EventFilter,
  EventInput,
  ExportInput,
  InclusionProof,
  InclusionProofInput,
  LogResult,
  QueryInput,
  QueryResult,
  Root,
  StoredEvent,
  VerifiedInclusion,
} from "./types.js";

/** The base address used when baseUrl is not given: a local sealtraild. */
export const DEFAULT_BASE_URL = "http://127.0.0.1:8080";
/** The default minimum gap between two opportunistic checks of one stream. */
export const DEFAULT_AUTO_VERIFY_INTERVAL_MS = 60_000;
/** Bound of one opportunistic check. */
const BACKGROUND_CHECK_TIMEOUT_MS = 30_000;
/** Sends of one signed event, in all (a resend of the same signed body is idempotent). */
const SIGNED_LOG_ATTEMPTS = 3;

/** Client configuration (spec, "Client configuration"). */
export interface ClientOptions {
  /** The project API key (required). */
  apiKey: string;
  /** The service address without /api/v1 (default DEFAULT_BASE_URL); a trailing slash is removed. */
  baseUrl?: string;
  /** Customer signing key id; give it together with signingPrivateKey. */
  signingKeyId?: string;
  /** Hex Ed25519 private key (32-byte seed or 64-byte seed||public); it never leaves the process. */
  signingPrivateKey?: string;
  /** Where pins are kept (default: in memory). load/save may be sync or async. */
  sthStore?: STHStore;
  /** Opportunistic checks after log and query (default true). */
  autoVerify?: boolean;
  /** Minimum gap between opportunistic checks of one stream, from the start of the previous attempt (default 60000). */
  autoVerifyIntervalMs?: number;
  /** Pins the service key (hex). Without it the key is trusted on first use. */
  servicePublicKey?: string;
  /** Called once, with the error that poisoned the client, in addition to the throw. */
  onTamper?: (error: TamperError) => void;
  /** Told about opportunistic checks that failed without tampering (otherwise swallowed). */
  onCheckError?: (stream: Stream, error: unknown) => void;
  /** The fetch to use (default globalThis.fetch). */
  fetch?: typeof globalThis.fetch;
}

/** The name of a stream inside signed objects (events, project_audit). */
export function signedStreamName(s: Stream): string {
  return s === "project-audit" ? SIGNED_STREAM_PROJECT_AUDIT : SIGNED_STREAM_EVENTS;
}

function normalizeStream(s: string | undefined): Stream {
  if (s === undefined || s === "" || s === "events") return "events";
  if (s === "project-audit") return "project-audit";
  throw new TypeError(`sealtrail client: stream ${JSON.stringify(s)} is neither "events" nor "project-audit"`);
}

interface StreamState {
  chain: Promise<unknown>; // serializes the checks of one stream
  lastAttempt: number;
  inFlight: boolean;
}

type Query = Record<string, string | number | Date | undefined>;

// The query parameters of the event filters; Date bounds are sent with millisecond
// precision (a JavaScript Date has no finer one).
function filterQuery(f: EventFilter): Query {
  return { action: f.action, status: f.status, actorId: f.actorId, targetId: f.targetId, from: f.from, to: f.to };
}

/** A client of one Sealtrail service with one API key. */
export class SealtrailClient {
  readonly baseUrl: string;
  readonly #apiKey: string;
  readonly #fetch: typeof globalThis.fetch;
  readonly #signKeyId: string | undefined;
  readonly #signKey: Promise<SigningKey> | undefined;
  readonly #serviceKey: string | undefined;
  readonly #store: STHStore;
  readonly #autoVerify: boolean;
  readonly #interval: number;
  readonly #onTamper: ((e: TamperError) => void) | undefined;
  readonly #onCheckError: ((s: Stream, e: unknown) => void) | undefined;
  #poison: TamperError | undefined;
  #closed = false;
  #streams = new Map<Stream, StreamState>();
  #background = new Set<Promise<void>>();
  #bgAbort = new AbortController();

  constructor(opts: ClientOptions) {
    if (!opts || typeof opts.apiKey !== "string" || opts.apiKey === "") {
      throw new TypeError("sealtrail client: apiKey is required");
    }
    if (!opts.signingKeyId !== !opts.signingPrivateKey) {
      throw new TypeError("sealtrail client: signingKeyId and signingPrivateKey must be given together");
    }
    const base = (opts.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, "") || DEFAULT_BASE_URL;
    let u: URL | undefined;
    try {
      u = new URL(base);
    } catch {
      u = undefined;
    }
    if (!u || (u.protocol !== "http:" && u.protocol !== "https:") || !u.host) {
      throw new TypeError(`sealtrail client: baseUrl ${JSON.stringify(opts.baseUrl)} is not an http(s) URL`);
    }
    this.baseUrl = base;
    this.#apiKey = opts.apiKey;
    const f = opts.fetch ?? globalThis.fetch;
    if (typeof f !== "function") throw new TypeError("sealtrail client: no fetch in this runtime; pass options.fetch");
    this.#fetch = f.bind(globalThis);
    if (opts.signingPrivateKey) {
      const hex = opts.signingPrivateKey;
      if (hex.length !== 64 && hex.length !== 128) {
        throw new TypeError("sealtrail client: signingPrivateKey: want 64 or 128 lowercase hex digits");
      }
      fromHex(hex, undefined, "sealtrail client: signingPrivateKey");
      this.#signKeyId = opts.signingKeyId;
      this.#signKey = parsePrivateKey(hex);
      this.#signKey.catch(() => {}); // reported by the first log
    }
    if (opts.servicePublicKey !== undefined) {
      parsePublicKey(opts.servicePublicKey);
      this.#serviceKey = opts.servicePublicKey;
    }
    this.#store = opts.sthStore ?? new MemorySTHStore();
    this.#autoVerify = opts.autoVerify ?? true;
    this.#interval = opts.autoVerifyIntervalMs !== undefined && opts.autoVerifyIntervalMs > 0 ? opts.autoVerifyIntervalMs : DEFAULT_AUTO_VERIFY_INTERVAL_MS;
    this.#onTamper = opts.onTamper;
    this.#onCheckError = opts.onCheckError;
  }

  /** The tamper error that poisoned the client, or undefined. */
  get error(): TamperError | undefined {
    return this.#poison;
  }

  /** Resolves when the opportunistic checks in flight have finished. */
  async idle(): Promise<void> {
    while (this.#background.size > 0) await Promise.allSettled([...this.#background]);
  }

  /** Aborts the opportunistic checks in flight, waits for them and starts no new ones. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#bgAbort.abort();
    await this.idle();
  }

  #throwIfPoisoned(): void {
    if (this.#poison) throw this.#poison;
  }

  /**
   * Fetches the service's key history (GET /key-history; a 404 is an empty history) and
   * decides whether the service may move from the trusted key `from` to `to`. Returns the
   * verified history and null, or a refusal (an unannounced change, or a history that does
   * not verify: the service signed it). Network and other HTTP failures are thrown.
   */
  async #keyMove(from: string, to: string, signal: AbortSignal | undefined): Promise<[KeyHistory | null, string | null]> {
    let raw: unknown;
    try {
      raw = await this.#json<unknown>("GET", "/key-history", undefined, undefined, signal);
    } catch (e) {
      if (e instanceof APIError && e.status === 404) raw = { transitions: [] };
      else throw e;
    }
    let h: KeyHistory;
    try {
      h = await verifyKeyHistory(raw);
    } catch (e) {
      return [null, `service key changed from ${from} to ${to} and the key history does not verify: ${(e as Error).message}`];
    }
    const refusal = keyMoveRefusal(h, from, to);
    if (refusal !== null) return [null, `service key changed from ${from} to ${to} without announcement: ${refusal}`];
    return [h, null];
  }

  // ---- transport ----

  async #request(method: string, path: string, q: Query | undefined, body: string | undefined, signal: AbortSignal | undefined): Promise<Response> {
    let url = `${this.baseUrl}/api/v1${path}`;
    if (q) {
      const p = new URLSearchParams();
      for (const [k, v] of Object.entries(q)) {
        if (v === undefined || v === "") continue;
        p.set(k, v instanceof Date ? v.toISOString() : String(v));
      }
      const s = p.toString();
      if (s) url += "?" + s;
    }
    const headers: Record<string, string> = { Authorization: `Bearer ${this.#apiKey}`, Accept: "application/json" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    let resp: Response;
    try {
      resp = await this.#fetch(url, { method, headers, body: body ?? null, signal: signal ?? null });
    } catch (e) {
      throw new APIError({ status: 0, message: `sealtrail: ${method} ${path}: ${(e as Error)?.message ?? e}`, method, path, cause: e });
    }
    if (resp.ok) return resp;
    throw await apiError(method, path, resp);
  }

  async #json<T>(method: string, path: string, q: Query | undefined, body: string | undefined, signal: AbortSignal | undefined): Promise<T> {
    const resp = await this.#request(method, path, q, body, signal);
    let text: string;
    try {
      text = await resp.text();
    } catch (e) {
      throw new APIError({ status: 0, message: `sealtrail: ${method} ${path}: ${(e as Error)?.message ?? e}`, method, path, cause: e });
    }
    try {
      const v = JSON.parse(text);
      if (v === null || typeof v !== "object") throw new Error("not a JSON object");
      return v as T;
    } catch (e) {
      throw new UnexpectedResponseError(`sealtrail: unexpected response: ${method} ${path}: ${(e as Error).message}`);
    }
  }

  // ---- methods ----

  /**
   * Records one event (POST /log). With signing configured it mints the id and nonce,
   * sets the status explicitly (success when absent), commits to the canonical payload
   * and signs the commitment; a signed event is resent (it is idempotent) after a 503
   * or a transport failure, up to 3 sends in all. Afterwards an opportunistic check of
   * the events stream may start in the background.
   */
  async log(input: EventInput, opts: CallOptions = {}): Promise<LogResult> {
    this.#throwIfPoisoned();
    let body: string;
    if (this.#signKey) {
      const key = await this.#signKey.catch((e: Error) => {
        throw new TypeError(`sealtrail client: signingPrivateKey: ${e.message}`);
      });
      body = canonicalizeJSON((await signedEventBody(key, this.#signKeyId!, input)).body);
    } else {
      body = canonicalBody(input);
    }
    let res: LogResult | undefined;
    let err: unknown;
    for (let attempt = 1; ; attempt++) {
      try {
        res = await this.#json<LogResult>("POST", "/log", undefined, body, opts.signal);
        break;
      } catch (e) {
        err = e;
        const wait = this.#signKey && attempt < SIGNED_LOG_ATTEMPTS ? resendDelay(e, opts.signal) : undefined;
        if (wait === undefined) break;
        await new Promise((r) => setTimeout(r, wait));
      }
    }
    this.#maybeCheck("events");
    if (res === undefined) throw err;
    return res;
  }

  /** Reads a page of events (GET /events); then an opportunistic check may start. */
  async query(input: QueryInput = {}, opts: CallOptions = {}): Promise<QueryResult> {
    this.#throwIfPoisoned();
    const q: Query = {
      ...filterQuery(input),
      limit: input.limit,
      cursor: input.cursor,
      entityType: input.entityType,
      entityId: input.entityId,
      direction: input.direction,
    };
    let res: QueryResult;
    try {
      res = await this.#json<QueryResult>("GET", "/events", q, undefined, opts.signal);
    } finally {
      this.#maybeCheck("events");
    }
    if (!Array.isArray(res.events)) throw new UnexpectedResponseError("sealtrail: unexpected response: GET /events: no events member");
    return res;
  }

  /**
   * Starts an export (GET /export) and returns the raw response, whose body streams the
   * rows. A download cut short by the service ends with a read error, never cleanly.
   */
  async exportEvents(input: ExportInput = {}, opts: CallOptions = {}): Promise<Response> {
    this.#throwIfPoisoned();
    const q: Query = { ...filterQuery(input), format: input.format, max: input.max };
    return this.#request("GET", "/export", q, undefined, opts.signal);
  }

  /** The stream's current signed tree head as served (GET /root), not verified. */
  async getRoot(stream?: Stream, opts: CallOptions = {}): Promise<Root> {
    this.#throwIfPoisoned();
    return this.#getRoot(normalizeStream(stream), opts.signal);
  }

  #getRoot(s: Stream, signal: AbortSignal | undefined): Promise<Root> {
    return this.#json<Root>("GET", "/root", { stream: s }, undefined, signal);
  }

  /** An inclusion proof as served (GET /proof/inclusion); verifyInclusion checks one. */
  async getInclusionProof(input: InclusionProofInput, opts: CallOptions = {}): Promise<InclusionProof> {
    this.#throwIfPoisoned();
    const s = normalizeStream(input.stream);
    const q: Query = { stream: s, treeSize: input.treeSize || undefined };
    if (input.eventId) q.eventId = input.eventId;
    else q.leafIndex = input.leafIndex ?? 0;
    return this.#json<InclusionProof>("GET", "/proof/inclusion", q, undefined, opts.signal);
  }

  /** A consistency proof as served (GET /proof/consistency). */
  async getConsistencyProof(input: ConsistencyProofInput, opts: CallOptions = {}): Promise<ConsistencyProof> {
    this.#throwIfPoisoned();
    return this.#getConsistencyProof(input, opts.signal);
  }

  #getConsistencyProof(input: ConsistencyProofInput, signal: AbortSignal | undefined): Promise<ConsistencyProof> {
    const s = normalizeStream(input.stream);
    return this.#json<ConsistencyProof>("GET", "/proof/consistency", { stream: s, oldSize: input.oldSize, newSize: input.newSize || undefined }, undefined, signal);
  }

  /** The stream's attested heads, newest first (GET /anchors). */
  async getAnchors(stream?: Stream, limit?: number, opts: CallOptions = {}): Promise<Anchors> {
    this.#throwIfPoisoned();
    return this.#json<Anchors>("GET", "/anchors", { stream: normalizeStream(stream), limit: limit || undefined }, undefined, opts.signal);
  }

  // ---- verification ----

  #tamper(e: TamperError): TamperError {
    if (this.#poison) return this.#poison;
    this.#poison = e;
    try {
      this.#onTamper?.(e);
    } catch {
      // A throwing callback must not hide the tamper error.
    }
    return e;
  }

  #state(s: Stream): StreamState {
    let st = this.#streams.get(s);
    if (!st) {
      st = { chain: Promise.resolve(), lastAttempt: 0, inFlight: false };
      this.#streams.set(s, st);
    }
    return st;
  }

  async #load(key: string): Promise<PinnedHead | null> {
    try {
      return (await this.#store.load(key)) ?? null;
    } catch (e) {
      throw new Error(`sealtrail: load pinned head: ${(e as Error)?.message ?? e}`, { cause: e });
    }
  }

  async #save(key: string, v: PinnedHead): Promise<void> {
    try {
      await this.#store.save(key, v);
    } catch (e) {
      throw new Error(`sealtrail: save pinned head: ${(e as Error)?.message ?? e}`, { cause: e });
    }
  }

  /**
   * Checks the stream's current head against the pinned one and, when it extends it,
   * pins and returns it: the served key must be the configured or pinned one (else
   * service_key_changed; trusted on first use otherwise), the head must verify under it
   * (else bad_sth_signature), a smaller tree is tree_shrunk, another root at the same
   * size or a failing consistency proof is inconsistent_tree. A tamper poisons the
   * client; any other failure pins nothing and is thrown as is.
   */
  async checkConsistency(stream?: Stream, opts: CallOptions = {}): Promise<STH> {
    this.#throwIfPoisoned();
    const s = normalizeStream(stream);
    const r = await this.#check(s, opts.signal);
    if (r instanceof TamperError) throw this.#tamper(r);
    return r;
  }

  // One check of s under its stream lock: the new head, or a TamperError (returned, not
  // thrown), or a thrown error.
  #check(s: Stream, signal: AbortSignal | undefined): Promise<STH | TamperError> {
    const st = this.#state(s);
    const run = st.chain.then(() => this.#checkLocked(s, signal));
    st.chain = run.catch(() => {});
    return run;
  }

  async #checkLocked(s: Stream, signal: AbortSignal | undefined): Promise<STH | TamperError> {
    if (this.#poison) return this.#poison;
    const key = pinKey(this.baseUrl, s);
    const pin = await this.#load(key);
    if (pin) {
      // Verified when stored; re-checked so a corrupted store is an error rather than a
      // false alarm or a silent new trust anchor.
      try {
        await verifySTH(pin.servicePublicKey, pin.sth);
      } catch (e) {
        throw new Error(`sealtrail: pinned head ${key} does not verify under its pinned key: ${(e as Error).message}`);
      }
    }
    const root = await this.#getRoot(s, signal);
    const cur = root.sth;
    if (!cur || typeof cur !== "object" || typeof root.servicePublicKey !== "string") {
      throw new UnexpectedResponseError("sealtrail: unexpected response: GET /root: no sth or servicePublicKey");
    }
    const tamper = (reason: TamperReason, detail: string) => new TamperError(s, reason, detail, pin?.sth ?? null, cur);

    // 1. The key, then the head's signature under it.
    let expected = root.servicePublicKey; // trust on first use
    if (this.#serviceKey !== undefined) expected = this.#serviceKey;
    else if (pin) expected = pin.servicePublicKey;
    else {
      // The first use of one stream trusts the key already pinned for the other stream
      // of the same service, so a key is trusted once per base address.
      const sibling = await this.#load(pinKey(this.baseUrl, s === "events" ? "project-audit" : "events"));
      if (sibling) expected = sibling.servicePublicKey;
    }
    // A key other than the trusted one is accepted only when the service's signed key
    // history announces the move from the trusted key to it (docs/key-rotation.md).
    if (pin && pin.servicePublicKey !== expected) {
      const [, refusal] = await this.#keyMove(expected, pin.servicePublicKey, signal);
      if (refusal !== null) {
        return tamper("service_key_changed", `head pinned under service key ${pin.servicePublicKey}, configured key is ${expected}: ${refusal}`);
      }
      expected = pin.servicePublicKey;
    }
    let introducedAt = "";
    if (root.servicePublicKey !== expected) {
      const [h, refusal] = await this.#keyMove(expected, root.servicePublicKey, signal);
      if (refusal !== null || h === null) {
        return tamper("service_key_changed", `service presents key ${root.servicePublicKey}, expected ${expected}: ${refusal}`);
      }
      expected = root.servicePublicKey;
      introducedAt = keyIntroducedAt(h, expected);
    }
    try {
      parsePublicKey(expected);
    } catch (e) {
      throw new UnexpectedResponseError(`sealtrail: unexpected response: GET /root: servicePublicKey: ${(e as Error).message}`);
    }
    try {
      await verifySTH(expected, cur);
    } catch (e) {
      return tamper("bad_sth_signature", (e as Error).message);
    }
    if (introducedAt !== "" && cur.timestamp < introducedAt) {
      return tamper("service_key_changed", `head dated ${cur.timestamp} is signed by key ${expected}, introduced at ${introducedAt}`);
    }
    if (cur.stream !== signedStreamName(s)) {
      throw new UnexpectedResponseError(`sealtrail: unexpected response: GET /root?stream=${s} served the head of stream ${JSON.stringify(cur.stream)}`);
    }
    const newPin: PinnedHead = { sth: cur, servicePublicKey: expected };
    if (!pin) {
      await this.#save(key, newPin);
      return cur;
    }
    if (pin.sth.projectId !== cur.projectId) {
      throw new ProjectMismatchError(`sealtrail: pinned head belongs to another project: pinned ${pin.sth.projectId}, served ${cur.projectId}`);
    }

    // 2. Size and, at equal size, root.
    const old = pin.sth;
    if (cur.treeSize < old.treeSize) {
      return tamper("tree_shrunk", `served size ${cur.treeSize}, pinned size ${old.treeSize}`);
    }
    if (cur.treeSize === old.treeSize && cur.rootHash !== old.rootHash) {
      return tamper("inconsistent_tree", `two roots for size ${cur.treeSize}: pinned ${old.rootHash}, served ${cur.rootHash}`);
    }
    if (cur.treeSize > old.treeSize && old.treeSize > 0) {
      // 3. The consistency proof, checked with local hash arithmetic.
      const cp = await this.#getConsistencyProof({ oldSize: old.treeSize, newSize: cur.treeSize, stream: s }, signal);
      if (cp.oldSize !== old.treeSize || cp.newSize !== cur.treeSize || cp.stream !== signedStreamName(s)) {
        throw new UnexpectedResponseError(
          `sealtrail: unexpected response: asked for the ${signedStreamName(s)} proof ${old.treeSize}→${cur.treeSize}, got ${cp.stream} ${cp.oldSize}→${cp.newSize}`,
        );
      }
      const path = parseHashes(cp.proof);
      try {
        await verifyConsistency(old.treeSize, cur.treeSize, parseHash(old.rootHash), parseHash(cur.rootHash), path);
      } catch (e) {
        return tamper("inconsistent_tree", `size ${old.treeSize} to ${cur.treeSize}: ${(e as Error).message}`);
      }
    }

    // 4. Pin the new head.
    await this.#save(key, newPin);
    return cur;
  }

  // Starts an opportunistic check of s in the background when auto-verify is on, the
  // client is neither closed nor poisoned, no check of s is in flight and the interval
  // has passed since the last attempt. It never waits for the network.
  #maybeCheck(s: Stream): void {
    if (!this.#autoVerify || this.#poison || this.#closed) return;
    const st = this.#state(s);
    const now = Date.now();
    if (st.inFlight || (st.lastAttempt !== 0 && now - st.lastAttempt < this.#interval)) return;
    st.inFlight = true;
    st.lastAttempt = now;
    const signal = backgroundSignal(this.#bgAbort.signal, BACKGROUND_CHECK_TIMEOUT_MS);
    const p: Promise<void> = this.#check(s, signal).then(
      (r) => {
        if (r instanceof TamperError) this.#tamper(r);
      },
      (e) => {
        // Swallowed: the next interaction after the interval tries again.
        try {
          this.#onCheckError?.(s, e);
        } catch {
          // ignore a throwing callback
        }
      },
    ).finally(() => {
      st.inFlight = false;
      this.#background.delete(p);
    });
    this.#background.add(p);
  }

  // The key to verify s's signatures under: the configured key, or the pinned one,
  // pinning a head first when there is none.
  async #trustedKey(s: Stream, signal: AbortSignal | undefined): Promise<{ pub: string; pin: PinnedHead | null }> {
    const key = pinKey(this.baseUrl, s);
    let pin = await this.#load(key);
    if (this.#serviceKey !== undefined && (!pin || pin.servicePublicKey === this.#serviceKey)) return { pub: this.#serviceKey, pin };
    if (pin && this.#serviceKey !== undefined) {
      // The pin moved on from the configured key (an announced rotation): trust it only
      // as far as the key history says.
      const [, refusal] = await this.#keyMove(this.#serviceKey, pin.servicePublicKey, signal);
      if (refusal !== null) {
        throw this.#tamper(new TamperError(s, "service_key_changed", refusal, pin.sth, null));
      }
    }
    if (!pin) {
      await this.checkConsistency(s, { signal });
      pin = await this.#load(key);
      if (!pin) throw new Error("sealtrail: load pinned head: nothing pinned after a check");
    }
    return { pub: pin.servicePublicKey, pin };
  }

  /**
   * Asks the service to rebuild the stream and returns its signed receipt (GET
   * /verify), checked under the trusted service key. A receipt under another key is
   * service_key_changed and poisons the client; a bad signature is a
   * VerificationError. A receipt with valid false is returned, not thrown: it reports
   * the first break the service found.
   */
  async verify(input: { stream?: Stream } = {}, opts: CallOptions = {}): Promise<Receipt> {
    this.#throwIfPoisoned();
    const s = normalizeStream(input.stream);
    const { pub, pin } = await this.#trustedKey(s, opts.signal);
    const rec = await this.#json<Receipt>("GET", "/verify", { stream: s }, undefined, opts.signal);
    if (rec.servicePublicKey !== pub) {
      throw this.#tamper(new TamperError(s, "service_key_changed", `receipt signed by service key ${rec.servicePublicKey}, expected ${pub}`, pin?.sth ?? null, null));
    }
    try {
      await verifyReceipt(pub, rec);
    } catch (e) {
      throw new VerificationError(`sealtrail: verification failed: receipt: ${(e as Error).message}`);
    }
    if (rec.stream !== signedStreamName(s)) {
      throw new VerificationError(`sealtrail: verification failed: receipt of stream ${JSON.stringify(rec.stream)} for stream ${s}`);
    }
    return rec;
  }

  /**
   * Proves that an event is in the stream: a consistency check (which pins the current
   * head), then the inclusion proof at the pinned size, verified locally against the
   * pinned root. A proof that does not verify is a VerificationError.
   */
  async verifyInclusion(stream: Stream | undefined, eventId: string, opts: CallOptions = {}): Promise<VerifiedInclusion> {
    const s = normalizeStream(stream);
    const head = await this.checkConsistency(s, opts);
    if (head.treeSize === 0) throw new VerificationError(`sealtrail: verification failed: the ${s} tree is empty`);
    const p = await this.getInclusionProof({ eventId, treeSize: head.treeSize, stream: s }, opts);
    if (p.treeSize !== head.treeSize || p.stream !== head.stream) {
      throw new VerificationError(`sealtrail: verification failed: proof for ${p.stream} size ${p.treeSize}, asked for ${head.stream} size ${head.treeSize}`);
    }
    let leaf: Uint8Array;
    try {
      leaf = parseHash(p.leafHash, "leafHash");
    } catch (e) {
      throw new UnexpectedResponseError(`sealtrail: unexpected response: ${(e as Error).message}`);
    }
    try {
      await verifyInclusion(leaf, p.leafIndex, p.treeSize, parseHashes(p.proof), parseHash(head.rootHash));
    } catch (e) {
      if (e instanceof UnexpectedResponseError) throw e;
      throw new VerificationError(`sealtrail: verification failed: leaf ${p.leafIndex} in tree of size ${p.treeSize}: ${(e as Error).message}`);
    }
    return { proof: p, head };
  }

  /**
   * Checks a stored event from query end to end: rebuilds its leaf from the event (and,
   * unless shredded, re-derives its commitment from content and nonce), then proves the
   * leaf is in the pinned head, as verifyInclusion does.
   */
  async verifyEvent(event: StoredEvent, opts: CallOptions = {}): Promise<VerifiedInclusion> {
    this.#throwIfPoisoned();
    let rec;
    try {
      rec = decodeExportLine(event as unknown as Record<string, unknown>);
    } catch (e) {
      throw new VerificationError(`sealtrail: verification failed: event ${event?.id}: ${(e as Error).message}`);
    }
    if (rec.nonce !== null && rec.payload !== null && (await commitment(rec.nonce, rec.payload)) !== rec.leaf.payloadHash) {
      throw new VerificationError(`sealtrail: verification failed: event ${event.id}: content does not re-derive its payloadHash`);
    }
    const leaf = await hashLeaf(rec.leaf);
    if (leaf !== rec.leafHash) {
      throw new VerificationError(`sealtrail: verification failed: event ${event.id}: rebuilt leaf hash ${leaf}, stored ${rec.leafHash}`);
    }
    const s: Stream = rec.leaf.stream === SIGNED_STREAM_PROJECT_AUDIT ? "project-audit" : "events";
    const v = await this.verifyInclusion(s, event.id, opts);
    if (v.proof.leafIndex !== rec.leaf.sequence - 1 || v.proof.leafHash !== leaf) {
      throw new VerificationError(
        `sealtrail: verification failed: event ${event.id}: proof is for leaf ${v.proof.leafIndex} ${v.proof.leafHash}, event is leaf ${rec.leaf.sequence - 1} ${leaf}`,
      );
    }
    return v;
  }
}

// A signal that aborts with `parent` or after `ms` (AbortSignal.any where the runtime
// has it: Node >= 20.3; a small fallback elsewhere).
function backgroundSignal(parent: AbortSignal, ms: number): AbortSignal {
  const timeout = AbortSignal.timeout(ms);
  if (typeof AbortSignal.any === "function") return AbortSignal.any([parent, timeout]);
  const c = new AbortController();
  const abort = (s: AbortSignal) => () => c.abort(s.reason);
  if (parent.aborted) c.abort(parent.reason);
  parent.addEventListener("abort", abort(parent), { once: true });
  timeout.addEventListener("abort", abort(timeout), { once: true });
  return c.signal;
}

function parseHashes(hs: unknown): Uint8Array[] {
  if (!Array.isArray(hs)) throw new UnexpectedResponseError("sealtrail: unexpected response: proof is not an array");
  return hs.map((h, i) => {
    try {
      return parseHash(h as string, `proof hash ${i}`);
    } catch (e) {
      throw new UnexpectedResponseError(`sealtrail: unexpected response: ${(e as Error).message}`);
    }
  });
}

// Whether a failed send of a signed event is worth repeating, and after how many ms: a
// 503 after its Retry-After (250 ms to 5 s), a transport failure after 250 ms.
function resendDelay(e: unknown, signal: AbortSignal | undefined): number | undefined {
  if (!(e instanceof APIError) || signal?.aborted) return undefined;
  if (e.status === 503) return Math.min(Math.max(e.retryAfterMs, 250), 5000);
  if (e.status === 0) return 250;
  return undefined;
}

async function apiError(method: string, path: string, resp: Response): Promise<APIError> {
  let raw = "";
  try {
    raw = await resp.text();
  } catch {
    // the status is what matters
  }
  let message = resp.statusText || `HTTP ${resp.status}`;
  let details: unknown = raw;
  let fieldErrors: FieldError[] | undefined;
  try {
    const parsed = JSON.parse(raw);
    details = parsed;
    if (parsed && typeof parsed === "object" && typeof parsed.error === "string" && parsed.error !== "") {
      message = parsed.error;
      if (Array.isArray(parsed.details)) fieldErrors = parsed.details as FieldError[];
    }
  } catch {
    // not JSON: details is the raw text
  }
  let retryAfterMs = 0;
  const ra = resp.headers.get("Retry-After");
  if (ra && /^[0-9]+$/.test(ra.trim())) retryAfterMs = Number(ra.trim()) * 1000;
  return new APIError({ status: resp.status, message, details, fieldErrors, retryAfterMs, method, path });
}

/**
 * The RFC 8785 form of an unsigned event, which the service takes as it is instead of
 * canonicalizing it again (as the Go client sends it); JSON.stringify's text when it has
 * none (an integer beyond 2^53, say), so that the service's 400 says why.
 */
function canonicalBody(input: EventInput): string {
  try {
    return canonicalize(input);
  } catch {
    return JSON.stringify(input);
  }
}
