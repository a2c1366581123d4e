// A chunked-body decoder (RFC 9112 §7.1): hands out the data of each chunk as it arrives, so streams
// (SSE) are never held back, and says where the message ends. Extensions are ignored, trailers dropped.

const MAX_LINE = 4096;

export class ChunkedDecoder {
  #state: "size" | "data" | "dataEnd" | "trailer" | "done" = "size";
  #left = 0;
  #line = "";
  /** Set when the framing is broken. */
  failed = false;

  get done(): boolean {
    return this.#state === "done";
  }

  /**
   * Decodes `buf[from…]`; `onData` gets each data slice (views into `buf`). Returns the offset just past
   * the message's end, or -1 when it continues (or failed).
   */
  decode(buf: Uint8Array, from: number, onData: (data: Uint8Array) => void): number {
    let i = from;
    while (i < buf.length) {
      if (this.#state === "data") {
        const n = Math.min(this.#left, buf.length - i);
        onData(buf.subarray(i, i + n));
        i += n;
        this.#left -= n;
        if (this.#left === 0) this.#state = "dataEnd";
        continue;
      }
      const nl = buf.indexOf(10, i);
      const stop = nl < 0 ? buf.length : nl + 1;
      this.#line += Buffer.from(buf.buffer, buf.byteOffset + i, stop - i).toString("latin1");
      i = stop;
      if (this.#line.length > MAX_LINE) return this.#fail();
      if (nl < 0) return -1;
      const line = this.#line.endsWith("\r\n") ? this.#line.slice(0, -2) : this.#line.slice(0, -1);
      this.#line = "";
      if (this.#state === "size") {
        const semi = line.indexOf(";");
        const hex = (semi < 0 ? line : line.slice(0, semi)).trim();
        if (!/^[0-9a-fA-F]{1,12}$/.test(hex)) return this.#fail();
        this.#left = parseInt(hex, 16);
        this.#state = this.#left === 0 ? "trailer" : "data";
      } else if (this.#state === "dataEnd") {
        if (line !== "") return this.#fail();
        this.#state = "size";
      } else if (this.#state === "trailer" && line === "") {
        this.#state = "done";
        return i;
      }
    }
    return -1;
  }

  #fail(): number {
    this.failed = true;
    return -1;
  }
}
