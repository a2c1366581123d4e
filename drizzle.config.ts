// drizzle-kit configuration for both engines: `npm run db:generate` writes the two schema files from the one
// table declaration (scripts/gen-schema.ts), then migrations/sqlite/ and migrations/postgres/ from them, and
// embeds the migrations (migrations/embed.ts).
import { defineConfig } from "drizzle-kit";

const dialect = process.env.CREDGATE_DRIZZLE_DIALECT === "postgresql" ? "postgresql" : "sqlite";

export default defineConfig(
  dialect === "postgresql"
    ? { dialect, schema: "./src/store/schema.pg.ts", out: "./migrations/postgres" }
    : { dialect, schema: "./src/store/schema.sqlite.ts", out: "./migrations/sqlite" },
);
