/**
 * The JSON answer of the route modules: security.ts's, with the security headers every answer
 * carries — a 404 and the tick's answers had none before (a helper's scan of every response).
 */
export { jsonResponse as json } from "./security.js";
