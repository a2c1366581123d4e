#!/usr/bin/env bash
# PostgreSQL at SQLite's pace (docs/operations.md#postgresql-performance): the peer run
# (../shared/peer-bench/with-credgate.sh: direct, spike-relay, credgate with one gateway process) once with the
# embedded SQLite store and once against a throwaway local PostgreSQL, taking turns, in one session; prints
# credgate's "× direct" of both and their ratio per pair, the spread over the pairs, the gateway's CPU per request
# with each store and the PostgreSQL server's CPU per request-log row.
#
#   npm run build && bash bench/pgPace.sh
#   PAIRS=3 ROUNDS=2 PG_CPU=1 bash bench/pgPace.sh
#
# Knobs (env):
#   PAIRS=3        SQLite + PostgreSQL runs, taking turns (the order alternates: SQLite first in odd pairs)
#   PG_CPU=1       CPU the PostgreSQL server and its backends are pinned to. The peer harness pins the proxy to
#                  CPU 0 and the load client and upstream to CPU 1; a database server on another machine in
#                  production is closest to CPU 1 here (it never takes the gateway's core). `any`: not pinned,
#                  the scheduler places it (it then also runs on the gateway's core: the worst case).
#   PG_OPTS=""     extra `postgres` options (e.g. "-c synchronous_commit=off"); the server runs with its defaults.
#   PEERS=spike-relay ROUNDS=2 (passed on to the peer run; see its header for the rest: DUR, CONNS, …)
#   PEER_BENCH=DIR the peer-bench folder (default: ../shared/peer-bench or ../../shared/peer-bench)
#   OUT=DIR        where the peer runs' tables and the summary go (default a fresh /tmp/credgate-pgpace-out-*)
#   PROFILE=1      credgate under Bun's CPU profiler: OUT/<engine>-<pair>.prof/*.cpuprofile (the profiler's own
#                  cost slows the gateway: compare the profiles' shares, not these runs' figures)
# Needs the Debian postgresql package (initdb, pg_ctl, psql), taskset, and what the peer run needs.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${CREDGATE_BIN:-$root/dist/credgate}
[ -x "$bin" ] || { echo "no $bin: run npm run build first (or set CREDGATE_BIN)" >&2; exit 1; }
peer=${PEER_BENCH:-}
for d in "$root/../shared/peer-bench" "$root/../../shared/peer-bench"; do [ -z "$peer" ] && [ -f "$d/with-credgate.sh" ] && peer=$(cd "$d" && pwd); done
[ -n "$peer" ] && [ -f "$peer/with-credgate.sh" ] || { echo "peer-bench not found: set PEER_BENCH" >&2; exit 1; }
pgbin=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
[ -x "$pgbin/initdb" ] || { echo "PostgreSQL binaries not found (apt-get install postgresql, or set PG_BIN)" >&2; exit 1; }
PAIRS=${PAIRS:-3} PG_CPU=${PG_CPU:-1}
export PEERS=${PEERS-spike-relay} ROUNDS=${ROUNDS:-2} CREDGATE_GATEWAY_WORKERS=1
out=${OUT:-$(mktemp -d /tmp/credgate-pgpace-out-XXXXXX)}; mkdir -p "$out"

# ---------- a throwaway PostgreSQL server ----------
pgdir=$(mktemp -d /tmp/credgate-pgpace-XXXXXX)
as=(); [ "$(id -u)" = 0 ] && { as=(runuser -u postgres --); chown postgres: "$pgdir"; }
chmod 700 "$pgdir"
pin=(); [ "$PG_CPU" != any ] && pin=(taskset -c "$PG_CPU")
port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
pg_stop() { "${as[@]}" "$pgbin/pg_ctl" -D "$pgdir/data" -m fast -w stop >/dev/null 2>&1; rm -rf "$pgdir"; }
trap pg_stop EXIT
"${as[@]}" "$pgbin/initdb" -D "$pgdir/data" -A trust -U postgres -E UTF8 >"$pgdir/initdb.log" 2>&1 || { cat "$pgdir/initdb.log" >&2; exit 1; }
# The postmaster's affinity is inherited by every backend it forks.
"${pin[@]}" "${as[@]}" "$pgbin/pg_ctl" -D "$pgdir/data" -l "$pgdir/log" -w -t 30 \
  -o "-p $port -k $pgdir -c listen_addresses=127.0.0.1 ${PG_OPTS:-}" start >/dev/null || { cat "$pgdir/log" >&2; exit 1; }
echo "PostgreSQL $("$pgbin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port, pinned to CPU ${PG_CPU}${PG_OPTS:+, options $PG_OPTS}" | tee "$out/summary.txt"

# ---------- the pairs ----------
figure() { # from a peer run's raw.jsonl: credgate's req/s over direct's (medians of the rounds) and its CPU µs per request
  node -e '
    const runs = require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean).map(JSON.parse).filter((r) => r.round !== "c1");
    const med = (xs) => { xs = xs.filter((x) => x != null).sort((a, b) => a - b); const m = xs.length >> 1; return xs.length % 2 ? xs[m] : (xs[m - 1] + xs[m]) / 2; };
    const of = (t) => runs.filter((r) => r.target === t);
    const cg = of("credgate"), d = of("direct");
    if (!cg.length || !d.length || cg.some((r) => !r.client || r.client.errors)) process.exit(1);
    console.log((med(cg.map((r) => r.client.rps)) / med(d.map((r) => r.client.rps))).toFixed(4), med(cg.map((r) => r.proxyCpu / r.client.rps * 1e6)).toFixed(1));
  ' "$1/raw.jsonl"
}
# CPU ticks of the PostgreSQL server: the postmaster with its reaped children, and the live children.
pg_ticks() {
  local pm t; pm=$(head -1 "$pgdir/data/postmaster.pid")
  t=$(awk '{print $14 + $15 + $16 + $17}' "/proc/$pm/stat")
  for c in $(pgrep -P "$pm"); do t=$((t + $(awk '{print $14 + $15}' "/proc/$c/stat" 2>/dev/null || echo 0))); done
  echo "$t"
}
psql_() { "${as[@]}" "$pgbin/psql" -h "$pgdir" -p "$port" -U postgres -qAt "$@"; }
run() { # engine pair -> prints the figure (and, for PostgreSQL, the server's CPU µs per request-log row)
  local engine=$1 i=$2 dir="$out/$1-$2"
  local cg=$bin
  if [ -n "${PROFILE:-}" ]; then # only credgate: the peers' upstream and relay run on Bun too
    cg=$dir.credgate; printf '#!/bin/sh\nBUN_OPTIONS="--cpu-prof --cpu-prof-dir=%s" exec %s "$@"\n' "$dir.prof" "$bin" >"$cg"; chmod +x "$cg"
  fi
  if [ "$engine" = postgres ]; then
    psql_ -c "CREATE DATABASE pace$i" postgres >/dev/null || return 1
    local t0 t1 rows; t0=$(pg_ticks)
    CREDGATE_DATABASE_URL="postgres://postgres@127.0.0.1:$port/pace$i" CREDGATE_MASTER_KEY=$(head -c 32 /dev/urandom | base64) \
      CREDGATE_BIN=$cg OUT_DIR="$dir" bash "$peer/with-credgate.sh" >"$dir.log" 2>&1
    sleep 2; t1=$(pg_ticks); rows=$(psql_ -c "SELECT count(*) FROM request_logs" "pace$i")
    # Everything the server did for this run (migrations and bootstrap included), per row the gateway logged.
    echo "$(figure "$dir") $(awk -v t=$((t1 - t0)) -v r="$rows" -v k="$(getconf CLK_TCK)" 'BEGIN{printf "%.1f", t / k * 1e6 / r}')"
  else
    CREDGATE_BIN=$cg OUT_DIR="$dir" bash "$peer/with-credgate.sh" >"$dir.log" 2>&1
    figure "$dir"
  fi
}
sq=() pg=() sqc=() pgc=() pgs=()
for i in $(seq 1 "$PAIRS"); do
  if [ $((i % 2)) = 1 ]; then order="sqlite postgres"; else order="postgres sqlite"; fi
  for e in $order; do
    f=$(run "$e" "$i"); [ -n "$f" ] || { echo "pair $i: the $e run gave no figure (see $out/$e-$i.log)" >&2; exit 1; }
    read -r x c srv <<<"$f"
    if [ "$e" = sqlite ]; then sq+=("$x"); sqc+=("$c"); else pg+=("$x"); pgc+=("$c"); pgs+=("$srv"); fi
  done
  echo "pair $i: credgate × direct: SQLite ${sq[-1]}, PostgreSQL ${pg[-1]} ($(awk -v a="${pg[-1]}" -v b="${sq[-1]}" 'BEGIN{printf "%.1f %%", 100*a/b}')); gateway CPU µs/request: SQLite ${sqc[-1]}, PostgreSQL ${pgc[-1]}; PostgreSQL server CPU µs/row ${pgs[-1]}" | tee -a "$out/summary.txt"
done
awk -v s="${sq[*]}" -v p="${pg[*]}" -v sc="${sqc[*]}" -v pc="${pgc[*]}" -v ps="${pgs[*]}" 'BEGIN {
  n = split(s, a, " "); split(p, b, " "); split(sc, c, " "); split(pc, d, " "); split(ps, e, " ")
  for (i = 1; i <= n; i++) { r[i] = b[i] / a[i]; ss += a[i]; sp += b[i]; cs += c[i]; cp += d[i]; se += e[i] }
  for (i = 2; i <= n; i++) for (j = i; j > 1 && r[j] < r[j - 1]; j--) { t = r[j]; r[j] = r[j - 1]; r[j - 1] = t }
  med = n % 2 ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2
  printf "%d pairs: PostgreSQL at %.1f %% of SQLite (median of the pairs; %.1f-%.1f %%); credgate × direct, mean: SQLite %.3f, PostgreSQL %.3f; gateway CPU µs/request, mean: SQLite %.1f, PostgreSQL %.1f; PostgreSQL server CPU µs/row, mean %.1f\n", n, 100 * med, 100 * r[1], 100 * r[n], ss / n, sp / n, cs / n, cp / n, se / n
}' | tee -a "$out/summary.txt"
echo "tables: $out" >&2
