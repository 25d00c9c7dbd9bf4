// The shape of a workspace's active configuration as stored and carried with the token check: data only, so that the
// token check (auth.ts), the checkout page's session read and the workspace-configuration module share it.

/** One rail an operator's admin enabled for a workspace, with its own limits in minor units (null: the catalogue's). */
export interface EnabledRail {
  market: string;
  rail: string;
  min_amount: number | null;
  max_amount: number | null;
}
