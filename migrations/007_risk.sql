-- Risk signals (rows 6 to 8): raised by built-in rules as traffic happens, or reported by a token holder;
-- the admin acknowledges and resolves them.

CREATE TABLE risk_signals (
  id               uuid PRIMARY KEY,
  workspace_id     uuid NOT NULL REFERENCES workspaces (id),
  type             text NOT NULL,
  severity         text NOT NULL CHECK (severity IN ('low', 'medium', 'high')),
  status           text NOT NULL CHECK (status IN ('open', 'acknowledged', 'resolved')),
  -- 'rule' when a built-in rule raised it, else the audience of the token that reported it.
  source           text NOT NULL CHECK (source IN ('rule', 'integrator', 'liquidity_provider', 'admin')),
  subject_type     text NOT NULL,
  subject_id       text NOT NULL,
  description      text NOT NULL,
  details          jsonb NOT NULL,
  resolution_note  text,
  acknowledged_at  timestamptz,
  resolved_at      timestamptz,
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL
);
CREATE INDEX risk_signals_list ON risk_signals (workspace_id, created_at DESC, id DESC);
CREATE INDEX risk_signals_open ON risk_signals (workspace_id, created_at DESC, id DESC) WHERE status = 'open';
-- The admin's queue: open signals of every workspace.
CREATE INDEX risk_signals_open_all ON risk_signals (created_at DESC, id DESC) WHERE status = 'open';
-- A rule keeps one open signal per subject: while it is open, the same pattern again adds nothing.
CREATE UNIQUE INDEX risk_signals_rule_open ON risk_signals (workspace_id, type, subject_type, subject_id) WHERE status = 'open' AND source = 'rule';

-- A rule counts only what came after its last signal for the subject.
CREATE INDEX risk_signals_rule_subject ON risk_signals (workspace_id, type, subject_type, subject_id, created_at) WHERE source = 'rule';
-- The repeated-failures rule counts a phone number's recent failed collections.
CREATE INDEX collections_failed_by_phone ON collections (workspace_id, (customer->>'phone_number'), updated_at) WHERE status = 'failed';
-- The refund-burst rule counts a workspace's recent refund requests.
CREATE INDEX refunds_requested_at ON refunds (workspace_id, requested_at);
