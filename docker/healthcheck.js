// The image's HEALTHCHECK: GET a URL, or a path on 127.0.0.1:$PORT (the api's own port), and exit 0 on a 2xx
// answer, 1 on anything else (node:*-slim images have no curl or wget).
const target = process.argv[2] ?? '/readyz';
const url = target.startsWith('/') ? `http://127.0.0.1:${process.env.PORT || 3000}${target}` : target;
fetch(url, { signal: AbortSignal.timeout(4_000) }).then(
  (response) => {
    process.stdout.write(`GET ${url}: ${response.status}\n`);
    process.exit(response.ok ? 0 : 1);
  },
  (error) => {
    process.stdout.write(`GET ${url}: ${error.message}\n`);
    process.exit(1);
  },
);
