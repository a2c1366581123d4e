CREATE TABLE `budget_alerts` (
	`budget_id` text NOT NULL,
	`window_start` integer NOT NULL,
	`percent` integer NOT NULL,
	`created_at` text NOT NULL,
	PRIMARY KEY(`budget_id`, `window_start`, `percent`),
	FOREIGN KEY (`budget_id`) REFERENCES `scope_budgets`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `budget_windows` (
	`budget_id` text NOT NULL,
	`window_start` integer NOT NULL,
	`holder` text NOT NULL,
	`spent_nanos` integer NOT NULL,
	`held_nanos` integer NOT NULL,
	`expires_at` text NOT NULL,
	PRIMARY KEY(`budget_id`, `window_start`, `holder`),
	FOREIGN KEY (`budget_id`) REFERENCES `scope_budgets`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `budget_windows_holder` ON `budget_windows` (`holder`);--> statement-breakpoint
CREATE TABLE `scope_budgets` (
	`id` text PRIMARY KEY NOT NULL,
	`scope` text NOT NULL,
	`organization_id` text NOT NULL,
	`project_id` text,
	`agent_id` text,
	`owner_id` text NOT NULL,
	`secret_type` text,
	`limit_cents` integer NOT NULL,
	`period` text NOT NULL,
	`alert_percents` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`organization_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`agent_id`) REFERENCES `agents`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `scope_budgets_owner_type` ON `scope_budgets` (`owner_id`,`secret_type`,`period`) WHERE secret_type IS NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX `scope_budgets_owner_any` ON `scope_budgets` (`owner_id`,`period`) WHERE secret_type IS NULL;--> statement-breakpoint
CREATE INDEX `scope_budgets_owner` ON `scope_budgets` (`owner_id`);--> statement-breakpoint
CREATE INDEX `scope_budgets_project` ON `scope_budgets` (`organization_id`,`project_id`);--> statement-breakpoint
CREATE TABLE `spend_records` (
	`seq` integer PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`project_id` text NOT NULL,
	`agent_id` text NOT NULL,
	`secret_type` text NOT NULL,
	`model` text NOT NULL,
	`input_tokens` integer NOT NULL,
	`output_tokens` integer NOT NULL,
	`cost_nanos` integer NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `spend_records_project_time` ON `spend_records` (`project_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `spend_records_org_time` ON `spend_records` (`organization_id`,`created_at`);