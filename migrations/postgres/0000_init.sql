CREATE TABLE "agent_connection_grants" (
	"agent_id" text NOT NULL,
	"connection_id" text NOT NULL,
	"access" text NOT NULL,
	"allow" text NOT NULL,
	"ask" text NOT NULL,
	"resources" text,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL,
	CONSTRAINT "agent_connection_grants_agent_id_connection_id_pk" PRIMARY KEY("agent_id","connection_id")
);
--> statement-breakpoint
CREATE TABLE "agent_secret_grants" (
	"agent_id" text NOT NULL,
	"secret_id" text NOT NULL,
	"created_at" text NOT NULL,
	CONSTRAINT "agent_secret_grants_agent_id_secret_id_pk" PRIMARY KEY("agent_id","secret_id")
);
--> statement-breakpoint
CREATE TABLE "agents" (
	"id" text PRIMARY KEY NOT NULL,
	"project_id" text NOT NULL,
	"name" text NOT NULL,
	"identifier" text NOT NULL,
	"mode" text NOT NULL,
	"is_default" boolean DEFAULT false NOT NULL,
	"token_hash" text NOT NULL,
	"token_sealed" text NOT NULL,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL,
	"last_seen_at" text,
	CONSTRAINT "agents_token_hash_unique" UNIQUE("token_hash")
);
--> statement-breakpoint
CREATE TABLE "api_keys" (
	"id" text PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"token_hash" text NOT NULL,
	"token_sealed" text NOT NULL,
	"user_id" text,
	"organization_id" text,
	"project_id" text,
	"partner_id" text,
	"created_at" text NOT NULL,
	CONSTRAINT "api_keys_token_hash_unique" UNIQUE("token_hash")
);
--> statement-breakpoint
CREATE TABLE "app_configs" (
	"id" text PRIMARY KEY NOT NULL,
	"scope" text NOT NULL,
	"organization_id" text NOT NULL,
	"project_id" text,
	"provider" text NOT NULL,
	"settings" text NOT NULL,
	"secrets_sealed" text,
	"enabled" boolean NOT NULL,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "app_connections" (
	"id" text PRIMARY KEY NOT NULL,
	"scope" text NOT NULL,
	"organization_id" text NOT NULL,
	"project_id" text,
	"provider" text NOT NULL,
	"label" text,
	"status" text NOT NULL,
	"scopes" text NOT NULL,
	"metadata" text,
	"credential_sealed" text NOT NULL,
	"version" integer NOT NULL,
	"refresh_failures" integer DEFAULT 0 NOT NULL,
	"connected_at" text NOT NULL,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "approvals" (
	"id" text PRIMARY KEY NOT NULL,
	"organization_id" text NOT NULL,
	"project_id" text NOT NULL,
	"agent_id" text NOT NULL,
	"agent_name" text NOT NULL,
	"agent_identifier" text NOT NULL,
	"method" text NOT NULL,
	"url" text NOT NULL,
	"host" text NOT NULL,
	"path" text NOT NULL,
	"headers" text NOT NULL,
	"body_preview" text,
	"summary" text,
	"status" text NOT NULL,
	"created_at" text NOT NULL,
	"expires_at" text NOT NULL,
	"decided_at" text,
	"decided_by_user_id" text,
	"decided_by_email" text,
	"instance_id" text
);
--> statement-breakpoint
CREATE TABLE "blocklist_rules" (
	"id" text PRIMARY KEY NOT NULL,
	"scope" text NOT NULL,
	"organization_id" text NOT NULL,
	"project_id" text,
	"provider" text NOT NULL,
	"host_id" text NOT NULL,
	"custom" boolean NOT NULL,
	"name" text NOT NULL,
	"host_pattern" text NOT NULL,
	"enabled" boolean NOT NULL,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "instances" (
	"id" text PRIMARY KEY NOT NULL,
	"started_at" text NOT NULL,
	"heartbeat_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "memberships" (
	"organization_id" text NOT NULL,
	"user_id" text NOT NULL,
	"role" text NOT NULL,
	"status" text DEFAULT 'active' NOT NULL,
	"created_at" text NOT NULL,
	CONSTRAINT "memberships_organization_id_user_id_pk" PRIMARY KEY("organization_id","user_id")
);
--> statement-breakpoint
CREATE TABLE "organizations" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"slug" text NOT NULL,
	"partner_id" text,
	"claimed" boolean DEFAULT true NOT NULL,
	"partner_detached" boolean DEFAULT false NOT NULL,
	"created_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "partners" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"created_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "policy_publishes" (
	"id" text PRIMARY KEY NOT NULL,
	"scope" text NOT NULL,
	"organization_id" text NOT NULL,
	"project_id" text,
	"generation" integer NOT NULL,
	"rule_count" integer NOT NULL,
	"applied_at" text NOT NULL,
	"applied_by_name" text,
	"applied_by_email" text
);
--> statement-breakpoint
CREATE TABLE "policy_rules" (
	"id" text PRIMARY KEY NOT NULL,
	"logical_id" text NOT NULL,
	"scope" text NOT NULL,
	"organization_id" text NOT NULL,
	"project_id" text,
	"status" text NOT NULL,
	"generation" integer NOT NULL,
	"priority" integer NOT NULL,
	"enabled" boolean NOT NULL,
	"is_default" boolean NOT NULL,
	"source" text NOT NULL,
	"name" text NOT NULL,
	"description" text,
	"action" text NOT NULL,
	"rate_limit" integer,
	"rate_limit_window" text,
	"require_approval" boolean NOT NULL,
	"conditions" text,
	"identities" text NOT NULL,
	"targets" text NOT NULL,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "projects" (
	"id" text PRIMARY KEY NOT NULL,
	"organization_id" text NOT NULL,
	"name" text NOT NULL,
	"slug" text NOT NULL,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "rate_limit_counters" (
	"scope" text NOT NULL,
	"logical_id" text NOT NULL,
	"agent_id" text NOT NULL,
	"window" text NOT NULL,
	"window_start" bigint NOT NULL,
	"count" integer NOT NULL,
	CONSTRAINT "rate_limit_counters_scope_logical_id_agent_id_window_window_start_pk" PRIMARY KEY("scope","logical_id","agent_id","window","window_start")
);
--> statement-breakpoint
CREATE TABLE "request_logs" (
	"seq" bigserial PRIMARY KEY NOT NULL,
	"id" text NOT NULL,
	"organization_id" text NOT NULL,
	"project_id" text NOT NULL,
	"agent_id" text NOT NULL,
	"method" text NOT NULL,
	"host" text NOT NULL,
	"path" text NOT NULL,
	"provider" text,
	"status" integer NOT NULL,
	"latency_ms" integer NOT NULL,
	"injection_count" integer NOT NULL,
	"decision" text NOT NULL,
	"matched_rule_logical_id" text,
	"matched_rule_name" text,
	"approval_id" text,
	"cost_nanos" bigint,
	"created_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "secrets" (
	"id" text PRIMARY KEY NOT NULL,
	"scope" text NOT NULL,
	"organization_id" text,
	"project_id" text,
	"partner_id" text,
	"name" text NOT NULL,
	"type" text NOT NULL,
	"value_source" text NOT NULL,
	"value_sealed" text,
	"op_ref" text,
	"host_pattern" text NOT NULL,
	"path_pattern" text,
	"injection_config" text,
	"metadata" text,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sessions" (
	"id" text PRIMARY KEY NOT NULL,
	"token_hash" text NOT NULL,
	"user_id" text NOT NULL,
	"created_at" text NOT NULL,
	"expires_at" text NOT NULL,
	"revoked_at" text,
	CONSTRAINT "sessions_token_hash_unique" UNIQUE("token_hash")
);
--> statement-breakpoint
CREATE TABLE "settings" (
	"key" text PRIMARY KEY NOT NULL,
	"value" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "users" (
	"id" text PRIMARY KEY NOT NULL,
	"email" text NOT NULL,
	"name" text,
	"password_hash" text,
	"created_at" text NOT NULL,
	CONSTRAINT "users_email_unique" UNIQUE("email")
);
--> statement-breakpoint
ALTER TABLE "agent_connection_grants" ADD CONSTRAINT "agent_connection_grants_agent_id_agents_id_fk" FOREIGN KEY ("agent_id") REFERENCES "public"."agents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "agent_connection_grants" ADD CONSTRAINT "agent_connection_grants_connection_id_app_connections_id_fk" FOREIGN KEY ("connection_id") REFERENCES "public"."app_connections"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "agent_secret_grants" ADD CONSTRAINT "agent_secret_grants_agent_id_agents_id_fk" FOREIGN KEY ("agent_id") REFERENCES "public"."agents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "agent_secret_grants" ADD CONSTRAINT "agent_secret_grants_secret_id_secrets_id_fk" FOREIGN KEY ("secret_id") REFERENCES "public"."secrets"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "agents" ADD CONSTRAINT "agents_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_partner_id_partners_id_fk" FOREIGN KEY ("partner_id") REFERENCES "public"."partners"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "app_configs" ADD CONSTRAINT "app_configs_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "app_configs" ADD CONSTRAINT "app_configs_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "app_connections" ADD CONSTRAINT "app_connections_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "app_connections" ADD CONSTRAINT "app_connections_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "approvals" ADD CONSTRAINT "approvals_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "approvals" ADD CONSTRAINT "approvals_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "blocklist_rules" ADD CONSTRAINT "blocklist_rules_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "blocklist_rules" ADD CONSTRAINT "blocklist_rules_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "memberships" ADD CONSTRAINT "memberships_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "memberships" ADD CONSTRAINT "memberships_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "organizations" ADD CONSTRAINT "organizations_partner_id_partners_id_fk" FOREIGN KEY ("partner_id") REFERENCES "public"."partners"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "policy_publishes" ADD CONSTRAINT "policy_publishes_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "policy_publishes" ADD CONSTRAINT "policy_publishes_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "policy_rules" ADD CONSTRAINT "policy_rules_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "policy_rules" ADD CONSTRAINT "policy_rules_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "projects" ADD CONSTRAINT "projects_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "secrets" ADD CONSTRAINT "secrets_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "secrets" ADD CONSTRAINT "secrets_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "secrets" ADD CONSTRAINT "secrets_partner_id_partners_id_fk" FOREIGN KEY ("partner_id") REFERENCES "public"."partners"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "agent_connection_grants_connection" ON "agent_connection_grants" USING btree ("connection_id");--> statement-breakpoint
CREATE INDEX "agent_secret_grants_secret" ON "agent_secret_grants" USING btree ("secret_id");--> statement-breakpoint
CREATE UNIQUE INDEX "agents_project_identifier" ON "agents" USING btree ("project_id","identifier");--> statement-breakpoint
CREATE UNIQUE INDEX "api_keys_project_holder" ON "api_keys" USING btree ("user_id","project_id") WHERE kind = 'project';--> statement-breakpoint
CREATE UNIQUE INDEX "api_keys_org_holder" ON "api_keys" USING btree ("user_id","organization_id") WHERE kind = 'organization';--> statement-breakpoint
CREATE UNIQUE INDEX "app_configs_project" ON "app_configs" USING btree ("project_id","provider") WHERE scope = 'project';--> statement-breakpoint
CREATE UNIQUE INDEX "app_configs_org" ON "app_configs" USING btree ("organization_id","provider") WHERE scope = 'organization';--> statement-breakpoint
CREATE INDEX "app_connections_owner" ON "app_connections" USING btree ("organization_id","project_id","provider");--> statement-breakpoint
CREATE INDEX "approvals_pending" ON "approvals" USING btree ("status","organization_id","project_id","created_at");--> statement-breakpoint
CREATE INDEX "blocklist_rules_owner" ON "blocklist_rules" USING btree ("organization_id","project_id","provider");--> statement-breakpoint
CREATE INDEX "memberships_user" ON "memberships" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "policy_publishes_owner" ON "policy_publishes" USING btree ("organization_id","project_id","generation");--> statement-breakpoint
CREATE INDEX "policy_rules_owner" ON "policy_rules" USING btree ("organization_id","project_id","status","generation");--> statement-breakpoint
CREATE UNIQUE INDEX "projects_org_slug" ON "projects" USING btree ("organization_id","slug");--> statement-breakpoint
CREATE INDEX "rate_limit_counters_start" ON "rate_limit_counters" USING btree ("window_start");--> statement-breakpoint
CREATE INDEX "request_logs_project_time" ON "request_logs" USING btree ("project_id","created_at","id");--> statement-breakpoint
CREATE INDEX "request_logs_org_time" ON "request_logs" USING btree ("organization_id","created_at","id");--> statement-breakpoint
CREATE INDEX "secrets_project" ON "secrets" USING btree ("project_id");--> statement-breakpoint
CREATE INDEX "secrets_org" ON "secrets" USING btree ("organization_id");--> statement-breakpoint
CREATE INDEX "secrets_partner" ON "secrets" USING btree ("partner_id");