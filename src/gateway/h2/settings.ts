// SETTINGS both ways (RFC 9113 §6.5; docs/gateway.md#http2-and-grpc): the limits a session announces in its first
// SETTINGS frame and then enforces, and the peer's settings, applied as they arrive.
import * as f from "./frames.ts";
import type { HpackEncoder } from "./hpack.ts";
import type { Sender } from "./sender.ts";
import type { H2Stream } from "./stream.ts";

export interface SessionLimits {
  /** SETTINGS_MAX_CONCURRENT_STREAMS we announce (server role). */
  maxConcurrentStreams: number;
  /** SETTINGS_MAX_HEADER_LIST_SIZE we announce and enforce. */
  maxHeaderListSize: number;
  /** Our receive window per stream, credited as the consumer reads. */
  streamWindow: number;
  /** Our connection receive window, credited on receipt. */
  connectionWindow: number;
}

export const DEFAULT_LIMITS: SessionLimits = {
  maxConcurrentStreams: 100,
  maxHeaderListSize: 65_536,
  streamWindow: 256 * 1024,
  connectionWindow: 16 * 1024 * 1024,
};

/** Our first SETTINGS frame: the limits we announce, and no server push. */
export function announcedSettings(limits: SessionLimits): Buffer {
  return f.settingsFrame([
    [f.SETTINGS_MAX_CONCURRENT_STREAMS, limits.maxConcurrentStreams],
    [f.SETTINGS_INITIAL_WINDOW_SIZE, limits.streamWindow],
    [f.SETTINGS_MAX_HEADER_LIST_SIZE, limits.maxHeaderListSize],
    [f.SETTINGS_ENABLE_PUSH, 0],
  ]);
}

/** The connection error a peer's SETTINGS frame makes. */
export interface SettingsError {
  readonly code: number;
  readonly reason: string;
}

/** A SETTINGS frame's shape (RFC 9113 §6.5): on stream 0, an ACK empty, else whole settings. Null when good. */
export function settingsFrameError(flags: number, id: number, length: number): SettingsError | null {
  if (id !== 0) return { code: f.PROTOCOL_ERROR, reason: "SETTINGS on a stream" };
  if ((flags & f.ACK) !== 0) return length === 0 ? null : { code: f.FRAME_SIZE_ERROR, reason: "SETTINGS ACK with a payload" };
  return length % 6 === 0 ? null : { code: f.FRAME_SIZE_ERROR, reason: "SETTINGS of the wrong size" };
}

const INVALID_PUSH: SettingsError = { code: f.PROTOCOL_ERROR, reason: "invalid SETTINGS_ENABLE_PUSH" };
const WINDOW_TOO_LARGE: SettingsError = { code: f.FLOW_CONTROL_ERROR, reason: "SETTINGS_INITIAL_WINDOW_SIZE too large" };
const STREAM_WINDOW_OVERFLOW: SettingsError = { code: f.FLOW_CONTROL_ERROR, reason: "stream window overflow" };
const INVALID_MAX_FRAME: SettingsError = { code: f.PROTOCOL_ERROR, reason: "invalid SETTINGS_MAX_FRAME_SIZE" };

/** What the peer's settings change on the session itself. */
export interface PeerLimits {
  peerInitialWindow: number;
  peerMaxStreams: number;
}

/**
 * Applies a SETTINGS payload (whole 6-byte entries, not an ACK) in order: to the session, its send side, its HPACK
 * encoder and its open streams' send windows. The connection error it makes (the entries before it stay
 * applied, the session ends anyway), or null. Unknown settings are ignored (RFC 9113 §6.5.2).
 */
export function applyPeerSettings(
  payload: Buffer,
  peer: PeerLimits,
  send: Sender,
  encoder: HpackEncoder,
  streams: ReadonlyMap<number, H2Stream>,
): SettingsError | null {
  for (let at = 0; at < payload.length; at += 6) {
    const key = payload.readUInt16BE(at);
    const value = payload.readUInt32BE(at + 2);
    switch (key) {
      case f.SETTINGS_HEADER_TABLE_SIZE:
        encoder.setMaxSize(value);
        break;
      case f.SETTINGS_ENABLE_PUSH:
        if (value > 1) return INVALID_PUSH;
        break;
      case f.SETTINGS_MAX_CONCURRENT_STREAMS:
        peer.peerMaxStreams = value;
        break;
      case f.SETTINGS_INITIAL_WINDOW_SIZE: {
        if (value > f.MAX_WINDOW) return WINDOW_TOO_LARGE;
        const delta = value - peer.peerInitialWindow;
        peer.peerInitialWindow = value;
        for (const s of streams.values()) {
          s.sendWindow += delta;
          if (s.sendWindow > f.MAX_WINDOW) return STREAM_WINDOW_OVERFLOW;
        }
        break;
      }
      case f.SETTINGS_MAX_FRAME_SIZE:
        if (value < f.DEFAULT_MAX_FRAME || value > 0xffffff) return INVALID_MAX_FRAME;
        send.maxFrame = value;
        break;
      default:
        break;
    }
  }
  return null;
}
