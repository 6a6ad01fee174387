WITH debit AS (UPDATE wallets SET balance = balance - 10000, updated_at = now(),
    summed_to = CASE WHEN summed_to > now() THEN now() ELSE summed_to END
  WHERE id = :wallet::text AND balance - held - 10000 >= 0
    AND NOT EXISTS (SELECT FROM refusals WHERE idem_key = decode(md5(:tid::text), 'hex'))
  RETURNING 1),
claim AS (INSERT INTO transactions (id, org_id, campaign_id, wallet_id, kind, amount,
    external_id, currency, description, date, created_at, fingerprint, idem_key)
  SELECT :tid::text, :org::text, :campaign::text, :wallet::text, 'BURN', 10000, :tid::text,
    :currency::text, 'Voucher', now(), now(), md5(:tid::text), decode(md5(:tid::text), 'hex')
  WHERE EXISTS (SELECT FROM debit) RETURNING 1),
spent AS (INSERT INTO spends (transaction_id, earn_id, amount)
  SELECT :tid::text, :earn::text, 10000 WHERE EXISTS (SELECT FROM claim)),
event AS (INSERT INTO events (id, org_id, campaign_id, type, subject_id, occurred_at, data)
  SELECT 'e-' || :tid::text, :org::text, :campaign::text, 'transaction.created', :tid::text,
    now(), repeat('x', 400) WHERE EXISTS (SELECT FROM claim))
SELECT EXISTS (SELECT FROM claim);
