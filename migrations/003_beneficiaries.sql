-- Beneficiaries: who a workspace pays out to (a mobile-money wallet or a bank account in one market).
CREATE TABLE beneficiaries (
  id              uuid PRIMARY KEY,
  workspace_id    uuid NOT NULL REFERENCES workspaces (id),
  name            text NOT NULL,
  market          text NOT NULL,
  rail            text NOT NULL,
  currency        text NOT NULL,
  phone_number    text,
  bank_code       text,
  account_number  text,
  reference       text,
  metadata        jsonb NOT NULL,
  status          text NOT NULL CHECK (status IN ('active', 'inactive')),
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL,
  deactivated_at  timestamptz,
  CHECK ((status = 'inactive') = (deactivated_at IS NOT NULL)),
  CHECK (phone_number IS NOT NULL OR account_number IS NOT NULL)
);
CREATE INDEX beneficiaries_list ON beneficiaries (workspace_id, created_at DESC, id DESC);
