// Live lists: poll while the tab is visible and patch table rows in place, keyed by id, so
// that an unchanged row keeps its element (focus, checkbox, selection, scroll stay put) and
// only new or changed rows are drawn. No flicker: the table is never emptied between polls.

import { every } from "./shell.js";

/** How often a live list asks the server again. */
export const LIVE_MS = 3000;

/**
 * Runs `load` every LIVE_MS while this view is shown and the tab is visible; a tab coming
 * back into view loads at once. A failed poll is skipped (the next one tries again).
 */
export function liveRefresh(load, isCurrent) {
  let busy = false;
  const tick = async () => {
    if (busy || document.hidden || !isCurrent()) return;
    busy = true;
    try {
      await load();
    } catch {
      /* the next poll tries again */
    } finally {
      busy = false;
    }
  };
  every(LIVE_MS, tick);
  const onVisible = () => {
    if (!isCurrent()) document.removeEventListener("visibilitychange", onVisible);
    else if (!document.hidden) tick();
  };
  document.addEventListener("visibilitychange", onVisible);
}

/**
 * Makes `tbody` hold `rows` (each a <tr> with data-key and data-sig), reusing the row already
 * there when its key and signature are unchanged. Answers whether anything changed.
 */
export function patchRows(tbody, rows) {
  const old = new Map([...tbody.children].map((tr) => [tr.dataset.key, tr]));
  let changed = tbody.children.length !== rows.length;
  rows.forEach((row, i) => {
    const kept = old.get(row.dataset.key);
    const el = kept && kept.dataset.sig === row.dataset.sig ? kept : row;
    if (tbody.children[i] !== el) {
      tbody.insertBefore(el, tbody.children[i] || null);
      changed = true;
    }
  });
  while (tbody.children.length > rows.length) tbody.lastElementChild.remove();
  return changed;
}

/** Marks a row for patchRows: its key, and a signature of what it shows. */
export function keyed(tr, key, shown) {
  tr.dataset.key = String(key);
  tr.dataset.sig = JSON.stringify(shown);
  return tr;
}
