-- Stores a batch's first rejections: $1 receive times (µs since 1970), $2 topics, $3 codes ('' for none),
-- $4 reasons, $5 details, $6 array indexes (-1 for none), $7 payload excerpts.
INSERT INTO rejected_messages (received_at, topic, device_code, reason, detail, reading_index, payload_excerpt)
SELECT timestamptz 'epoch' + received_us * interval '1 microsecond', topic, NULLIF(device_code, ''),
       reason, detail, NULLIF(reading_index, -1), payload_excerpt
FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::integer[], $7::text[])
     AS r(received_us, topic, device_code, reason, detail, reading_index, payload_excerpt)
