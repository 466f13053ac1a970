import fs from 'node:fs';
import path from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';

/**
 * The workflow histories committed in `dir` (one JSON file each, the workflow id its name), for the replay
 * guards. The files hold protobufjs's own JSON of the fetched History (see test/ledger.test.ts), so fromObject
 * reads them back exactly (int64 as Long, enums by name, bytes base64).
 */
export function committedHistories(dir: string): Array<{ workflowId: string; history: temporal.api.history.v1.History }> {
  return fs
    .readdirSync(dir)
    .filter((name) => name.endsWith('.json'))
    .sort()
    .map((name) => ({
      workflowId: name.replace(/\.json$/, ''),
      history: temporal.api.history.v1.History.fromObject(JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8'))),
    }));
}

/** A logger for the workflow bundler and replayer that says nothing (the suites assert on results, not logs). */
export const silentLogger = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

/** The patched() ids a history's patch markers record, in order (a marker's `patch-data` payload names its id). */
export function patchIdsOf(history: temporal.api.history.v1.IHistory): string[] {
  return (history.events ?? []).flatMap((event) => {
    const marker = event.markerRecordedEventAttributes;
    const payload = marker?.markerName === 'core_patch' ? marker.details?.['patch-data']?.payloads?.[0] : undefined;
    return payload ? [defaultPayloadConverter.fromPayload<{ id: string }>(payload).id] : [];
  });
}
