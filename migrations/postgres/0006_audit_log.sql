CREATE TABLE "audit_events" (
	"seq" bigserial PRIMARY KEY NOT NULL,
	"id" text NOT NULL,
	"at" text NOT NULL,
	"organization_id" text,
	"partner_id" text,
	"project_id" text,
	"actor_kind" text NOT NULL,
	"actor_id" text NOT NULL,
	"actor_email" text,
	"action" text NOT NULL,
	"target_type" text NOT NULL,
	"target_id" text,
	"address" text,
	"changes" text NOT NULL,
	"hash" text NOT NULL,
	CONSTRAINT "audit_events_id_unique" UNIQUE("id")
);
--> statement-breakpoint
CREATE INDEX "audit_events_org" ON "audit_events" USING btree ("organization_id","seq");