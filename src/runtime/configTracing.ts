// The OpenTelemetry trace settings of the Config (docs/operations.md#traces): the standard OTEL_* variables
// credgate honours, parsed into where spans go, how they are sent and which requests are traced.
import { ConfigError, firstSet, nonEmpty, parseKeyValues, parseWhole, type Env } from "./configParsing.ts";

/** Where and how spans are exported, and which requests are traced (docs/operations.md#traces). */
export interface TracingConfig {
  /** The URL spans are POSTed to: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, or OTEL_EXPORTER_OTLP_ENDPOINT + `/v1/traces`. */
  endpoint: string;
  /** OTEL_EXPORTER_OTLP_HEADERS merged with OTEL_EXPORTER_OTLP_TRACES_HEADERS: often a backend's key, never logged. */
  headers: [string, string][];
  /** OTLP/HTTP body encoding (OTEL_EXPORTER_OTLP_PROTOCOL): binary protobuf (the default) or JSON. */
  protocol: "http/protobuf" | "http/json";
  /** OTEL_EXPORTER_OTLP_COMPRESSION=gzip. */
  gzip: boolean;
  /** OTEL_EXPORTER_OTLP_TIMEOUT: how long one export may take, in ms. */
  timeoutMs: number;
  /** OTEL_SERVICE_NAME (or service.name in OTEL_RESOURCE_ATTRIBUTES), default `credgate`. */
  serviceName: string;
  /** OTEL_RESOURCE_ATTRIBUTES, service.name excepted. */
  resourceAttributes: [string, string][];
  sampler: TraceSampler;
  /** The batching of finished spans (OTEL_BSP_SCHEDULE_DELAY, OTEL_BSP_MAX_QUEUE_SIZE, OTEL_BSP_MAX_EXPORT_BATCH_SIZE). */
  batch: { delayMs: number; maxQueueSize: number; maxBatchSize: number };
}

/** OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG: the decision for a trace credgate starts, and whether a caller's decision is followed. */
export interface TraceSampler {
  root: "always_on" | "always_off" | "traceidratio";
  /** `parentbased_*`: a request whose `traceparent` is valid is traced exactly when its caller's span was sampled. */
  parentBased: boolean;
  /** The share of traces `traceidratio` keeps, 0-1. */
  ratio: number;
}

const TRACE_SAMPLERS = ["always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"];

function parseSampler(env: Env): TraceSampler {
  const name = nonEmpty(env.OTEL_TRACES_SAMPLER)?.toLowerCase() ?? "parentbased_always_on";
  if (!TRACE_SAMPLERS.includes(name)) throw new ConfigError(`OTEL_TRACES_SAMPLER must be one of ${TRACE_SAMPLERS.join(", ")}, got "${name}"`);
  const parentBased = name.startsWith("parentbased_");
  const root = (parentBased ? name.slice("parentbased_".length) : name) as TraceSampler["root"];
  const arg = nonEmpty(env.OTEL_TRACES_SAMPLER_ARG);
  const ratio = root === "traceidratio" && arg !== null ? Number(arg) : 1;
  if (!(ratio >= 0 && ratio <= 1)) throw new ConfigError(`OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1 (the share of traces kept), got "${arg}"`);
  return { root, parentBased, ratio };
}

/**
 * The OpenTelemetry variables credgate honours (docs/operations.md#traces); null when no endpoint is set,
 * OTEL_SDK_DISABLED is true or OTEL_TRACES_EXPORTER is none. What credgate cannot do is refused at start
 * rather than ignored: another exporter, gRPC, the client-certificate and CA-file variables.
 */
export function parseTracing(env: Env): TracingConfig | null {
  if (nonEmpty(env.OTEL_SDK_DISABLED)?.toLowerCase() === "true") return null;
  const exporter = nonEmpty(env.OTEL_TRACES_EXPORTER)?.toLowerCase() ?? "otlp";
  if (exporter === "none") return null;
  if (exporter !== "otlp") throw new ConfigError(`OTEL_TRACES_EXPORTER must be "otlp" or "none" (credgate exports traces over OTLP/HTTP), got "${exporter}"`);
  const specific = firstSet(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  const base = firstSet(env, "OTEL_EXPORTER_OTLP_ENDPOINT");
  if (specific === null && base === null) return null;
  const given = specific ?? base!;
  const endpoint = specific !== null ? specific.value : `${base!.value.replace(/\/+$/, "")}/v1/traces`;
  let url: URL | null = null;
  try {
    url = new URL(endpoint);
  } catch {}
  // The value is not repeated: an endpoint may carry credentials.
  if (url === null || (url.protocol !== "http:" && url.protocol !== "https:")) throw new ConfigError(`${given.name} must be an http:// or https:// URL (e.g. http://localhost:4318)`);
  const protocol = firstSet(env, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL");
  if (protocol !== null && protocol.value !== "http/protobuf" && protocol.value !== "http/json") {
    throw new ConfigError(`${protocol.name} must be "http/protobuf" or "http/json" (credgate exports traces over OTLP/HTTP; gRPC is not supported), got "${protocol.value}"`);
  }
  const compression = firstSet(env, "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION");
  if (compression !== null && compression.value !== "gzip" && compression.value !== "none") throw new ConfigError(`${compression.name} must be "gzip" or "none", got "${compression.value}"`);
  const tlsFile = firstSet(
    env,
    ...["CERTIFICATE", "CLIENT_CERTIFICATE", "CLIENT_KEY"].flatMap((v) => [`OTEL_EXPORTER_OTLP_TRACES_${v}`, `OTEL_EXPORTER_OTLP_${v}`]),
  );
  if (tlsFile !== null) throw new ConfigError(`${tlsFile.name} is not supported: the collector's certificate is verified like any upstream's (system roots and CREDGATE_UPSTREAM_CA_FILE)`);
  const timeout = firstSet(env, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT");
  const headers = new Map<string, [string, string]>();
  for (const name of ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"]) {
    for (const [key, value] of parseKeyValues(name, env[name])) {
      if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(key)) throw new ConfigError(`${name}: "${key}" is not a header name`);
      if (/[\r\n\0]/.test(value)) throw new ConfigError(`${name}: the value of "${key}" holds a line break`);
      headers.set(key.toLowerCase(), [key, value]);
    }
  }
  const resource = parseKeyValues("OTEL_RESOURCE_ATTRIBUTES", env.OTEL_RESOURCE_ATTRIBUTES);
  const maxQueueSize = parseWhole("OTEL_BSP_MAX_QUEUE_SIZE", env.OTEL_BSP_MAX_QUEUE_SIZE, 2048, 1);
  return {
    endpoint,
    headers: [...headers.values()],
    protocol: (protocol?.value as TracingConfig["protocol"] | undefined) ?? "http/protobuf",
    gzip: compression?.value === "gzip",
    timeoutMs: parseWhole(timeout?.name ?? "OTEL_EXPORTER_OTLP_TIMEOUT", timeout?.value, 10_000, 1),
    serviceName: nonEmpty(env.OTEL_SERVICE_NAME) ?? resource.find(([k]) => k === "service.name")?.[1] ?? "credgate",
    resourceAttributes: resource.filter(([k]) => k !== "service.name"),
    sampler: parseSampler(env),
    batch: {
      delayMs: parseWhole("OTEL_BSP_SCHEDULE_DELAY", env.OTEL_BSP_SCHEDULE_DELAY, 5000, 0),
      maxQueueSize,
      maxBatchSize: Math.min(maxQueueSize, parseWhole("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", env.OTEL_BSP_MAX_EXPORT_BATCH_SIZE, 512, 1)),
    },
  };
}
