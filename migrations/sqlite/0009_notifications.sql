CREATE TABLE `notification_channels` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`project_id` text,
	`kind` text NOT NULL,
	`url_sealed` text NOT NULL,
	`events` text NOT NULL,
	`enabled` integer NOT NULL,
	`signing_secret_sealed` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`organization_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `notification_channels_owner` ON `notification_channels` (`organization_id`,`project_id`);--> statement-breakpoint
CREATE TABLE `notification_deliveries` (
	`id` text PRIMARY KEY NOT NULL,
	`event_id` text NOT NULL,
	`channel_id` text NOT NULL,
	`organization_id` text NOT NULL,
	`project_id` text,
	`event` text NOT NULL,
	`approval_id` text,
	`payload_sealed` text NOT NULL,
	`status` text NOT NULL,
	`attempts` integer NOT NULL,
	`last_status` integer,
	`last_error` text,
	`next_attempt_at` text NOT NULL,
	`lease_until` text,
	`leased_by` text,
	`created_at` text NOT NULL,
	FOREIGN KEY (`channel_id`) REFERENCES `notification_channels`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`organization_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `notification_deliveries_event_channel` ON `notification_deliveries` (`event_id`,`channel_id`);--> statement-breakpoint
CREATE INDEX `notification_deliveries_due` ON `notification_deliveries` (`status`,`next_attempt_at`);--> statement-breakpoint
CREATE INDEX `notification_deliveries_owner` ON `notification_deliveries` (`organization_id`,`project_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `notification_deliveries_approval` ON `notification_deliveries` (`approval_id`);--> statement-breakpoint
CREATE TABLE `remembered_approvals` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`project_id` text NOT NULL,
	`agent_id` text NOT NULL,
	`rule_id` text NOT NULL,
	`rule_name` text NOT NULL,
	`expires_at` text NOT NULL,
	`created_via` text NOT NULL,
	`created_by_user_id` text,
	`created_by_email` text,
	`created_at` text NOT NULL,
	FOREIGN KEY (`organization_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`agent_id`) REFERENCES `agents`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `remembered_approvals_agent_rule` ON `remembered_approvals` (`agent_id`,`rule_id`);--> statement-breakpoint
CREATE INDEX `remembered_approvals_owner` ON `remembered_approvals` (`organization_id`,`project_id`);--> statement-breakpoint
ALTER TABLE `approvals` ADD `link_token_hash` text;--> statement-breakpoint
ALTER TABLE `approvals` ADD `rule_id` text;--> statement-breakpoint
ALTER TABLE `approvals` ADD `rule_name` text;