// Pinned-head stores (spec, client option `sthStore`).

import type { STH } from "./sth.js";
import type { Stream } from "./errors.js";

/** What a client pins for one base address and stream. */
export interface PinnedHead {
  sth: STH;
  servicePublicKey: string;
}

/**
 * Keeps pinned heads. `load` returns the stored head or null (or undefined); `save`
 * stores one. Either may return a promise. The client serializes the checks of one
 * stream, so it never saves one key concurrently. `save` should be durable when it
 * resolves: a lost pin means the head is trusted on first use again.
 */
export interface STHStore {
  load(key: string): PinnedHead | null | undefined | Promise<PinnedHead | null | undefined>;
  save(key: string, value: PinnedHead): void | Promise<void>;
}

/** The store key of a base address and stream: `<baseUrl>|<stream>`, as the Go client. */
export function pinKey(baseUrl: string, stream: Stream): string {
  return `${baseUrl}|${stream}`;
}

/** Keeps pins in memory; they are lost when the process ends. */
export class MemorySTHStore implements STHStore {
  #heads = new Map<string, PinnedHead>();

  load(key: string): PinnedHead | null {
    const h = this.#heads.get(key);
    return h ? structuredClone(h) : null;
  }

  save(key: string, value: PinnedHead): void {
    this.#heads.set(key, structuredClone(value));
  }
}
