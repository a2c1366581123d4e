// Dropbox (OAuth app): RPC endpoints on api.dropboxapi.com, file transfer on content.dropboxapi.com.
import { OAUTH_CLIENT_FIELDS, tool, type AppDefinition } from "../types.ts";

const API = "api.dropboxapi.com";
const CONTENT = "content.dropboxapi.com";

export const dropbox: AppDefinition = {
  id: "dropbox",
  name: "Dropbox",
  description: "List, read, upload and share Dropbox files.",
  connectionType: "oauth",
  fields: OAUTH_CLIENT_FIELDS,
  oauth: {
    authorizeUrl: "https://www.dropbox.com/oauth2/authorize",
    tokenUrl: "https://api.dropboxapi.com/oauth2/token",
    scopes: ["account_info.read", "files.metadata.read", "files.metadata.write", "files.content.read", "files.content.write", "sharing.read", "sharing.write"],
    pkce: true,
    authorizeParams: { token_access_type: "offline" },
    // An RPC endpoint: POST with no body.
    account: { url: "https://api.dropboxapi.com/2/users/get_current_account", method: "POST", label: (b) => b?.email ?? b?.name?.display_name },
  },
  hosts: [
    { host: API, inject: [{ kind: "bearer" }] },
    { host: CONTENT, inject: [{ kind: "bearer" }] },
  ],
  blocklist: [
    { id: "content", name: "Dropbox file transfer", hostPattern: CONTENT },
    { id: "shared_links", name: "Dropbox shared-link downloads", hostPattern: "dl.dropboxusercontent.com" },
  ],
  resources: "folders",
  // Every Dropbox API call is a POST.
  tools: [
    tool("read", "list_folder", "POST", API, "/2/files/list_folder/*", "List folder", "List a folder (and continue the listing)."),
    tool("read", "get_metadata", "POST", API, "/2/files/get_metadata", "Get metadata", "Read a file's or folder's metadata."),
    tool("read", "search_files", "POST", API, "/2/files/search*", "Search files", "Search files and folders (search_v2 and continue)."),
    tool("read", "download_file", "POST", CONTENT, "/2/files/download", "Download file", "Download a file's content."),
    tool("read", "get_thumbnail", "POST", CONTENT, "/2/files/get_thumbnail_v2", "Get thumbnail", "Download an image thumbnail."),
    tool("read", "get_current_account", "POST", API, "/2/users/get_current_account", "Get account", "Read the signed-in account."),
    tool("read", "list_shared_links", "POST", API, "/2/sharing/list_shared_links", "List shared links", "List shared links."),
    tool("write", "upload_file", "POST", CONTENT, "/2/files/upload", "Upload file", "Upload a file up to 150 MB."),
    tool("write", "upload_session", "POST", CONTENT, "/2/files/upload_session/*", "Upload in chunks", "Start, append to and finish an upload session."),
    tool("write", "create_folder", "POST", API, "/2/files/create_folder_v2", "Create folder", "Create a folder."),
    tool("write", "move", "POST", API, "/2/files/move_v2", "Move", "Move or rename a file or folder."),
    tool("write", "copy", "POST", API, "/2/files/copy_v2", "Copy", "Copy a file or folder."),
    tool("write", "delete", "POST", API, "/2/files/delete_v2", "Delete", "Delete a file or folder."),
    tool("write", "create_shared_link", "POST", API, "/2/sharing/create_shared_link_with_settings", "Create shared link", "Share a file or folder by link."),
  ],
};
