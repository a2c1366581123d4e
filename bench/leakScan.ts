// What the credential leak guard's scan of a request costs in isolation (docs/guards.md#credential-leak-guard):
// the bench's secret and 50 more, every form of each value in one needle set, scanned over a request's target
// and header values as the leak-guard stage does. The whole-gateway rows swing too much between rounds on a
// shared VM to show a cost this small; this isolates it. Run: `bun bench/leakScan.ts`.
import { NeedleSet } from "../src/core/needles.ts";
import { leakForms } from "../src/core/valueForms.ts";

const values = ["bench-secret-4f1c2a9e", ...Array.from({ length: 50 }, (_, i) => `sk-watched-${i}-${crypto.randomUUID()}`)];
const set = new NeedleSet([...new Set(values.flatMap((v) => leakForms(v)))]);
// The bench's MITM request: its target, host and header values (one of them carries the bench secret).
const texts = ["/", "bench.example.com", "Bearer bench-secret-4f1c2a9e", "credgate-bench/1.0", "*/*", "keep-alive", "application/json"];

function scan(text: string): number {
  let found = 0;
  for (let at = 0; ; ) {
    const start = set.findInString(text, at);
    if (start < 0) return found;
    found++;
    at = start + set.needles[set.lastNeedle]!.length;
  }
}

const requests = 200_000;
let found = 0;
for (let i = 0; i < requests / 10; i++) for (const t of texts) found += scan(t);
const t0 = performance.now();
for (let i = 0; i < requests; i++) for (const t of texts) found += scan(t);
const us = ((performance.now() - t0) * 1000) / requests;
console.log(`${set.needles.length} needles (51 values, every form): ${us.toFixed(2)} µs per request scanned (${found} finds)`);
