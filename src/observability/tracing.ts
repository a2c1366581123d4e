// OpenTelemetry traces (docs/operations.md#traces): spans recorded by credgate itself and exported in batches
// over OTLP/HTTP. Not the OpenTelemetry SDK: recording and encoding one traced request's two spans took about 3×
// as long with its tracer and OTLP serializer (bench/traceCost.ts, bench/README.md#traces); these spans are plain
// objects with their attributes in a flat list, encoded straight into the export body (otlp.ts).
// With tracing off no Tracer exists: the gateway and the API check for null once per request and do nothing else.
//
// Export: a finished span is encoded at once into the batch being filled (OtlpBatch: its objects die young),
// and the spans waiting are bounded (OTEL_BSP_MAX_QUEUE_SIZE); a batch leaves when it is full or when its first
// span has waited the schedule delay, at most two exports at a time, each with a timeout. A span that finds the
// queue full is dropped, and so is a batch the collector refused or did not take in time: both are counted
// (credgate_trace_spans_dropped_total) and reported in one log line at most once a minute. Nothing waits for the
// collector on a request's path. Each gateway process exports its own spans.
import type { TracingConfig } from "../runtime/configTracing.ts";
import { log } from "./log.ts";
import { watchTraceExport } from "./metrics.ts";
import { OtlpBatch, SpanKind, StatusCode, type AttributeValue, type Attributes, type ExportScope, type SpanRecord } from "./otlp.ts";
import { formatTraceparent, parseTraceparent } from "./traceContext.ts";

export { SpanKind } from "./otlp.ts";

/** How an export is sent (the process's outbound fetch: its upstream proxy and CAs apply). */
export type ExportFetch = (url: string, init: RequestInit) => Promise<Response>;

/** What names this process in its spans' resource. */
export interface TraceProcess {
  /** The instance id (a gateway worker's has its `:worker-N`): service.instance.id. */
  instanceId: string;
  version: string;
}

// ---- ids ------------------------------------------------------------------------------------------------

const POOL_BYTES = 4096;
const pool = Buffer.allocUnsafe(POOL_BYTES);
let poolAt = POOL_BYTES;

const ZERO_SPAN_ID = "0".repeat(16);
const ZERO_TRACE_ID = "0".repeat(32);

/** `bytes` random bytes as lowercase hex, never all zero (W3C: an all-zero id is invalid). */
function randomHex(bytes: number): string {
  for (;;) {
    if (poolAt + bytes > POOL_BYTES) {
      crypto.getRandomValues(pool);
      poolAt = 0;
    }
    const hex = pool.toString("hex", poolAt, poolAt + bytes);
    poolAt += bytes;
    if (hex !== (bytes === 8 ? ZERO_SPAN_ID : ZERO_TRACE_ID)) return hex;
  }
}

// ---- sampling -------------------------------------------------------------------------------------------

const TWO_POW_56 = 2 ** 56;

/**
 * Whether a trace is kept. A caller's `traceparent` decides under a `parentbased_*` sampler; otherwise the
 * root sampler does: `traceidratio` keeps a trace when the last 56 bits of its id reach the threshold
 * (OpenTelemetry's consistent probability sampling), so every service with the same ratio keeps the same traces.
 */
class Sampler {
  readonly #root: TracingConfig["sampler"]["root"];
  readonly #parentBased: boolean;
  readonly #threshold: number;

  constructor(s: TracingConfig["sampler"]) {
    this.#root = s.root;
    this.#parentBased = s.parentBased;
    this.#threshold = Math.round((1 - s.ratio) * TWO_POW_56);
  }

  sampled(traceId: string, parentSampled: boolean | null): boolean {
    if (parentSampled !== null && this.#parentBased) return parentSampled;
    if (this.#root === "always_on") return true;
    if (this.#root === "always_off") return false;
    return parseInt(traceId.slice(18), 16) >= this.#threshold;
  }
}

// ---- spans ----------------------------------------------------------------------------------------------

/** One recorded span. Attributes are set with `set`; `finish` hands it to the export queue, once. */
export class Span implements SpanRecord {
  readonly attributes: Attributes = [];
  end = 0;
  status: number = StatusCode.UNSET;

  constructor(
    private readonly tracer: Tracer,
    readonly traceId: string,
    readonly spanId: string,
    readonly parentSpanId: string | null,
    readonly remoteParent: boolean,
    /** Known only at the end for some spans (an API request's route). */
    public name: string,
    readonly kind: SpanKind,
    readonly start: number,
  ) {}

  /** Adds an attribute; a null or undefined value adds nothing. */
  set(key: string, value: AttributeValue | null | undefined): this {
    if (value !== null && value !== undefined) this.attributes.push(key, value);
    return this;
  }

  /** A span of this one's trace, started now (or at `start`). */
  child(name: string, kind: SpanKind, start = performance.now()): Span {
    return new Span(this.tracer, this.traceId, randomHex(8), this.spanId, false, name, kind, start);
  }

  /** The `traceparent` that names this span as the parent (what goes upstream). */
  get traceparent(): string {
    return formatTraceparent(this.traceId, this.spanId, true);
  }

  /** The span failed (OpenTelemetry's ERROR status). */
  fail(): this {
    this.status = StatusCode.ERROR;
    return this;
  }

  finish(at = performance.now()): void {
    if (this.end !== 0) return;
    this.end = at;
    this.tracer.ended(this);
  }
}

// ---- the tracer and its export queue ---------------------------------------------------------------------

/** Exports running at once. */
const MAX_IN_FLIGHT = 2;
const WARN_EVERY_MS = 60_000;

export class Tracer {
  readonly #sampler: Sampler;
  readonly #scope: ExportScope;
  readonly #endpoint: string;
  /** The endpoint as log lines show it: no credentials, no query. */
  readonly #endpointShown: string;
  readonly #headers: Record<string, string>;
  readonly #json: boolean;
  readonly #gzip: boolean;
  readonly #timeoutMs: number;
  readonly #delayMs: number;
  readonly #maxQueue: number;
  readonly #maxBatch: number;
  readonly #fetch: ExportFetch;

  /** The batch being filled, and the full ones waiting for an export slot. */
  #filling: OtlpBatch | null = null;
  #ready: OtlpBatch[] = [];
  /** Spans in #filling and #ready. */
  #waiting = 0;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #inFlight = new Set<Promise<void>>();
  #exportScheduled = false;
  #exported = 0;
  #droppedQueueFull = 0;
  #droppedExportFailed = 0;
  #warnedAt = -Infinity;
  #stopped = false;

  constructor(config: TracingConfig, proc: TraceProcess, send: ExportFetch) {
    this.#sampler = new Sampler(config.sampler);
    const resource: Attributes = ["service.name", config.serviceName, "service.version", proc.version, "service.instance.id", proc.instanceId, "process.pid", process.pid];
    for (const [key, value] of config.resourceAttributes) resource.push(key, value);
    resource.push("telemetry.sdk.name", "credgate", "telemetry.sdk.language", "nodejs");
    this.#scope = { resource, scopeName: "credgate", scopeVersion: proc.version };
    this.#endpoint = config.endpoint;
    const shown = new URL(config.endpoint);
    this.#endpointShown = `${shown.origin}${shown.pathname}`;
    this.#json = config.protocol === "http/json";
    this.#gzip = config.gzip;
    this.#headers = { ...Object.fromEntries(config.headers), "content-type": this.#json ? "application/json" : "application/x-protobuf", "user-agent": `credgate/${proc.version}` };
    if (this.#gzip) this.#headers["content-encoding"] = "gzip";
    this.#timeoutMs = config.timeoutMs;
    this.#delayMs = config.batch.delayMs;
    this.#maxQueue = config.batch.maxQueueSize;
    this.#maxBatch = config.batch.maxBatchSize;
    this.#fetch = send;
    watchTraceExport(() => ({ exported: this.#exported, queueFull: this.#droppedQueueFull, exportFailed: this.#droppedExportFailed }));
  }

  /**
   * The span of a request this process serves (SpanKind SERVER), continuing the caller's `traceparent` when it
   * is valid, or starting a trace; null when the sampler does not keep the trace (nothing is recorded, and the
   * caller's `traceparent` is left as it came).
   */
  serverSpan(name: string, traceparent: string | null, start: number): Span | null {
    const parent = parseTraceparent(traceparent);
    const traceId = parent === null ? randomHex(16) : parent.traceId;
    if (!this.#sampler.sampled(traceId, parent === null ? null : parent.sampled)) return null;
    return new Span(this, traceId, randomHex(8), parent === null ? null : parent.spanId, parent !== null, name, SpanKind.SERVER, start);
  }

  /** A span finished: encoded into the batch being filled, or dropped and counted when the queue is full. */
  ended(span: Span): void {
    if (this.#stopped || this.#waiting >= this.#maxQueue) {
      this.#droppedQueueFull++;
      return;
    }
    const batch = (this.#filling ??= new OtlpBatch(this.#json));
    batch.add(span);
    this.#waiting++;
    if (batch.count >= this.#maxBatch) {
      this.#seal();
      this.#exportSoon();
    } else if (this.#timer === null) this.#timer = setTimeout(exportDue, this.#delayMs, this);
  }

  /** The batch being filled joins the ready ones. */
  #seal(): void {
    if (this.#filling === null) return;
    this.#ready.push(this.#filling);
    this.#filling = null;
  }

  /** The schedule delay has passed since a span was queued: everything waiting leaves. */
  due(): void {
    this.#timer = null;
    this.#seal();
    this.#drain();
  }

  /** Exports once this turn of the event loop is over: never inside the request that filled the batch. */
  #exportSoon(): void {
    if (this.#exportScheduled) return;
    this.#exportScheduled = true;
    setImmediate(exportFull, this);
  }

  exportFull(): void {
    this.#exportScheduled = false;
    this.#drain();
  }

  /** Sends ready batches while there is room for another export. */
  #drain(): void {
    while (this.#inFlight.size < MAX_IN_FLIGHT && this.#ready.length > 0) this.#send(this.#ready.shift()!);
    if (this.#waiting > 0 && this.#timer === null && !this.#stopped) this.#timer = setTimeout(exportDue, this.#delayMs, this);
  }

  #send(batch: OtlpBatch): void {
    this.#waiting -= batch.count;
    const done = this.#post(batch).then(
      () => {
        this.#exported += batch.count;
      },
      (err: Error) => {
        this.#droppedExportFailed += batch.count;
        this.#warn(err.message);
      },
    );
    const tracked = done.finally(() => {
      this.#inFlight.delete(tracked);
      if (this.#ready.length > 0) this.#exportSoon();
    });
    this.#inFlight.add(tracked);
  }

  async #post(batch: OtlpBatch): Promise<void> {
    const encoded = batch.body(this.#scope);
    const body: string | Uint8Array<ArrayBuffer> = this.#gzip ? Bun.gzipSync(encoded) : encoded;
    const res = await this.#fetch(this.#endpoint, { method: "POST", headers: this.#headers, body, signal: AbortSignal.timeout(this.#timeoutMs) });
    // The body is not needed (a partial-success note at most); reading it frees the connection.
    await res.arrayBuffer().catch(() => {});
    if (!res.ok) throw new Error(`the collector answered ${res.status}`);
  }

  #warn(reason: string): void {
    const now = performance.now();
    if (now - this.#warnedAt < WARN_EVERY_MS) return;
    this.#warnedAt = now;
    log.warn("trace export failed: spans dropped", {
      endpoint: this.#endpointShown,
      reason,
      droppedSpans: this.#droppedExportFailed + this.#droppedQueueFull,
      hint: "credgate_trace_spans_dropped_total on /metrics counts them; requests are not affected",
    });
  }

  /** Exports everything finished so far and waits for it (or until `ms` have passed). */
  async flush(ms: number): Promise<void> {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#seal();
    const deadline = performance.now() + ms;
    while ((this.#ready.length > 0 || this.#inFlight.size > 0) && performance.now() < deadline) {
      this.#drain();
      const left = deadline - performance.now();
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([Promise.race(this.#inFlight), new Promise((r) => (timer = setTimeout(r, Math.max(0, left))))]);
      clearTimeout(timer);
    }
    // Spans that ended meanwhile wait for the next schedule.
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = this.#waiting > 0 && !this.#stopped ? setTimeout(exportDue, this.#delayMs, this) : null;
  }

  /** Exports what is queued (for up to `ms`), then takes no more spans: what is left is dropped and counted. */
  async stop(ms: number): Promise<void> {
    await this.flush(ms);
    this.#stopped = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#seal();
    this.#droppedExportFailed += this.#waiting;
    this.#waiting = 0;
    this.#ready = [];
  }
}

/** The process's tracer when tracing is configured (docs/operations.md#traces), else null. */
export function startTracing(config: TracingConfig | null, proc: TraceProcess, send: ExportFetch): Tracer | null {
  return config === null ? null : new Tracer(config, proc, send);
}

/** Timer callbacks given the tracer as their argument: no closure per batch. */
function exportDue(tracer: Tracer): void {
  tracer.due();
}

function exportFull(tracer: Tracer): void {
  tracer.exportFull();
}
