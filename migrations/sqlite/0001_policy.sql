CREATE TABLE `agent_secret_grants` (
	`agent_id` text NOT NULL,
	`secret_id` text NOT NULL,
	`created_at` text NOT NULL,
	PRIMARY KEY(`agent_id`, `secret_id`),
	FOREIGN KEY (`agent_id`) REFERENCES `agents`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`secret_id`) REFERENCES `secrets`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `agent_secret_grants_secret` ON `agent_secret_grants` (`secret_id`);--> statement-breakpoint
CREATE TABLE `approvals` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`project_id` text NOT NULL,
	`agent_id` text NOT NULL,
	`agent_name` text NOT NULL,
	`agent_identifier` text NOT NULL,
	`method` text NOT NULL,
	`url` text NOT NULL,
	`host` text NOT NULL,
	`path` text NOT NULL,
	`headers` text NOT NULL,
	`body_preview` text,
	`summary` text,
	`status` text NOT NULL,
	`created_at` text NOT NULL,
	`expires_at` text NOT NULL,
	`decided_at` text,
	`decided_by_user_id` text,
	`decided_by_email` text,
	FOREIGN KEY (`organization_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `approvals_pending` ON `approvals` (`status`,`organization_id`,`project_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `policy_publishes` (
	`id` text PRIMARY KEY NOT NULL,
	`scope` text NOT NULL,
	`organization_id` text NOT NULL,
	`project_id` text,
	`generation` integer NOT NULL,
	`rule_count` integer NOT NULL,
	`applied_at` text NOT NULL,
	`applied_by_name` text,
	`applied_by_email` text,
	FOREIGN KEY (`organization_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `policy_publishes_owner` ON `policy_publishes` (`organization_id`,`project_id`,`generation`);--> statement-breakpoint
CREATE TABLE `policy_rules` (
	`id` text PRIMARY KEY NOT NULL,
	`logical_id` text NOT NULL,
	`scope` text NOT NULL,
	`organization_id` text NOT NULL,
	`project_id` text,
	`status` text NOT NULL,
	`generation` integer NOT NULL,
	`priority` integer NOT NULL,
	`enabled` integer NOT NULL,
	`is_default` integer NOT NULL,
	`source` text NOT NULL,
	`name` text NOT NULL,
	`description` text,
	`action` text NOT NULL,
	`rate_limit` integer,
	`rate_limit_window` text,
	`require_approval` integer NOT NULL,
	`conditions` text,
	`identities` text NOT NULL,
	`targets` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`organization_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `policy_rules_owner` ON `policy_rules` (`organization_id`,`project_id`,`status`,`generation`);