// A tiny element builder: the dashboard is plain DOM (no framework, a lean bundle). Text always goes in as
// text nodes, never as HTML, so nothing from the API or the URL can become markup.
export type Child = Node | string | number | null | undefined | false | Child[];
export type Props = Record<string, unknown>;

const PROPERTIES = new Set(["value", "checked", "disabled", "selected", "required", "hidden", "readOnly", "multiple", "open"]);

function append(parent: Node, child: Child): void {
  if (child === null || child === undefined || child === false) return;
  if (Array.isArray(child)) for (const c of child) append(parent, c);
  else parent.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
}

function applyProps(el: Element, props: Props | null | undefined): void {
  if (!props) return;
  for (const [key, value] of Object.entries(props)) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2).toLowerCase(), value as EventListener);
    else if (key === "class") el.setAttribute("class", String(value));
    else if (key === "for") el.setAttribute("for", String(value));
    else if (PROPERTIES.has(key)) (el as unknown as Record<string, unknown>)[key] = value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
}

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props?: Props | null, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  applyProps(el, props);
  append(el, children);
  return el;
}

export function svg(tag: string, props?: Props | null, ...children: Child[]): SVGElement {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  applyProps(el, props);
  append(el, children);
  return el;
}

export function replace(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  append(el, children);
}

let ids = 0;
/** A unique element id (labels, descriptions). */
export const uid = (prefix = "f") => `${prefix}-${++ids}`;
