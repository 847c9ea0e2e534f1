// Starts a real sealtraild for the suite: `sealtraild serve --dev` with a temporary
// data directory on a free 127.0.0.1 port, as the Go client's tests do
// (client/service_test.go). The binaries come from $SEALTRAIL_BIN_DIR (scripts/test.sh
// points it at bin/ after building) or are built here with `go build`. Servers are
// stopped by their PID when the test that started them ends.
import { spawn, execFile } from "node:child_process";
import { mkdtemp, rm, cp } from "node:fs/promises";
import { existsSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);
export const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));

let binsPromise;

/** Paths of sealtraild, sealtrail and gosign (the Go side of the cross-check). */
export function binaries() {
  binsPromise ??= (async () => {
    const dir = await mkdtemp(join(tmpdir(), "sealtrail-ts-bin-"));
    process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
    const pkgs = ["./clients/typescript/test/gosign"];
    const given = process.env.SEALTRAIL_BIN_DIR;
    const have = given && existsSync(join(given, "sealtraild")) && existsSync(join(given, "sealtrail"));
    if (!have) pkgs.push("./cmd/sealtraild", "./cmd/sealtrail");
    await run("go", ["build", "-o", dir + "/", ...pkgs], { cwd: repoRoot, maxBuffer: 1 << 24 });
    const from = have ? given : dir;
    return { dir, sealtraild: join(from, "sealtraild"), sealtrail: join(from, "sealtrail"), gosign: join(dir, "gosign") };
  })();
  return binsPromise;
}

/** A free loopback port (the service is restarted on the same one: pins are per address). */
export async function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function childEnv() {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("SEALTRAIL_")) env[k] = v;
  return env;
}

/** One sealtraild, restartable on its port and data directory. */
export class Service {
  constructor(root, port) {
    this.root = root;
    this.dataDir = join(root, "data");
    this.port = port;
    this.base = `http://127.0.0.1:${port}`;
    this.child = null;
  }

  /** Starts a new service on a fresh data directory and reads the dev project's key. */
  static async start() {
    const root = await mkdtemp(join(tmpdir(), "sealtrail-ts-"));
    const s = new Service(root, await freePort());
    await s.launch(true);
    return s;
  }

  async launch(first = false) {
    const { sealtraild } = await binaries();
    const child = spawn(sealtraild, ["serve", "--dev", "--listen", `127.0.0.1:${this.port}`, "--data", this.dataDir], {
      env: childEnv(),
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.child = child;
    let stdout = "";
    let stderr = "";
    child.stderr.on("data", (d) => {
      stderr = (stderr + d).slice(-8000);
    });
    const exited = new Promise((resolve) => child.once("exit", (code, sig) => resolve({ code, sig })));
    this.exited = exited;
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`sealtraild did not start within 90 s:\n${stderr}`)), 90_000);
      exited.then(({ code, sig }) => {
        clearTimeout(timer);
        reject(new Error(`sealtraild exited (${code ?? sig}) before serving:\n${stderr}`));
      });
      child.stdout.on("data", (d) => {
        stdout += d;
        const m = /^API key \(all scopes, shown once\): (\S+)$/m.exec(stdout);
        if (m) this.apiKey = m[1];
        const t = /^Operator token:\s+(\S+)$/m.exec(stdout);
        const pk = /^Service public key:\s+([0-9a-f]{64})$/m.exec(stdout);
        if (t && pk && (!first || this.apiKey)) {
          this.operatorToken = t[1];
          this.servicePublicKey = pk[1];
          clearTimeout(timer);
          resolve();
        }
      });
    });
    for (let i = 0; ; i++) {
      try {
        const r = await fetch(this.base + "/readyz");
        if (r.ok) break;
      } catch {
        // not yet
      }
      if (i > 600) throw new Error("sealtraild not ready within 60 s");
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** SIGTERM to the child's PID; waits for it to exit. */
  async stop() {
    if (!this.child || this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill("SIGTERM");
    const t = setTimeout(() => this.child.kill("SIGKILL"), 30_000);
    await this.exited;
    clearTimeout(t);
  }

  async restart() {
    await this.stop();
    await this.launch(false);
  }

  /** Copies the (stopped) service's data directory. */
  async snapshot(name) {
    const to = join(this.root, name);
    await cp(this.dataDir, to, { recursive: true });
    return to;
  }

  /** Replaces the (stopped) service's data directory with a snapshot. */
  async restore(from) {
    await rm(this.dataDir, { recursive: true, force: true });
    await cp(from, this.dataDir, { recursive: true });
  }

  async destroy() {
    await this.stop();
    await rm(this.root, { recursive: true, force: true });
  }

  /** Calls the operator API; throws unless 2xx. */
  async admin(method, path, body) {
    const r = await fetch(`${this.base}/admin/v1${path}`, {
      method,
      headers: { Authorization: `Bearer ${this.operatorToken}`, "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${text}`);
    return JSON.parse(text);
  }

  /** A new project with an all-scope API key; with signing, a registered customer key. */
  async newProject(name, { signing = false, generateKeyPair, toHex } = {}) {
    const p = await this.admin("POST", "/projects", { name });
    const k = await this.admin("POST", `/projects/${p.id}/keys`, { name: "ts", scopes: ["log:write", "log:read", "log:export", "log:verify"] });
    const out = { id: p.id, apiKey: k.secret };
    if (signing) {
      const kp = await generateKeyPair();
      const sk = await this.admin("POST", `/projects/${p.id}/signing-keys`, { publicKey: toHex(kp.publicKey) });
      Object.assign(out, { signingKeyId: sk.id, signingPrivateKey: toHex(kp.seed), signingPublicKey: toHex(kp.publicKey) });
    }
    return out;
  }
}

/** Runs a binary; resolves to {code, stdout, stderr} whatever the exit code. */
export async function runBin(bin, args, env = {}) {
  try {
    const { stdout, stderr } = await run(bin, args, { env: { ...childEnv(), ...env }, maxBuffer: 1 << 26, timeout: 120_000 });
    return { code: 0, stdout, stderr };
  } catch (e) {
    if (typeof e.code !== "number") throw e;
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}
