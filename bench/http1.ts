// A minimal, allocation-light HTTP/1.1 response parser for the load client: status, Content-Length or
// chunked bodies, keep-alive. Body bytes are handed out as they arrive (chunk framing removed), so SSE
// timing sees each event when its bytes land.

export interface ParserEvents {
  head(status: number): void;
  body(bytes: Buffer): void;
  end(): void;
}

const CRLF = Buffer.from("\r\n");
const CRLFCRLF = Buffer.from("\r\n\r\n");
const EMPTY = Buffer.alloc(0);

type State = "head" | "length" | "chunkSize" | "chunkData" | "chunkCrlf" | "trailer";

export class ResponseParser {
  #pending: Buffer = EMPTY;
  #state: State = "head";
  #remaining = 0;
  /** The status of the response being read (0 before its head). */
  status = 0;
  /** Whether the last head said `Connection: close`. */
  close = false;

  constructor(private readonly on: ParserEvents) {}

  feed(chunk: Buffer): void {
    let buf = this.#pending.length === 0 ? chunk : Buffer.concat([this.#pending, chunk]);
    for (;;) {
      switch (this.#state) {
        case "head": {
          const end = buf.indexOf(CRLFCRLF);
          if (end === -1) {
            this.#pending = buf;
            return;
          }
          this.#readHead(buf.toString("latin1", 0, end));
          buf = buf.subarray(end + 4);
          continue;
        }
        case "length":
        case "chunkData": {
          if (buf.length === 0) {
            this.#pending = EMPTY;
            return;
          }
          const n = Math.min(this.#remaining, buf.length);
          this.on.body(buf.subarray(0, n));
          this.#remaining -= n;
          buf = buf.subarray(n);
          if (this.#remaining === 0) {
            if (this.#state === "length") this.#finish();
            else this.#state = "chunkCrlf";
          }
          continue;
        }
        case "chunkCrlf": {
          if (buf.length < 2) {
            this.#pending = buf;
            return;
          }
          buf = buf.subarray(2);
          this.#state = "chunkSize";
          continue;
        }
        case "chunkSize": {
          const eol = buf.indexOf(CRLF);
          if (eol === -1) {
            this.#pending = buf;
            return;
          }
          const size = parseInt(buf.toString("latin1", 0, eol), 16);
          if (!Number.isFinite(size)) throw new Error("bad chunk size");
          buf = buf.subarray(eol + 2);
          if (size === 0) this.#state = "trailer";
          else {
            this.#remaining = size;
            this.#state = "chunkData";
          }
          continue;
        }
        case "trailer": {
          const eol = buf.indexOf(CRLF);
          if (eol === -1) {
            this.#pending = buf;
            return;
          }
          buf = buf.subarray(eol + 2);
          if (eol === 0) this.#finish();
          continue;
        }
      }
    }
  }

  #readHead(head: string): void {
    this.status = Number(head.slice(9, 12));
    let length = -1;
    let chunked = false;
    this.close = false;
    let at = head.indexOf("\r\n");
    while (at !== -1) {
      const next = head.indexOf("\r\n", at + 2);
      const line = head.slice(at + 2, next === -1 ? undefined : next);
      const colon = line.indexOf(":");
      if (colon > 0) {
        const name = line.slice(0, colon).toLowerCase();
        if (name === "content-length") length = Number(line.slice(colon + 1).trim());
        else if (name === "transfer-encoding") chunked = line.toLowerCase().includes("chunked");
        else if (name === "connection") this.close = line.toLowerCase().includes("close");
      }
      at = next;
    }
    this.on.head(this.status);
    if (chunked) this.#state = "chunkSize";
    else if (length > 0) {
      this.#remaining = length;
      this.#state = "length";
    } else this.#finish();
  }

  #finish(): void {
    this.#state = "head";
    this.on.end();
  }
}
