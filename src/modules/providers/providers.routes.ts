// Inbound provider callbacks: public (the provider has no token), authenticated by the provider's signature
// over the raw body, and safe to receive twice.
import { Type } from 'typebox';
import { ApiError } from '../../platform/errors.js';
import type { App } from '../../platform/http.js';
import { problemResponses } from '../../platform/schemas.js';
import { CallbackBody, SIGNATURE_HEADER } from './callback-protocol.js';
import type { ProviderNotices } from './notices.service.js';

export function providersRoutes(app: App, notices: ProviderNotices): void {
  app.post(
    '/v1/providers/:provider/callbacks',
    {
      schema: {
        operationId: 'receiveProviderCallback',
        tags: ['Providers'],
        summary: 'Receive a rail provider callback',
        description:
          `For rail providers, not integrators. The body is signed with the provider's callback secret: \`${SIGNATURE_HEADER}: t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body">\`, ` +
          'at most 5 minutes old. A bad signature is 401 `invalid_signature`. A notice received again (same `notice_id`) changes nothing and ' +
          'answers `duplicate`; a status the lifecycle cannot reach answers `refused` (and is logged).',
        params: Type.Object({ provider: Type.String({ maxLength: 40, description: 'The provider name (`sandbox`, or a gateway of PROVIDERS_FILE).' }) }),
        // Optional in the schema so that a missing signature is 401 invalid_signature, like a wrong one.
        headers: Type.Object({ [SIGNATURE_HEADER]: Type.Optional(Type.String({ description: 't=<unix seconds>,v1=<hex HMAC-SHA256>' })) }),
        body: CallbackBody,
        response: {
          200: Type.Object(
            {
              received: Type.Literal(true, { description: 'Always true: the notice was verified and recorded.' }),
              outcome: Type.Enum(['applied', 'duplicate', 'refused'], { description: 'What the notice did.' }),
            },
            { additionalProperties: false },
          ),
          ...problemResponses(400, 401, 404, 413, 415),
        },
      },
    },
    async (request) => {
      if (request.rawBody === undefined) throw new ApiError('validation_failed', 'The callback has no body.');
      const outcome = await notices.receive(request.params.provider, request.rawBody, request.headers);
      return { received: true as const, outcome };
    },
  );
}
