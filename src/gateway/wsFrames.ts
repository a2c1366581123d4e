// WebSocket frames read and rewritten in one direction of a relay (docs/gateway.md#websocket): data frames are
// unmasked, their payload passed through the message's scans (NeedleStreams: placeholder substitution, the leak
// guard, the echo guard's redaction), and framed again with the new length (re-masked with the frame's own key
// in the client → server direction). A message's scans last from its first frame to its FIN, so a needle split
// across frames (or TCP reads) is still found. A frame whose payload is all there is rewritten as one frame; one
// that spans reads goes on as fragments as it arrives (only the bytes a scan holds back wait), so memory stays
// bounded. Control frames pass as they are. A scan that throws (a leak) is the caller's to handle.
import type { NeedleStream } from "../core/needleStream.ts";

/** The scans of one message, made when it starts (each a NeedleStream). */
export type MessageScans = () => NeedleStream[];

const NOTHING = Buffer.alloc(0);

export class FrameRewriter {
  #pending: Buffer = NOTHING;
  /** Payload bytes still to come in the current frame (-1: between frames). */
  #left = -1;
  #control = false;
  #fin = false;
  #opcode = 0;
  #mask: Buffer | null = null;
  #maskAt = 0;
  /** The current message's scans, from its first data frame to its FIN. */
  #scans: NeedleStream[] | null = null;
  /** A frame of the current message has gone out (so the next goes out as a continuation). */
  #messageOpen = false;
  /** The opcode of the current message's first frame. */
  #messageOpcode = 0;

  constructor(
    private readonly scansFor: MessageScans,
    /** Frames in this direction are masked (client → server). */
    private readonly masked: boolean,
  ) {}

  /** The bytes to send on for what arrived. */
  push(chunk: Buffer): Buffer {
    let buf = this.#pending.length > 0 ? Buffer.concat([this.#pending, chunk]) : chunk;
    this.#pending = NOTHING;
    const out: Buffer[] = [];
    let at = 0;
    while (at < buf.length) {
      if (this.#left === -1) {
        const header = this.#readHeader(buf, at);
        if (header === 0) {
          this.#pending = Buffer.from(buf.subarray(at));
          break;
        }
        if (this.#control) out.push(buf.subarray(at, at + header));
        at += header;
        if ((this.#left as number) === 0) this.#frameDone(out, NOTHING);
        continue;
      }
      const n = Math.min(this.#left, buf.length - at);
      const piece = buf.subarray(at, at + n);
      at += n;
      this.#left -= n;
      if (this.#control) {
        out.push(piece);
        if (this.#left === 0) this.#left = -1;
        continue;
      }
      this.#data(out, piece);
    }
    buf = NOTHING;
    return out.length === 1 ? out[0]! : Buffer.concat(out);
  }

  /** Reads a frame header at `at`; its length, or 0 when it is not all there yet. */
  #readHeader(buf: Buffer, at: number): number {
    if (buf.length - at < 2) return 0;
    const b0 = buf[at]!;
    const b1 = buf[at + 1]!;
    const isMasked = (b1 & 0x80) !== 0;
    let len = b1 & 0x7f;
    let size = 2;
    if (len === 126) {
      if (buf.length - at < 4) return 0;
      len = buf.readUInt16BE(at + 2);
      size = 4;
    } else if (len === 127) {
      if (buf.length - at < 10) return 0;
      len = Number(buf.readBigUInt64BE(at + 2));
      size = 10;
    }
    if (isMasked) {
      if (buf.length - at < size + 4) return 0;
      this.#mask = Buffer.from(buf.subarray(at + size, at + size + 4));
      size += 4;
    } else this.#mask = null;
    this.#fin = (b0 & 0x80) !== 0;
    this.#opcode = b0 & 0x0f;
    this.#control = this.#opcode >= 8;
    this.#left = len;
    this.#maskAt = 0;
    return size;
  }

  #data(out: Buffer[], piece: Buffer): void {
    const plain = this.#unmask(piece);
    if (this.#scans === null) {
      this.#scans = this.scansFor();
      this.#messageOpcode = this.#opcode;
    }
    let bytes: Uint8Array = plain;
    for (const scan of this.#scans) bytes = scan.push(bytes);
    if (this.#left > 0) {
      // The frame goes on in the next read: what is ready goes out now, as a fragment.
      if (bytes.byteLength > 0) this.#emit(out, bytes, false);
      return;
    }
    this.#frameDone(out, bytes);
  }

  /** The end of a data frame (its last payload bytes given): it goes out, with what the scans held at a FIN. */
  #frameDone(out: Buffer[], bytes: Uint8Array): void {
    this.#left = -1;
    if (this.#control) return;
    if (this.#scans === null) {
      this.#scans = this.scansFor();
      this.#messageOpcode = this.#opcode;
    }
    if (this.#fin) {
      const scans = this.#scans;
      for (let i = 0; i < scans.length; i++) {
        let rest: Uint8Array = scans[i]!.end();
        for (let j = i + 1; j < scans.length && rest.byteLength > 0; j++) rest = scans[j]!.push(rest);
        if (rest.byteLength > 0) bytes = bytes.byteLength === 0 ? rest : Buffer.concat([bytes, rest]);
      }
    }
    this.#emit(out, bytes, this.#fin);
    if (this.#fin) {
      this.#scans = null;
      this.#messageOpen = false;
    }
  }

  #unmask(piece: Buffer): Buffer {
    const mask = this.#mask;
    if (mask === null) return piece;
    const plain = Buffer.allocUnsafe(piece.length);
    let m = this.#maskAt;
    for (let i = 0; i < piece.length; i++, m++) plain[i] = piece[i]! ^ mask[m & 3]!;
    this.#maskAt = m & 3;
    return plain;
  }

  /** One frame: the message's opcode first, continuations after; masked with the frame's key where frames are. */
  #emit(out: Buffer[], payload: Uint8Array, fin: boolean): void {
    const opcode = this.#messageOpen ? 0 : this.#messageOpcode;
    this.#messageOpen = true;
    const len = payload.byteLength;
    const mask = this.masked ? (this.#mask ?? Buffer.from([0, 0, 0, 0])) : null;
    const size = (len < 126 ? 2 : len < 65536 ? 4 : 10) + (mask ? 4 : 0);
    const frame = Buffer.allocUnsafe(size + len);
    frame[0] = (fin ? 0x80 : 0) | opcode;
    const maskBit = mask ? 0x80 : 0;
    let at = 2;
    if (len < 126) frame[1] = maskBit | len;
    else if (len < 65536) {
      frame[1] = maskBit | 126;
      frame.writeUInt16BE(len, 2);
      at = 4;
    } else {
      frame[1] = maskBit | 127;
      frame.writeBigUInt64BE(BigInt(len), 2);
      at = 10;
    }
    if (mask) {
      mask.copy(frame, at);
      at += 4;
      for (let i = 0; i < len; i++) frame[at + i] = payload[i]! ^ mask[i & 3]!;
    } else frame.set(payload, at);
    out.push(frame);
  }
}
