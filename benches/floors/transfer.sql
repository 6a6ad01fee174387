WITH locked AS MATERIALIZED (SELECT id, balance, held FROM wallets
  WHERE id IN (:wallet::text, (SELECT id FROM wallets WHERE org_id = :org::text
    AND external_id = 'w-' || :to::text AND campaign_id = :campaign::text))
  ORDER BY id FOR UPDATE),
ok AS MATERIALIZED (SELECT r.id AS receiver FROM locked s, locked r
  WHERE s.id = :wallet::text AND r.id <> s.id AND s.balance - s.held - 10000 >= 0
    AND NOT EXISTS (SELECT FROM refusals WHERE idem_key = decode(md5(:tid::text), 'hex'))),
sent AS (UPDATE wallets SET balance = balance - 10000, updated_at = now(),
    summed_to = CASE WHEN summed_to > now() THEN now() ELSE summed_to END
  WHERE id = :wallet::text AND EXISTS (SELECT FROM ok)),
received AS (UPDATE wallets SET balance = balance + 10000, updated_at = now(),
    summed_to = CASE WHEN summed_to > now() THEN now() ELSE summed_to END
  WHERE id = (SELECT receiver FROM ok)),
claim AS (INSERT INTO transactions (id, org_id, campaign_id, wallet_id, kind, amount,
    external_id, currency, description, date, created_at, fingerprint, idem_key)
  SELECT :tid::text, :org::text, :campaign::text, :wallet::text, 'TRANSFER_OUT', 10000,
    :tid::text, :currency::text, 'Gift', now(), now(), md5(:tid::text),
    decode(md5(:tid::text), 'hex')
  FROM ok),
legs AS (INSERT INTO transactions (id, org_id, campaign_id, wallet_id, kind, amount,
    external_id, currency, description, date, created_at, fingerprint, idem_key, corrects)
  SELECT :tid::text || '-in', :org::text, :campaign::text, ok.receiver, 'TRANSFER_IN', 10000,
    :tid::text || '-in', :currency::text, 'Gift', now(), now(), md5(:tid::text),
    decode(md5(:tid::text || '-in'), 'hex'), :tid::text
  FROM ok),
spent AS (INSERT INTO spends (transaction_id, earn_id, amount)
  SELECT :tid::text, :earn::text, 10000 FROM ok),
event AS (INSERT INTO events (id, org_id, campaign_id, type, subject_id, occurred_at, data)
  SELECT 'e-' || e.id, :org::text, :campaign::text, 'transaction.created', e.id, now(),
    repeat('x', 400) FROM ok, (VALUES (:tid::text), (:tid::text || '-in')) AS e(id))
SELECT EXISTS (SELECT FROM ok);
