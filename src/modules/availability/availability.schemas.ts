// Requests and answers of rail availability (GET /v1/availability, the admin's planned maintenance) and the data of
// the `rail.availability_changed` event.
import { Type, type Static } from 'typebox';
import { component, DateTime } from '../../platform/schemas.js';

export const AVAILABILITY_STATUSES = ['operational', 'degraded', 'down'] as const;
export type AvailabilityStatus = (typeof AVAILABILITY_STATUSES)[number];

export const DIRECTIONS = ['collections', 'payouts', 'refunds'] as const;
export type Direction = (typeof DIRECTIONS)[number];

/** Why a rail has its status: one code each, explained in `detail`. */
export const AVAILABILITY_REASON_MEANINGS = {
  normal: 'the attempts of the window went through',
  insufficient_traffic: 'too few attempts in the window to judge; taken as operational',
  operator_errors: 'a share of the attempts failed at the operator (errors, refusals or time-outs)',
  slow: 'the median time to a final status is above the threshold',
  maintenance: 'planned maintenance is under way',
  traffic_not_judged: 'this environment judges rails by planned maintenance only (AVAILABILITY_JUDGE_TRAFFIC)',
} as const;
export type AvailabilityReason = keyof typeof AVAILABILITY_REASON_MEANINGS;
export const AVAILABILITY_REASONS = Object.keys(AVAILABILITY_REASON_MEANINGS) as [
  AvailabilityReason,
  ...AvailabilityReason[],
];

const StatusSchema = component(
  'AvailabilityStatus',
  Type.Enum(AVAILABILITY_STATUSES, {
    description: 'Status.',
  }),
);
const ReasonSchema = component('AvailabilityReason', Type.Enum(AVAILABILITY_REASONS, { description: 'Reason.' }));

export const DirectionAvailabilitySchema = component(
  'DirectionAvailability',
  Type.Object(
    {
      status: StatusSchema,
      reason: ReasonSchema,
      detail: Type.String({ description: 'Why, in words.' }),
      since: DateTime('Since.'),
      attempts: Type.Integer({ description: 'Attempts.' }),
      failures: Type.Integer({ description: 'Failures.' }),
      median_seconds: Type.Union([Type.Number(), Type.Null()], { description: 'To success.' }),
    },
    { additionalProperties: false, description: 'A direction.' },
  ),
);
export type DirectionAvailability = Static<typeof DirectionAvailabilitySchema>;

export const MaintenanceSchema = component(
  'RailMaintenance',
  Type.Object(
    {
      starts_at: DateTime('Start.'),
      ends_at: DateTime('End.'),
      note: Type.String({ description: 'Note.' }),
    },
    { additionalProperties: false, description: 'Planned maintenance.' },
  ),
);
export type Maintenance = Static<typeof MaintenanceSchema>;

export const RailAvailabilitySchema = component(
  'RailAvailability',
  Type.Object(
    {
      market: Type.String({ description: 'Market.' }),
      rail: Type.String({ description: 'Rail.' }),
      collections: DirectionAvailabilitySchema,
      payouts: Type.Union([DirectionAvailabilitySchema, Type.Null()], { description: 'Null: none.' }),
      refunds: Type.Union([DirectionAvailabilitySchema, Type.Null()], { description: 'Null: none.' }),
      maintenance: Type.Union([MaintenanceSchema, Type.Null()], { description: 'Not over.' }),
    },
    { additionalProperties: false, description: 'A rail.' },
  ),
);
export type RailAvailability = Static<typeof RailAvailabilitySchema>;

export const AvailabilityListSchema = component(
  'AvailabilityList',
  Type.Object(
    {
      data: Type.Array(RailAvailabilitySchema, { description: 'Every rail.' }),
      window_seconds: Type.Integer({ description: 'Window.' }),
      computed_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'Judged.' }),
    },
    { additionalProperties: false, description: 'Rail availability.' },
  ),
);
export type AvailabilityList = Static<typeof AvailabilityListSchema>;

export const MaintenanceParams = Type.Object({
  market: Type.String({ description: 'Market.' }),
  rail: Type.String({ description: 'Rail.' }),
});

export const SetMaintenanceBody = component(
  'SetRailMaintenanceRequest',
  Type.Object(
    {
      starts_at: Type.String({ format: 'date-time', description: 'Start.' }),
      ends_at: Type.String({ format: 'date-time', description: 'After the start, in the future.' }),
      note: Type.Optional(Type.String({ maxLength: 500, description: 'Note.' })),
    },
    { additionalProperties: false },
  ),
);
export type SetMaintenanceBody = Static<typeof SetMaintenanceBody>;
