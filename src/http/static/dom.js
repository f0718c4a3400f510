// DOM helpers: build elements (h, s) with values set as text, never as markup.

/** h("a", { href, class, text, onclick, data: {...}, attrs: {...} }, ...children) */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  applyProps(el, props);
  append(el, children);
  return el;
}

export const SVG_NS = "http://www.w3.org/2000/svg";
export function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs))
    if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  append(el, children);
  return el;
}

export function applyProps(el, props) {
  for (const [k, v] of Object.entries(props)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k === "text") el.textContent = String(v);
    else if (k === "data") for (const [dk, dv] of Object.entries(v)) el.dataset[dk] = String(dv);
    else if (k === "attrs") for (const [ak, av] of Object.entries(v)) el.setAttribute(ak, String(av));
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k in el) el[k] = v;
    else el.setAttribute(k, String(v));
  }
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
}
