-- Adds a batch's rejections to the counts by reason: $1 reasons, $2 counts, $3 the newest rejection's time.
INSERT INTO rejection_counts AS r (reason, count, last_at)
SELECT reason, count, $3 FROM unnest($1::text[], $2::bigint[]) AS c(reason, count)
ON CONFLICT (reason) DO UPDATE SET count = r.count + excluded.count,
                                   last_at = GREATEST(r.last_at, excluded.last_at)
