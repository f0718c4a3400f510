/**
 * The job every framework example serves: a welcome e-mail. An address at bounce.test fails for
 * good, so the dashboard's dead-letter queue has something to retry or discard.
 */
import { defineJob, PermanentError } from "errand";
import { z } from "zod";

export const sendWelcome = defineJob({
  name: "send-welcome",
  queue: "emails",
  schema: z.object({ to: z.string().email() }),
  maxAttempts: 1,
  async run({ to }, ctx) {
    if (to.endsWith("@bounce.test")) throw new PermanentError(`mailbox ${to} does not exist`);
    ctx.log.info({ to }, "sending the welcome e-mail");
    return { sent: true };
  },
});

export const jobs = [sendWelcome];

/** Where each example listens: PORT (0 picks a free one), on loopback. */
export const port = Number(process.env.PORT ?? 3000);
