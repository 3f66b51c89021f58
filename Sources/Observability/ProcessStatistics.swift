import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// What Linux's /proc says about this process: the inputs of the standard `process_*` metrics every Prometheus
/// client exports (CPU time, resident memory, open file descriptors, start time).
public struct ProcessStatistics: Sendable, Equatable {
    /// User and system CPU time, seconds.
    public var cpuSeconds: Double
    public var residentMemoryBytes: Int64
    public var virtualMemoryBytes: Int64
    public var openFileDescriptors: Int
    /// The soft limit of open file descriptors (`RLIMIT_NOFILE`).
    public var maxFileDescriptors: Int
    /// When the process started, seconds since the Unix epoch.
    public var startTimeSeconds: Double

    /// Why /proc could not be read.
    public struct ReadError: Error, CustomStringConvertible {
        public var description: String
    }

    /// Reads /proc/self/stat, /proc/stat (the boot time), /proc/self/fd and the descriptor limit. Blocking file
    /// I/O: call it off Swift's cooperative pool.
    public static func read() throws -> ProcessStatistics {
        let stat = try String(contentsOfFile: "/proc/self/stat", encoding: .utf8)
        let systemStat = try String(contentsOfFile: "/proc/stat", encoding: .utf8)
        guard let bootTime = parseBootTime(systemStat) else {
            throw ReadError(description: "no btime line in /proc/stat")
        }
        let descriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count
        var limit = rlimit()
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        let maxDescriptors = getrlimit(resource, &limit) == 0 ? Int(clamping: limit.rlim_cur) : 0
        guard
            var statistics = parse(
                stat: stat, bootTime: bootTime, ticksPerSecond: Double(sysconf(Int32(_SC_CLK_TCK))),
                pageSize: Int64(sysconf(Int32(_SC_PAGESIZE))))
        else { throw ReadError(description: "cannot parse /proc/self/stat") }
        // contentsOfDirectory opened a descriptor of its own to list them.
        statistics.openFileDescriptors = max(0, descriptors - 1)
        statistics.maxFileDescriptors = maxDescriptors
        return statistics
    }

    /// The statistics in a `/proc/<pid>/stat` line (proc(5)); descriptors are left 0.
    ///
    /// The second field, the command name in parentheses, may itself hold spaces and parentheses: fields are
    /// counted after its last `)`.
    static func parse(stat: String, bootTime: Double, ticksPerSecond: Double, pageSize: Int64) -> ProcessStatistics? {
        guard let close = stat.lastIndex(of: ")") else { return nil }
        // fields[0] is field 3 (state): utime is field 14, stime 15, starttime 22, vsize 23, rss 24.
        let fields = stat[stat.index(after: close)...].split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count > 21, ticksPerSecond > 0, let userTicks = Double(fields[11]),
            let systemTicks = Double(fields[12]), let startTicks = Double(fields[19]),
            let virtualBytes = Int64(fields[20]), let residentPages = Int64(fields[21])
        else { return nil }
        return ProcessStatistics(
            cpuSeconds: (userTicks + systemTicks) / ticksPerSecond, residentMemoryBytes: residentPages * pageSize,
            virtualMemoryBytes: virtualBytes, openFileDescriptors: 0, maxFileDescriptors: 0,
            startTimeSeconds: bootTime + startTicks / ticksPerSecond)
    }

    /// The `btime` of /proc/stat: when the system booted, seconds since the Unix epoch.
    static func parseBootTime(_ systemStat: String) -> Double? {
        for line in systemStat.split(separator: "\n") where line.hasPrefix("btime ") {
            return Double(line.dropFirst("btime ".count).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }
}
