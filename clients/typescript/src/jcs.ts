// RFC 8785 JSON Canonicalization Scheme, with the same rejections as the Go library
// (tlog.Canonicalize, docs/formats.md "Canonical JSON"): duplicate keys, invalid UTF-8,
// lone surrogates, integers beyond ±2^53 (and integral values beyond 2^53 that would
// print as plain digits), non-finite numbers, syntax errors and nesting beyond 256.

/** Why input cannot be canonicalized. */
export type CanonErrorKind =
  | "duplicate_key"
  | "invalid_utf8"
  | "lone_surrogate"
  | "integer_range"
  | "non_finite"
  | "syntax"
  | "unsupported";

/** Input that RFC 8785 cannot represent exactly. */
export class CanonError extends Error {
  override name = "CanonError";
  constructor(
    readonly kind: CanonErrorKind,
    detail: string,
    readonly offset?: number,
  ) {
    super(`jcs: ${kind}: ${detail}${offset === undefined ? "" : ` at offset ${offset}`}`);
  }
}

const MAX_DEPTH = 256;
// A JSON number, matched where the parser stands (sticky).
const NUMBER = /-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;
const MAX_SAFE = 2 ** 53;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** The JCS form of a string: JSON.stringify's escaping is exactly RFC 8785's. */
function str(s: string): string {
  if (LONE_SURROGATE.test(s)) throw new CanonError("lone_surrogate", JSON.stringify(s));
  return JSON.stringify(s);
}

/**
 * The range rule of docs/formats.md, as the Go library applies it: an integer literal
 * beyond ±2^53 is out of range, and so is any literal whose exact decimal value has a
 * magnitude above 2^53 and below 1e21, however it is spelled. The float decides every
 * case but the two where it lands exactly on a bound; there the literal's digits do.
 */
function numberInRange(lit: string, integer: boolean, abs: number): boolean {
  if (integer) return BigInt(lit.replace(/^-/, "")) <= BigInt(MAX_SAFE);
  if (abs > MAX_SAFE && abs < 1e21) return false;
  if (abs === MAX_SAFE) return compareDecimal(lit, 9007199254740992n, 0) <= 0;
  if (abs === 1e21) return compareDecimal(lit, 1n, 21) >= 0;
  return true;
}

/** The sign of |lit| - digits × 10^exp, exact (BigInt), for a JSON number literal. */
function compareDecimal(lit: string, digits: bigint, exp: number): number {
  const m = /^-?([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/.exec(lit)!;
  const frac = m[2] ?? "";
  let a = BigInt(m[1]! + frac);
  let b = digits;
  const k = Number(m[3] ?? "0") - frac.length - exp; // |lit| = a × 10^(exp + k)
  if (k >= 0) a *= 10n ** BigInt(k);
  else b *= 10n ** BigInt(-k);
  return a === b ? 0 : a > b ? 1 : -1;
}

/** The JCS (ECMAScript) form of a finite number, rejecting values Go would refuse. */
export function canonicalNumber(f: number): string {
  if (!Number.isFinite(f)) throw new CanonError("non_finite", String(f));
  if (Number.isInteger(f) && Math.abs(f) > MAX_SAFE && Math.abs(f) < 1e21) {
    throw new CanonError("integer_range", String(f));
  }
  return JSON.stringify(f); // ECMAScript Number.prototype.toString; -0 is "0"
}

// UTF-16 code-unit order, which is JavaScript's default string comparison.
function sortKeys(keys: string[]): string[] {
  return keys.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/**
 * The RFC 8785 form of a JavaScript value: objects, arrays, strings, finite numbers,
 * booleans and null. Object members whose value is undefined are left out, as
 * JSON.stringify does; a toJSON method is honoured. Anything else (bigint, function,
 * symbol, cycles) is a CanonError.
 */
export function canonicalize(value: unknown): string {
  return value_(value, 0);
}

function value_(v: unknown, depth: number): string {
  if (depth > MAX_DEPTH) throw new CanonError("syntax", `nesting deeper than ${MAX_DEPTH}`);
  if (v !== null && typeof v === "object" && typeof (v as { toJSON?: unknown }).toJSON === "function") {
    v = (v as { toJSON: () => unknown }).toJSON();
  }
  switch (typeof v) {
    case "string":
      return str(v);
    case "number":
      return canonicalNumber(v);
    case "boolean":
      return v ? "true" : "false";
    case "object":
      break;
    default:
      throw new CanonError("unsupported", `a ${typeof v} is not JSON`);
  }
  if (v === null) return "null";
  if (Array.isArray(v)) {
    return "[" + v.map((e) => (e === undefined ? "null" : value_(e, depth + 1))).join(",") + "]";
  }
  const o = v as Record<string, unknown>;
  const parts: string[] = [];
  for (const k of sortKeys(Object.keys(o))) {
    if (o[k] === undefined) continue;
    parts.push(str(k) + ":" + value_(o[k], depth + 1));
  }
  return "{" + parts.join(",") + "}";
}

const fatalDecoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * The RFC 8785 form of JSON text (a string, or UTF-8 bytes, which must be valid UTF-8).
 * Unlike JSON.parse, it rejects duplicate keys and integers JavaScript would round.
 */
export function canonicalizeJSON(text: string | Uint8Array): string {
  if (typeof text !== "string") {
    try {
      text = fatalDecoder.decode(text);
    } catch {
      throw new CanonError("invalid_utf8", "input is not valid UTF-8");
    }
  }
  const p = new Parser(text);
  p.ws();
  const out = p.value(0);
  p.ws();
  if (p.pos !== text.length) throw new CanonError("syntax", "trailing data", p.pos);
  return out;
}

/** Parses JSON text strictly (as canonicalizeJSON does) into a JavaScript value. */
export function parseStrict(text: string | Uint8Array): unknown {
  return JSON.parse(canonicalizeJSON(text));
}

class Parser {
  pos = 0;
  constructor(readonly s: string) {}

  fail(detail: string, kind: CanonErrorKind = "syntax"): never {
    throw new CanonError(kind, detail, this.pos);
  }

  ws(): void {
    while (this.pos < this.s.length) {
      const c = this.s[this.pos];
      if (c !== " " && c !== "\t" && c !== "\n" && c !== "\r") break;
      this.pos++;
    }
  }

  value(depth: number): string {
    if (depth > MAX_DEPTH) this.fail(`nesting deeper than ${MAX_DEPTH}`);
    const c = this.s[this.pos];
    switch (c) {
      case "{":
        return this.object(depth);
      case "[":
        return this.array(depth);
      case '"':
        return str(this.string());
      case "t":
        return this.literal("true");
      case "f":
        return this.literal("false");
      case "n":
        return this.literal("null");
    }
    if (c === "-" || (c !== undefined && c >= "0" && c <= "9")) return this.number();
    return this.fail(c === undefined ? "unexpected end of input" : `unexpected character ${JSON.stringify(c)}`);
  }

  literal(lit: string): string {
    if (this.s.startsWith(lit, this.pos)) {
      this.pos += lit.length;
      return lit;
    }
    return this.fail("invalid literal");
  }

  object(depth: number): string {
    this.pos++; // {
    const members = new Map<string, string>();
    this.ws();
    if (this.s[this.pos] === "}") {
      this.pos++;
      return "{}";
    }
    for (;;) {
      this.ws();
      if (this.s[this.pos] !== '"') this.fail("object key is not a string");
      const at = this.pos;
      const k = this.string();
      if (members.has(k)) throw new CanonError("duplicate_key", JSON.stringify(k), at);
      this.ws();
      if (this.s[this.pos] !== ":") this.fail("missing ':'");
      this.pos++;
      this.ws();
      members.set(k, this.value(depth + 1));
      this.ws();
      const c = this.s[this.pos++];
      if (c === "}") break;
      if (c !== ",") this.fail("missing ',' or '}'");
    }
    return "{" + sortKeys([...members.keys()]).map((k) => str(k) + ":" + members.get(k)).join(",") + "}";
  }

  array(depth: number): string {
    this.pos++; // [
    const items: string[] = [];
    this.ws();
    if (this.s[this.pos] === "]") {
      this.pos++;
      return "[]";
    }
    for (;;) {
      this.ws();
      items.push(this.value(depth + 1));
      this.ws();
      const c = this.s[this.pos++];
      if (c === "]") break;
      if (c !== ",") this.fail("missing ',' or ']'");
    }
    return "[" + items.join(",") + "]";
  }

  string(): string {
    const start = this.pos;
    this.pos++; // "
    let out = "";
    for (;;) {
      const c = this.s.charCodeAt(this.pos);
      if (Number.isNaN(c)) this.fail("unterminated string");
      if (c === 0x22) break;
      if (c < 0x20) this.fail("control character in string");
      if (c === 0x5c) {
        out += this.escape();
        continue;
      }
      out += this.s[this.pos++];
    }
    this.pos++;
    if (LONE_SURROGATE.test(out)) throw new CanonError("lone_surrogate", "string has a lone surrogate", start);
    return out;
  }

  escape(): string {
    const e = this.s[this.pos + 1];
    const short: Record<string, string> = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };
    if (e !== undefined && e in short) {
      this.pos += 2;
      return short[e]!;
    }
    if (e !== "u") this.fail("invalid escape");
    const hex = this.s.slice(this.pos + 2, this.pos + 6);
    if (!/^[0-9a-fA-F]{4}$/.test(hex)) this.fail("invalid \\u escape");
    this.pos += 6;
    return String.fromCharCode(parseInt(hex, 16));
  }

  number(): string {
    const start = this.pos;
    NUMBER.lastIndex = start;
    const m = NUMBER.exec(this.s);
    if (!m) this.fail("invalid number");
    const lit = m[0];
    const next = this.s[start + lit.length];
    if (next !== undefined && /[0-9.eE+-]/.test(next)) this.fail("invalid number");
    this.pos += lit.length;
    const f = Number(lit);
    if (!Number.isFinite(f)) throw new CanonError("non_finite", lit, start);
    const integer = m[2] === undefined && m[3] === undefined;
    if (!numberInRange(lit, integer, Math.abs(f))) {
      throw new CanonError("integer_range", lit, start);
    }
    try {
      return canonicalNumber(f);
    } catch (e) {
      throw new CanonError((e as CanonError).kind, lit, start);
    }
  }
}
