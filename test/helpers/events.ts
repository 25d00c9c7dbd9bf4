// Events recorded straight into a database, as the lifecycle records them (the event row and its outbox row in one
// statement), for the webhook tests and the benchmark: a backlog of `count` at once, with fresh ids and one time.
export interface Queries {
  query(text: string, values: unknown[]): Promise<unknown>;
}

export async function recordEvents(
  db: Queries,
  workspaceId: string,
  type: string,
  count: number,
  data: unknown = {},
): Promise<void> {
  await db.query(
    `WITH e AS (INSERT INTO events (id, workspace_id, type, object_type, object_id, data, created_at)
       SELECT gen_random_uuid(), $1::uuid, $2::text, split_part($2::text, '.', 1), gen_random_uuid(), $3::jsonb, $5::timestamptz
       FROM generate_series(1, $4::int)
       RETURNING id, workspace_id, created_at)
     INSERT INTO outbox (workspace_id, event_id, created_at) SELECT workspace_id, id, created_at FROM e`,
    [workspaceId, type, JSON.stringify(data), count, new Date()],
  );
}
