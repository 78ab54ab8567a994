/// What the last epochs of one receiver looked like, so that the next epoch can be delivered the moment
/// its last report is in rather than when the following epoch starts.
///
/// gpsd sends one TPV per receiver cycle when its driver knows where a cycle ends (u-blox and SiRF binary,
/// and NMEA once gpsd has learned the sentence that closes the cycle); otherwise it sends a TPV for every
/// sentence that carries part of the fix, so an epoch arrives as a fixed number of TPVs with the same time
/// (two on a SiRF-II, one to three on a Quectel, two on every tenth epoch of a 10 Hz GPS+IMU). The pattern
/// remembers how many TPVs each recent epoch had and how far apart they came:
/// - an epoch is **complete** once it has as many TPVs as the most any recent epoch had (the window is
///   the last 8 epochs or the last 4 s of fix time, whichever holds more), after at least 2 s of history;
/// - an epoch with fewer is held at most ``settle(fallback:)`` after its last TPV: three times the widest
///   gap seen between two TPVs of one recent epoch, at least 20 ms, at most 1 s;
/// - a TPV that arrives for an epoch already delivered (the pattern grew) is counted into that epoch, so
///   the next epochs wait for it.
///
/// Without history the caller falls back to the next epoch's first TPV or the configured settle time.
struct EpochPattern: Sendable {
    /// One finished epoch: its fix time, how many TPVs it had, the widest gap between two of them.
    private struct Epoch: Sendable {
        var time: GPSDTime
        var reports: Int
        var widestGap: Duration?
    }

    /// How much history the pattern needs before it is trusted, in fix time.
    static let learningSpan: Int64 = 2
    /// The window the pattern is taken from: at least this many epochs, or this much fix time.
    static let windowEpochs = 8
    static let windowSeconds: Int64 = 4
    /// The least wait for a further TPV when the pattern says one may come.
    static let shortestSettle = Duration.milliseconds(20)
    /// The most a known pattern makes an epoch wait for a further TPV.
    static let longestSettle = Duration.seconds(1)

    private var history: [Epoch] = []
    /// How many TPVs arrived late, after their epoch had been delivered as complete.
    private(set) var lateReports = 0

    /// Forgets everything (a different receiver, or its timeline jumped).
    mutating func reset() {
        history.removeAll()
    }

    /// The number of TPVs that makes an epoch complete, or `nil` while the pattern is still unknown.
    var expectedReports: Int? {
        guard history.count >= 3, let last = history.last, let first = history.first,
            last.time.seconds - first.time.seconds >= Self.learningSpan
        else { return nil }
        return window.map(\.reports).max()
    }

    /// How long to wait after an epoch's latest TPV for another, when it has fewer than expected: three
    /// times the widest gap seen (at most ``longestSettle``) once the pattern is known, else `fallback`.
    /// The configured fallback does not cut the learned wait short: a wait shorter than the gaps the
    /// receiver really has would deliver every epoch without its last report.
    func settle(fallback: Duration) -> Duration {
        guard expectedReports != nil, let widest = window.compactMap(\.widestGap).max() else { return fallback }
        return min(Self.longestSettle, max(Self.shortestSettle, widest * 3))
    }

    /// Moves every epoch but the newest `kept` by `seconds` (the receiver's clock jumped by that much and
    /// the newest are on the new timeline already), so that the pattern carries over the jump.
    mutating func realign(allButNewest kept: Int, by seconds: Int64) {
        for index in history.indices.dropLast(kept) {
            let (moved, overflow) = history[index].time.seconds.addingReportingOverflow(seconds)
            history[index].time.seconds = overflow ? (seconds > 0 ? .max : .min) : moved
        }
    }

    /// Records a finished epoch.
    mutating func finished(time: GPSDTime, reports: Int, widestGap: Duration?) {
        history.append(Epoch(time: time, reports: reports, widestGap: widestGap))
        // Keep what the window can use, with room for the time-based part at 10 Hz and above.
        if history.count > 64 { history.removeFirst(history.count - 64) }
    }

    /// Records a TPV that came after its epoch was delivered, `gap` after the epoch's previous TPV.
    mutating func lateReport(for time: GPSDTime, gap: Duration) {
        lateReports += 1
        guard let index = history.lastIndex(where: { $0.time == time }) else { return }
        history[index].reports += 1
        history[index].widestGap = max(history[index].widestGap ?? .zero, gap)
    }

    private var window: ArraySlice<Epoch> {
        guard let last = history.last else { return [] }
        let byTime = history.lastIndex { last.time.seconds - $0.time.seconds > Self.windowSeconds }.map { $0 + 1 } ?? 0
        let byCount = max(0, history.count - Self.windowEpochs)
        return history[min(byTime, byCount)...]
    }
}
