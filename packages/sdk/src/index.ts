// A typed client for the payments service. See README.md.
export { Payments, PagedList, type CallOptions, type Page, type PaymentsOptions } from './payments.js';
export { PaymentsError, newIdempotencyKey, type Problem } from './http.js';
export { verifyWebhook, type ReconciliationMismatch, type WebhookEvent } from './webhooks.js';
export type { components, operations, paths } from './generated/openapi.js';

import type { components } from './generated/openapi.js';
type Schemas = components['schemas'];
export type Collection = Schemas['Collection'];
export type Refund = Schemas['Refund'];
export type CheckoutSession = Schemas['CheckoutSession'];
export type Payout = Schemas['Payout'];
export type Beneficiary = Schemas['Beneficiary'];
export type Deposit = Schemas['Deposit'];
export type WebhookEndpoint = Schemas['WebhookEndpoint'];
export type Event = Schemas['Event'];
export type SettlementReport = Schemas['SettlementReport'];
export type WorkspaceConfiguration = Schemas['WorkspaceConfiguration'];
export type SandboxClock = Schemas['SandboxClock'];
export type OperatorFloatAccount = Schemas['OperatorFloatAccount'];
export type RailAvailability = Schemas['RailAvailability'];
