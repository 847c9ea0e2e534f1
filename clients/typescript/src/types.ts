// Request and response shapes of /api/v1 (spec, "Endpoints").

import type { STH } from "./sth.js";
import type { Stream } from "./errors.js";

/** An actor or a target. */
export interface Entity {
  type: string;
  id: string;
  display?: string;
}

/** Event statuses. */
export type EventStatus = "success" | "failed" | "pending" | "approved" | "denied";
/** Risk levels. */
export type Risk = "low" | "medium" | "high" | "critical";

/** The body of POST /log: the payload members of an event. */
export interface EventInput {
  action: string;
  actor: Entity;
  status?: EventStatus | string;
  target?: Entity;
  risk?: Risk | string;
  context?: Record<string, unknown>;
  metadata?: Record<string, unknown>;
  requestId?: string;
  sessionId?: string;
  ipAddress?: string;
  userAgent?: string;
  agentId?: string;
  model?: string;
  toolName?: string;
  toolCallId?: string;
  approvalId?: string;
  policyVersion?: string;
  inputHash?: string;
  outputHash?: string;
}

/** The acknowledgement of a sealed event. */
export interface LogResult {
  id: string;
  /** always "sealed" */
  status: string;
}

/** The event filters of GET /events and GET /export. */
export interface EventFilter {
  action?: string;
  status?: string;
  actorId?: string;
  targetId?: string;
  /** inclusive */
  from?: Date | string;
  /** exclusive */
  to?: Date | string;
}

/**
 * Selects events. In filter mode (no entityType/entityId) the page is newest first and
 * nextCursor continues it. Entity mode needs both entityType and entityId.
 */
export interface QueryInput extends EventFilter {
  /** page size (service default 50, max 500) */
  limit?: number;
  cursor?: string;
  entityType?: string;
  entityId?: string;
  direction?: "outgoing" | "incoming" | "all";
}

/** An event as GET /events returns it. */
export interface StoredEvent extends Partial<EventInput> {
  id: string;
  sequence: number;
  timestamp: string;
  projectId: string;
  stream: string;
  leafHash: string;
  payloadHash: string;
  /** null after retention shredding */
  payloadNonce: string | null;
  ciphertextHash: string | null;
  signingKeyId: string | null;
  clientSignature: string | null;
}

/** One page of events. */
export interface QueryResult {
  events: StoredEvent[];
  nextCursor?: string;
}

/** Selects the events of an export. */
export interface ExportInput extends EventFilter {
  /** csv (service default) or json (newline-delimited JSON, the offline verifier's input) */
  format?: "csv" | "json";
  /** row cap */
  max?: number;
}

/** GET /root. */
export interface Root {
  sth: STH;
  servicePublicKey: string;
}

/** Addresses a leaf by eventId, or by leafIndex. treeSize defaults to the live size. */
export interface InclusionProofInput {
  eventId?: string;
  leafIndex?: number;
  treeSize?: number;
  stream?: Stream;
}

/** GET /proof/inclusion. */
export interface InclusionProof {
  stream: string;
  leafIndex: number;
  treeSize: number;
  leafHash: string;
  proof: string[];
}

/** The consistency proof from oldSize to newSize (default the live size). */
export interface ConsistencyProofInput {
  oldSize: number;
  newSize?: number;
  stream?: Stream;
}

/** GET /proof/consistency. */
export interface ConsistencyProof {
  stream: string;
  oldSize: number;
  newSize: number;
  proof: string[];
}

/** One entry of GET /anchors. */
export interface AttestedHead {
  treeSize: number;
  rootHash: string;
  timestamp: string;
  signature: string;
  anchorType: string | null;
  anchorRef: string | null;
  anchorProof: unknown;
  anchoredAt: string | null;
}

/** GET /anchors: the stream's attested heads, newest first. */
export interface Anchors {
  stream: string;
  heads: AttestedHead[];
}

/** An inclusion proof that verified against a pinned head. */
export interface VerifiedInclusion {
  proof: InclusionProof;
  /** The pinned head the proof verified against. */
  head: STH;
}

/** Per-call options. */
export interface CallOptions {
  /** Aborts the call. */
  signal?: AbortSignal;
}
