/** app/api/cron/tick/route.ts: the tick endpoint, for Vercel Cron (GET) or any scheduler (POST). */
import { tick } from "../../../../lib/errand";

export const runtime = "nodejs";
export const dynamic = "force-dynamic";

export const GET = tick;
export const POST = tick;
