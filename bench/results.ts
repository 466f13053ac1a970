import fs from 'node:fs';
import path from 'node:path';

/** Where every bench writes its JSON summary (git-ignored; the dated records beside them are kept); `npm run bench` collects what appears here. */
export const RESULTS_DIR = path.resolve(__dirname, 'results');

/** Writes `data` to bench/results/<name>-<time>.json and returns the file's path. */
export function writeResults(name: string, data: unknown): string {
  fs.mkdirSync(RESULTS_DIR, { recursive: true });
  const file = path.join(RESULTS_DIR, `${name}-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  fs.writeFileSync(file, `${JSON.stringify(data, null, 2)}\n`);
  return file;
}
