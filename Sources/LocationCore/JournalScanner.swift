/// Reads a journal's records in file order through a window of bounded size, so that a journal of any
/// length (a sparse 6 GB file included) is read in constant memory.
///
/// The bytes come from `read`, which fills a buffer from a file offset as `pread` does (a count, 0 at the
/// end, or the failure). Each whole record with a matching checksum is reported with its bytes;
/// a stretch that is not one (a flipped byte, a torn write, zeros) is reported as damage once the scan has
/// found where the next good record starts, or the end.
struct JournalScanner: ~Copyable {
    /// The longest record: a length, the longest payload and a checksum.
    static let longestRecord = 4 + LocationJournal.maxPayload + 4
    /// The shortest record: a length, one payload byte and a checksum.
    static let shortestRecord = 4 + 1 + 4

    /// A stretch of bytes that holds no record, and why the first of them is not one.
    struct Damage {
        var range: Range<Int>
        var reason: String
    }

    /// The number of bytes to read.
    private(set) var size: Int
    private let read: (UnsafeMutableRawBufferPointer, Int) -> Result<Int, SystemIO.Failure>
    private let describe: (SystemIO.Failure) -> String
    private var window: UnsafeMutableBufferPointer<UInt8>
    /// The file offset of `window[0]`, and how many bytes of the window are filled.
    private var windowStart = 0
    private var windowCount = 0

    /// A scanner over `size` bytes that `read` supplies; `describe` turns a failed read into words.
    init(
        size: Int, windowSize: Int = 1 << 20, describe: @escaping (SystemIO.Failure) -> String,
        read: @escaping (UnsafeMutableRawBufferPointer, Int) -> Result<Int, SystemIO.Failure>
    ) {
        self.size = max(0, size)
        self.read = read
        self.describe = describe
        window = .allocate(capacity: max(windowSize, 2 * Self.longestRecord))
    }

    deinit { window.deallocate() }

    /// Reads every record after the header (`start` bytes), calling `record` with each good one and its
    /// bytes, and `damage` with each stretch that holds none. Returns where the last good record ends.
    mutating func scan(
        from start: Int,
        record: (Location, UnsafeBufferPointer<UInt8>) throws(LocationError) -> Void,
        damage: (Damage) throws(LocationError) -> Void
    ) throws(LocationError) -> Int {
        var offset = start
        var validEnd = start
        var sources = LocationJournal.SourceCache()
        while offset < size {
            try ensure(offset)
            let relative = offset - windowStart
            let filled = UnsafeBufferPointer(rebasing: window[0..<windowCount])
            switch LocationJournal.record(filled, at: relative, sourceCache: &sources) {
            case .success(let (location, next)):
                try record(location, UnsafeBufferPointer(rebasing: filled[relative..<next]))
                offset = windowStart + next
                validEnd = offset
            case .failure(let failure):
                let resume = try nextRecord(after: offset)
                try damage(Damage(range: offset..<resume, reason: failure.reason))
                offset = resume
            }
        }
        return validEnd
    }

    /// The offset of the first whole, valid record after `offset`, or ``size`` when there is none. Most
    /// offsets are refused by their length alone (1…4096 has two zero high bytes), without a checksum.
    private mutating func nextRecord(after offset: Int) throws(LocationError) -> Int {
        var probe = offset + 1
        while size - probe >= Self.shortestRecord {
            try ensure(probe)
            let windowEnd = windowStart + windowCount
            // The last offset whose longest record lies wholly in the window (or in what is left).
            let last = windowEnd == size ? size - Self.shortestRecord : windowEnd - Self.longestRecord
            let filled = UnsafeBufferPointer(rebasing: window[0..<windowCount])
            while probe <= last {
                let index = probe - windowStart
                if filled[index + 3] == 0, filled[index + 2] == 0 {
                    let length = Int(filled[index]) | Int(filled[index + 1]) << 8
                    if length >= 1, length <= LocationJournal.maxPayload, case .success = LocationJournal.record(filled, at: index) {
                        return probe
                    }
                }
                probe += 1
            }
        }
        return size
    }

    /// Makes the window hold the bytes from `offset` on, as many as a longest record or as are left.
    private mutating func ensure(_ offset: Int) throws(LocationError) {
        let wanted = min(Self.longestRecord, size - offset)
        if offset >= windowStart, offset + wanted <= windowStart + windowCount { return }
        let kept = max(0, windowStart + windowCount - offset)
        if kept > 0, let base = window.baseAddress {
            base.update(from: base + (offset - windowStart), count: kept)
        }
        windowStart = offset
        windowCount = kept
        while windowCount < window.count, windowStart + windowCount < size {
            let free = UnsafeMutableRawBufferPointer(UnsafeMutableBufferPointer(rebasing: window[windowCount..<min(window.count, size - windowStart)]))
            let count: Int
            switch read(free, windowStart + windowCount) {
            case .success(let read): count = read
            case .failure(let failure): throw LocationError(.journalIO, describe(failure))
            }
            // A file that shrank under the scan ends where its bytes end.
            if count == 0 { size = windowStart + windowCount }
            windowCount += count
        }
    }
}
