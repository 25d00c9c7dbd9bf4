-- Operator access tokens (the OAuth client-credentials tokens of Daraja, MTN MoMo and Airtel), one per connector and
-- scope (MoMo's products), shared by every node (src/modules/providers/operator-tokens.ts). Daraja's FAQ says a new
-- token invalidates the previous one, so nodes that each fetched their own renewed each other's away. The token is
-- sealed under the secrets key. One node renews it at a time: it takes the lease (renewing_by, renewing_until) with a
-- conditional write, fetches the new token outside any transaction, stores it and frees the lease; the others wait
-- for it. Not per workspace: a connector serves them all.
CREATE TABLE operator_tokens (
  connector       text NOT NULL,
  scope           text NOT NULL,
  -- NULL until a first token is stored (the row is made by the first lease).
  sealed_token    text,
  expires_at      timestamptz,
  -- Past this the token is renewed (shortly before expires_at, or at once when the operator refused it).
  renew_at        timestamptz,
  -- The node renewing it, and until when its lease holds (a node that died mid-renewal loses it then).
  renewing_by     text,
  renewing_until  timestamptz,
  updated_at      timestamptz NOT NULL,
  PRIMARY KEY (connector, scope),
  CHECK ((sealed_token IS NULL) = (expires_at IS NULL) AND (sealed_token IS NULL) = (renew_at IS NULL)),
  CHECK ((renewing_by IS NULL) = (renewing_until IS NULL))
);
