// Loaded before every test file (bunfig.toml): test APIs created inside a test are closed when it ends, so
// suites that make one per test do not pile up database connections (Postgres mode) or open files. The run
// fails when a test changed the mode or owner of the system temp dir (tmpGuard.ts). Spawned credgates keep their
// database listener off unless a test gives it a port.
import { afterAll, afterEach, beforeEach } from "bun:test";
import { closeTestApisOfTest, startTest } from "./app.ts";
import { removeTempDirs } from "./tmp.ts";
import { guardTempDir } from "./tmpGuard.ts";

const checkTempDir = guardTempDir();

// A credgate a test spawns on its own (serve, doctor, the binary) inherits this: its database listener is off
// rather than on the fixed default port every other spawned credgate wants too (docs/databases.md#the-listener).
// startCredgate gives each process a free `--db-port`, which wins.
process.env.CREDGATE_DB_PORT ??= "0";

beforeEach(() => startTest());
afterEach(() => closeTestApisOfTest());
afterAll(() => {
  removeTempDirs();
  checkTempDir();
});
