// Signed chunked uploads re-signed while they stream (docs/injection.md#aws-signature-v4). An aws-chunked body
// (`STREAMING-AWS4-HMAC-SHA256-PAYLOAD`, with or without trailer) is a chain: every chunk's signature covers the
// hash of its data and the signature before it, the first one the request's. Each chunk is read whole (its
// signature line comes before its data), given the signature of the new chain in place of the agent's — same
// length, 64 hex digits — and passed on; so the body keeps its length and memory holds one chunk at a time.
import { createHash } from "node:crypto";

const CRLF = Buffer.from("\r\n");
const EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
const SIGNATURE = /^([0-9a-fA-F]{1,16});chunk-signature=([0-9a-f]{64})$/;
/** A chunk's metadata line, a trailer line: far longer means it is not aws-chunked. */
const MAX_LINE = 4096;
/** Clients send 8 KiB to 1 MiB chunks; a larger one would have to be held whole. */
export const MAX_CHUNK = 16 * 1024 * 1024;

/** Signs one string-to-sign with the secret's derived key for the request's date and scope. */
export type SignString = (stringToSign: string) => Promise<string>;

export interface ChunkChain {
  /** `yyyymmddThhmmssZ` of the request's new signature. */
  longDate: string;
  /** `date/region/service/aws4_request`. */
  scope: string;
  /** The request's new signature: the seed of the chain. */
  seed: string;
  /** Whether trailing headers follow the final chunk (`…-PAYLOAD-TRAILER`). */
  trailer: boolean;
  sign: SignString;
}

export class AwsChunkedError extends Error {}

/** Whether `head` starts like an aws-chunked body: a chunk line with a signature (checked before anything leaves). */
export function looksChunkSigned(head: Uint8Array): boolean {
  const text = Buffer.from(head).toString("latin1");
  const end = text.indexOf("\r\n");
  return end !== -1 && SIGNATURE.test(text.slice(0, end));
}

/** The body with every chunk signature recomputed in the new chain. A body that does not decode errors the stream. */
export function resignChunks(body: ReadableStream<Uint8Array>, chain: ChunkChain): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  const parser = new ChunkParser(chain);
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      // Read until the parser has something whole to pass on (a chunk, the trailer) or the body ends.
      for (;;) {
        const r = await reader.read();
        if (r.done) {
          if (!parser.finished) throw new AwsChunkedError("aws-chunked body ended before its final chunk");
          controller.close();
          return;
        }
        const out = await parser.push(Buffer.from(r.value.buffer, r.value.byteOffset, r.value.byteLength));
        if (out.length > 0) {
          for (const piece of out) controller.enqueue(piece);
          return;
        }
      }
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}

type State = "line" | "data" | "data-crlf" | "trailer" | "done";

class ChunkParser {
  #state: State = "line";
  #pending: Buffer = Buffer.alloc(0);
  #line = "";
  #size = 0;
  #data: Buffer[] = [];
  #dataLength = 0;
  #hash = createHash("sha256");
  #previous: string;
  #trailers: string[] = [];

  constructor(private readonly chain: ChunkChain) {
    this.#previous = chain.seed;
  }

  get finished(): boolean {
    return this.#state === "done";
  }

  /** Feeds bytes; returns what may be forwarded now, in order. */
  async push(bytes: Buffer): Promise<Buffer[]> {
    const out: Buffer[] = [];
    let buf = this.#pending.length > 0 ? Buffer.concat([this.#pending, bytes]) : bytes;
    this.#pending = Buffer.alloc(0);
    while (buf.length > 0) {
      switch (this.#state) {
        case "line":
        case "trailer": {
          const end = buf.indexOf(CRLF);
          if (end === -1) {
            if (buf.length > MAX_LINE) throw new AwsChunkedError("aws-chunked line too long");
            this.#pending = Buffer.from(buf);
            return out;
          }
          const line = buf.subarray(0, end).toString("latin1");
          buf = buf.subarray(end + 2);
          if (this.#state === "trailer") await this.#trailerLine(line, out);
          else {
            this.#chunkLine(line);
            // With a trailer, the final chunk has no CRLF of its own: the trailing headers follow its line.
            if (this.#size === 0 && this.chain.trailer) await this.#emitChunk(out);
          }
          break;
        }
        case "data": {
          const take = Math.min(buf.length, this.#size - this.#dataLength);
          // A view, not a copy: each read is a fresh chunk, consumed here and passed on once.
          const piece = buf.subarray(0, take);
          this.#data.push(piece);
          this.#hash.update(piece);
          this.#dataLength += take;
          buf = buf.subarray(take);
          if (this.#dataLength === this.#size) this.#state = "data-crlf";
          break;
        }
        case "data-crlf": {
          if (buf.length < 2) {
            this.#pending = Buffer.from(buf);
            return out;
          }
          if (buf[0] !== 13 || buf[1] !== 10) throw new AwsChunkedError("aws-chunked chunk not followed by CRLF");
          buf = buf.subarray(2);
          await this.#emitChunk(out);
          break;
        }
        case "done":
          // Bytes after the end: not aws-chunked as declared.
          throw new AwsChunkedError("bytes after the final aws-chunked chunk");
      }
    }
    return out;
  }

  #chunkLine(line: string): void {
    const m = SIGNATURE.exec(line);
    if (!m) throw new AwsChunkedError("aws-chunked chunk line without a signature");
    this.#line = m[1]!;
    this.#size = parseInt(m[1]!, 16);
    if (this.#size > MAX_CHUNK) throw new AwsChunkedError("aws-chunked chunk too large");
    this.#data = [];
    this.#dataLength = 0;
    this.#hash = createHash("sha256");
    this.#state = this.#size === 0 ? "data-crlf" : "data";
  }

  async #emitChunk(out: Buffer[]): Promise<void> {
    const signature = await this.#signChunk(this.#hash.digest("hex"));
    const final = this.#size === 0;
    out.push(Buffer.from(`${this.#line};chunk-signature=${signature}\r\n`, "latin1"), ...this.#data);
    // The final chunk of a body with a trailer has no CRLF of its own (the trailing headers follow its line).
    if (!(final && this.chain.trailer)) out.push(CRLF);
    this.#data = [];
    this.#state = this.#size !== 0 ? "line" : this.chain.trailer ? "trailer" : "done";
  }

  #signChunk(dataHash: string): Promise<string> {
    const { longDate, scope, sign } = this.chain;
    return sign(`AWS4-HMAC-SHA256-PAYLOAD\n${longDate}\n${scope}\n${this.#previous}\n${EMPTY_SHA256}\n${dataHash}`).then((s) => (this.#previous = s));
  }

  /** Lines after the final chunk: trailing headers, the trailer signature, the blank line that ends the body. */
  async #trailerLine(line: string, out: Buffer[]): Promise<void> {
    if (line === "") {
      out.push(CRLF);
      this.#state = "done";
      return;
    }
    const colon = line.indexOf(":");
    if (colon <= 0) throw new AwsChunkedError("malformed aws-chunked trailer");
    const name = line.slice(0, colon).trim().toLowerCase();
    if (name === "x-amz-trailer-signature") {
      const canonical = this.#trailers.map((t) => `${t}\n`).join("");
      const hash = createHash("sha256").update(canonical).digest("hex");
      const { longDate, scope, sign } = this.chain;
      const signature = await sign(`AWS4-HMAC-SHA256-TRAILER\n${longDate}\n${scope}\n${this.#previous}\n${hash}`);
      out.push(Buffer.from(`x-amz-trailer-signature:${signature}\r\n`, "latin1"));
      return;
    }
    this.#trailers.push(`${name}:${line.slice(colon + 1).trim()}`);
    out.push(Buffer.from(`${line}\r\n`, "latin1"));
  }
}
