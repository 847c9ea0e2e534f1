// Node-only parts: a file-backed sthStore. Import from "@sealtrail/client/node".

import { createHash, randomBytes } from "node:crypto";
import { mkdir, open, readFile, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import type { PinnedHead, STHStore } from "./store.js";

/**
 * Keeps each pin in its own JSON file in a directory, so pins survive restarts. A save
 * writes a temporary file, syncs it, renames it over the old pin and syncs the
 * directory: a crash leaves the old pin or the new one, never a torn file. The files
 * are those of the Go client's FileHeadStore (named by the SHA-256 of the key, holding
 * `{key, sth, servicePublicKey}`), so Go and TypeScript clients can share a directory.
 */
export class FileSTHStore implements STHStore {
  // Resolves to the error of creating the directory, if any (reported by load and save,
  // never as an unhandled rejection).
  #ready: Promise<unknown>;

  constructor(readonly dir: string) {
    this.#ready = mkdir(dir, { recursive: true, mode: 0o700 }).then(
      () => undefined,
      (e: unknown) => e,
    );
  }

  async #dirReady(): Promise<void> {
    const err = await this.#ready;
    if (err) throw new Error(`head store: ${(err as Error).message}`, { cause: err });
  }

  #path(key: string): string {
    return join(this.dir, createHash("sha256").update(key).digest("hex").slice(0, 32) + ".json");
  }

  async load(key: string): Promise<PinnedHead | null> {
    await this.#dirReady();
    const p = this.#path(key);
    let data: string;
    try {
      data = await readFile(p, "utf8");
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw new Error(`head store: ${(e as Error).message}`, { cause: e });
    }
    let h: { key?: unknown; sth?: unknown; servicePublicKey?: unknown };
    try {
      h = JSON.parse(data);
    } catch (e) {
      throw new Error(`head store: ${p}: ${(e as Error).message}`);
    }
    if (h?.key !== key) throw new Error(`head store: ${p} holds the pin of ${JSON.stringify(h?.key)}, not ${JSON.stringify(key)}`);
    return { sth: h.sth as PinnedHead["sth"], servicePublicKey: h.servicePublicKey as string };
  }

  async save(key: string, value: PinnedHead): Promise<void> {
    await this.#dirReady();
    const dst = this.#path(key);
    const tmp = join(this.dir, `.pin-${randomBytes(8).toString("hex")}.tmp`);
    const data = JSON.stringify({ key, sth: value.sth, servicePublicKey: value.servicePublicKey }, null, 2) + "\n";
    try {
      const f = await open(tmp, "wx", 0o600);
      try {
        await f.writeFile(data);
        await f.sync();
      } finally {
        await f.close();
      }
      await rename(tmp, dst);
    } catch (e) {
      await rm(tmp, { force: true });
      throw new Error(`head store: ${(e as Error).message}`, { cause: e });
    }
    const d = await open(this.dir, "r");
    try {
      await d.sync();
    } finally {
      await d.close();
    }
  }
}
