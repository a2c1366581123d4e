// Loaded before every test file (bunfig.toml): test APIs created inside a test are closed when it ends, so
// suites that make one per test do not pile up database connections (Postgres mode) or open files. The run
// fails when a test changed the mode or owner of the system temp dir (tmpGuard.ts).
import { afterAll, afterEach, beforeEach } from "bun:test";
import { closeTestApisOfTest, startTest } from "./app.ts";
import { removeTempDirs } from "./tmp.ts";
import { guardTempDir } from "./tmpGuard.ts";

const checkTempDir = guardTempDir();

beforeEach(() => startTest());
afterEach(() => closeTestApisOfTest());
afterAll(() => {
  removeTempDirs();
  checkTempDir();
});
