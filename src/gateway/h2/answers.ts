// The control frames an HTTP/2 session answers the peer with (PING and SETTINGS ACKs, WINDOW_UPDATE, RST_STREAM),
// and their budget: answers queued behind a socket the peer does not read are a flood (CVE-2019-9512/9515 ping
// and settings floods), past MAX_QUEUED_ANSWERS bytes the session ends with ENHANCE_YOUR_CALM
// (docs/gateway.md#http2-and-grpc). The connection's receive window is credited here too: on receipt.
import * as f from "./frames.ts";
import type { H2Transport } from "./sender.ts";

/** Bytes of answers that may wait behind unsent bytes before the peer counts as flooding us. */
const MAX_QUEUED_ANSWERS = 1024 * 1024;

export class Answers {
  /** Bytes of answers written since the transport last drained while it held unsent bytes. */
  #queued = 0;
  /** PING and SETTINGS ACKs for the bytes being read: written as one buffer once they are read, not one each. */
  readonly #acks: Buffer[] = [];
  /** DATA bytes received that the connection's window has not been credited for yet. */
  #connUnacked = 0;

  constructor(
    private readonly transport: H2Transport,
    /** Our connection receive window (SessionLimits.connectionWindow). */
    private readonly connectionWindow: number,
  ) {}

  /** `n` bytes of DATA arrived: the connection's window is credited a quarter at a time; false when over the budget. */
  creditConnection(n: number): boolean {
    if (n === 0) return true;
    this.#connUnacked += n;
    if (this.#connUnacked < this.connectionWindow / 4) return true;
    const frame = f.windowUpdate(0, this.#connUnacked);
    this.#connUnacked = 0;
    return this.write(frame);
  }

  /** An ACK, sent with the others once the bytes being read are handled. */
  ack(frame: Buffer): void {
    this.#acks.push(frame);
  }

  /** The ACKs gathered (null: none), as one buffer; the list is emptied. */
  takeAcks(): Buffer | null {
    const acks = this.#acks;
    if (acks.length === 0) return null;
    const out = acks.length === 1 ? acks[0]! : Buffer.concat(acks);
    acks.length = 0;
    return out;
  }

  /**
   * Writes an answer; false when it is one too many. When the transport already holds bytes the peer has not
   * taken, the answer waits behind them: past MAX_QUEUED_ANSWERS of those, the peer is flooding us without reading.
   */
  write(frame: Buffer): boolean {
    this.transport.write(frame);
    if (!this.transport.needsDrain) return true;
    this.#queued += frame.length;
    return this.#queued <= MAX_QUEUED_ANSWERS;
  }

  /** The transport has written everything it held. */
  drained(): void {
    this.#queued = 0;
  }

  clear(): void {
    this.#acks.length = 0;
  }
}
