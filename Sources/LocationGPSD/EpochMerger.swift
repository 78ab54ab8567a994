import Foundation
import LocationCore

/// Turns gpsd's stream of reports into one ``Location`` per receiver epoch, plus fix-state events.
///
/// - The TPVs of one epoch (same fix time) are merged: a later TPV's values overlay earlier ones. The
///   epoch is delivered as soon as it is complete: when it has as many TPVs as this receiver's recent
///   epochs had (``EpochPattern``), when a TPV with a later time arrives, when the receiver loses its fix,
///   or when the caller calls ``flush()`` at ``settleDeadline`` (no further TPV came in time) or when the
///   connection ends.
/// - Only fixes with mode ≥ 2 and a time and a coordinate are delivered. Every finished epoch passes the
///   ``ReceiverTimeline``: a repeat of the last delivered epoch is dropped, a jump in the receiver's clock
///   is held until confirmed (then delivered and reported once), a stray fix is dropped and reported, and
///   a GPS week-number rollover is corrected.
/// - `satellitesUsed` and the dilutions of precision (`hdop`, `vdop`, `pdop`) come from the latest SKY.
/// - Fix loss (a TPV with mode < 2 after a fix) reports `.status(.noFix)` and a `.fixLost` error; the
///   first fix after that, or after ``reset()``, reports `.status(.hasFix)`.
///
/// `horizontalAccuracy` is `eph`; when gpsd sends no `eph` but both `epx` and `epy`, it is their
/// root sum of squares, the radius that covers both axis errors.
///
/// Arrival times (`at:`) are offsets on one monotonic clock; the merger never reads a clock itself, only
/// `systemNow` for the rollover signature.
struct EpochMerger: Sendable {
    private enum FixState { case unknown, noFix, hasFix }

    /// The epoch being merged and how its TPVs arrived.
    private struct Pending {
        var fix: GPSDFix
        var time: GPSDTime
        var reports = 1
        var lastArrival: Duration
        var widestGap: Duration?
    }

    /// What the merger carries from one connection (or acquisition) of a source to the next.
    struct Memory: Sendable {
        var timeline: ReceiverTimeline
        var pattern = EpochPattern()
    }

    /// The source name put on each location when gpsd does not name the device.
    var fallbackSource: String?
    /// The default wait for more TPVs of an epoch while the receiver's pattern is unknown.
    var settle: Duration
    /// The timeline and the learned pattern, to be handed to the next connection's merger.
    private(set) var memory: Memory
    private let systemNow: @Sendable () -> Date
    private var pending: Pending?
    /// The last epoch delivered on this connection and when its latest TPV came, for late TPVs.
    private var lastFinished: (time: GPSDTime, arrival: Duration, latitude: Double, longitude: Double)?
    private var fixState = FixState.unknown
    /// Whether a stuck receiver clock was reported (again once the clock moves and sticks anew).
    private var clockStuckReported = false
    private var satellitesUsed: Int?
    private var dilution: (hdop: Double?, vdop: Double?, pdop: Double?) = (nil, nil, nil)
    private var satelliteView = SatelliteView()

    init(
        fallbackSource: String? = nil, settle: Duration = .milliseconds(500), memory: Memory? = nil,
        sourceName: String? = nil, systemNow: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.fallbackSource = fallbackSource
        self.settle = settle
        self.memory = memory ?? Memory(timeline: ReceiverTimeline(sourceName: sourceName ?? fallbackSource ?? "the receiver"))
        self.systemNow = systemNow
    }

    /// The fix time of the last delivered location.
    var lastDelivered: GPSDTime? { memory.timeline.lastDelivered }

    /// Whether an epoch is held, waiting for more of its TPVs.
    var hasPending: Bool { pending != nil }

    /// When the held epoch is to be delivered if no further TPV of it comes (an arrival offset).
    var settleDeadline: Duration? {
        pending.map { $0.lastArrival + memory.pattern.settle(fallback: settle) }
    }

    /// Forgets the fix state and SKY data (after a reconnect) so the next report announces the state
    /// again; keeps the timeline so nothing stale is delivered.
    mutating func reset() -> [LocationSourceEvent] {
        let events = flush()
        fixState = .unknown
        satellitesUsed = nil
        dilution = (nil, nil, nil)
        lastFinished = nil
        satelliteView = SatelliteView()
        return events
    }

    /// Takes one report that arrived at `arrival`; returns the events it completes, in order.
    mutating func accept(_ report: GPSDReport, at arrival: Duration = .zero) -> [LocationSourceEvent] {
        switch report {
        case .devices, .gpsdError, .other:
            return []
        case .sky(let used, let visible, let hdop, let vdop, let pdop, _):
            if let used { satellitesUsed = used }
            // A SKY without DOP (some receivers send several per epoch) keeps the last values it had.
            if hdop != nil || vdop != nil || pdop != nil { dilution = (hdop, vdop, pdop) }
            return satelliteView.sky(visible: visible)
        case .fix(let fix):
            return accept(fix, at: arrival)
        }
    }

    private mutating func accept(_ fix: GPSDFix, at arrival: Duration) -> [LocationSourceEvent] {
        guard fix.hasFix else {
            var events = flush()
            switch fixState {
            case .hasFix:
                let when = lastDelivered.map { " since the fix of \($0)" } ?? ""
                let device = fix.device ?? fallbackSource ?? "the receiver"
                events += satelliteView.lostFix()
                events.append(.status(.noFix))
                events.append(.error(LocationError(
                    .fixLost, "\(device) lost its fix (gpsd reports mode \(fix.mode))\(when)")))
            case .unknown:
                events += satelliteView.lostFix()
                events.append(.status(.noFix))
            case .noFix:
                break
            }
            fixState = .noFix
            satellitesUsed = nil
            dilution = (nil, nil, nil)
            return events
        }
        guard var time = fix.time, fix.latitude != nil, fix.longitude != nil else { return [] }
        var fix = fix
        var events: [LocationSourceEvent] = []
        if let corrected = ReceiverTimeline.rolloverCorrected(time, systemNow: systemNow()) {
            if let message = memory.timeline.rolloverMessage(raw: time, corrected: corrected.time, eras: corrected.eras) {
                events.append(.error(message))
            }
            time = corrected.time
            fix.time = time
        }
        if let current = pending {
            if time == current.time {
                var merged = current
                merged.fix.merge(fix)
                merged.reports += 1
                merged.widestGap = max(merged.widestGap ?? .zero, arrival - current.lastArrival)
                merged.lastArrival = arrival
                pending = merged
                if let expected = memory.pattern.expectedReports, merged.reports >= expected { events += flush() }
                return events
            }
            // A report a little earlier than the epoch being merged (a SiRF's second report 1 ms early)
            // belongs to it and adds nothing newer.
            if time < current.time, current.time.offset(from: time) <= ReceiverTimeline.backwardSlack { return events }
            events += flush()
        } else if memory.timeline.isRepeat(time) {
            guard let last = lastFinished, last.time == time else { return events }
            if arrival - last.arrival < .seconds(1) {
                // The epoch just delivered had one more TPV than its pattern said: wait for it next time.
                memory.pattern.lateReport(for: time, gap: arrival - last.arrival)
                return events
            }
            // The same fix time a second or more later at another position: the receiver's clock is stuck,
            // not a report late. Its fixes are still delivered (with that time), so the source is never
            // silenced by it. The same position again is a stale repeat, dropped as before.
            guard let latitude = fix.latitude, let longitude = fix.longitude,
                latitude != last.latitude || longitude != last.longitude
            else { return events }
            if !clockStuckReported {
                clockStuckReported = true
                let device = fix.device ?? fallbackSource ?? "the receiver"
                events.append(.error(LocationError(
                    .invalidData,
                    "\(device)'s clock is stuck at \(time): its fixes keep that time; they are delivered as they come")))
            }
            lastFinished = (time, arrival, latitude, longitude)
            events.append(.location(location(from: fix, time: time, latitude: latitude, longitude: longitude)))
            return events
        }
        clockStuckReported = false
        if fixState != .hasFix {
            fixState = .hasFix
            satelliteView.gotFix()
            events.append(.status(.hasFix))
        }
        pending = Pending(fix: fix, time: time, lastArrival: arrival)
        if memory.pattern.expectedReports == 1 { events += flush() }
        return events
    }

    /// Delivers the held epoch, if any (through the timeline, which may hold or drop it).
    mutating func flush() -> [LocationSourceEvent] {
        guard let current = pending else { return [] }
        pending = nil
        guard let latitude = current.fix.latitude, let longitude = current.fix.longitude else { return [] }
        memory.pattern.finished(time: current.time, reports: current.reports, widestGap: current.widestGap)
        lastFinished = (current.time, current.lastArrival, latitude, longitude)
        let location = location(from: current.fix, time: current.time, latitude: latitude, longitude: longitude)
        let verdict = memory.timeline.judge(.init(time: current.time, arrival: current.lastArrival, location: location))
        if let jump = verdict.jump { memory.pattern.realign(allButNewest: jump.epochs, by: jump.seconds) }
        return verdict.errors.map { .error($0) } + verdict.deliver.map { .location($0) }
    }

    private func location(from fix: GPSDFix, time: GPSDTime, latitude: Double, longitude: Double) -> Location {
        var horizontal = fix.eph
        if horizontal == nil, let epx = fix.epx, let epy = fix.epy {
            horizontal = (epx * epx + epy * epy).squareRoot()
        }
        return Location(
            latitude: latitude,
            longitude: longitude,
            altitude: fix.altitudeMSL,
            ellipsoidalAltitude: fix.altitudeHAE,
            horizontalAccuracy: horizontal,
            verticalAccuracy: fix.epv,
            speed: fix.speed,
            speedAccuracy: fix.eps,
            course: fix.track,
            courseAccuracy: fix.epd,
            climb: fix.climb,
            timestamp: time.date,
            fixMode: fix.mode >= 3 ? .threeDimensional : .twoDimensional,
            correctionStatus: fix.correction,
            satellitesUsed: satellitesUsed,
            satellitesVisible: satelliteView.visible,
            source: fix.device ?? fallbackSource,
            isSimulated: false,
            hdop: dilution.hdop,
            vdop: dilution.vdop,
            pdop: dilution.pdop
        )
    }
}
