// What-if experiments on the real credgate process without editing src/: loaded with
// `BUN_OPTIONS=--preload bench/anatomy/whatif.ts` and BENCH_WHATIF=<comma list>, it swaps one method of a
// service class for the candidate change, so the benchmark can measure the gain before anyone changes the code.
// (pinned-session and log-prepared, the two fixes measured this way first, are in src/ since 1521c66, 4f22131.)
//
//   no-log        RequestLogService.enqueue drops the row (an upper bound for the logging cost)
//   log-time-ids  request-log rows get time-ordered ids (uuid v7 layout) instead of uuid v4, so the id index
//                 is appended to instead of written at random pages. docs/api.md#bodies-and-formats says entity ids are uuid v4:
//                 this needs a contract decision. Bench only: a held request's row would no longer be found
//                 by the id writeRequestLog returned.
import { RequestLogService, type RequestLogRow } from "../../src/services/requestLogs.ts";

const enabled = new Set((process.env.BENCH_WHATIF ?? "").split(",").map((s) => s.trim()).filter(Boolean));

if (enabled.has("no-log")) {
  RequestLogService.prototype.enqueue = function () {};
}

if (enabled.has("log-time-ids")) {
  const enqueue = RequestLogService.prototype.enqueue;
  const bytes = new Uint8Array(16);
  const uuidV7 = (): string => {
    crypto.getRandomValues(bytes);
    let ms = Date.now();
    for (let i = 5; i >= 0; i--) {
      bytes[i] = ms % 256;
      ms = Math.floor(ms / 256);
    }
    bytes[6] = (bytes[6]! & 0x0f) | 0x70;
    bytes[8] = (bytes[8]! & 0x3f) | 0x80;
    const hex = Buffer.from(bytes).toString("hex");
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  };
  RequestLogService.prototype.enqueue = function (this: RequestLogService, row: RequestLogRow) {
    enqueue.call(this, { ...row, id: uuidV7() });
  };
}

if (enabled.size > 0) process.stderr.write(`bench what-if active: ${[...enabled].join(", ")}\n`);
