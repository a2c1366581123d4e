DROP INDEX "request_logs_org_time";--> statement-breakpoint
DROP INDEX "request_logs_project_time";--> statement-breakpoint
CREATE INDEX "request_logs_project_time" ON "request_logs" USING btree ("project_id","created_at");