// Google Drive (Google OAuth): the Drive API and its upload endpoints under www.googleapis.com.
import { OAUTH_CLIENT_FIELDS, tool, type AppDefinition } from "../types.ts";

const API = "www.googleapis.com";
const F = "/drive/v3/files";
const UF = "/upload/drive/v3/files";

export const googleDrive: AppDefinition = {
  id: "google-drive",
  name: "Google Drive",
  description: "Find, read, upload and share files in Google Drive.",
  connectionType: "oauth",
  fields: OAUTH_CLIENT_FIELDS,
  oauth: {
    authorizeUrl: "https://accounts.google.com/o/oauth2/v2/auth",
    tokenUrl: "https://oauth2.googleapis.com/token",
    scopes: ["openid", "email", "https://www.googleapis.com/auth/drive"],
    pkce: true,
    authorizeParams: { access_type: "offline", prompt: "consent" },
    account: { url: "https://openidconnect.googleapis.com/v1/userinfo", label: (b) => b?.email ?? b?.name },
  },
  hosts: [{ host: API, paths: ["/drive/*", "/upload/drive/*"], inject: [{ kind: "bearer" }] }],
  blocklist: [
    { id: "drive_web", name: "Google Drive web", hostPattern: "drive.google.com" },
    { id: "drive_downloads", name: "Google Drive downloads", hostPattern: "drive.usercontent.google.com" },
    { id: "docs_web", name: "Google Docs web", hostPattern: "docs.google.com" },
  ],
  tools: [
    tool("read", "list_files", "GET", API, F, "List files", "List or search files."),
    // Covers metadata, `?alt=media` downloads, exports, permissions, comments and revisions of one file.
    tool("read", "get_file", "GET", API, `${F}/*`, "Get file", "Read a file's metadata or content."),
    tool("read", "list_drives", "GET", API, "/drive/v3/drives", "List shared drives", "List shared drives."),
    tool("read", "get_about", "GET", API, "/drive/v3/about", "Get about", "Read the user and storage quota."),
    tool("read", "list_changes", "GET", API, "/drive/v3/changes", "List changes", "List recent changes."),
    tool("write", "create_file", "POST", API, F, "Create file", "Create a file or folder (metadata only)."),
    tool("write", "upload_file", "POST", API, UF, "Upload file", "Upload a new file (simple, multipart or resumable start)."),
    tool("write", "update_file_content", "PATCH", API, `${UF}/*`, "Update file content", "Replace a file's content."),
    tool("write", "resume_upload", "PUT", API, `${UF}/*`, "Resume upload", "Send the bytes of a resumable upload."),
    tool("write", "update_file", "PATCH", API, `${F}/*`, "Update file", "Rename, move or edit a file's metadata."),
    tool("write", "copy_file", "POST", API, `${F}/*/copy`, "Copy file", "Copy a file."),
    tool("write", "delete_file", "DELETE", API, `${F}/*`, "Delete file", "Permanently delete a file."),
    tool("write", "share_file", "POST", API, `${F}/*/permissions`, "Share file", "Grant someone access to a file."),
    tool("write", "create_comment", "POST", API, `${F}/*/comments`, "Comment on file", "Add a comment to a file."),
  ],
};
