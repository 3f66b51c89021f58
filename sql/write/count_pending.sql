-- Counts a batch's sightings of unknown codes in pending_devices, adding new codes while it holds fewer
-- than $6: $1 codes, $2 messages, $3 first and $4 last sighting (µs since 1970), $5 the last topic.
WITH incoming AS (
    SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::text[])
           AS i(code, messages, first_us, last_us, topic)
), updated AS (
    UPDATE pending_devices p
    SET message_count = p.message_count + i.messages,
        last_seen_at = GREATEST(p.last_seen_at, timestamptz 'epoch' + i.last_us * interval '1 microsecond'),
        last_topic = i.topic
    FROM incoming i
    WHERE p.code = i.code
    RETURNING p.code
)
INSERT INTO pending_devices AS p (code, first_seen_at, last_seen_at, message_count, last_topic)
SELECT code, timestamptz 'epoch' + first_us * interval '1 microsecond',
       timestamptz 'epoch' + last_us * interval '1 microsecond', messages, topic
FROM incoming
WHERE code NOT IN (SELECT code FROM updated)
ORDER BY code
LIMIT GREATEST(0, $6 - (SELECT count(*) FROM pending_devices))
ON CONFLICT (code) DO UPDATE SET message_count = p.message_count + excluded.message_count,
                                 last_seen_at = GREATEST(p.last_seen_at, excluded.last_seen_at)
