-- Partner budgets become one more kind of budget of the ledger (docs/budgets.md#admission): their windows are
-- rows of budget_windows like scope budgets', and their reservations (budget_reservations) are gone. Generated
-- by drizzle-kit, then edited where SQLite needs it: `budgets` is rebuilt to gain its NOT NULL `id` (existing
-- budgets are named `secret_id:organization_id`), and the existing windows, all of scope budgets, keep their
-- budget in `scope_budget_id`. A partner budget's window opens from its recorded spend (budget_spend) when first
-- used, so nothing resets.
DROP TABLE `budget_reservations`;--> statement-breakpoint
PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_budgets` (
	`id` text NOT NULL,
	`secret_id` text NOT NULL,
	`organization_id` text NOT NULL,
	`limit_cents` integer NOT NULL,
	`period` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	PRIMARY KEY(`secret_id`, `organization_id`),
	FOREIGN KEY (`secret_id`) REFERENCES `secrets`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`organization_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
INSERT INTO `__new_budgets`("id", "secret_id", "organization_id", "limit_cents", "period", "created_at", "updated_at") SELECT "secret_id" || ':' || "organization_id", "secret_id", "organization_id", "limit_cents", "period", "created_at", "updated_at" FROM `budgets`;--> statement-breakpoint
DROP TABLE `budgets`;--> statement-breakpoint
ALTER TABLE `__new_budgets` RENAME TO `budgets`;--> statement-breakpoint
CREATE UNIQUE INDEX `budgets_id_unique` ON `budgets` (`id`);--> statement-breakpoint
CREATE TABLE `__new_budget_windows` (
	`budget_id` text NOT NULL,
	`scope_budget_id` text,
	`partner_budget_id` text,
	`window_start` integer NOT NULL,
	`holder` text NOT NULL,
	`spent_nanos` integer NOT NULL,
	`held_nanos` integer NOT NULL,
	`expires_at` text NOT NULL,
	PRIMARY KEY(`budget_id`, `window_start`, `holder`),
	FOREIGN KEY (`scope_budget_id`) REFERENCES `scope_budgets`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`partner_budget_id`) REFERENCES `budgets`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
INSERT INTO `__new_budget_windows`("budget_id", "scope_budget_id", "partner_budget_id", "window_start", "holder", "spent_nanos", "held_nanos", "expires_at") SELECT "budget_id", "budget_id", NULL, "window_start", "holder", "spent_nanos", "held_nanos", "expires_at" FROM `budget_windows`;--> statement-breakpoint
DROP TABLE `budget_windows`;--> statement-breakpoint
ALTER TABLE `__new_budget_windows` RENAME TO `budget_windows`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
CREATE INDEX `budget_windows_holder` ON `budget_windows` (`holder`);--> statement-breakpoint
CREATE INDEX `budget_windows_scope_budget` ON `budget_windows` (`scope_budget_id`);--> statement-breakpoint
CREATE INDEX `budget_windows_partner_budget` ON `budget_windows` (`partner_budget_id`);
