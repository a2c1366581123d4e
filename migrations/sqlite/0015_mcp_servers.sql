CREATE TABLE `agent_mcp_grants` (
	`agent_id` text NOT NULL,
	`mcp_server_id` text NOT NULL,
	`access` text NOT NULL,
	`allow` text NOT NULL,
	`ask` text NOT NULL,
	`arguments` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	PRIMARY KEY(`agent_id`, `mcp_server_id`),
	FOREIGN KEY (`agent_id`) REFERENCES `agents`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`mcp_server_id`) REFERENCES `mcp_servers`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `agent_mcp_grants_server` ON `agent_mcp_grants` (`mcp_server_id`);--> statement-breakpoint
CREATE TABLE `mcp_servers` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`project_id` text NOT NULL,
	`name` text NOT NULL,
	`url` text NOT NULL,
	`auth_kind` text NOT NULL,
	`status` text NOT NULL,
	`credential_sealed` text,
	`oauth_sealed` text,
	`version` integer NOT NULL,
	`refresh_failures` integer DEFAULT 0 NOT NULL,
	`tools` text NOT NULL,
	`tools_refreshed_at` text,
	`last_error` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`organization_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `mcp_servers_project` ON `mcp_servers` (`project_id`);