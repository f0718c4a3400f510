import { type Logger as PinoLogger, pino } from "pino";
import pretty from "pino-pretty";

export type Logger = PinoLogger;

export interface LoggerOptions {
  level?: string;
  /** Force pretty (true) or JSON (false) output; default: pretty on a terminal. */
  pretty?: boolean;
  destination?: NodeJS.WritableStream;
}

/**
 * Structured JSON (pino) when not on a terminal, readable lines on one. Payloads are never
 * logged unless the caller asks (ERRAND_LOG_PAYLOADS=1 / logPayloads option).
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? process.env.ERRAND_LOG_LEVEL ?? "info";
  const destination = options.destination ?? process.stderr;
  const isTty = Boolean((destination as { isTTY?: boolean }).isTTY);
  const usePretty = options.pretty ?? isTty;
  const base = { name: "errand" };
  if (usePretty) {
    const stream = pretty({
      destination: destination as unknown as number,
      sync: true,
      colorize: isTty,
      ignore: "pid,hostname,name",
      translateTime: "HH:MM:ss.l",
    });
    return pino({ level, base }, stream);
  }
  return pino({ level, base }, destination as NodeJS.WritableStream & { write: (s: string) => boolean });
}

/** A logger that drops everything (tests, embedded use). */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}
