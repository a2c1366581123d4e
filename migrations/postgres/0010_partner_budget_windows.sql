-- Partner budgets become one more kind of budget of the ledger (docs/budgets.md#admission): their windows are
-- rows of budget_windows like scope budgets', and their reservations (budget_reservations) are gone. Generated
-- by drizzle-kit, then edited to fill the new NOT NULL `budgets.id` of existing budgets
-- (`secret_id:organization_id`) and to keep the existing windows, all of scope budgets, in `scope_budget_id`.
-- A partner budget's window opens from its recorded spend (budget_spend) when first used, so nothing resets.
DROP TABLE "budget_reservations" CASCADE;--> statement-breakpoint
ALTER TABLE "budget_windows" DROP CONSTRAINT "budget_windows_budget_id_scope_budgets_id_fk";
--> statement-breakpoint
ALTER TABLE "budget_windows" ADD COLUMN "scope_budget_id" text;--> statement-breakpoint
ALTER TABLE "budget_windows" ADD COLUMN "partner_budget_id" text;--> statement-breakpoint
UPDATE "budget_windows" SET "scope_budget_id" = "budget_id";--> statement-breakpoint
ALTER TABLE "budgets" ADD COLUMN "id" text;--> statement-breakpoint
UPDATE "budgets" SET "id" = "secret_id" || ':' || "organization_id";--> statement-breakpoint
ALTER TABLE "budgets" ALTER COLUMN "id" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "budget_windows" ADD CONSTRAINT "budget_windows_scope_budget_id_scope_budgets_id_fk" FOREIGN KEY ("scope_budget_id") REFERENCES "public"."scope_budgets"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "budgets" ADD CONSTRAINT "budgets_id_unique" UNIQUE("id");--> statement-breakpoint
ALTER TABLE "budget_windows" ADD CONSTRAINT "budget_windows_partner_budget_id_budgets_id_fk" FOREIGN KEY ("partner_budget_id") REFERENCES "public"."budgets"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "budget_windows_scope_budget" ON "budget_windows" USING btree ("scope_budget_id");--> statement-breakpoint
CREATE INDEX "budget_windows_partner_budget" ON "budget_windows" USING btree ("partner_budget_id");
