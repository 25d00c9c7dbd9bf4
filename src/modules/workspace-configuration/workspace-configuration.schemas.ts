// Request and answer of a workspace's active configuration: the admin's setting (PUT /v1/admin/workspaces/{id}/
// configuration) and what the workspace may use (GET /v1/workspace/configuration and the admin's reads).
import { Type, type Static } from 'typebox';
import { component, Uuid } from '../../platform/schemas.js';

const amount = (description: string) => Type.Integer({ minimum: 1, description });

export const EnabledRailInput = component(
  'EnabledRailInput',
  Type.Object(
    {
      market: Type.String({ minLength: 1, maxLength: 8, description: 'Catalogue market (`KE`).' }),
      rail: Type.String({
        minLength: 1,
        maxLength: 64,
        description: 'Catalogue rail (`mpesa`).',
      }),
      min_amount: Type.Optional(amount("Minimum in minor units; default the catalogue's.")),
      max_amount: Type.Optional(amount("Maximum in minor units; default the catalogue's.")),
    },
    { additionalProperties: false, description: 'A rail enabled, with its limits.' },
  ),
);

export type EnabledRailInput = Static<typeof EnabledRailInput>;

export const SetConfigurationBody = component(
  'SetWorkspaceConfigurationRequest',
  Type.Object(
    {
      rails: Type.Union([Type.Array(EnabledRailInput, { maxItems: 200 }), Type.Null()], {
        description: 'Every rail the workspace may use, once each (empty: none); null: the whole catalogue.',
      }),
    },
    { additionalProperties: false },
  ),
);
export type SetConfigurationBody = Static<typeof SetConfigurationBody>;

const ConfiguredRail = component(
  'ConfiguredRail',
  Type.Object(
    {
      rail: Type.String({ description: 'Rail (`mpesa`).' }),
      name: Type.String({ description: 'Display name.' }),
      type: Type.Enum(['mobile_money', 'bank_transfer'], { description: 'Kind of rail.' }),
      min_amount: Type.Integer({ description: 'Smallest amount, in minor units.' }),
      max_amount: Type.Integer({ description: 'Largest amount, in minor units.' }),
      refunds: Type.Boolean({ description: 'Refunds offered.' }),
      payouts: Type.Boolean({ description: 'Payouts offered.' }),
      authorisation: Type.Enum(['push_prompt', 'ussd_code', 'redirect', 'bank_transfer', 'none'], {
        description: 'How the payer authorises: a prompt on the phone, a USSD code, a page to open, a bank transfer.',
      }),
    },
    { additionalProperties: false, description: 'A rail the workspace may use.' },
  ),
);

const ConfiguredMarket = component(
  'ConfiguredMarket',
  Type.Object(
    {
      market: Type.String({ description: 'Market (`KE`).' }),
      name: Type.String({ description: 'Display name.' }),
      currency: Type.String({ description: 'ISO 4217 code.' }),
      currency_exponent: Type.Integer({ description: 'Minor-unit digits (2: 100 is 1.00).' }),
      rails: Type.Array(ConfiguredRail, { description: 'Its enabled rails.' }),
    },
    { additionalProperties: false, description: 'A market the workspace may use.' },
  ),
);

export const ConfigurationSchema = component(
  'WorkspaceConfiguration',
  Type.Object(
    {
      workspace_id: Uuid('The workspace.'),
      narrowed: Type.Boolean({ description: 'False: the whole catalogue.' }),
      updated_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
        description: 'When an admin set it.',
      }),
      markets: Type.Array(ConfiguredMarket, { description: 'Markets with an enabled rail.' }),
    },
    { additionalProperties: false, description: 'The catalogue as an admin narrowed it for the workspace.' },
  ),
);
export type WorkspaceConfiguration = Static<typeof ConfigurationSchema>;
export type ConfiguredMarket = WorkspaceConfiguration['markets'][number];

export const WorkspaceIdParams = Type.Object({ id: Type.String({ description: 'The workspace id.' }) });
