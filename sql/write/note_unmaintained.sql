-- For a batch stored without maintaining the rollups: drops the tails of its outlets ($2) and notes that the
-- rollups miss samples from the earliest of its readings ($1) and of those tails. The segment from an outlet's
-- tail to its next sample belongs to the tail's minute, so a rebuild from the note restates it. The note is
-- written only when it moves earlier.
WITH dropped AS (
    DELETE FROM rollup_tails WHERE device_id = ANY ($2::integer[]) RETURNING measured_at
), earliest AS (
    SELECT least($1::timestamptz, (SELECT min(measured_at) FROM dropped)) AS at
)
UPDATE rollup_settings SET unmaintained_since = e.at FROM earliest e
WHERE unmaintained_since IS NULL OR unmaintained_since > e.at
