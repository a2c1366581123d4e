PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_request_logs` (
	`seq` integer PRIMARY KEY NOT NULL,
	`id` text NOT NULL,
	`organization_id` text NOT NULL,
	`project_id` text NOT NULL,
	`agent_id` text NOT NULL,
	`method` text NOT NULL,
	`host` text NOT NULL,
	`path` text NOT NULL,
	`provider` text,
	`status` integer NOT NULL,
	`latency_ms` integer NOT NULL,
	`injection_count` integer NOT NULL,
	`decision` text NOT NULL,
	`matched_rule_logical_id` text,
	`matched_rule_name` text,
	`approval_id` text,
	`cost_nanos` integer,
	`created_at` text NOT NULL
);
--> statement-breakpoint
INSERT INTO `__new_request_logs`("id", "organization_id", "project_id", "agent_id", "method", "host", "path", "provider", "status", "latency_ms", "injection_count", "decision", "matched_rule_logical_id", "matched_rule_name", "approval_id", "cost_nanos", "created_at") SELECT "id", "organization_id", "project_id", "agent_id", "method", "host", "path", "provider", "status", "latency_ms", "injection_count", "decision", "matched_rule_logical_id", "matched_rule_name", "approval_id", "cost_nanos", "created_at" FROM `request_logs` ORDER BY "created_at", "rowid";--> statement-breakpoint
DROP TABLE `request_logs`;--> statement-breakpoint
ALTER TABLE `__new_request_logs` RENAME TO `request_logs`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
CREATE INDEX `request_logs_project_time` ON `request_logs` (`project_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `request_logs_org_time` ON `request_logs` (`organization_id`,`created_at`,`id`);