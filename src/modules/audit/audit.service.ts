// The audit log: records what the hook of src/platform/audit.ts hands over, and reads a workspace's log as pages of
// JSON or as CSV. Who may read which workspace's log is decided here: an integrator token its own only, the admin
// token any one it names.
import type { Db } from '../../db/pool.js';
import type { AuditEntry } from '../../platform/audit.js';
import type { AuthContext } from '../../platform/auth.js';
import { ApiError, notFound } from '../../platform/errors.js';
import { uuidv7 } from '../../platform/ids.js';
import type { CursorCodec, Page } from '../../platform/pagination.js';
import * as repo from './audit.repository.js';
import { AUDIT_CSV_COLUMNS, toAuditEventApi, type AuditEvent, type ListAuditEventsQuery } from './audit.schemas.js';

/** Rows one CSV answer holds at most; the next ones follow with the `Next-Cursor` header as `cursor`. */
export const CSV_PAGE_ROWS = 10_000;
/** Rows read per statement while a CSV answer is built. */
const CSV_BATCH = 1000;

export class AuditService {
  constructor(
    private readonly db: Db,
    private readonly cursors: CursorCodec,
  ) {}

  /** Appends one event (its own statement, after the write it records: see docs/guides/audit-log.md). */
  async record(entry: AuditEntry): Promise<void> {
    await repo.insertAuditEvent(this.db, uuidv7(entry.occurredAt.getTime()), entry);
  }

  /** The workspace whose log `auth` reads with `query`: its own, or (admin) the one it names. */
  private workspaceOf(auth: AuthContext, query: ListAuditEventsQuery): string {
    if (auth.audience === 'admin') {
      if (query.workspace_id === undefined)
        throw new ApiError(
          'validation_failed',
          "The admin token reads one workspace's log at a time: give workspace_id.",
          {
            errors: [{ field: 'workspace_id', message: 'is required with the admin token' }],
          },
        );
      return query.workspace_id;
    }
    if (query.workspace_id !== undefined && query.workspace_id !== auth.workspaceId) throw notFound('workspace');
    return auth.workspaceId;
  }

  async list(auth: AuthContext, query: ListAuditEventsQuery): Promise<Page<AuditEvent>> {
    const workspaceId = this.workspaceOf(auth, query);
    const { limit, filter } = this.cursors.filterOf(query);
    const rows = await repo.listAuditEvents(this.db, workspaceId, scopeOf(query), filter);
    return this.cursors.page(rows, limit, toAuditEventApi);
  }

  /**
   * The same events as CSV (a header line, then one line per event, newest first): up to CSV_PAGE_ROWS, and the
   * cursor of what follows, if anything does.
   */
  async csv(auth: AuthContext, query: ListAuditEventsQuery): Promise<{ csv: string; nextCursor: string | null }> {
    const workspaceId = this.workspaceOf(auth, query);
    const scope = scopeOf(query);
    const lines = [AUDIT_CSV_COLUMNS.join(',')];
    let cursor = query.cursor;
    let taken = 0;
    for (;;) {
      const want = Math.min(CSV_BATCH, CSV_PAGE_ROWS - taken);
      const { filter } = this.cursors.filterOf({ ...query, cursor, limit: want });
      const rows = await repo.listAuditEvents(this.db, workspaceId, scope, filter);
      const page = this.cursors.page(rows, want, toAuditEventApi);
      for (const event of page.data) lines.push(AUDIT_CSV_COLUMNS.map((c) => csvCell(event[c])).join(','));
      taken += page.data.length;
      cursor = page.next_cursor ?? undefined;
      if (cursor === undefined || taken >= CSV_PAGE_ROWS) break;
    }
    return { csv: `${lines.join('\r\n')}\r\n`, nextCursor: cursor ?? null };
  }
}

function scopeOf(query: ListAuditEventsQuery): repo.AuditScope {
  return { action: query.action, actorId: query.actor_id, objectId: query.object_id };
}

/**
 * RFC 4180: a cell with a comma, quote or line break is quoted, its quotes doubled. A cell a spreadsheet would read
 * as a formula (=, +, -, @, tab, CR first: an object id from a request path is the client's text) gets a leading '.
 */
export function csvCell(value: string | number | null): string {
  let text = value === null ? '' : String(value);
  if (typeof value === 'string' && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}
