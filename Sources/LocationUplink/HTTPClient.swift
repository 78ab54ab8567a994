import CCurl
import Foundation
import LocationCore

/// One HTTP connection through libcurl, used by one thread at a time: posts a body and says how the server
/// answered. The connection is kept open between posts (HTTP keep-alive).
///
/// Every wait is bounded: connecting by ``Options/connectTimeout``, a whole exchange by
/// ``Options/requestTimeout`` (a server that accepts and never answers), and ``cancel()`` ends one at once.
final class HTTPClient: @unchecked Sendable {
    // @unchecked: `handle` and `headers` are used only by the thread that calls `post` (the uplink's one
    // sending thread), and freed in deinit once nobody holds the client; `cancelled` is atomic through Locked.

    /// Where and how to post.
    struct Options: Sendable {
        var url: String
        var headers: [String] = []
        var username: String?
        var password: String?
        var caFile: String?
        var connectTimeout: Duration = .seconds(10)
        var requestTimeout: Duration = .seconds(30)
    }

    /// How a post ended.
    enum Outcome: Sendable, Equatable {
        /// The server answered with this status and the start of its body.
        case answered(status: Int, body: String)
        /// No answer: the connection, TLS or the request failed or timed out, in libcurl's words for this
        /// attempt (`reason`, which may name times and addresses), and its error's fixed text (`kind`).
        case failed(reason: String, kind: String)
        /// ``cancel()`` ended it.
        case cancelled
    }

    private let handle: UnsafeMutableRawPointer
    private var headers: UnsafeMutablePointer<curl_slist>?
    private let context: Context

    /// What libcurl's callbacks reach: the answer's first bytes, and whether to stop.
    private final class Context: @unchecked Sendable {
        // @unchecked: `body` is written only by libcurl's write callback, on the thread inside `post`, and read
        // by that thread after curl_easy_perform returns; `cancelled` is a Locked.
        var body: [UInt8] = []
        let cancelled = Locked(false)
        /// libcurl's own words for a failure (CURLOPT_ERRORBUFFER: "SSL certificate problem: …"), written by
        /// the thread inside `post` only.
        let errorText = UnsafeMutablePointer<CChar>.allocate(capacity: 256)

        init() { errorText.initialize(repeating: 0, count: 256) }
        deinit { errorText.deallocate() }
    }

    /// The CA file, checked again before each request.
    private let caFile: String?

    /// The most of an answer's body kept, for messages: the rest is read and discarded.
    static let keptBody = 512

    private static let globalInit: Bool = ccurl_global_init() == CURLE_OK

    /// Prepares a connection to `options.url`; nothing is sent until ``post(_:)``.
    init(options: Options) throws(LocationError) {
        guard Self.globalInit, let handle = curl_easy_init() else {
            throw LocationError(.sourceUnavailable, "libcurl could not be initialised (out of memory?)")
        }
        self.handle = handle
        context = Context()
        caFile = options.caFile
        var list: UnsafeMutablePointer<curl_slist>?
        // No "Expect: 100-continue" round trip; the body is JSON.
        for header in options.headers + ["Content-Type: application/json", "Expect:"] {
            list = curl_slist_append(list, header)
        }
        headers = list
        var failed: CURLcode = CURLE_OK
        func set(_ result: CURLcode) { if result != CURLE_OK, failed == CURLE_OK { failed = result } }
        set(ccurl_set_string(handle, CURLOPT_URL, options.url))
        set(ccurl_set_list(handle, CURLOPT_HTTPHEADER, list))
        set(ccurl_set_long(handle, CURLOPT_POST, 1))
        // Threads: no signals for timeouts (libcurl would use SIGALRM around the resolver otherwise).
        set(ccurl_set_long(handle, CURLOPT_NOSIGNAL, 1))
        set(ccurl_set_long(handle, CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(options.connectTimeout)))
        set(ccurl_set_long(handle, CURLOPT_TIMEOUT_MS, Self.milliseconds(options.requestTimeout)))
        set(ccurl_set_long(handle, CURLOPT_FOLLOWLOCATION, 0))
        // Only the URL's own scheme: a server cannot send the post elsewhere.
        set(ccurl_set_string(handle, CURLOPT_PROTOCOLS_STR, "http,https"))
        set(ccurl_set_long(handle, CURLOPT_TCP_KEEPALIVE, 1))
        if let username = options.username { set(ccurl_set_string(handle, CURLOPT_USERNAME, username)) }
        if let password = options.password { set(ccurl_set_string(handle, CURLOPT_PASSWORD, password)) }
        if let caFile = options.caFile { set(ccurl_set_string(handle, CURLOPT_CAINFO, caFile)) }
        set(ccurl_set_write_function(handle) { data, size, count, pointer in
            guard let pointer else { return 0 }
            let context = Unmanaged<Context>.fromOpaque(pointer).takeUnretainedValue()
            let total = size * count
            let room = HTTPClient.keptBody - context.body.count
            if room > 0, let data {
                data.withMemoryRebound(to: UInt8.self, capacity: total) {
                    context.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: min(room, total)))
                }
            }
            return total
        })
        set(ccurl_set_pointer(handle, CURLOPT_WRITEDATA, Unmanaged.passUnretained(context).toOpaque()))
        set(ccurl_set_long(handle, CURLOPT_NOPROGRESS, 0))
        set(ccurl_set_progress_function(handle) { pointer, _, _, _, _ in
            guard let pointer else { return 0 }
            return Unmanaged<Context>.fromOpaque(pointer).takeUnretainedValue().cancelled.value ? 1 : 0
        })
        set(ccurl_set_pointer(handle, CURLOPT_XFERINFODATA, Unmanaged.passUnretained(context).toOpaque()))
        set(ccurl_set_pointer(handle, CURLOPT_ERRORBUFFER, UnsafeMutableRawPointer(context.errorText)))
        if failed != CURLE_OK {
            curl_easy_cleanup(handle)
            curl_slist_free_all(list)
            throw LocationError(.invalidConfiguration, "libcurl refused an option: \(String(cString: curl_easy_strerror(failed)))")
        }
    }

    deinit {
        curl_easy_cleanup(handle)
        curl_slist_free_all(headers)
    }

    /// Posts `body` and waits for the answer (bounded by the timeouts, or ended by ``cancel()``).
    func post(_ body: [UInt8]) -> Outcome {
        context.body.removeAll(keepingCapacity: true)
        if context.cancelled.value { return .cancelled }
        // The CA file replaced since the start by something that is not a file: not handed to libcurl.
        if let caFile, let problem = UplinkEndpoint.caFileProblem(caFile) { return .failed(reason: problem, kind: "ca-file") }
        context.errorText[0] = 0
        let result = body.withUnsafeBytes { raw -> CURLcode in
            _ = ccurl_set_long(handle, CURLOPT_POSTFIELDSIZE, raw.count)
            _ = ccurl_set_pointer(handle, CURLOPT_POSTFIELDS, UnsafeMutableRawPointer(mutating: raw.baseAddress))
            return curl_easy_perform(handle)
        }
        // POSTFIELDS must not point at the freed body once perform returned.
        _ = ccurl_set_pointer(handle, CURLOPT_POSTFIELDS, nil)
        if result == CURLE_ABORTED_BY_CALLBACK { return .cancelled }
        guard result == CURLE_OK else {
            let detail = ValueRange.printable(String(cString: context.errorText), limit: 200)
            let kind = String(cString: curl_easy_strerror(result))
            return .failed(reason: detail.isEmpty ? kind : detail, kind: kind)
        }
        var status = 0
        _ = ccurl_response_code(handle, &status)
        // One line for a log or status: the body's line breaks and runs of spaces (an HTML page, a trailing
        // newline) become single spaces; other control characters are shown escaped.
        let text = String(decoding: context.body, as: UTF8.self).split(whereSeparator: { $0.isWhitespace }).joined(separator: " ")
        return .answered(status: status, body: ValueRange.printable(text, limit: 200))
    }

    /// Ends a post under way at once, and every later one.
    func cancel() {
        context.cancelled.withLock { $0 = true }
    }

    private static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
    }
}
