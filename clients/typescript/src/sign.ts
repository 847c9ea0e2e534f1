// Signed ingest bodies (spec, "Commitment and signature construction"), as the Go
// client builds them (client/sign.go).

import type { SigningKey } from "./bytes.js";
import { PAYLOAD_MEMBERS, commitPayload, newEventId, newNonce, signEvent } from "./event.js";
import type { EventInput } from "./types.js";

/** A signed ingest body and what went into it. */
export interface SignedEvent {
  id: string;
  nonce: string;
  /** The RFC 8785 payload, exactly what the commitment covers. */
  payload: string;
  payloadHash: string;
  signature: string;
  /** The payload members plus id, nonce, signingKeyId and signature. */
  body: string;
}

/**
 * Builds the signed ingest body of an event: mints the id and a 32-byte nonce, sets the
 * status explicitly (success when absent: the service adds nothing to a signed payload),
 * takes the RFC 8785 form of the payload, commits to it with the nonce and signs the
 * commitment. The body carries the canonical payload bytes themselves, so the service
 * re-derives the same commitment from what it persists.
 */
export async function signedEventBody(key: SigningKey, signingKeyId: string, input: EventInput, now: Date | number = Date.now()): Promise<SignedEvent> {
  const payload: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(input)) {
    if (v === undefined) continue;
    if (!PAYLOAD_MEMBERS.includes(k)) throw new TypeError(`sealtrail client: ${JSON.stringify(k)} is not an event member`);
    payload[k] = v;
  }
  if (payload.status === undefined) payload.status = "success";
  const id = newEventId(now);
  const nonce = newNonce();
  const { canonical, payloadHash } = await commitPayload(nonce, payload);
  const signature = await signEvent(key, id, payloadHash);
  const transport = JSON.stringify({ id, nonce, signingKeyId, signature });
  // canonical is a non-empty JCS object ({"action":...}); splice the transport members in.
  const body = canonical.slice(0, -1) + "," + transport.slice(1);
  return { id, nonce, payload: canonical, payloadHash, signature, body };
}
