-- What a fresh connection of the writer needs (run after every connect): work memory for the batch's sorts,
-- and the session-local staging tables its COPYs fill, emptied at every commit. The column order is the
-- COPY order: Storage's encoders (BatchStore.encode, OutletTotals.encode, RollupDeltas.encode) write the
-- columns in this order. A rollup measure in microseconds (`*_us`) or a count is a bigint, every other one a
-- double precision.
SET work_mem = '64MB';

-- The batch's readings, when they go the careful way (BatchStore.write: a stored sample among them), in the
-- columns of `samples`; and those of outlets whose rollups are recomputed from the raw samples.
CREATE TEMPORARY TABLE IF NOT EXISTS outletd_staging_samples (
    device_id        integer NOT NULL,
    measured_at      timestamptz NOT NULL,
    received_at      timestamptz NOT NULL,
    device_time      timestamptz,
    voltage_volts    double precision,
    current_amperes  double precision,
    power_watts      double precision NOT NULL,
    power_factor     double precision,
    energy_wh        double precision,
    seq              bigint
) ON COMMIT DELETE ROWS;

-- Per outlet, what the batch really inserted: how many samples, the earliest and the latest, their power sum,
-- the peak and when (the earliest of equal peaks). The running totals (add_totals.sql) and the rollup
-- statements read it. Written by the writer (copy_inserted_devices.sql) when every sample was inserted, by
-- move_samples.sql when the batch went the careful way.
CREATE TEMPORARY TABLE IF NOT EXISTS outletd_inserted_devices (
    device_id          integer NOT NULL,
    sample_count       bigint NOT NULL,
    first_measured_at  timestamptz NOT NULL,
    last_measured_at   timestamptz NOT NULL,
    power_sum_watts    double precision NOT NULL,
    peak_power_watts   double precision NOT NULL,
    peak_at            timestamptz NOT NULL
) ON COMMIT DELETE ROWS;

-- Per outlet, its chain of readings in the batch (RollupDeltas.Chain): first and last reading, the newest
-- minute (head), the chain's total, and, when the chain spans minutes, its first and last minute.
CREATE TEMPORARY TABLE IF NOT EXISTS outletd_staging_chains (
    device_id                                integer NOT NULL,
    sample_count                             bigint NOT NULL,
    first_us                                 bigint NOT NULL,
    first_power_watts                        double precision NOT NULL,
    first_energy_wh                          double precision,
    last_us                                  bigint NOT NULL,
    last_power_watts                         double precision NOT NULL,
    last_energy_wh                           double precision,
    head_us                                  bigint NOT NULL,
    total_sample_count                       bigint NOT NULL,
    total_power_sum_watts                    double precision NOT NULL,
    total_power_integral_watt_seconds        double precision NOT NULL,
    total_covered_seconds                    double precision NOT NULL,
    total_min_power_watts                    double precision NOT NULL,
    total_peak_power_watts                   double precision NOT NULL,
    total_peak_us                            bigint NOT NULL,
    total_energy_wh                          double precision NOT NULL,
    total_min_voltage_volts                  double precision,
    total_max_voltage_volts                  double precision,
    total_last_power_watts                   double precision NOT NULL,
    total_last_us                            bigint NOT NULL,
    minute_count                             bigint NOT NULL,
    first_minute_us                          bigint NOT NULL,
    first_minute_sample_count                bigint,
    first_minute_power_sum_watts             double precision,
    first_minute_power_integral_watt_seconds double precision,
    first_minute_covered_seconds             double precision,
    first_minute_min_power_watts             double precision,
    first_minute_peak_power_watts            double precision,
    first_minute_peak_us                     bigint,
    first_minute_energy_wh                   double precision,
    first_minute_min_voltage_volts           double precision,
    first_minute_max_voltage_volts           double precision,
    first_minute_last_power_watts            double precision,
    first_minute_last_us                     bigint,
    head_sample_count                        bigint,
    head_power_sum_watts                     double precision,
    head_power_integral_watt_seconds         double precision,
    head_covered_seconds                     double precision,
    head_min_power_watts                     double precision,
    head_peak_power_watts                    double precision,
    head_peak_us                             bigint,
    head_energy_wh                           double precision,
    head_min_voltage_volts                   double precision,
    head_max_voltage_volts                   double precision,
    head_last_power_watts                    double precision,
    head_last_us                             bigint
) ON COMMIT DELETE ROWS;

-- One row per outlet and minute of the batch (RollupDeltas.Minute), staged only where a statement reads them.
CREATE TEMPORARY TABLE IF NOT EXISTS outletd_staging_minutes (
    device_id                   integer NOT NULL,
    bucket_us                   bigint NOT NULL,
    sample_count                bigint NOT NULL,
    power_sum_watts             double precision NOT NULL,
    power_integral_watt_seconds double precision NOT NULL,
    covered_seconds             double precision NOT NULL,
    min_power_watts             double precision NOT NULL,
    peak_power_watts            double precision NOT NULL,
    peak_us                     bigint NOT NULL,
    energy_wh                   double precision NOT NULL,
    min_voltage_volts           double precision,
    max_voltage_volts           double precision,
    last_power_watts            double precision NOT NULL,
    last_us                     bigint NOT NULL
) ON COMMIT DELETE ROWS;
