WITH reserve AS (UPDATE wallets SET held = held + 10000, updated_at = now()
  WHERE id = :wallet::text AND balance - held - 10000 >= 0
    AND NOT EXISTS (SELECT FROM refusals WHERE idem_key = decode(md5(:tid::text), 'hex'))
  RETURNING 1),
claim AS (INSERT INTO holds (id, org_id, campaign_id, wallet_id, external_id, idem_key,
    fingerprint, amount, currency, description, status, created_at, updated_at)
  SELECT :tid::text, :org::text, :campaign::text, :wallet::text, :tid::text,
    decode(md5(:tid::text), 'hex'), md5(:tid::text), 10000, :currency::text, 'Checkout', 'held',
    now(), now()
  WHERE EXISTS (SELECT FROM reserve) RETURNING 1),
spent AS (INSERT INTO spends (transaction_id, earn_id, amount)
  SELECT :tid::text, :earn::text, 10000 WHERE EXISTS (SELECT FROM claim))
SELECT EXISTS (SELECT FROM claim);
