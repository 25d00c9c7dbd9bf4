// Which database errors mean "the database is not there right now" (a restart, a failover, a network cut) rather than
// a fault in the request or the code: those are answered 503 database_unavailable and retried, never 500.

/**
 * SQLSTATEs of a server that is going away, starting, read-only or full:
 * - class 08, connection exceptions;
 * - 57P01 admin_shutdown (a fast stop, `pg_terminate_backend`), 57P02 crash_shutdown (another backend crashed),
 *   57P03 cannot_connect_now (starting up, or in recovery), 57P05 idle_session_timeout;
 * - 25006 read_only_sql_transaction (a standby, or a primary just demoted), 25P03 idle_in_transaction_session_timeout;
 * - 53300 too_many_connections;
 * - 57014 query_canceled (statement_timeout: the server is too slow to answer in time).
 */
const UNAVAILABLE_STATES = new Set(['57P01', '57P02', '57P03', '57P05', '25006', '25P03', '53300', '57014']);

/** Errors of the socket under the connection: refused, reset, unreachable, timed out, the name not resolved. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** What pg and pg-pool say, in words only, when a connection ends, cannot be opened in time, or is no longer usable. */
const LOST_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'is not queryable',
  'terminating connection',
];

function codeOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** The connection under a query is gone (or never opened): the client holding it cannot be used again. */
export function isConnectionLost(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = codeOf(err);
  if (code !== undefined && (code.startsWith('08') || NETWORK_CODES.has(code) || code === '57P01' || code === '57P02'))
    return true;
  return LOST_MESSAGES.some((m) => err.message.includes(m));
}

/** The database cannot serve now but may soon: the request gets 503 with Retry-After, and background work backs off. */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (isConnectionLost(err)) return true;
  const code = codeOf(err);
  if (code !== undefined && UNAVAILABLE_STATES.has(code)) return true;
  // An error raised from inside an error (AggregateError from a failed connect to several addresses).
  if (err instanceof AggregateError) return err.errors.some(isDatabaseUnavailable);
  return false;
}
