import LocationCore

extension GPXReplaySource {
    /// How a replay plays its file. The defaults play the tracks once, in real time, with recorded
    /// timestamps; see <doc:ReplayTiming> for the exact semantics of every option.
    public struct Options: Sendable, Hashable {
        /// Which points of the file to play.
        public enum Selection: String, Sendable, Hashable, CaseIterable {
            /// The tracks if the file has any track point, else the routes if it has any route point, else the
            /// waypoints.
            case automatic
            /// `<trkpt>`s only.
            case tracks
            /// `<rtept>`s only.
            case routes
            /// `<wpt>`s only.
            case waypoints
        }

        /// Where the replay starts.
        public enum Start: Sendable, Hashable {
            /// At the first played point.
            case beginning
            /// At the point with this index (0-based) among the played points.
            case index(Int)
            /// At this much track time after the first played point; the first point at or after it is
            /// delivered after the remaining difference.
            case offset(Duration)
        }

        /// How fast track time runs on the clock.
        public enum Pacing: Sendable, Hashable {
            /// Track time runs this many times faster than the clock (within `ValueRange.speedFactor`,
            /// 0.001…1000000; `1` is real time, `0.5` half speed).
            case speedFactor(Double)
            /// No waiting at all: every point is delivered as soon as the previous one is.
            case asFastAsPossible
        }

        /// Which timestamps the fixes carry.
        public enum Timestamps: String, Sendable, Hashable, CaseIterable {
            /// The times in the file (untimed points get times continued along the geometry, and each
            /// loop pass is shifted to follow the previous one).
            case recorded
            /// The replay's start time plus the point's scheduled offset: the fixes look live.
            case rebasedToNow
        }

        /// Which points to play; `.automatic` by default.
        public var selection: Selection
        /// How fast to play; real time by default.
        public var pacing: Pacing
        /// Where to start; the beginning by default.
        public var start: Start
        /// Whether to start over after the last point (each pass plays from ``start``).
        public var loop: Bool
        /// Track time between the last point of a pass and the first point of the next; 1 s by default.
        public var loopGap: Duration
        /// The longest track-time gap kept between two segments, tracks or routes; longer ones are shortened
        /// to it. `nil` keeps every gap. 10 s by default.
        public var maxGap: Duration?
        /// The speed, in metres per second, at which points without a time are played along the geometry;
        /// 5 m/s by default.
        public var untimedSpeed: Double
        /// Whether to derive speed and course from neighbouring points when the file has none; on by default.
        public var derivesSpeedAndCourse: Bool
        /// Which timestamps the fixes carry; `.recorded` by default.
        public var timestamps: Timestamps

        /// Creates options; every parameter has the default described on its property.
        public init(
            selection: Selection = .automatic, pacing: Pacing = .speedFactor(1), start: Start = .beginning,
            loop: Bool = false, loopGap: Duration = .seconds(1), maxGap: Duration? = .seconds(10),
            untimedSpeed: Double = 5, derivesSpeedAndCourse: Bool = true, timestamps: Timestamps = .recorded
        ) {
            self.selection = selection
            self.pacing = pacing
            self.start = start
            self.loop = loop
            self.loopGap = loopGap
            self.maxGap = maxGap
            self.untimedSpeed = untimedSpeed
            self.derivesSpeedAndCourse = derivesSpeedAndCourse
            self.timestamps = timestamps
        }

        /// Throws `LocationError/Code/invalidConfiguration` naming the first value out of range.
        public func validate() throws(LocationError) {
            func invalid(_ message: String) -> LocationError { LocationError(.invalidConfiguration, message) }
            if case .speedFactor(let factor) = pacing {
                _ = try ValueRange.speedFactor.value(factor, for: "replay speed factor")
            }
            switch start {
            case .index(let index) where index < 0: throw invalid("replay start index \(index) must be ≥ 0")
            case .offset(let offset) where offset < .zero: throw invalid("replay start offset \(offset) must be ≥ 0")
            default: break
            }
            guard loopGap > .zero else { throw invalid("replay loop gap \(loopGap) must be > 0") }
            _ = try ValueRange.trackTime.value(loopGap.seconds, for: "replay loop gap")
            if let maxGap { _ = try ValueRange.trackTime.value(maxGap.seconds, for: "replay maximum gap") }
            _ = try ValueRange.speed.value(untimedSpeed, for: "replay speed for untimed points")
        }
    }
}
