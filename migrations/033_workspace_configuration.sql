-- Active configuration per workspace (src/modules/workspace-configuration, docs/guides/workspace-configuration.md): the
-- markets and rails an operator's admin enabled for a workspace, each with its own minimum and maximum, narrowing the
-- catalogue. No row: the workspace may use the whole catalogue. The token check reads `rails` in its own query
-- (credentials.repository.ts findLiveToken), so the create paths apply it at no extra statement.
CREATE TABLE workspace_configurations (
  workspace_id  uuid PRIMARY KEY REFERENCES workspaces (id),
  -- [{"market": "KE", "rail": "mpesa", "min_amount": 1000 | null, "max_amount": 500000 | null}, …]; null: the catalogue's.
  rails         jsonb NOT NULL CHECK (jsonb_typeof(rails) = 'array'),
  updated_at    timestamptz NOT NULL
);
