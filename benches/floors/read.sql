SELECT w.id AS wallet, w.currency AS currency, w.version AS version, min(l.id) AS earn,
  gen_random_uuid()::text AS tid
FROM (SELECT id, currency, xmin::text::bigint AS version, balance - held AS balance, fifo_date,
        fifo_id FROM wallets
      WHERE org_id = :org::text AND external_id = 'w-' || :w::text AND campaign_id = :campaign::text) w
LEFT JOIN LATERAL (
  (SELECT transaction_id AS id FROM lots_aside WHERE wallet_id = w.id
     ORDER BY earned_at, transaction_id LIMIT 16)
  UNION ALL (SELECT id FROM transactions WHERE wallet_id = w.id
     AND (date, id) >= (w.fifo_date, w.fifo_id) ORDER BY date, id LIMIT 4)
  UNION ALL (SELECT id FROM transactions WHERE wallet_id = w.id AND w.fifo_date IS NULL
     ORDER BY date, id LIMIT 4)
) l ON true
GROUP BY w.id, w.currency, w.version
\gset
