/**
 * Option objects take only the fields errand knows. An unknown one is a typo (`dealy`, `runat`,
 * `maxAttemps`) or a field put in the wrong place, and ignoring it would run the job now, with
 * three attempts, without the limit: so it is a ValidationError that names it (and the known
 * field it is close to), thrown before anything is stored. TypeScript's excess-property check
 * catches only object literals in TypeScript; JavaScript callers, variables and spreads need this.
 */
import { ValidationError } from "./errors.js";
import { quoted } from "./payload.js";

/** The fields one kind of options object may have, in the order the error lists them. */
export type KnownFields = ReadonlySet<string>;

export function knownFields(...names: string[]): KnownFields {
  return new Set(names);
}

/**
 * Throws when `value` has an enumerable field not in `known`; `what` names the object in the
 * error ("enqueue options", "item 3"), `hint` (optional) says where such a field belongs. A field
 * whose value is undefined counts too: `{ dealy: undefined }` is still a typo. Inherited
 * enumerable fields are checked as well, since reading an option reads them. No allocation
 * unless it throws: this runs on every enqueue.
 */
export function onlyKnownFields(value: object, known: KnownFields, what: string, hint?: string): void {
  for (const field in value) {
    if (!known.has(field)) throw unknownFieldError(field, known, what, hint);
  }
}

/** The error for one unknown field (for a caller with its own exceptions to the rule). */
export function unknownFieldError(
  field: string,
  known: KnownFields,
  what: string,
  hint?: string,
): ValidationError {
  const close = closestField(field, known);
  const suggestion = close === undefined ? "" : `; did you mean "${close}"?`;
  return new ValidationError(
    `${what} has an unknown field ${quoted(field)}${suggestion} (known: ${[...known].join(", ")})${hint ? `. ${hint}` : ""}`,
  );
}

/**
 * The known field a typo most likely meant: the same but for case, or else the nearest within
 * an edit distance of 2 (1 for names of 4 characters or fewer, where 2 edits make another word).
 * Undefined when none is that close.
 */
export function closestField(field: string, known: Iterable<string>): string | undefined {
  const given = field.toLowerCase();
  const limit = given.length <= 4 ? 1 : 2;
  let best: string | undefined;
  let bestDistance = limit + 1;
  for (const candidate of known) {
    const distance = editDistance(given, candidate.toLowerCase(), limit);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/**
 * Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
 * neighbours (`dealy` → `delay` is one edit) — or `limit + 1` as soon as it is known to exceed
 * `limit` (field names are short; a long unknown field costs no more than a length check).
 */
function editDistance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let beforePrevious: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d = Math.min(d, beforePrevious[j - 2] + 1);
      current.push(d);
      if (d < rowMin) rowMin = d;
    }
    if (rowMin > limit) return limit + 1;
    beforePrevious = previous;
    previous = current;
  }
  return previous[b.length];
}
