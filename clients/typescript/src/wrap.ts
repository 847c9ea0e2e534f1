// Wrappers that record application code and agent tool calls in Sealtrail (spec,
// "Wrapper runtime options"), as the Go client/wrap package does. A wrapped call runs
// the caller's function and writes one event describing who did what, its outcome and
// its duration. A wrapped tool can require a reason and ask an authorization check
// before it runs; a refused call writes a failed or denied event and throws a typed
// error naming the tool.
//
// Audit failures (building or sending an event) reach onAuditError. By default they let
// the operation go on; with failClosed they stop it.

import { sha256, toHex, utf8 } from "./bytes.js";
import { SealtrailClient } from "./client.js";
import type { ClientOptions } from "./client.js";
import { canonicalize } from "./jcs.js";
import type { Entity, EventInput } from "./types.js";

/** What a wrapper needs of a client: a SealtrailClient, or a fake in tests. */
export interface Logger {
  log(input: EventInput): Promise<unknown>;
  /** A poisoned client reports its tamper error here (SealtrailClient.error). */
  readonly error?: unknown;
}

/** Wrapper runtime options. */
export interface WrapperOptions {
  /** Records the events; when absent one is built from `config`. */
  client?: Logger;
  /** Builds the client when `client` is absent. */
  config?: ClientOptions;
  /**
   * Turns audit failures into errors that stop the operation: an operation is not
   * started while the client reports an error (a poisoned client), and when the outcome
   * event cannot be written the wrapper throws an AuditError instead of returning the
   * operation's result. (The operation itself has already run.) Default false: audit
   * failures only reach onAuditError.
   */
  failClosed?: boolean;
  /** Called whenever building or sending an event fails, with the event when one was built. */
  onAuditError?: (error: unknown, input?: EventInput) => void;
}

/** Thrown, with failClosed, when an audit event could not be written. */
export class AuditError extends Error {
  override name = "AuditError";
  constructor(
    readonly event: EventInput | undefined,
    cause: unknown,
    /** The operation's own error, when it failed too. */
    readonly operationError?: unknown,
  ) {
    super(`audit event not recorded: ${(cause as Error)?.message ?? cause}`, { cause });
  }
}

/** Thrown when a tool that requires a reason is called without one; the failed event is written first. */
export class ReasonRequiredError extends Error {
  override name = "ReasonRequiredError";
  constructor(readonly toolName: string) {
    super(`tool ${toolName} requires a reason`);
  }
}

/** Thrown when a tool's authorization check refused a call; the denied event is written first. */
export class DeniedError extends Error {
  override name = "DeniedError";
  constructor(
    readonly toolName: string,
    cause?: unknown,
  ) {
    super(
      cause === undefined
        ? `tool ${toolName} denied by the authorization check`
        : `tool ${toolName} denied: authorization check failed: ${(cause as Error)?.message ?? cause}`,
      cause === undefined ? undefined : { cause },
    );
  }
}

/** The action of tool-call events unless ToolSpec.action is set. */
export const DEFAULT_TOOL_ACTION = "tool.call";

/** Describes a tool once, where it is wrapped. */
export interface ToolSpec {
  /** Recorded as toolName (required). */
  name: string;
  /** Event action (default "tool.call"). */
  action?: string;
  risk?: string;
  /** Event target (default {type: "tool", id: name}). */
  target?: Entity;
  /** Refuse calls without a reason: a failed event, then a ReasonRequiredError. */
  requireReason?: boolean;
  /** Asked before each call; false, or a throw, writes a denied event and throws a DeniedError. */
  authorize?: (call: ToolCall) => boolean | Promise<boolean>;
  /** Record inputHash and outputHash: SHA-256 of the RFC 8785 JSON of the input and output. */
  hashIO?: boolean;
}

/** Who calls a tool, and why. */
export interface ToolCall {
  /** The tool call id (toolCallId), e.g. the model's tool_call id. */
  id?: string;
  /** Who called the tool (required). */
  actor: Entity;
  /** Why; required when the tool's spec says so. Recorded in metadata. */
  reason?: string;
  agentId?: string;
  model?: string;
  sessionId?: string;
  requestId?: string;
  approvalId?: string;
  policyVersion?: string;
  context?: Record<string, unknown>;
}

/** Holds the options shared by the wrappers. */
export class Auditor {
  readonly #log: Logger;
  readonly #failClosed: boolean;
  readonly #onAuditError: WrapperOptions["onAuditError"];

  constructor(opts: WrapperOptions) {
    let l = opts.client;
    if (!l) {
      if (!opts.config) throw new TypeError("wrap: options need a client or a config");
      l = new SealtrailClient(opts.config);
    }
    this.#log = l;
    this.#failClosed = opts.failClosed ?? false;
    this.#onAuditError = opts.onAuditError;
  }

  /** The client the events go to. */
  get client(): Logger {
    return this.#log;
  }

  #report(err: unknown, ev?: EventInput): void {
    try {
      this.#onAuditError?.(err, ev);
    } catch {
      // a throwing callback must not change the outcome
    }
  }

  // With failClosed, refuses to start an operation while the client reports an error.
  #preflight(ev: EventInput): void {
    if (!this.#failClosed) return;
    const err = this.#log.error;
    if (err) {
      this.#report(err, ev);
      throw new AuditError(ev, err);
    }
  }

  // Writes ev; returns an AuditError only with failClosed.
  async #record(ev: EventInput, opErr?: unknown): Promise<AuditError | undefined> {
    try {
      await this.#log.log(ev);
      return undefined;
    } catch (e) {
      this.#report(e, ev);
      return this.#failClosed ? new AuditError(ev, e, opErr) : undefined;
    }
  }

  /**
   * Runs fn and records event with its outcome: status success or failed (unless the
   * event sets one), metadata.durationMs and, on failure, metadata.error. The event's
   * metadata is copied, never modified.
   */
  async run<T>(event: EventInput, fn: () => T | Promise<T>): Promise<T> {
    const ev: EventInput = { ...event };
    this.#preflight(ev);
    const start = performance.now();
    let out: T | undefined;
    let err: unknown;
    let failed = false;
    try {
      out = await fn();
    } catch (e) {
      err = e;
      failed = true;
    }
    ev.metadata = withOutcome(ev.metadata, performance.now() - start, failed, err);
    if (ev.status === undefined) ev.status = failed ? "failed" : "success";
    const aerr = await this.#record(ev, failed ? err : undefined);
    if (aerr) throw aerr;
    if (failed) throw err;
    return out as T;
  }

  /**
   * Wraps a function so that every call is recorded as `event(...args)` (or the fixed
   * event) with its outcome, as run does.
   */
  wrap<A extends unknown[], T>(event: EventInput | ((...args: A) => EventInput), fn: (...args: A) => T | Promise<T>): (...args: A) => Promise<T> {
    return (...args: A) => {
      let ev: EventInput;
      try {
        ev = typeof event === "function" ? event(...args) : event;
      } catch (e) {
        this.#report(e);
        if (this.#failClosed) return Promise.reject(new AuditError(undefined, e));
        return Promise.resolve().then(() => fn(...args));
      }
      return this.run(ev, () => fn(...args));
    };
  }

  /**
   * Wraps a tool so that every call is recorded: who called which tool with which call
   * id, its outcome (success, failed, denied), metadata.durationMs, and the error and
   * the reason when there are any.
   */
  tool<In, Out>(spec: ToolSpec, fn: (input: In) => Out | Promise<Out>): (call: ToolCall, input: In) => Promise<Out> {
    const action = spec.action || DEFAULT_TOOL_ACTION;
    const target = spec.target ?? { type: "tool", id: spec.name };
    return async (call: ToolCall, input: In): Promise<Out> => {
      const ev = toolEvent(spec, action, target, call);
      this.#preflight(ev);
      if (!spec.name || !call?.actor?.type || !call.actor.id) {
        // The event cannot be built; the call is refused rather than run unrecorded
        // under a made-up name or actor.
        const err = new TypeError("wrap: a tool call needs spec.name and call.actor (type and id)");
        this.#report(err, ev);
        throw err;
      }
      if (spec.requireReason && !call.reason) {
        ev.status = "failed";
        ev.metadata = { ...withOutcome(ev.metadata, 0, false), error: "reason required" };
        const refused = new ReasonRequiredError(spec.name);
        const aerr = await this.#record(ev, refused);
        throw aerr ?? refused;
      }
      if (spec.authorize) {
        let ok = false;
        let authErr: unknown;
        let threw = false;
        try {
          ok = await spec.authorize(call);
        } catch (e) {
          authErr = e;
          threw = true;
        }
        if (!ok || threw) {
          ev.status = "denied";
          ev.metadata = withOutcome(ev.metadata, 0, threw, authErr);
          const denied = new DeniedError(spec.name, threw ? authErr : undefined);
          const aerr = await this.#record(ev, denied);
          throw aerr ?? denied;
        }
      }
      if (spec.hashIO) {
        try {
          ev.inputHash = await hashJSON(input);
        } catch (e) {
          this.#report(new Error(`wrap: hash tool input: ${(e as Error).message}`, { cause: e }), ev);
        }
      }
      const start = performance.now();
      let out: Out | undefined;
      let err: unknown;
      let failed = false;
      try {
        out = await fn(input);
      } catch (e) {
        err = e;
        failed = true;
      }
      ev.metadata = withOutcome(ev.metadata, performance.now() - start, failed, err);
      ev.status = failed ? "failed" : "success";
      if (spec.hashIO && !failed) {
        try {
          ev.outputHash = await hashJSON(out);
        } catch (e) {
          this.#report(new Error(`wrap: hash tool output: ${(e as Error).message}`, { cause: e }), ev);
        }
      }
      const aerr = await this.#record(ev, failed ? err : undefined);
      if (aerr) throw aerr;
      if (failed) throw err;
      return out as Out;
    };
  }
}

function toolEvent(spec: ToolSpec, action: string, target: Entity, call: ToolCall): EventInput {
  const ev: EventInput = { action, actor: call?.actor, target, toolName: spec.name };
  if (spec.risk) ev.risk = spec.risk;
  if (call?.context) ev.context = call.context;
  if (call?.id) ev.toolCallId = call.id;
  for (const k of ["agentId", "model", "sessionId", "requestId", "approvalId", "policyVersion"] as const) {
    if (call?.[k]) ev[k] = call[k];
  }
  if (call?.reason) ev.metadata = { reason: call.reason };
  return ev;
}

function withOutcome(md: Record<string, unknown> | undefined, ms: number, failed: boolean, err?: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = { ...md, durationMs: Math.round(ms) };
  if (failed) out.error = err instanceof Error ? err.message : String(err);
  return out;
}

/** inputHash/outputHash of a value: lowercase hex SHA-256 of its RFC 8785 JSON. */
export async function hashJSON(v: unknown): Promise<string> {
  return toHex(await sha256(utf8(canonicalize(v === undefined ? null : v))));
}
