// Whose managed policy rules a service reads or writes: a project's, or its organization's. Its own file so that
// the services policy.ts uses (blocklist, grants, connections) can name it without importing policy.ts.
export type PolicyOwner = { scope: "project"; organizationId: string; projectId: string } | { scope: "organization"; organizationId: string };
