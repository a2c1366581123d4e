// Google Calendar (Google OAuth): the Calendar API under www.googleapis.com/calendar.
import { OAUTH_CLIENT_FIELDS, tool, type AppDefinition } from "../types.ts";

const API = "www.googleapis.com";
const C = "/calendar/v3/calendars/*"; // a calendar id, or `primary`

export const googleCalendar: AppDefinition = {
  id: "google-calendar",
  name: "Google Calendar",
  description: "Read and manage Google Calendar events.",
  connectionType: "oauth",
  fields: OAUTH_CLIENT_FIELDS,
  oauth: {
    authorizeUrl: "https://accounts.google.com/o/oauth2/v2/auth",
    tokenUrl: "https://oauth2.googleapis.com/token",
    scopes: ["openid", "email", "https://www.googleapis.com/auth/calendar"],
    pkce: true,
    authorizeParams: { access_type: "offline", prompt: "consent" },
    account: { url: "https://openidconnect.googleapis.com/v1/userinfo", label: (b) => b?.email ?? b?.name },
  },
  hosts: [{ host: API, paths: ["/calendar/*"], inject: [{ kind: "bearer" }] }],
  blocklist: [{ id: "calendar_web", name: "Google Calendar web", hostPattern: "calendar.google.com" }],
  tools: [
    tool("read", "list_calendars", "GET", API, "/calendar/v3/users/me/calendarList", "List calendars", "List the calendars on the user's list."),
    tool("read", "list_events", "GET", API, `${C}/events`, "List events", "List or search the events of a calendar."),
    tool("read", "get_event", "GET", API, `${C}/events/*`, "Get event", "Read one event and its instances."),
    tool("read", "query_free_busy", "POST", API, "/calendar/v3/freeBusy", "Query free/busy", "Read busy times of calendars."),
    tool("write", "create_event", "POST", API, `${C}/events`, "Create event", "Create an event."),
    tool("write", "quick_add_event", "POST", API, `${C}/events/quickAdd`, "Quick-add event", "Create an event from a text description."),
    tool("write", "update_event", "PATCH", API, `${C}/events/*`, "Update event", "Change an event."),
    tool("write", "replace_event", "PUT", API, `${C}/events/*`, "Replace event", "Replace an event."),
    tool("write", "delete_event", "DELETE", API, `${C}/events/*`, "Delete event", "Delete an event."),
    tool("write", "move_event", "POST", API, `${C}/events/*/move`, "Move event", "Move an event to another calendar."),
  ],
};
