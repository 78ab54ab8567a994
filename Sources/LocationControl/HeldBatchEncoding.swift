/// How a watcher receives a held batch's fixes (the `batches` key of `watch`).
///
/// Both carry the same fixes in the same batch line, `{"type":"batch","count":N,"reason":R,"id":I,…}`:
/// - ``locations``: `"locations":[{…},…]`, one JSON object a fix, as in every other line (the default);
/// - ``records``: `"records":"…"`, the fixes as the records of a held-fixes journal (the binary format
///   `LocationJournal` documents: a length, the payload and its CRC-32 each), concatenated and written in
///   base64. Less than half the bytes, and read without parsing a number: the Swift client
///   (``DaemonLocationSource``) asks for it, so that an app coming back to a full batch of 100,000 fixes
///   has it in a fraction of the time.
public enum HeldBatchEncoding: String, Sendable, Hashable, CaseIterable {
    /// JSON location objects (`"locations"`).
    case locations
    /// Journal records in base64 (`"records"`).
    case records
}
