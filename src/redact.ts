/**
 * Hides credentials in any text that may hold a connection string: error messages, log lines,
 * start-up banners. Every path that prints a store URL or an error from opening one goes through
 * here, so a password given in any of the forms PostgreSQL accepts never reaches a terminal or a
 * log collector:
 *   postgres://user:secret@host/db          → postgres://user:***@host/db
 *   postgres://user@host/db?password=secret → postgres://user@host/db?password=***
 *   host=db password=secret (libpq key=value form) → host=db password=***
 * The parameter names are libpq's (password, sslpassword) plus the usual spellings of secrets in
 * URLs (token, secret, api_key, access_token): a false positive only hides a value, never leaks one.
 */

/** `scheme://user:password@` — everything between the first ":" after the user and the "@". */
const USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/[^:@/\s?#]*):[^@\s]*@/gi;
/** `password=…` as a URL parameter or a libpq keyword, up to the next separator. */
const PARAMS =
  /(^|[?&;\s])((?:ssl)?password|passwd|pwd|secret|token|api[_-]?key|access[_-]?token)=('[^']*'|[^&;\s#]*)/gi;
/** A quick test before the regular expressions: most log lines hold nothing to redact. */
const MAYBE = /:\/\/|pass|pwd|secret|token|key=/i;

export function redactCredentials(text: string): string {
  if (!MAYBE.test(text)) return text;
  return text.replace(USERINFO, "$1:***@").replace(PARAMS, "$1$2=***");
}
