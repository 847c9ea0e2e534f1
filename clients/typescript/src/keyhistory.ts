// The service key history (docs/key-rotation.md), with the same bytes and rules as the
// Go library (tlog/keyhistory.go): a signed chain of key transitions that lets a client
// follow an announced rotation of the service key and refuse an unannounced one.

import { parsePublicKey, parseTime } from "./event.js";
import { canonicalize } from "./jcs.js";
import { verifyJCS } from "./sth.js";

/** One hand-over of the service key, signed by the old key and by the new. */
export interface KeyTransition {
  v: number;
  seq: number;
  previousKey: string;
  newKey: string;
  timestamp: string;
  signature: string;
  newKeySignature: string;
}

/** The service's key history, as GET /api/v1/key-history returns it. */
export interface KeyHistory {
  transitions: KeyTransition[];
}

export const KEY_HISTORY_VERSION = 1;
const MAX_KEY_TRANSITIONS = 4096;

/** The bytes both signatures of a transition cover. */
export function keyTransitionSigningBytes(t: KeyTransition): string {
  return canonicalize({
    type: "sealtrail/service-key-transition",
    v: t.v,
    seq: t.seq,
    previousKey: t.previousKey,
    newKey: t.newKey,
    timestamp: t.timestamp,
  });
}

/** Throws unless h is one valid chain (the Go library's KeyHistory.Verify). */
export async function verifyKeyHistory(h: unknown): Promise<KeyHistory> {
  const ts = (h as KeyHistory | null)?.transitions;
  if (!Array.isArray(ts)) throw new Error("key history: no transitions list");
  if (ts.length > MAX_KEY_TRANSITIONS) throw new Error(`key history of ${ts.length} transitions`);
  const seen = new Set<string>();
  let last = "";
  for (let i = 0; i < ts.length; i++) {
    const t = ts[i];
    const bad = (m: string) => new Error(`key history transition ${i + 1}: ${m}`);
    if (!t || typeof t !== "object") throw bad("not an object");
    if (t.v !== KEY_HISTORY_VERSION) throw bad(`version ${t.v}`);
    if (t.seq !== i + 1) throw bad(`seq ${t.seq}`);
    parsePublicKey(t.previousKey);
    parsePublicKey(t.newKey);
    if (i > 0 && t.previousKey !== ts[i - 1].newKey) throw bad(`starts from ${t.previousKey}, not ${ts[i - 1].newKey}`);
    if (i === 0) seen.add(t.previousKey);
    if (seen.has(t.newKey)) throw bad(`key ${t.newKey} appears twice`);
    seen.add(t.newKey);
    parseTime(t.timestamp);
    if (i > 0 && !(t.timestamp > last)) throw bad(`timestamp ${t.timestamp} is not after the previous one`); // fixed-width UTC: string order is time order
    last = t.timestamp;
    const body = keyTransitionSigningBytes(t);
    await verifyJCS(t.previousKey, t.signature, body);
    await verifyJCS(t.newKey, t.newKeySignature, body);
  }
  return { transitions: ts };
}

/** The keys of a verified history in order, each with the time it took over ("" for the first). */
function keys(h: KeyHistory): { key: string; from: string }[] {
  if (h.transitions.length === 0) return [];
  return [{ key: h.transitions[0].previousKey, from: "" }, ...h.transitions.map((t) => ({ key: t.newKey, from: t.timestamp }))];
}

/**
 * Why the service may not move from the trusted key `from` to `to` under the verified
 * history h, or null when it may: `to` is `from`, or a later key of the history.
 */
export function keyMoveRefusal(h: KeyHistory, from: string, to: string): string | null {
  if (from === to) return null;
  const ks = keys(h).map((k) => k.key);
  const i = ks.indexOf(from);
  const j = ks.indexOf(to);
  if (i < 0) return `the trusted key ${from} is not in the key history`;
  if (j < 0) return `key ${to} is not in the key history`;
  if (j < i) return `key ${to} was retired before the trusted key ${from}`;
  return null;
}

/** The instant key took over in h ("" for the first key or a key not in h). */
export function keyIntroducedAt(h: KeyHistory, key: string): string {
  return keys(h).find((k) => k.key === key)?.from ?? "";
}
