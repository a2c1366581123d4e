// Types for the parts of prom-client that src/observability/metrics.ts loads one by one. The package's index also loads
// its cluster aggregator, push gateway and default collectors, which cost ~35 ms of start-up in the compiled
// binary; the classes are the same ones its own types describe.
declare module "prom-client/lib/registry.js" {
  import { Registry } from "prom-client";
  export default Registry;
}
declare module "prom-client/lib/counter.js" {
  import { Counter } from "prom-client";
  export default Counter;
}
declare module "prom-client/lib/gauge.js" {
  import { Gauge } from "prom-client";
  export default Gauge;
}
declare module "prom-client/lib/histogram.js" {
  import { Histogram } from "prom-client";
  export default Histogram;
}
