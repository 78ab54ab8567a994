import LocationCore

/// Turns gpsd's stream of reports into one ``Location`` per receiver epoch, plus fix-state events.
///
/// - The TPVs of one epoch (same fix time) are merged: a later TPV's values overlay earlier ones. The
///   epoch is delivered when a TPV with a later time arrives, when the receiver loses its fix, or when
///   the caller calls ``flush()`` (after a quiet spell, or when the connection ends).
/// - Only fixes with mode ≥ 2 and a time and a coordinate are delivered. A fix whose time is not later
///   than the last delivered one is stale (gpsd repeating itself, or a clock going back) and is dropped.
/// - `satellitesUsed` and the dilutions of precision (`hdop`, `vdop`, `pdop`) come from the latest SKY.
/// - Fix loss (a TPV with mode < 2 after a fix) reports `.status(.noFix)` and a `.fixLost` error; the
///   first fix after that, or after ``reset()``, reports `.status(.hasFix)`.
///
/// `horizontalAccuracy` is `eph`; when gpsd sends no `eph` but both `epx` and `epy`, it is their
/// root sum of squares, the radius that covers both axis errors.
struct EpochMerger: Sendable {
    private enum FixState { case unknown, noFix, hasFix }

    /// The source name put on each location when gpsd does not name the device.
    var fallbackSource: String?
    /// The fix time of the last delivered location; older or equal fixes are stale.
    private(set) var lastDelivered: GPSDTime?
    private var pending: GPSDFix?
    private var fixState = FixState.unknown
    private var satellitesUsed: Int?
    private var dilution: (hdop: Double?, vdop: Double?, pdop: Double?) = (nil, nil, nil)
    private var satelliteView = SatelliteView()

    init(fallbackSource: String? = nil, lastDelivered: GPSDTime? = nil) {
        self.fallbackSource = fallbackSource
        self.lastDelivered = lastDelivered
    }

    /// Whether an epoch is held, waiting for more of its TPVs.
    var hasPending: Bool { pending != nil }

    /// Forgets the fix state and SKY data (after a reconnect) so the next report announces the state
    /// again; keeps the last delivered time so nothing stale is delivered.
    mutating func reset() -> [LocationSourceEvent] {
        let events = flush()
        fixState = .unknown
        satellitesUsed = nil
        dilution = (nil, nil, nil)
        satelliteView = SatelliteView()
        return events
    }

    /// Takes one report; returns the events it completes, in order.
    mutating func accept(_ report: GPSDReport) -> [LocationSourceEvent] {
        switch report {
        case .devices, .gpsdError, .other:
            return []
        case .sky(let used, let visible, let hdop, let vdop, let pdop):
            if let used { satellitesUsed = used }
            // A SKY without DOP (some receivers send several per epoch) keeps the last values it had.
            if hdop != nil || vdop != nil || pdop != nil { dilution = (hdop, vdop, pdop) }
            return satelliteView.sky(visible: visible)
        case .fix(let fix):
            return accept(fix)
        }
    }

    private mutating func accept(_ fix: GPSDFix) -> [LocationSourceEvent] {
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
        guard let time = fix.time, fix.latitude != nil, fix.longitude != nil else { return [] }
        if let lastDelivered, time <= lastDelivered { return [] }
        var events: [LocationSourceEvent] = []
        if fixState != .hasFix {
            fixState = .hasFix
            satelliteView.gotFix()
            events.append(.status(.hasFix))
        }
        if var current = pending, let currentTime = current.time {
            if time == currentTime {
                current.merge(fix)
                pending = current
                return events
            }
            if time < currentTime { return events }
            events += flush()
        }
        pending = fix
        return events
    }

    /// Delivers the held epoch, if any.
    mutating func flush() -> [LocationSourceEvent] {
        guard let fix = pending, let time = fix.time, let latitude = fix.latitude,
            let longitude = fix.longitude
        else {
            pending = nil
            return []
        }
        pending = nil
        lastDelivered = time
        return [.location(location(from: fix, time: time, latitude: latitude, longitude: longitude))]
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
