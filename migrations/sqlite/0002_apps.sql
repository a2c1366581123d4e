CREATE TABLE `agent_connection_grants` (
	`agent_id` text NOT NULL,
	`connection_id` text NOT NULL,
	`access` text NOT NULL,
	`allow` text NOT NULL,
	`ask` text NOT NULL,
	`resources` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	PRIMARY KEY(`agent_id`, `connection_id`),
	FOREIGN KEY (`agent_id`) REFERENCES `agents`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`connection_id`) REFERENCES `app_connections`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `agent_connection_grants_connection` ON `agent_connection_grants` (`connection_id`);--> statement-breakpoint
CREATE TABLE `app_configs` (
	`id` text PRIMARY KEY NOT NULL,
	`scope` text NOT NULL,
	`organization_id` text NOT NULL,
	`project_id` text,
	`provider` text NOT NULL,
	`settings` text NOT NULL,
	`secrets_sealed` text,
	`enabled` integer NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`organization_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `app_configs_project` ON `app_configs` (`project_id`,`provider`) WHERE scope = 'project';--> statement-breakpoint
CREATE UNIQUE INDEX `app_configs_org` ON `app_configs` (`organization_id`,`provider`) WHERE scope = 'organization';--> statement-breakpoint
CREATE TABLE `app_connections` (
	`id` text PRIMARY KEY NOT NULL,
	`scope` text NOT NULL,
	`organization_id` text NOT NULL,
	`project_id` text,
	`provider` text NOT NULL,
	`label` text,
	`status` text NOT NULL,
	`scopes` text NOT NULL,
	`metadata` text,
	`credential_sealed` text NOT NULL,
	`version` integer NOT NULL,
	`refresh_failures` integer DEFAULT 0 NOT NULL,
	`connected_at` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`organization_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `app_connections_owner` ON `app_connections` (`organization_id`,`project_id`,`provider`);--> statement-breakpoint
CREATE TABLE `blocklist_rules` (
	`id` text PRIMARY KEY NOT NULL,
	`scope` text NOT NULL,
	`organization_id` text NOT NULL,
	`project_id` text,
	`provider` text NOT NULL,
	`host_id` text NOT NULL,
	`custom` integer NOT NULL,
	`name` text NOT NULL,
	`host_pattern` text NOT NULL,
	`enabled` integer NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`organization_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `blocklist_rules_owner` ON `blocklist_rules` (`organization_id`,`project_id`,`provider`);