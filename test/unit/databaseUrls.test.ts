// The database URLs an agent is given (docs/databases.md#connecting), as pure functions: sslmode by the gateway
// host (loopback: disable; elsewhere verify-full against the CA file), names and databases percent-encoded, IPv6
// hosts bracketed, variable names, PG* only for exactly one; and `credgate run`'s rewrite of the container
// config's URLs onto its own gateway host and CA file — and the stored form and host rules of the variant.
import { describe, expect, test } from "bun:test";
import { databaseEnv, databaseEnvName, databaseUrl, isDatabaseEnvKey } from "../../src/core/databaseUrls.ts";
import { databaseHostError, isLoopbackHost, normalizeDatabaseConfig } from "../../src/core/databaseRules.ts";
import { runEnvironment } from "../../src/run/environment.ts";

const TOKEN = `agt_${"a".repeat(64)}`;
const remote = { host: "gw.example.com", port: 10256, token: TOKEN, caPath: "/tmp/ca dir/ca.pem" };

describe("databaseUrl", () => {
  test("loopback hosts: sslmode=disable; others: verify-full with the CA file", () => {
    for (const host of ["localhost", "127.0.0.1", "127.1.2.3", "::1"]) {
      expect(databaseUrl({ name: "db", databases: null }, { ...remote, host })).toEndWith("/?sslmode=disable");
    }
    expect(databaseUrl({ name: "db", databases: ["app"] }, remote)).toBe(`postgresql://db:${TOKEN}@gw.example.com:10256/app?sslmode=verify-full&sslrootcert=%2Ftmp%2Fca%20dir%2Fca.pem`);
    // A name that resolves to loopback is not taken on trust: only literal loopback and localhost.
    expect(databaseUrl({ name: "db", databases: null }, { ...remote, host: "localhost.example.com" })).toContain("sslmode=verify-full");
  });

  test("names and databases percent-encoded, IPv6 bracketed, the first database named", () => {
    const url = databaseUrl({ name: "Orders EU/1@x", databases: ["sales db", "hr"] }, { ...remote, host: "::1" });
    expect(url).toBe(`postgresql://Orders%20EU%2F1%40x:${TOKEN}@[::1]:10256/sales%20db?sslmode=disable`);
    const parsed = new URL(url);
    expect([decodeURIComponent(parsed.username), decodeURIComponent(parsed.pathname.slice(1))]).toEqual(["Orders EU/1@x", "sales db"]);
  });
});

describe("databaseEnv", () => {
  test("variable names: upper-cased, non-alphanumerics made _; a clash keeps the first by name", () => {
    expect(databaseEnvName("reporting-eu.v2")).toBe("CREDGATE_DB_REPORTING_EU_V2_URL");
    const env = databaseEnv(
      [
        { name: "a_b", databases: ["two"] },
        { name: "a-b", databases: ["one"] },
      ],
      remote,
    );
    expect(Object.keys(env)).toEqual(["CREDGATE_DB_A_B_URL"]);
    expect(env.CREDGATE_DB_A_B_URL).toContain("postgresql://a-b:");
  });

  test("exactly one: PG* variables, PGSSLROOTCERT off loopback, PGDATABASE only when the URL names one", () => {
    expect(databaseEnv([{ name: "main", databases: ["app"] }], remote)).toEqual({
      CREDGATE_DB_MAIN_URL: `postgresql://main:${TOKEN}@gw.example.com:10256/app?sslmode=verify-full&sslrootcert=%2Ftmp%2Fca%20dir%2Fca.pem`,
      PGHOST: "gw.example.com",
      PGPORT: "10256",
      PGUSER: "main",
      PGPASSWORD: TOKEN,
      PGSSLMODE: "verify-full",
      PGSSLROOTCERT: "/tmp/ca dir/ca.pem",
      PGDATABASE: "app",
    });
    const local = databaseEnv([{ name: "main", databases: null }], { ...remote, host: "127.0.0.1" });
    expect(local.PGSSLMODE).toBe("disable");
    expect(local.PGSSLROOTCERT).toBeUndefined();
    expect(local.PGDATABASE).toBeUndefined();
    expect(databaseEnv([], remote)).toEqual({});
  });

  test("isDatabaseEnvKey names exactly what databaseEnv may set", () => {
    const env = databaseEnv([{ name: "x", databases: ["d"] }], remote);
    for (const k of Object.keys(env)) expect(isDatabaseEnvKey(k)).toBe(true);
    expect(isDatabaseEnvKey("PGAPPNAME")).toBe(false);
    expect(isDatabaseEnvKey("HTTPS_PROXY")).toBe(false);
  });
});

describe("credgate run's environment", () => {
  const files = { ca: "/run/dir/ca.pem", bundle: "/run/dir/bundle.pem", nodePreload: "/run/dir/p.cjs", curlHome: "/run/dir" };
  const container = {
    caCertificate: "PEM",
    env: {
      HTTPS_PROXY: `http://x:${TOKEN}@host.docker.internal:10255`,
      ...databaseEnv([{ name: "Main DB", databases: ["app"] }], { host: "host.docker.internal", port: 7777, token: TOKEN, caPath: "/tmp/credgate-gateway-ca.pem" }),
    },
  };

  test("the container's URLs on the gateway URL's host, with run's CA file; the port kept", () => {
    const env = runEnvironment({ PATH: "/bin" }, container, "https://gw.internal:10255", files);
    expect(env.CREDGATE_DB_MAIN_DB_URL).toBe(`postgresql://Main%20DB:${TOKEN}@gw.internal:7777/app?sslmode=verify-full&sslrootcert=%2Frun%2Fdir%2Fca.pem`);
    expect([env.PGHOST, env.PGPORT, env.PGUSER, env.PGSSLROOTCERT, env.PGDATABASE]).toEqual(["gw.internal", "7777", "Main DB", "/run/dir/ca.pem", "app"]);
    const local = runEnvironment({}, container, "http://localhost:10255", files);
    expect(local.CREDGATE_DB_MAIN_DB_URL).toBe(`postgresql://Main%20DB:${TOKEN}@localhost:7777/app?sslmode=disable`);
    expect(local.PGSSLROOTCERT).toBeUndefined();
    const v6 = runEnvironment({}, container, "http://[::1]:10255", files);
    expect(v6.CREDGATE_DB_MAIN_DB_URL).toBe(`postgresql://Main%20DB:${TOKEN}@[::1]:7777/app?sslmode=disable`);
    expect(v6.PGHOST).toBe("::1");
  });

  test("without database URLs the user's PG* variables pass untouched", () => {
    const env = runEnvironment({ PGHOST: "mine", PGSSLMODE: "require" }, { caCertificate: "PEM", env: { HTTPS_PROXY: container.env.HTTPS_PROXY } }, "http://localhost:10255", files);
    expect([env.PGHOST, env.PGSSLMODE]).toEqual(["mine", "require"]);
  });
});

describe("the variant's rules", () => {
  test("stored form: defaults written out, databases deduplicated", () => {
    expect(normalizeDatabaseConfig({ engine: "postgresql", user: "u" })).toEqual({ engine: "postgresql", port: 5432, user: "u", tls: "verify-full", readOnly: false, writes: "allow" });
    expect(normalizeDatabaseConfig({ engine: "postgresql", user: "u", databases: ["a", "b", "a"], port: 1, tls: "off", readOnly: true, writes: "block" })).toEqual({
      engine: "postgresql",
      port: 1,
      user: "u",
      databases: ["a", "b"],
      tls: "off",
      readOnly: true,
      writes: "block",
    });
  });

  test("host rules: no wildcard; tls off only on loopback", () => {
    const cfg = { engine: "postgresql" as const, user: "u" };
    expect(databaseHostError("*.db.example.com", cfg)).toBe("a database secret needs an exact host");
    expect(databaseHostError("db.example.com", cfg)).toBeNull();
    expect(databaseHostError("db.example.com", { ...cfg, tls: "off" })).toBe("tls off is only allowed for a loopback database");
    expect(databaseHostError("192.168.1.5", { ...cfg, tls: "off" })).toBe("tls off is only allowed for a loopback database");
    for (const h of ["localhost", "LOCALHOST.", "127.0.0.1", "127.255.0.9", "::1", "[::1]"]) expect(isLoopbackHost(h)).toBe(true);
    for (const h of ["128.0.0.1", "0.0.0.0", "::", "localhost.example.com", "db"]) expect(isLoopbackHost(h)).toBe(false);
  });
});
