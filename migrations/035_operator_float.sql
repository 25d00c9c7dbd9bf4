-- Operator float (src/modules/float/, docs/guides/operator-float.md): the balance of each account an operator holds
-- our money in, as its API last gave it, and the schedule of the reads. Platform-wide: an operator account belongs
-- to a connector of PROVIDERS_FILE, not to a workspace.

-- One row per connector and account (MoMo: collection and disbursement; Airtel: wallet; Daraja: each account its
-- Account Balance names, such as "Utility Account"). balance is in minor units of currency; read_at is when the
-- operator gave it. last_error and error_at say why the last read failed (the operator down, a time-out, a refused
-- credential); a later read clears them. low is whether the balance was below its threshold at the last read: an
-- event is raised when it changes, once per crossing. An account of '' stands for a connector whose accounts are not
-- known yet (its first read failed). id names the row in the events about it.
CREATE TABLE operator_float (
  id           uuid NOT NULL UNIQUE,
  connector    text NOT NULL,
  account      text NOT NULL,
  currency     text,
  balance      bigint,
  read_at      timestamptz,
  low          boolean NOT NULL DEFAULT false,
  last_error   text,
  error_at     timestamptz,
  PRIMARY KEY (connector, account)
);

-- One row per connector: when its balance is next due to be read (the node whose UPDATE moves next_read_at reads it;
-- the others see it moved and skip), and, for an operator that answers by callback (Daraja's Account Balance), the
-- query awaiting its answer: the ConversationID Daraja gave, the OriginatorConversationID and our reference in the
-- ResultURL. An answer is believed only if it quotes all three of the query in flight.
CREATE TABLE operator_float_reads (
  connector        text PRIMARY KEY,
  next_read_at     timestamptz NOT NULL,
  query_id         text,
  query_originator text,
  query_ref        uuid,
  query_sent_at    timestamptz
);
