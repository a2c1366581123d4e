// The secret form for database credentials in a real Chromium against the real credgate process
// (docs/databases.md#the-database-secret): the contract's messages show at their fields (a wildcard host, tls off
// on a remote host, a port out of range), a PostgreSQL secret is created and listed with its settings (never its
// password), stored with exactly what the form said, then edited to read-only with approved writes.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startDashboard, type Dashboard } from "../support/dashboard.ts";
import type { RunningCredgate } from "../support/process.ts";

const PASSWORD = "dashboard-db-password-0123456789";

let dash: Dashboard;
let cg: RunningCredgate;

beforeAll(async () => {
  dash = await startDashboard();
  cg = dash.cg;
}, 60_000);

afterAll(async () => {
  await dash?.stop();
});

describe("database secrets in the dashboard", () => {
  test("create with its settings, refusals at their fields, list, edit", async () => {
    const { page } = await dash.projectSecrets();

    await page.getByRole("button", { name: "Add secret" }).first().click();
    let d = page.getByRole("dialog", { name: "Add secret" });
    await d.getByLabel("Name").fill("orders");
    await d.getByLabel("Inject as").selectOption("database");
    // The database's own fields replace the HTTP ones.
    expect(await d.getByLabel("Value", { exact: true }).isVisible()).toBe(false);
    expect(await d.getByLabel("Path", { exact: true }).isVisible()).toBe(false);
    await d.getByLabel("Host", { exact: true }).fill("*.db.example.com");
    await d.getByLabel("Password").fill(PASSWORD);
    await d.getByLabel("Database user").fill("app");
    await d.getByRole("button", { name: "Add secret" }).click();
    await d.getByText("a database secret needs an exact host").waitFor();

    await d.getByLabel("Host", { exact: true }).fill("db.example.com");
    await d.getByLabel("TLS to the server").selectOption("off");
    await d.getByRole("button", { name: "Add secret" }).click();
    await d.getByText("tls off is only allowed for a loopback database").waitFor();

    await d.getByLabel("TLS to the server").selectOption("require");
    await d.getByLabel("Port").fill("70000");
    await d.getByRole("button", { name: "Add secret" }).click();
    await d.getByText("injectionConfig.database.port must be between 1 and 65535").waitFor();

    await d.getByLabel("Port").fill("6432");
    await d.getByLabel("Databases").fill("orders, reports");
    await d.getByLabel("Writes").selectOption("block");
    await d.getByRole("button", { name: "Add secret" }).click();
    await page.getByText("Added orders.").waitFor();

    // Listed with its settings; the password is nowhere in the page.
    await page.getByText("PostgreSQL app@db.example.com:6432 · databases orders, reports · TLS require · writes block").waitFor();
    expect(await page.content()).not.toContain(PASSWORD);
    const stored = (await cg.api("GET", "/v1/secrets")).body.find((s: any) => s.name === "orders");
    expect(stored).toMatchObject({
      hostPattern: "db.example.com",
      pathPattern: null,
      injectionConfig: { database: { engine: "postgresql", port: 6432, user: "app", databases: ["orders", "reports"], tls: "require", readOnly: false, writes: "block" } },
    });

    // Edited: the form shows the stored settings; read-only with approved writes, the password kept.
    await page.getByRole("button", { name: "Edit orders" }).click();
    d = page.getByRole("dialog", { name: "Edit orders" });
    expect(await d.getByLabel("Database user").inputValue()).toBe("app");
    expect(await d.getByLabel("Port").inputValue()).toBe("6432");
    expect(await d.getByLabel("Databases").inputValue()).toBe("orders, reports");
    expect(await d.getByLabel("TLS to the server").inputValue()).toBe("require");
    expect(await d.getByLabel("Writes").inputValue()).toBe("block");
    expect(await d.getByLabel("Password").inputValue()).toBe("");
    await d.getByLabel("Read-only (the server refuses every write)").check();
    await d.getByLabel("Writes").selectOption("approve");
    await d.getByRole("button", { name: "Save changes" }).click();
    await page.getByText("Saved orders.").waitFor();
    await page.getByText("PostgreSQL app@db.example.com:6432 · databases orders, reports · TLS require · read-only · writes approve").waitFor();
    const edited = (await cg.api("GET", "/v1/secrets")).body.find((s: any) => s.name === "orders");
    expect(edited.injectionConfig.database).toEqual({ engine: "postgresql", port: 6432, user: "app", databases: ["orders", "reports"], tls: "require", readOnly: true, writes: "approve" });
    expect(await page.content()).not.toContain(PASSWORD);
  }, 120_000);
});
