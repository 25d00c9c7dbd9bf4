// The floor for any route on this machine: a bare Fastify "hello" route (no hooks, no logging, no database),
// run by the benchmark in a process of its own, as the service is. Prints its port and serves until SIGINT.
import Fastify from 'fastify';

const app = Fastify({ logger: false });
app.get('/hello', async () => ({ hello: 'world' }));
await app.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`${JSON.stringify({ port: (app.server.address() as { port: number }).port })}\n`);
process.on('SIGINT', () => void app.close().then(() => process.exit(0)));
