CREATE TABLE `budget_reservations` (
	`id` text PRIMARY KEY NOT NULL,
	`secret_id` text NOT NULL,
	`organization_id` text NOT NULL,
	`estimate_nanos` integer NOT NULL,
	`expires_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `budget_reservations_owner` ON `budget_reservations` (`secret_id`,`organization_id`,`expires_at`);--> statement-breakpoint
CREATE TABLE `budget_spend` (
	`secret_id` text NOT NULL,
	`organization_id` text NOT NULL,
	`bucket` text NOT NULL,
	`nanos` integer NOT NULL,
	PRIMARY KEY(`secret_id`, `organization_id`, `bucket`)
);
--> statement-breakpoint
CREATE TABLE `budgets` (
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
