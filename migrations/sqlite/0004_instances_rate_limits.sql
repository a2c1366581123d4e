CREATE TABLE `instances` (
	`id` text PRIMARY KEY NOT NULL,
	`started_at` text NOT NULL,
	`heartbeat_at` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `rate_limit_counters` (
	`scope` text NOT NULL,
	`logical_id` text NOT NULL,
	`agent_id` text NOT NULL,
	`window` text NOT NULL,
	`window_start` integer NOT NULL,
	`count` integer NOT NULL,
	PRIMARY KEY(`scope`, `logical_id`, `agent_id`, `window`, `window_start`)
);
--> statement-breakpoint
CREATE INDEX `rate_limit_counters_start` ON `rate_limit_counters` (`window_start`);--> statement-breakpoint
ALTER TABLE `approvals` ADD `instance_id` text;