// Shared HTTP types and helpers for route modules.
import type {
  FastifyBaseLogger,
  FastifyInstance,
  FastifyReply,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { IdempotentResult } from './idempotency.js';

export type App = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

/** Sends an idempotent outcome exactly as stored; a replay says so in Idempotent-Replayed. */
export function sendStored(reply: FastifyReply, result: IdempotentResult): FastifyReply {
  const { response, replayed } = result;
  reply.code(response.status);
  for (const [name, value] of Object.entries(response.headers)) reply.header(name, value);
  if (replayed) reply.header('Idempotent-Replayed', 'true');
  return sendJsonText(reply, response.body);
}

/** Sends JSON that is already text as it is: Fastify neither serialises again nor re-checks a string with a JSON type. */
export function sendJsonText(reply: FastifyReply, json: string): FastifyReply {
  reply.header('content-type', 'application/json; charset=utf-8');
  return reply.send(json);
}
