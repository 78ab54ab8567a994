import Foundation
import LocationCore

/// Keeps the source speaking whatever the receiver's clock does: a jump is held as suspect until the fixes
/// after it confirm it, a stray fix far from its neighbours is dropped, and nothing is silenced for more
/// than a few epochs.
///
/// Each finished epoch is judged against the last one delivered, by fix time *and* by when it arrived
/// (a monotonic clock, never the system's wall clock): two fixes 1 s apart in fix time should have come
/// about 1 s apart. An epoch whose step differs from its arrival step by more than ``tolerance`` (or goes
/// back by more than ``backwardSlack``) is a suspect:
/// - the next epoch that fits the old timeline again shows it was a stray: it is dropped, and reported once;
/// - ``confirmations`` epochs in a row that fit each other confirm a new timeline (a receiver reset, a gpsd
///   restarted on other data, a leap-second or rollover correction): the held epochs are delivered, oldest
///   first, and the jump is reported once with both times, named as a GPS week-number rollover when it is
///   a whole number of 1,024-week eras.
///
/// A fix exactly a whole number of 1,024-week eras away from the system clock's plausible present (from a
/// day before it to 400 days after, since a clock that is off is usually behind, as on a Raspberry Pi
/// without a battery) is a week-number rollover and is corrected by those eras, reported once. This is the
/// only use of the system clock, and only for a signature that a wrong system clock cannot produce.
struct ReceiverTimeline: Sendable {
    /// The most a step in fix time may differ from the step in arrival time.
    static let tolerance = Duration.seconds(60)
    /// A fix this much older than the last one is a late report, dropped quietly (gpsd repeating itself,
    /// or a receiver's second report of an epoch 1 ms early); older still is a jump back.
    static let backwardSlack = Duration.seconds(1)
    /// Epochs in a row that confirm a jump.
    static let confirmations = 3
    /// One GPS week-number era: 1,024 weeks.
    static let era: Int64 = 1_024 * 7 * 86_400

    /// A finished epoch waiting for the timeline's verdict.
    struct Epoch: Sendable {
        var time: GPSDTime
        var arrival: Duration
        var location: Location
    }

    /// What judging one epoch produced.
    struct Verdict: Sendable {
        /// Epochs to deliver now, oldest first.
        var deliver: [Location] = []
        /// Reports for the consumer (`clock-jump`, or a dropped stray as `invalid-data`).
        var errors: [LocationError] = []
        /// When a jump was confirmed: how far the new timeline lies from the old one (fix time moved beyond
        /// the time that passed), and how many of the delivered epochs are on the new one.
        var jump: (seconds: Int64, epochs: Int)?
    }

    /// The last delivered epoch's fix time and arrival.
    private(set) var last: (time: GPSDTime, arrival: Duration)?
    /// Suspect epochs held, oldest first, all fitting each other.
    private var suspects: [Epoch] = []
    /// Whether a rollover correction was reported already.
    private var rolloverReported = false
    /// Strays dropped since the last report of one, and when that report was (an arrival time), so that a
    /// receiver that keeps sending them is one line a minute, not one per fix.
    private var straysUnreported = 0
    private var lastStrayReport: Duration?
    /// How often repeated strays are reported.
    static let strayReportInterval = Duration.seconds(60)
    /// The source's name for messages.
    var sourceName: String

    init(sourceName: String) {
        self.sourceName = sourceName
    }

    /// The fix time of the last delivered epoch.
    var lastDelivered: GPSDTime? { last?.time }

    /// Whether `time` is that of the last delivered epoch or just before it: a repeat, never new.
    func isRepeat(_ time: GPSDTime) -> Bool {
        guard let last, suspects.isEmpty else { return false }
        return time <= last.time && last.time.offset(from: time) <= Self.backwardSlack
    }

    /// The fix time corrected for a GPS week-number rollover, given the system clock's reading, and the
    /// number of eras added (negative when the receiver was ahead).
    static func rolloverCorrected(_ time: GPSDTime, systemNow: Date) -> (time: GPSDTime, eras: Int64)? {
        let now = Int64(systemNow.timeIntervalSince1970.rounded(.down))
        for eras: Int64 in [1, -1, 2, -2, 3, -3] {
            let (shifted, overflow) = time.seconds.addingReportingOverflow(eras * era)
            guard !overflow else { continue }
            if shifted >= now - 86_400, shifted <= now + 400 * 86_400 {
                return (GPSDTime(seconds: shifted, nanoseconds: time.nanoseconds), eras)
            }
        }
        return nil
    }

    /// The message for a corrected rollover; the caller reports it once.
    mutating func rolloverMessage(raw: GPSDTime, corrected: GPSDTime, eras: Int64) -> LocationError? {
        guard !rolloverReported else { return nil }
        rolloverReported = true
        let weeks = abs(eras) * 1_024
        let direction = eras > 0 ? "behind" : "ahead of"
        return LocationError(
            .clockJump,
            "\(sourceName) reports \(raw), \(weeks) weeks \(direction) the present: a GPS week-number rollover; "
                + "its times are corrected by \(weeks) weeks (this one to \(corrected)) from now on")
    }

    /// Judges one finished epoch.
    mutating func judge(_ epoch: Epoch) -> Verdict {
        var verdict = Verdict()
        guard let last else {
            last = (epoch.time, epoch.arrival)
            verdict.deliver = [epoch.location]
            return verdict
        }
        if fits(epoch, after: last) {
            if !suspects.isEmpty {
                if let report = strays(suspects, at: epoch.arrival) { verdict.errors.append(report) }
                suspects.removeAll()
            }
            self.last = (epoch.time, epoch.arrival)
            verdict.deliver = [epoch.location]
            return verdict
        }
        if let previous = suspects.last, fits(epoch, after: (previous.time, previous.arrival)) {
            suspects.append(epoch)
        } else {
            if !suspects.isEmpty, let report = strays(suspects, at: epoch.arrival) { verdict.errors.append(report) }
            suspects = [epoch]
        }
        guard suspects.count >= Self.confirmations else { return verdict }
        // A new timeline: everything held belongs to it.
        let first = suspects[0]
        let seconds = Self.jumpSeconds(from: last, to: first)
        verdict.errors.append(LocationError(.clockJump, jumpMessage(from: last, to: first, seconds: seconds)))
        verdict.deliver = suspects.map(\.location)
        verdict.jump = (seconds, suspects.count)
        self.last = (suspects[suspects.count - 1].time, suspects[suspects.count - 1].arrival)
        suspects.removeAll()
        return verdict
    }

    /// Whether `epoch` continues the timeline whose latest epoch is `previous`.
    private func fits(_ epoch: Epoch, after previous: (time: GPSDTime, arrival: Duration)) -> Bool {
        guard epoch.time > previous.time else { return false }
        let step = epoch.time.offset(from: previous.time)
        let waited = epoch.arrival - previous.arrival
        let deviation = step - waited
        return deviation <= Self.tolerance && deviation >= .zero - Self.tolerance
    }

    /// The report of dropped strays: the first at once, later ones at most once per ``strayReportInterval``
    /// with how many were dropped since; `nil` while they are only counted.
    private mutating func strays(_ epochs: [Epoch], at arrival: Duration) -> LocationError? {
        straysUnreported += epochs.count
        if let reported = lastStrayReport, arrival - reported < Self.strayReportInterval { return nil }
        let times = epochs.map(\.time.description)
        let what = epochs.count == 1 ? "a fix dated \(times[0])" : "\(epochs.count) fixes dated \(times[0]) to \(times[times.count - 1])"
        let reference = last.map { ", far from the receiver's timeline at \($0.time)" } ?? ""
        let earlier = straysUnreported - epochs.count
        let since = lastStrayReport == nil || earlier == 0 ? "" : " (and \(earlier) more since the last report of one)"
        straysUnreported = 0
        lastStrayReport = arrival
        return LocationError(.invalidData, "\(sourceName) sent \(what)\(reference); dropped as a stray clock reading\(since)")
    }

    /// How far the fix time moved beyond the time that passed, saturating for absurd times.
    private static func jumpSeconds(from old: (time: GPSDTime, arrival: Duration), to new: Epoch) -> Int64 {
        (new.time.offset(from: old.time) - (new.arrival - old.arrival)).components.seconds
    }

    private func jumpMessage(from old: (time: GPSDTime, arrival: Duration), to new: Epoch, seconds: Int64) -> String {
        var size = Self.describe(seconds: seconds)
        let eras = (Double(seconds) / Double(Self.era)).rounded()
        // A rollover moves the week number only: the offset is a whole number of eras, give or take the
        // time between the fixes compared.
        if eras != 0, abs(Double(seconds) - eras * Double(Self.era)) <= 3_600 {
            size = "\(Int(abs(eras)) * 1_024) weeks: a GPS week-number rollover"
        }
        let direction = new.time > old.time ? "forward" : "back"
        return "\(sourceName)'s clock jumped \(direction) from \(old.time) to \(new.time) (\(size)); "
            + "confirmed by \(Self.confirmations) fixes, it is the timeline from now on"
    }

    private static func describe(seconds: Int64) -> String {
        let magnitude = seconds.magnitude
        if magnitude >= 2 * 86_400 { return "\(magnitude / 86_400) days" }
        if magnitude >= 2 * 3_600 { return "\(magnitude / 3_600) hours" }
        if magnitude >= 120 { return "\(magnitude / 60) minutes" }
        return "\(magnitude) s"
    }
}

extension GPSDTime {
    /// How far this time is after `earlier` (negative when before), saturating instead of trapping.
    func offset(from earlier: GPSDTime) -> Duration {
        let (seconds, overflow) = self.seconds.subtractingReportingOverflow(earlier.seconds)
        guard !overflow else { return self.seconds > earlier.seconds ? .seconds(Int64.max / 2) : .seconds(Int64.min / 2) }
        return .seconds(seconds) + .nanoseconds(nanoseconds - earlier.nanoseconds)
    }
}
