// The client's errors (spec, "Errors": client-side errors).

import type { STH } from "./sth.js";

/** Which check a served tree head failed (spec, "Verification rules a client applies"). */
export type TamperReason = "inconsistent_tree" | "tree_shrunk" | "bad_sth_signature" | "service_key_changed";

/** A project's stream as the API's `stream` parameter spells it. */
export type Stream = "events" | "project-audit";

/** One field error of a rejected ingest. */
export interface FieldError {
  field: string;
  message: string;
}

/**
 * Raised for every non-2xx response, and for a request that got no response at all
 * (status 0, the transport error in `cause`).
 */
export class APIError extends Error {
  override name = "APIError";
  /** HTTP status, or 0 when no response arrived. */
  readonly status: number;
  /** The parsed JSON error body, or the raw body text when it is not JSON. */
  readonly details: unknown;
  /** The schema errors of a rejected ingest (the body's `details`). */
  readonly fieldErrors: FieldError[];
  /** Retry-After of a 429 or 503 in milliseconds, 0 when absent. */
  readonly retryAfterMs: number;
  readonly method: string;
  readonly path: string;

  constructor(init: {
    status: number;
    message: string;
    details?: unknown;
    fieldErrors?: FieldError[];
    retryAfterMs?: number;
    method: string;
    path: string;
    cause?: unknown;
  }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.details = init.details;
    this.fieldErrors = init.fieldErrors ?? [];
    this.retryAfterMs = init.retryAfterMs ?? 0;
    this.method = init.method;
    this.path = init.path;
  }
}

/**
 * Proof that the service served something its own history rules out. The first one
 * poisons the client: every later call throws the same TamperError.
 */
export class TamperError extends Error {
  override name = "TamperError";
  constructor(
    readonly stream: Stream,
    readonly reason: TamperReason,
    readonly detail: string,
    /** The head pinned before the check (null on first use). */
    readonly pinnedSth: STH | null,
    /** The head the service served (null when a verify receipt revealed a changed key). */
    readonly currentSth: STH | null,
  ) {
    super(`sealtrail: tamper detected on stream ${stream}: ${reason}: ${detail}`);
  }
}

/**
 * An inclusion proof, a rebuilt leaf or commitment, or a receipt signature that does not
 * verify. It does not poison the client: only the four tamper reasons do.
 */
export class VerificationError extends Error {
  override name = "VerificationError";
}

/** A 2xx response that does not have the documented shape. It pins nothing. */
export class UnexpectedResponseError extends Error {
  override name = "UnexpectedResponseError";
}

/**
 * The pinned head belongs to another project than the one the API key addresses: one
 * sthStore is shared between projects on one base address. Nothing is pinned and the
 * client is not poisoned.
 */
export class ProjectMismatchError extends Error {
  override name = "ProjectMismatchError";
}
