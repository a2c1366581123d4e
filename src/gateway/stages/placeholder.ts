// Placeholder substitution (docs/injection.md#placeholders): a placeholder secret's value replaces every
// occurrence of its placeholder on the surfaces it lists — header values as they are, path and query
// percent-encoded, the body by its Content-Type (JSON-escaped, form-encoded or raw) while it streams. A body that
// announced a Content-Length of at most 8 MiB is rewritten whole and sent with its new length; a longer or
// chunked one goes upstream chunked. A body with a Content-Encoding is left alone. After the approval stage,
// so that approval previews and logs show what the agent sent. Requests without a placeholder secret cost one
// length check.
import { NeedleSet } from "../../core/needles.ts";
import { NeedleStream, replaceInString, type NeedleHandler } from "../../core/needleStream.ts";
import { bodyKindOf, bodyValue, urlValue, type BodyKind, type Surface } from "../../core/placeholders.ts";
import { badGateway } from "../errors.ts";
import type { PlaceholderUse, ProxyRequest } from "../request.ts";
import { scannedBody, scannedWhole } from "../scannedBody.ts";
import { answer, PASS, type RequestVerdict, type Stage } from "../stage.ts";

/** A body announced at most this long is rewritten into memory and sent with its new Content-Length. */
export const REWRITE_IN_MEMORY_MAX = 8 * 1024 * 1024;

/** One set of placeholders, compiled once: the search, and what each needle becomes on each surface. */
class Substitution {
  readonly set: NeedleSet;
  readonly uses: readonly PlaceholderUse[];
  /** What each needle becomes in WebSocket messages: the raw value (null: not on the websocket surface). */
  readonly websocket: (Uint8Array | null)[];
  readonly #surfaces: ReadonlySet<Surface>;
  readonly #body = new Map<BodyKind, (Uint8Array | null)[]>();
  // Made once for replaceInString (no closure per request): a needle's text on that surface, null to leave it.
  readonly headerValue: (i: number) => string | null;
  readonly #pathValue: (i: number) => string | null;
  readonly #queryValue: (i: number) => string | null;

  constructor(uses: readonly PlaceholderUse[]) {
    this.uses = uses;
    this.set = new NeedleSet(uses.map((u) => u.placeholder));
    this.#surfaces = new Set(uses.flatMap((u) => u.surfaces));
    const on = <T>(surface: Surface, value: (u: PlaceholderUse) => T): (T | null)[] => uses.map((u) => (u.surfaces.includes(surface) ? value(u) : null));
    const header = on("header", (u) => u.value);
    const path = on("path", (u) => urlValue(u.value));
    const query = on("query", (u) => urlValue(u.value));
    this.headerValue = (i) => header[i]!;
    this.#pathValue = (i) => path[i]!;
    this.#queryValue = (i) => query[i]!;
    this.websocket = on("websocket", (u) => Buffer.from(u.value));
  }

  has(surface: Surface): boolean {
    return this.#surfaces.has(surface);
  }

  /** The target with path and query rewritten as their surfaces allow, and which of them changed. */
  target(target: string): { target: string; path: boolean; query: boolean } {
    const q = target.indexOf("?");
    const pathPart = q === -1 ? target : target.slice(0, q);
    const queryPart = q === -1 ? "" : target.slice(q);
    const path = this.has("path") ? replaceInString(pathPart, this.set, this.#pathValue) : pathPart;
    const query = this.has("query") && queryPart !== "" ? replaceInString(queryPart, this.set, this.#queryValue) : queryPart;
    return { target: path + query, path: path !== pathPart, query: query !== queryPart };
  }

  /** What each needle becomes in a body of that kind (null: not on the body surface). */
  body(kind: BodyKind): (Uint8Array | null)[] {
    let out = this.#body.get(kind);
    if (!out) {
      out = this.uses.map((u) => (u.surfaces.includes("body") ? Buffer.from(bodyValue(kind, u.value)) : null));
      this.#body.set(kind, out);
    }
    return out;
  }
}

/** The same secrets apply request after request: their compiled substitution is kept. */
const compiled = new Map<string, Substitution>();
const COMPILED_MAX = 1000;

export function substitutionFor(uses: readonly PlaceholderUse[]): Substitution {
  let key = "";
  for (const u of uses) key += `${u.placeholder}\u0000${u.value}\u0000${u.surfaces.join(",")}\u0001`;
  let entry = compiled.get(key);
  if (!entry) {
    if (compiled.size >= COMPILED_MAX) compiled.clear();
    entry = new Substitution(uses);
    compiled.set(key, entry);
  }
  return entry;
}

/** A body's or a WebSocket's needles replaced by their values; the surface counted once, when the first is. */
export class SurfaceRewriter implements NeedleHandler {
  #counted = false;

  constructor(
    private readonly rq: ProxyRequest,
    private readonly values: (Uint8Array | null)[],
  ) {}

  replacement(index: number): Uint8Array | null {
    const value = this.values[index]!;
    if (value !== null && !this.#counted) {
      this.#counted = true;
      this.rq.injectionCount++;
    }
    return value;
  }
}

function isEncoded(contentEncoding: string | null): boolean {
  return contentEncoding !== null && contentEncoding.trim() !== "" && contentEncoding.trim().toLowerCase() !== "identity";
}

/**
 * gRPC messages carry their own length prefixes (and protobuf its own lengths inside): a value of another
 * length written into one would break it, so such bodies are left as they are.
 */
function isLengthPrefixed(contentType: string | null): boolean {
  return contentType !== null && /^\s*application\/grpc/i.test(contentType);
}

/** Adds the value to those the echo guard redacts (once). */
function guardEcho(rq: ProxyRequest, value: string): void {
  if (!rq.injectedValues.includes(value)) rq.injectedValues = [...rq.injectedValues, value];
}

function rewriteBody(rq: ProxyRequest, sub: Substitution): RequestVerdict | Promise<RequestVerdict> {
  const body = rq.body!;
  const scan = new NeedleStream(sub.set, new SurfaceRewriter(rq, sub.body(bodyKindOf(rq.headers.get("content-type")))));
  const declared = rq.chunked ? null : rq.headers.get("content-length");
  const length = declared === null ? NaN : Number(declared);
  if (length <= REWRITE_IN_MEMORY_MAX) {
    return scannedWhole(body, scan).then(
      (whole) => {
        rq.headers.set("content-length", String(whole.byteLength));
        rq.body = new ReadableStream<Uint8Array>({
          start(controller) {
            controller.enqueue(whole);
            controller.close();
          },
        });
        return PASS;
      },
      () => rq.refusal ?? answer("error", badGateway()),
    );
  }
  rq.body = scannedBody(body, scan);
  if (!rq.chunked) {
    rq.headers.delete("content-length");
    rq.chunked = true;
  }
  return PASS;
}

export function placeholderStage(): Stage {
  return {
    name: "placeholder",
    // After approval: a held request's preview shows the placeholder, never the value (docs/gateway.md#stages).
    reads: ["secrets", "approval"],
    provides: ["placeholdersReplaced"],
    request(rq) {
      if (rq.placeholders.length === 0) return PASS;
      const sub = substitutionFor(rq.placeholders);
      for (const u of sub.uses) {
        // The echo guard watches from here on whatever may carry the value back (docs/guards.md#echo-guard).
        if (u.surfaces.includes("body") || u.surfaces.includes("websocket")) guardEcho(rq, u.value);
      }
      let header = false;
      for (const line of rq.headers) {
        const next = replaceInString(line[1], sub.set, sub.headerValue);
        if (next !== line[1]) {
          line[1] = next;
          header = true;
        }
      }
      const t = sub.target(rq.upstreamTarget);
      rq.upstreamTarget = t.target;
      const count = Number(header) + Number(t.path) + Number(t.query);
      if (count > 0) {
        rq.injectionCount += count;
        for (const u of sub.uses) guardEcho(rq, u.value);
      }
      if (rq.body === null || rq.websocket || !sub.has("body") || isEncoded(rq.headers.get("content-encoding")) || isLengthPrefixed(rq.headers.get("content-type"))) return PASS;
      return rewriteBody(rq, sub);
    },
  };
}
