/**
 * app/admin/jobs/[[...path]]/route.ts: the dashboard and its JSON API at /admin/jobs and below.
 * A route handler gets the Request with its body unread, which errand's handler reads itself.
 */
import { dashboard } from "../../../../lib/errand";

export const runtime = "nodejs"; // errand needs Node's APIs (better-sqlite3, node-postgres)
export const dynamic = "force-dynamic";

export const GET = dashboard;
export const POST = dashboard;
