// Every page of the dashboard by path (the server answers the shell for all of them: src/dashboard/serve.ts).
import { agentDetailPage } from "./pages/agentDetail.ts";
import { agentsPage } from "./pages/agents.ts";
import { appConnectPage } from "./pages/appConnect.ts";
import { appDetailPage } from "./pages/appDetail.ts";
import { appsPage } from "./pages/apps.ts";
import { auditPage } from "./pages/audit.ts";
import { approvalsPage } from "./pages/approvals.ts";
import { budgetsPage, orgBudgetsPage } from "./pages/budgets.ts";
import { claimPage } from "./pages/claim.ts";
import { logsPage } from "./pages/logs.ts";
import { mcpServersPage } from "./pages/mcpServers.ts";
import { mcpServerDetailPage, mcpServerLandingPage } from "./pages/mcpServerDetail.ts";
import { notificationsPage, orgNotificationsPage } from "./pages/notifications.ts";
import { organizationPage, orgPolicyPage, orgSecretsPage } from "./pages/organization.ts";
import { overviewPage } from "./pages/overview.ts";
import { policyPage } from "./pages/policy.ts";
import { secretsPage } from "./pages/secrets.ts";
import { signInPage } from "./pages/signIn.ts";
import { signUpPage } from "./pages/signUp.ts";
import { acceptInvitePage } from "./pages/acceptInvite.ts";
import { noProjectPage } from "./pages/noProject.ts";
import { teamPage } from "./pages/team.ts";
import { projectsPage } from "./pages/projects.ts";
import { partnerOrgsPage } from "./pages/partner/orgs.ts";
import { partnerOrgPage } from "./pages/partner/org.ts";
import { partnerSecretsPage } from "./pages/partner/secrets.ts";
import { partnerMembersPage } from "./pages/partner/members.ts";
import type { RouteDef } from "./router.ts";

export const ROUTES: RouteDef[] = [
  { path: "/", title: "Dashboard", page: noProjectPage, nav: "overview" },
  { path: "/sign-in", title: "Sign in", page: signInPage, public: true },
  { path: "/sign-up", title: "Create account", page: signUpPage, public: true },
  { path: "/accept-invite", title: "Accept invitation", page: acceptInvitePage, public: true },
  { path: "/claim", title: "Claim", page: claimPage },
  { path: "/app-connect/:provider", title: "App connection", page: appConnectPage, public: true },
  { path: "/mcp-servers", title: "MCP servers", page: mcpServerLandingPage, public: true },
  { path: "/mcp-servers/:serverId", title: "MCP server", page: mcpServerLandingPage, public: true },
  { path: "/p/:project", title: "Overview", page: overviewPage, nav: "overview" },
  { path: "/p/:project/agents", title: "Agents", page: agentsPage, nav: "agents" },
  { path: "/p/:project/agents/:agentId", title: "Agent", page: agentDetailPage, nav: "agents" },
  { path: "/p/:project/secrets", title: "Secrets", page: secretsPage, nav: "secrets" },
  { path: "/p/:project/apps", title: "Apps", page: appsPage, nav: "apps" },
  { path: "/p/:project/apps/:provider", title: "App", page: appDetailPage, nav: "apps" },
  { path: "/p/:project/mcp-servers", title: "MCP servers", page: mcpServersPage, nav: "mcp-servers" },
  { path: "/p/:project/mcp-servers/:serverId", title: "MCP server", page: mcpServerDetailPage, nav: "mcp-servers" },
  { path: "/p/:project/policy", title: "Policy", page: policyPage, nav: "policy" },
  { path: "/p/:project/approvals", title: "Approvals", page: approvalsPage, nav: "approvals" },
  { path: "/p/:project/logs", title: "Logs", page: logsPage, nav: "logs" },
  { path: "/p/:project/budgets", title: "Budgets", page: budgetsPage, nav: "budgets" },
  { path: "/p/:project/notifications", title: "Notifications", page: notificationsPage, nav: "notifications" },
  { path: "/p/:project/org", title: "Organization", page: organizationPage, nav: "organization" },
  { path: "/p/:project/org/secrets", title: "Organization secrets", page: orgSecretsPage, nav: "organization" },
  { path: "/p/:project/org/policy", title: "Organization policy", page: orgPolicyPage, nav: "organization" },
  { path: "/p/:project/org/notifications", title: "Organization notifications", page: orgNotificationsPage, nav: "organization" },
  { path: "/p/:project/org/budgets", title: "Organization budgets", page: orgBudgetsPage, nav: "organization" },
  { path: "/p/:project/org/team", title: "Team", page: teamPage, nav: "organization" },
  { path: "/p/:project/org/projects", title: "Projects", page: projectsPage, nav: "organization" },
  { path: "/p/:project/org/audit", title: "Audit log", page: auditPage, nav: "organization" },
  { path: "/partner", title: "Partner organizations", page: partnerOrgsPage, nav: "partner-orgs", area: "partner" },
  { path: "/partner/orgs/:orgId", title: "Partner organization", page: partnerOrgPage, nav: "partner-orgs", area: "partner" },
  { path: "/partner/secrets", title: "Partner secrets", page: partnerSecretsPage, nav: "partner-secrets", area: "partner" },
  { path: "/partner/members", title: "Partner members", page: partnerMembersPage, nav: "partner-members", area: "partner" },
];
