CREATE TABLE "notification_channels" (
	"id" text PRIMARY KEY NOT NULL,
	"organization_id" text NOT NULL,
	"project_id" text,
	"kind" text NOT NULL,
	"url_sealed" text NOT NULL,
	"events" text NOT NULL,
	"enabled" boolean NOT NULL,
	"signing_secret_sealed" text,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "notification_deliveries" (
	"id" text PRIMARY KEY NOT NULL,
	"event_id" text NOT NULL,
	"channel_id" text NOT NULL,
	"organization_id" text NOT NULL,
	"project_id" text,
	"event" text NOT NULL,
	"approval_id" text,
	"payload_sealed" text NOT NULL,
	"status" text NOT NULL,
	"attempts" integer NOT NULL,
	"last_status" integer,
	"last_error" text,
	"next_attempt_at" text NOT NULL,
	"lease_until" text,
	"leased_by" text,
	"created_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "remembered_approvals" (
	"id" text PRIMARY KEY NOT NULL,
	"organization_id" text NOT NULL,
	"project_id" text NOT NULL,
	"agent_id" text NOT NULL,
	"rule_id" text NOT NULL,
	"rule_name" text NOT NULL,
	"expires_at" text NOT NULL,
	"created_via" text NOT NULL,
	"created_by_user_id" text,
	"created_by_email" text,
	"created_at" text NOT NULL
);
--> statement-breakpoint
ALTER TABLE "approvals" ADD COLUMN "link_token_hash" text;--> statement-breakpoint
ALTER TABLE "approvals" ADD COLUMN "rule_id" text;--> statement-breakpoint
ALTER TABLE "approvals" ADD COLUMN "rule_name" text;--> statement-breakpoint
ALTER TABLE "notification_channels" ADD CONSTRAINT "notification_channels_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notification_channels" ADD CONSTRAINT "notification_channels_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notification_deliveries" ADD CONSTRAINT "notification_deliveries_channel_id_notification_channels_id_fk" FOREIGN KEY ("channel_id") REFERENCES "public"."notification_channels"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notification_deliveries" ADD CONSTRAINT "notification_deliveries_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "remembered_approvals" ADD CONSTRAINT "remembered_approvals_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "remembered_approvals" ADD CONSTRAINT "remembered_approvals_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "remembered_approvals" ADD CONSTRAINT "remembered_approvals_agent_id_agents_id_fk" FOREIGN KEY ("agent_id") REFERENCES "public"."agents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "notification_channels_owner" ON "notification_channels" USING btree ("organization_id","project_id");--> statement-breakpoint
CREATE UNIQUE INDEX "notification_deliveries_event_channel" ON "notification_deliveries" USING btree ("event_id","channel_id");--> statement-breakpoint
CREATE INDEX "notification_deliveries_due" ON "notification_deliveries" USING btree ("status","next_attempt_at");--> statement-breakpoint
CREATE INDEX "notification_deliveries_owner" ON "notification_deliveries" USING btree ("organization_id","project_id","created_at");--> statement-breakpoint
CREATE INDEX "notification_deliveries_approval" ON "notification_deliveries" USING btree ("approval_id");--> statement-breakpoint
CREATE UNIQUE INDEX "remembered_approvals_agent_rule" ON "remembered_approvals" USING btree ("agent_id","rule_id");--> statement-breakpoint
CREATE INDEX "remembered_approvals_owner" ON "remembered_approvals" USING btree ("organization_id","project_id");