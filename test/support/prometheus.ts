// Prometheus text exposition parsed with an independent parser (parse-prometheus-text-format), as a scraper
// would read it, plus lookups by family name and labels.
// @ts-expect-error the package ships no types; its output shape is declared below.
import parsePrometheusTextFormat from "parse-prometheus-text-format";

export interface Sample {
  value?: string;
  labels?: Record<string, string>;
  buckets?: Record<string, string>;
  count?: string;
  sum?: string;
}
export interface Family {
  name: string;
  help: string;
  type: "COUNTER" | "GAUGE" | "HISTOGRAM" | "SUMMARY" | "UNTYPED";
  metrics: Sample[];
}

export function parseExposition(text: string): Map<string, Family> {
  const families = parsePrometheusTextFormat(text) as Family[];
  return new Map(families.map((f) => [f.name, f]));
}

/** The value of the sample of `name` whose labels include `labels` (0 when there is none: counters start absent). */
export function sampleValue(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number {
  const family = families.get(name);
  if (!family) throw new Error(`no metric family ${name}`);
  const sample = family.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
  return sample ? Number(sample.value ?? sample.count) : 0;
}
