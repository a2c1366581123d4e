// The API's route table: method and path template (`/v1/agents/:agentId`) → route, looked up by a request's
// path alone (docs/api.md#routing; the path comes from requestTarget.ts). One tree per method; at each
// segment a literal is tried before a parameter (`/agents/default` before `/agents/:agentId`), backing off to
// the parameter when the literal leads nowhere. A parameter matches one non-empty segment and is
// percent-decoded (kept as sent when it does not decode); one trailing slash is ignored.

interface Node<T> {
  literals: Map<string, Node<T>>;
  param: Node<T> | null;
  /** The route ending here, with its parameter names in path order. */
  end: { value: T; names: string[] } | null;
}

export interface RouteMatch<T> {
  value: T;
  params: Record<string, string>;
}

const newNode = <T>(): Node<T> => ({ literals: new Map(), param: null, end: null });

function decode(segment: string): string {
  if (!segment.includes("%")) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

export class Router<T> {
  readonly #trees = new Map<string, Node<T>>();

  add(method: string, template: string, value: T): void {
    let tree = this.#trees.get(method);
    if (!tree) this.#trees.set(method, (tree = newNode()));
    let node = tree;
    const names: string[] = [];
    for (const segment of template.split("/").slice(1)) {
      if (segment.startsWith(":")) {
        names.push(segment.slice(1));
        node = node.param ??= newNode();
      } else {
        let next = node.literals.get(segment);
        if (!next) node.literals.set(segment, (next = newNode()));
        node = next;
      }
    }
    if (node.end) throw new Error(`router: ${method} ${template} is defined twice`);
    node.end = { value, names };
  }

  /** The route for `method` at `path` (a URL pathname: starts with `/`, percent-encoded), or null. */
  find(method: string, path: string): RouteMatch<T> | null {
    const tree = this.#trees.get(method);
    if (!tree || !path.startsWith("/")) return null;
    const trimmed = path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path;
    const segments = trimmed.split("/").slice(1);
    const values: string[] = [];
    const end = walk(tree, segments, 0, values);
    if (!end) return null;
    const params: Record<string, string> = {};
    end.names.forEach((name, i) => (params[name] = decode(values[i]!)));
    return { value: end.value, params };
  }
}

function walk<T>(node: Node<T>, segments: string[], i: number, values: string[]): Node<T>["end"] {
  if (i === segments.length) return node.end;
  const segment = segments[i]!;
  const literal = node.literals.get(segment);
  if (literal) {
    const end = walk(literal, segments, i + 1, values);
    if (end) return end;
  }
  if (node.param && segment !== "") {
    values.push(segment);
    const end = walk(node.param, segments, i + 1, values);
    if (end) return end;
    values.pop();
  }
  return null;
}
