/**
 * Which methods a path answers, for 405 Method Not Allowed with `Allow` (RFC 9110 §15.5.6): a wrong method
 * on a known path is told apart from a path that does not exist.
 */
export interface PathMethods {
  /** OpenAPI-style: `/user/{id}`. */
  path: string;
  method: string;
}

/** `/user/{id}` as Express matches it: case-insensitive, an optional trailing slash, a parameter is one segment. */
function pathPattern(path: string): RegExp {
  const source = path
    .split(/\{\w+\}/)
    .map((literal) => literal.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('[^/]+');
  return new RegExp(`^${source}/?$`, 'i');
}

export function allowedMethodsOf(routes: PathMethods[]): (path: string) => string[] {
  const byPath = new Map<string, Set<string>>();
  for (const route of routes) {
    const methods = byPath.get(route.path) ?? new Set<string>();
    methods.add(route.method.toUpperCase());
    // Express answers HEAD wherever it answers GET.
    if (route.method.toUpperCase() === 'GET') methods.add('HEAD');
    byPath.set(route.path, methods);
  }
  const patterns = [...byPath].map(([path, methods]) => ({ pattern: pathPattern(path), methods, literal: !path.includes('{') }));
  return (path) => {
    const matching = patterns.filter(({ pattern }) => pattern.test(path));
    // A path without parameters that matches is the request's alone (the app mounts those first): `/intent/batch`
    // is not an id of `/intent/{id}`.
    const owners = matching.some((entry) => entry.literal) ? matching.filter((entry) => entry.literal) : matching;
    return [...new Set(owners.flatMap(({ methods }) => [...methods]))].sort();
  };
}
