-- The filters of GET /v1/collections (market, rail, reference, payer phone) and the workspace's refund list
-- (GET /v1/refunds, newest first, by status). Each index has the list's order after its equality columns, so a page
-- is read in order and stops at its limit, however many rows the workspace has. Market and rail together use the
-- rail's index and filter the market (a rail is offered in few markets).
CREATE INDEX collections_list_market ON collections (workspace_id, market, created_at DESC, id DESC);
CREATE INDEX collections_list_rail ON collections (workspace_id, rail, created_at DESC, id DESC);
CREATE INDEX collections_list_reference ON collections (workspace_id, reference, created_at DESC, id DESC);
CREATE INDEX collections_list_phone ON collections (workspace_id, (customer->>'phone_number'), created_at DESC, id DESC);
CREATE INDEX refunds_list ON refunds (workspace_id, requested_at DESC, id DESC);
CREATE INDEX refunds_list_status ON refunds (workspace_id, status, requested_at DESC, id DESC);
