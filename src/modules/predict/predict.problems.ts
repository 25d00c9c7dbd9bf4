// The 400 codes a prediction answers when a number cannot be a mobile number of our markets; shared by both routes
// (the checkout's always knows the market, so only the integrators' can answer `market_required`).
import type { CodeOf } from '../../platform/schemas.js';

export const PREDICTION_PROBLEMS = [
  'phone_number_length',
  'phone_number_country',
  'phone_number_unknown_prefix',
  'phone_number_not_mobile',
] as const satisfies CodeOf<400>[];
