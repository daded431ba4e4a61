// JSON exactly as Go's encoding/json writes it, so that a graph built here
// encodes to the same bytes as one built with the Go SDK (agentsdk): object
// keys sorted by their UTF-8 bytes, "<", ">" and "&" escaped as \u003c,
// \u003e and \u0026, U+2028 and U+2029 escaped, \b and \f short, other
// control characters as \u00XX, numbers in the shortest form that reads back
// (the ECMAScript form, which Go's encoder follows), -0 as "-0".

/**
 * JSONNumber keeps a number's JSON text as it was read (like Go's
 * json.Number), so a graph read from JSON encodes back to the same bytes
 * ("1.0" stays "1.0").
 */
export class JSONNumber {
  constructor(readonly text: string) {}
  /** The number's value. */
  valueOf(): number {
    return Number(this.text);
  }
  /** The number's JSON text. */
  toString(): string {
    return this.text;
  }
}

/**
 * A value that writes its own Go JSON form (the graph's conditions and
 * targets: {"name": ..., "args": {...}}).
 */
export interface GoJSONMarshaler {
  goJSON(): string;
}

function isMarshaler(v: object): v is GoJSONMarshaler {
  return typeof (v as { goJSON?: unknown }).goJSON === "function";
}

const hex = "0123456789abcdef";

/** quote writes s as a Go JSON string (with HTML escaping, as json.Marshal does). */
export function quote(s: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) {
      switch (c) {
        case 0x22:
          out += '\\"';
          continue;
        case 0x5c:
          out += "\\\\";
          continue;
        case 0x08:
          out += "\\b";
          continue;
        case 0x0c:
          out += "\\f";
          continue;
        case 0x0a:
          out += "\\n";
          continue;
        case 0x0d:
          out += "\\r";
          continue;
        case 0x09:
          out += "\\t";
          continue;
        case 0x3c: // <
        case 0x3e: // >
        case 0x26: // &
          out += "\\u00" + hex[c >> 4] + hex[c & 0xf];
          continue;
      }
      out += c < 0x20 ? "\\u00" + hex[c >> 4] + hex[c & 0xf] : s[i];
      continue;
    }
    if (c === 0x2028 || c === 0x2029) {
      out += c === 0x2028 ? "\\u2028" : "\\u2029";
      continue;
    }
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
      if (d >= 0xdc00 && d <= 0xdfff) {
        out += s[i] + s[i + 1];
        i++;
        continue;
      }
      out += "\\ufffd"; // a lone surrogate is invalid UTF-8 to Go
      continue;
    }
    if (c >= 0xdc00 && c <= 0xdfff) {
      out += "\\ufffd";
      continue;
    }
    out += s[i];
  }
  return out + '"';
}

/** formatNumber writes a finite number as Go writes a float64. */
export function formatNumber(n: number): string {
  if (!Number.isFinite(n)) {
    throw new TypeError(`json: unsupported value: ${n}`);
  }
  if (Object.is(n, -0)) {
    return "-0";
  }
  return String(n);
}

/** compareUTF8 orders strings by their UTF-8 bytes, as Go sorts map keys. */
export function compareUTF8(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

/**
 * goJSON encodes a value as Go's json.Marshal encodes the corresponding Go
 * value: plain objects and Maps as maps (keys sorted), arrays as slices,
 * undefined and null as null, Uint8Array as base64, JSONNumber verbatim,
 * bigint as an integer, and a value with a goJSON method by that method.
 */
export function goJSON(v: unknown): string {
  switch (typeof v) {
    case "undefined":
      return "null";
    case "boolean":
      return v ? "true" : "false";
    case "number":
      return formatNumber(v);
    case "bigint":
      return v.toString();
    case "string":
      return quote(v);
    case "object":
      break;
    default:
      throw new TypeError(`json: unsupported type: ${typeof v}`);
  }
  if (v === null) {
    return "null";
  }
  if (v instanceof JSONNumber) {
    return v.text;
  }
  if (isMarshaler(v)) {
    return v.goJSON();
  }
  if (v instanceof Uint8Array) {
    return quote(Buffer.from(v).toString("base64"));
  }
  if (Array.isArray(v)) {
    return "[" + v.map(goJSON).join(",") + "]";
  }
  if (v instanceof Map) {
    return object([...v.entries()].map(([k, x]) => [String(k), x]));
  }
  const withToJSON = v as { toJSON?: () => unknown };
  if (typeof withToJSON.toJSON === "function") {
    return goJSON(withToJSON.toJSON());
  }
  return object(Object.entries(v));
}

function object(entries: [string, unknown][]): string {
  entries.sort(([a], [b]) => compareUTF8(a, b));
  return "{" + entries.map(([k, x]) => quote(k) + ":" + goJSON(x)).join(",") + "}";
}

/**
 * parseJSON reads JSON like JSON.parse, but keeps numbers as JSONNumber (Go's
 * json.Decoder with UseNumber), so they encode back as they were written.
 */
export function parseJSON(text: string): unknown {
  const p = new Parser(text);
  p.space();
  const v = p.value();
  p.space();
  if (p.i !== text.length) {
    p.fail("unexpected data after the value");
  }
  return v;
}

class Parser {
  i = 0;
  constructor(private readonly s: string) {}

  fail(what: string): never {
    throw new SyntaxError(`json: ${what} at offset ${this.i}`);
  }

  space(): void {
    while (this.i < this.s.length && " \t\n\r".includes(this.s[this.i])) {
      this.i++;
    }
  }

  value(): unknown {
    const c = this.s[this.i];
    switch (c) {
      case "{":
        return this.object();
      case "[":
        return this.array();
      case '"':
        return this.string();
      case "t":
        return this.word("true", true);
      case "f":
        return this.word("false", false);
      case "n":
        return this.word("null", null);
    }
    return this.number();
  }

  word<T>(w: string, v: T): T {
    if (!this.s.startsWith(w, this.i)) {
      this.fail("invalid literal");
    }
    this.i += w.length;
    return v;
  }

  number(): JSONNumber {
    const m = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(this.s.slice(this.i));
    if (!m || m[0] === "" || m[0] === "-") {
      this.fail("invalid character");
    }
    this.i += m[0].length;
    return new JSONNumber(m[0]);
  }

  string(): string {
    const start = this.i;
    this.i++;
    while (this.i < this.s.length) {
      const c = this.s[this.i];
      if (c === '"') {
        this.i++;
        return JSON.parse(this.s.slice(start, this.i)) as string;
      }
      this.i += c === "\\" ? 2 : 1;
    }
    return this.fail("unterminated string");
  }

  array(): unknown[] {
    this.i++;
    const out: unknown[] = [];
    this.space();
    if (this.s[this.i] === "]") {
      this.i++;
      return out;
    }
    for (;;) {
      this.space();
      out.push(this.value());
      this.space();
      const c = this.s[this.i++];
      if (c === "]") {
        return out;
      }
      if (c !== ",") {
        this.fail("expected , or ]");
      }
    }
  }

  object(): Record<string, unknown> {
    this.i++;
    const out: Record<string, unknown> = {};
    this.space();
    if (this.s[this.i] === "}") {
      this.i++;
      return out;
    }
    for (;;) {
      this.space();
      if (this.s[this.i] !== '"') {
        this.fail("expected a key");
      }
      const k = this.string();
      this.space();
      if (this.s[this.i++] !== ":") {
        this.fail("expected :");
      }
      this.space();
      // defineProperty: a key "__proto__" is data, not the prototype.
      Object.defineProperty(out, k, { value: this.value(), enumerable: true, writable: true, configurable: true });
      this.space();
      const c = this.s[this.i++];
      if (c === "}") {
        return out;
      }
      if (c !== ",") {
        this.fail("expected , or }");
      }
    }
  }
}

/**
 * plain turns decoded JSON (with JSONNumber) into plain JavaScript values,
 * as the hub's Struct and Value fields carry them.
 */
export function plain(v: unknown): unknown {
  if (v instanceof JSONNumber) {
    return v.valueOf();
  }
  if (Array.isArray(v)) {
    return v.map(plain);
  }
  if (v !== null && typeof v === "object") {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  }
  return v;
}
