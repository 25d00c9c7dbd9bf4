// Route of the operator prediction for integrators (POST /v1/predict-provider). The checkout page has its own,
// token-scoped route in checkout.routes.ts; both answer from PredictService. No SQL here.
import type { App } from '../../platform/http.js';
import { INTEGRATOR } from '../../platform/access.js';
import { BEARER_PROBLEMS, BODY_PROBLEMS, problemResponses } from '../../platform/schemas.js';
import { PREDICTION_PROBLEMS } from './predict.problems.js';
import { PredictionSchema, PredictProviderBody } from './predict.schemas.js';
import type { PredictService } from './predict.service.js';

export function predictRoutes(app: App, service: PredictService): void {
  app.post(
    '/v1/predict-provider',
    {
      config: { auth: INTEGRATOR, permission: 'read' },
      schema: {
        operationId: 'predictProvider',
        tags: ['Markets'],
        summary: "Predict a phone number's operator and rails",
        description:
          "The number's market, operator (from the national numbering plan) and rails. A number that cannot be a mobile " +
          'number of our markets: 400 `phone_number_*`. Nothing is stored.',
        body: PredictProviderBody,
        response: {
          200: PredictionSchema,
          ...problemResponses({
            ...BEARER_PROBLEMS,
            400: [...BODY_PROBLEMS, 'invalid_market', 'market_required', ...PREDICTION_PROBLEMS],
          }),
        },
      },
    },
    async (request) => service.predict(request.body),
  );
}
