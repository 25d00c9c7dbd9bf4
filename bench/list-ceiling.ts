// The most any list design could serve here while checking each request's token in the database (the contract:
// a rotated token fails at once on every node): a bare Fastify route that makes one round trip to PostgreSQL and then
// sends a 60 KB page (100 items) already in memory, loaded like (c), 64 connections. Compare with hello and (c).
//
//   node --import tsx bench/list-ceiling.ts          against DATABASE_URL, else the machine's PostgreSQL
import { loadServer, nodeArgs } from './lib/service.js';

if (process.argv[2] === 'serve') {
  const Fastify = (await import('fastify')).default;
  const { createPool } = await import('../src/db/pool.js');
  const pool = createPool(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres', 12);
  const page = JSON.stringify({
    data: Array.from({ length: 100 }, (_, i) => ({ n: i, pad: 'x'.repeat(580) })),
    has_more: true,
    next_cursor: null,
  });
  const app = Fastify({ logger: false });
  app.get('/page', async (_request, reply) => {
    await pool.query('SELECT $1::uuid AS token_check', ['00000000-0000-4000-8000-000000000000']);
    return reply.type('application/json; charset=utf-8').send(page);
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  process.stdout.write(`${JSON.stringify({ port: (app.server.address() as { port: number }).port })}\n`);
} else {
  // npm start's young generation (16 MB semi-spaces), as the service has it.
  const r = await loadServer(
    ['--max-semi-space-size=16', ...nodeArgs('bench/list-ceiling.ts'), 'serve'],
    '/page',
    10,
    2,
  );
  process.stdout.write(
    `one round trip + a 60 KB page in memory, 64 connections: ${r.per_second}/s, p50 ${r.p50_ms} ms, p99 ${r.p99_ms} ms, machine ${r.machine_busy_pct}% busy\n`,
  );
}
