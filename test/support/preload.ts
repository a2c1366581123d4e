// Loaded before every test file (bunfig.toml): test APIs created inside a test are closed when it ends, so
// suites that make one per test do not pile up database connections (Postgres mode) or open files.
import { afterAll, afterEach, beforeEach } from "bun:test";
import { closeTestApisOfTest, startTest } from "./app.ts";
import { removeTempDirs } from "./tmp.ts";

beforeEach(() => startTest());
afterEach(() => closeTestApisOfTest());
afterAll(() => removeTempDirs());
