-- outletd schema, migration 34: samples_between finds an outlet's readings by its key when it is called for one
-- outlet of many (`ARRAY[d.id]` beside a table of outlets: a rebuild's targets, a power rule's round, the careful
-- way's tails, a recomputed minute run).
--
-- Its condition `p_device_ids IS NULL OR device_id = ANY (p_device_ids)` could not be an index condition unless the
-- array was a constant: for each outlet, PostgreSQL then read every row of each day partition in range (a settled
-- day of 100 outlets, 864,000 rows: 200 ms an outlet; `outletd rollup rebuild` of 100,000 registered outlets took
-- hours). Now each form has two branches, all outlets and some, and the one that does not apply is gated off by a
-- condition on the argument alone (PostgreSQL evaluates it once per call, before reading anything): the outlets'
-- branch reads the partitions' primary keys (device_id, measured_at), 0.03 ms an outlet.

CREATE OR REPLACE FUNCTION samples_between(p_device_ids integer[], p_from timestamptz, p_to timestamptz)
RETURNS SETOF samples
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT * FROM samples_rows
    WHERE p_device_ids IS NULL AND measured_at >= p_from AND measured_at < p_to
    UNION ALL
    SELECT * FROM samples_rows
    WHERE p_device_ids IS NOT NULL AND device_id = ANY (p_device_ids) AND measured_at >= p_from AND measured_at < p_to
    UNION ALL
    SELECT c.device_id, r.measured_at, r.received_at, r.device_time, r.voltage_volts, r.current_amperes,
           r.power_watts, r.power_factor, r.energy_wh, r.seq
    FROM samples_compact c CROSS JOIN LATERAL outletd_compact_readings(c) r
    WHERE p_device_ids IS NULL AND NOT c.pending
      AND c.day >= (p_from AT TIME ZONE 'UTC')::date AND c.day <= (p_to AT TIME ZONE 'UTC')::date
      AND c.last_at >= p_from AND c.first_at < p_to
      AND r.measured_at >= p_from AND r.measured_at < p_to
    UNION ALL
    SELECT c.device_id, r.measured_at, r.received_at, r.device_time, r.voltage_volts, r.current_amperes,
           r.power_watts, r.power_factor, r.energy_wh, r.seq
    FROM samples_compact c CROSS JOIN LATERAL outletd_compact_readings(c) r
    WHERE p_device_ids IS NOT NULL AND c.device_id = ANY (p_device_ids) AND NOT c.pending
      AND c.day >= (p_from AT TIME ZONE 'UTC')::date AND c.day <= (p_to AT TIME ZONE 'UTC')::date
      AND c.last_at >= p_from AND c.first_at < p_to
      AND r.measured_at >= p_from AND r.measured_at < p_to
$$;
