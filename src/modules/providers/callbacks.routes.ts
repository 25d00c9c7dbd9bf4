// Inbound provider callbacks: public (the provider has no token), authenticated by the provider's signature
// over the raw body (or, for operators, by the callback token in the address), and safe to receive twice. What a
// callback says is applied by the lifecycle's notices (lifecycle/notices.service.ts), handed in as CallbackNotices:
// providers/ imports nothing of the lifecycle.
import { Type, type TSchema } from 'typebox';
import { ApiError } from '../../platform/errors.js';
import type { App } from '../../platform/http.js';
import { problemResponses } from '../../platform/schemas.js';
import { CallbackBody, SIGNATURE_HEADER } from './callback-protocol.js';
import type { CallbackHeaders } from './provider.js';

/** Where a callback goes once received: the lifecycle's notices (ProviderNotices). */
export interface CallbackNotices {
  /** A signed callback: applied once by notice id; what it did. */
  receive(
    providerName: string,
    rawBody: string,
    headers: CallbackHeaders,
  ): Promise<'applied' | 'duplicate' | 'refused'>;
  /** An operator's unsigned callback, behind its callback token; the body the operator expects back. */
  receiveUnsigned(
    providerName: string,
    token: string,
    path: string,
    body: unknown,
    signed: { rawBody: string | undefined; headers: CallbackHeaders },
  ): Promise<unknown>;
}

export function signedCallbackRoutes(app: App, notices: CallbackNotices): void {
  app.post(
    '/v1/providers/:provider/callbacks',
    {
      config: { auth: 'public' },
      schema: {
        operationId: 'receiveProviderCallback',
        tags: ['Providers'],
        summary: 'Receive a rail provider callback',
        description:
          `For rail providers, not integrators. The body is signed with the provider's callback secret: \`${SIGNATURE_HEADER}: t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body">\`, ` +
          'at most 5 minutes old. A bad signature is 401 `invalid_signature`. A notice received again (same `notice_id`) changes nothing and ' +
          'answers `duplicate`; a status the lifecycle cannot reach answers `refused` (and is logged).',
        params: Type.Object({
          provider: Type.String({
            maxLength: 40,
            description: 'The provider name (`sandbox`, or a gateway of PROVIDERS_FILE).',
          }),
        }),
        // Optional in the schema so that a missing signature is 401 invalid_signature, like a wrong one.
        headers: Type.Object({
          [SIGNATURE_HEADER]: Type.Optional(
            Type.String({
              description: 't=<unix seconds>,v1=<hex HMAC-SHA256>',
            }),
          ),
        }),
        body: CallbackBody,
        response: {
          200: Type.Object(
            {
              received: Type.Literal(true, {
                description: 'Always true: the notice was verified and recorded.',
              }),
              outcome: Type.Enum(['applied', 'duplicate', 'refused'], {
                description: 'What the notice did.',
              }),
            },
            {
              additionalProperties: false,
              description: 'The notice was verified and recorded.',
            },
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

const OperatorParams = {
  provider: Type.String({
    maxLength: 40,
    description: 'The connector name (PROVIDERS_FILE).',
  }),
  token: Type.String({
    maxLength: 128,
    description: "The connector's callback_token: a wrong one is 404 and changes nothing.",
  }),
};
const Kind = Type.String({
  maxLength: 40,
  description: 'A sub-path the connector chose for this kind of callback (MoMo: requesttopay, transfer, refund).',
});
const Ref = Type.String({
  maxLength: 64,
  description: 'Our id of the operation (Daraja: stk/{id}, b2c-result/{id}…).',
});
const OperatorBody = Type.Object(
  {},
  {
    additionalProperties: true,
    description: "The operator's own callback body.",
  },
);
const OperatorReply = Type.Object(
  {},
  {
    additionalProperties: true,
    description: 'What the operator expects (Daraja: {"ResultCode": 0, "ResultDesc": "Accepted"}).',
  },
);

/**
 * Operator callbacks (M-Pesa Daraja, MTN MoMo, Airtel Money, Wave): the URL carries the connector's secret
 * callback token, and what a callback says is only applied once the operator's status query agrees.
 */
export function operatorCallbackRoutes(app: App, notices: CallbackNotices): void {
  const description =
    "For operators, not integrators. The address carries the connector's callback_token; an operator that signs its callbacks (Wave: Wave-Signature) is checked too, and a bad signature is 401 `invalid_signature`. " +
    'Either way ' +
    "a callback changes nothing until the operator's own status query agrees with it (asked in the background; the operator is answered at once). " +
    'A wrong token is 404.';
  const schema = <P extends TSchema>(operationId: string, summary: string, params: P) => ({
    operationId,
    tags: ['Providers'],
    summary,
    description,
    params,
    body: OperatorBody,
    response: { 200: OperatorReply, ...problemResponses(400, 401, 404, 413, 415) },
  });
  const receive = (
    provider: string,
    token: string,
    path: string,
    request: { body: unknown; rawBody: string | undefined; headers: CallbackHeaders },
  ) => notices.receiveUnsigned(provider, token, path, request.body, request);

  app.post(
    '/v1/providers/:provider/callbacks/:token',
    {
      config: { auth: 'public' },
      schema: schema('receiveOperatorCallback', 'Receive an operator callback', Type.Object(OperatorParams)),
    },
    async (request) => receive(request.params.provider, request.params.token, '', request),
  );
  const withKind = Type.Object({ ...OperatorParams, kind: Kind });
  app.post(
    '/v1/providers/:provider/callbacks/:token/:kind',
    {
      config: { auth: 'public' },
      schema: schema('receiveOperatorCallbackOfKind', 'Receive an operator callback of one kind', withKind),
    },
    async (request) => receive(request.params.provider, request.params.token, request.params.kind, request),
  );
  // MTN documents PUT for its callbacks (its sandbox has been seen to POST): both are taken.
  app.put(
    '/v1/providers/:provider/callbacks/:token/:kind',
    {
      config: { auth: 'public' },
      schema: schema('receiveOperatorCallbackOfKindByPut', 'Receive an operator callback of one kind (PUT)', withKind),
    },
    async (request) => receive(request.params.provider, request.params.token, request.params.kind, request),
  );
  app.post(
    '/v1/providers/:provider/callbacks/:token/:kind/:ref',
    {
      config: { auth: 'public' },
      schema: schema(
        'receiveOperatorCallbackAbout',
        'Receive an operator callback about one operation',
        Type.Object({ ...OperatorParams, kind: Kind, ref: Ref }),
      ),
    },
    async (request) =>
      receive(request.params.provider, request.params.token, `${request.params.kind}/${request.params.ref}`, request),
  );
}
