-- Transfers between two wallets of a campaign: a TRANSFER_OUT from the sender (its lots taken
-- oldest first, as a burn takes them) and, on the receiver, one TRANSFER_IN per expiry date
-- among the lots taken, each a lot of its own keeping that expiry and naming the TRANSFER_OUT
-- in `corrects`. `earned_moved`: the transfer moved lifetime earnings (and so tiers) with the
-- tokens, as the campaign's policy said when it was made.
ALTER TABLE transactions ADD COLUMN earned_moved BOOLEAN;

-- The campaign's transfer policy: allowed or forbidden, an optional cap on what one wallet may
-- send in a day (UTC, micro-tokens), and whether lifetime earnings move with the tokens.
ALTER TABLE campaign_policies ADD COLUMN transfers TEXT NOT NULL DEFAULT 'allow';
ALTER TABLE campaign_policies ADD COLUMN transfer_daily_cap BIGINT;
ALTER TABLE campaign_policies ADD COLUMN transfers_move_earned BOOLEAN NOT NULL DEFAULT FALSE;
