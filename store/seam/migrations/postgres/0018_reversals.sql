-- Reversals of earns (returns), and cancellations of orders. What a member has already spent
-- of the tokens a reversal takes back is, under the campaign's shortfall policy, either owed
-- (`debt`: the balance goes below zero until tokens credited later pay it), forgiven (`clip`:
-- the wallet gives what it has) or refused (`refuse`).
ALTER TABLE campaign_policies ADD COLUMN shortfall TEXT NOT NULL DEFAULT 'debt';

-- Tokens reversals took back that no lot has paid yet: a wallet's lots hold its balance plus
-- this. The next spend, reversal or expiry of the wallet pays it from the oldest lots first.
ALTER TABLE wallets ADD COLUMN owed BIGINT NOT NULL DEFAULT 0;

-- A REVERSAL's tokens taken off its earn that the wallet did not pay (`clip`): the earn is
-- reversed by the amount plus this, the balance falls by the amount.
ALTER TABLE transactions ADD COLUMN forgiven BIGINT;

-- A cancelled order line: its points refunded, its stock returned, its booking cancelled and
-- its codes voided (a voided code cannot be redeemed).
ALTER TABLE order_lines ADD COLUMN cancelled_at TIMESTAMPTZ;
ALTER TABLE redemption_codes ADD COLUMN voided_at TIMESTAMPTZ;
