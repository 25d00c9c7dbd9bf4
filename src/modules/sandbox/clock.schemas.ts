// The sandbox test clock's request and answers (GET /v1/sandbox/clock, POST /v1/sandbox/clock/advance); descriptions
// write the reference docs.
import { Type, type Static } from 'typebox';
import { component, DateTime, describedAs, Uuid } from '../../platform/schemas.js';
import type { ClockRow, Moved } from './clock.repository.js';

/** The most one move may advance the clock: 30 days, past the longest deadline it pulls (idempotency retention's cap). */
export const MAX_ADVANCE_SECONDS = 30 * 86_400;

export const AdvanceClockBody = component(
  'AdvanceSandboxClockRequest',
  Type.Object(
    {
      seconds: Type.Integer({
        minimum: 1,
        maximum: MAX_ADVANCE_SECONDS,
        description:
          "How far to move the workspace's clock forward, in whole seconds: 1 to 2592000 (30 days) per move; more " +
          'is 400 `validation_failed` naming the field. Move again for more. The clock never goes back.',
      }),
    },
    { additionalProperties: false },
  ),
);
export type AdvanceClockBody = Static<typeof AdvanceClockBody>;

const count = (what: string) => Type.Integer({ minimum: 0, description: what });

const MovedSchema = component(
  'SandboxClockMoved',
  Type.Object(
    {
      collections: count('Open (`created`, `pending`) collections whose `expires_at` was pulled earlier.'),
      checkout_sessions: count('Open checkout sessions whose `expires_at` was pulled earlier.'),
      webhook_deliveries: count('Pending webhook deliveries whose next attempt was pulled earlier.'),
      simulator_steps: count("Sandbox operations whose simulator's next step was pulled earlier."),
      idempotency_records: count('Stored idempotency outcomes whose end of retention was pulled earlier.'),
      idempotency_records_deleted: count('Stored idempotency outcomes taken past their retention: deleted, keys free.'),
    },
    { additionalProperties: false },
  ),
);

export const SandboxClockSchema = component(
  'SandboxClock',
  Type.Object(
    {
      workspace_id: Uuid('The workspace whose clock this is.'),
      offset_seconds: Type.Integer({
        minimum: 0,
        description: "How far the workspace's clock is ahead of the server's: the sum of its moves, in seconds.",
      }),
      now: DateTime("The workspace's time: `server_time` plus `offset_seconds`. Deadlines fall due by it."),
      server_time: DateTime(
        "The server's time. API timestamps (`created_at`, `expires_at`, events) stay on it: a move shows as pending " +
          'deadlines pulled earlier by its duration.',
      ),
      advanced_at: Type.Union([DateTime('When the clock was last moved (server time).'), Type.Null()], {
        description: 'When the clock was last moved (server time); null if never.',
      }),
      moved: Type.Optional(describedAs(MovedSchema, 'In the answer to a move only: what it pulled earlier, by kind.')),
    },
    {
      additionalProperties: false,
      description: "A sandbox workspace's clock: its offset from the server's time, and the workspace's time by it.",
    },
  ),
);
export type SandboxClock = Static<typeof SandboxClockSchema>;

export function toClockApi(workspaceId: string, row: ClockRow): SandboxClock {
  const offset = Number(row.clock_offset_seconds);
  return {
    workspace_id: workspaceId,
    offset_seconds: offset,
    now: new Date(row.server_time.getTime() + offset * 1000).toISOString(),
    server_time: row.server_time.toISOString(),
    advanced_at: row.clock_advanced_at?.toISOString() ?? null,
  };
}

export function toClockAdvanceApi(workspaceId: string, row: ClockRow, moved: Moved): SandboxClock {
  return { ...toClockApi(workspaceId, row), moved };
}
