import pino, { type DestinationStream, type Logger } from 'pino';

/**
 * Paths pino blanks in every log line. Secrets and personal data never reach a log: keys, webhook
 * secrets, names, emails, birth dates, addresses and card or bank numbers.
 */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-api-key"]',
  '*.api_key',
  '*.apiKey',
  '*.secret',
  '*.password',
  '*.authorization',
  '*.email',
  '*.name',
  '*.date_of_birth',
  '*.address',
  '*.phone_number',
  '*.government_id',
  '*.first_name',
  '*.last_name',
  '*.address_line_1',
  '*.address_line_2',
  // Postgres puts the failing row's values in an error's `detail` ("Failing row contains (...)").
  '*.detail',
  '*.account_number',
  '*.routing_number',
  '*.number',
  '*.cvc',
];

export function createLogger(level: string, name = 'ledger', destination?: DestinationStream): Logger {
  return pino(
    {
      name,
      level,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}

export type { Logger };
