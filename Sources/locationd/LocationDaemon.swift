import Foundation
import LocationControl
import LocationCore
import LocationGPSD
import LocationService
import LocationUplink
import Logging
import ServiceLifecycle

/// The daemon: one receiver shared by every app, an app session per app (its lifecycle, manager, held batch,
/// journal and watchers), and the control socket.
///
/// A connection acts on the app `default` until it opens another. `default` exists from the start and every
/// client may use it, so single-app use needs no `open`; every other app belongs to the user who opened it,
/// and is named by its owner and id together (``AppKey``): a user reaches only their own, root any.
final class LocationDaemon: Service, Sendable {
    /// The app every connection uses until it opens another.
    let defaultApp: AppSession
    var session: LocationSession { defaultApp.session }
    var application: Application { defaultApp.application }
    var manager: LocationManager { defaultApp.manager }
    let settings: ServiceConfiguration
    /// The one receiver the apps share.
    let receiver: SharedReceiver
    private let apps: Locked<[AppKey: AppSession]>
    /// Where fixes leave the device, each a consumer of the receiver with its own policy and outbox.
    let uplinks: [UplinkConsumer]
    /// The app each connection opened (absent: `default`; ``AppKey/none`` after a failed open).
    private let connectionApps = Locked<[ControlConnection: AppKey]>([:])
    /// Which peers the daemon's user namespace can tell apart.
    private let namespace = UserNamespaceMap.current()
    /// Held while an app's session is created, so that it is created once.
    private let creating = Locked(())
    private let server: Locked<ControlServer?> = Locked(nil)
    /// The NMEA socket's consumer, while the daemon runs with one.
    private let nmea: Locked<NMEAConsumer?> = Locked(nil)
    /// The satellites for `sky` requests: a watch of gpsd's own, made at the first request (`nil` when the
    /// receiver is not gpsd).
    private let sky: Locked<SkyRelay?> = Locked(nil)
    private let logger: Logger
    private let now: @Sendable () -> Date
    private let startedAt = ContinuousClock.now
    /// A fix that arrived this recently is answered to `current` at once.
    private static let freshFixAge: Duration = .seconds(2)
    /// The most regions one app may monitor in the daemon (the library has no limit).
    static let maximumRegionsPerApp = 10_000

    init(
        source: any LocationSource, settings: ServiceConfiguration, explicitState: ApplicationState?, logger: Logger,
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws(CommandFailure) {
        self.settings = settings
        self.logger = logger
        self.now = now
        // Held until the uplinks' taps are attached (run()): an uplink sends every fix, the first ones too.
        receiver = SharedReceiver(source: source, held: !settings.uplinks.isEmpty)
        if let journal = settings.journalPath {
            do throws(LocationError) {
                try AppDirectory.checkJournalDirectory(of: journal)
                let apps = AppDirectory(daemonJournal: journal).path
                var info = stat()
                if lstat(apps, &info) == 0 { try AppDirectory.checkPrivate(apps) }
            } catch {
                throw .cannotCreate(error.message)
            }
        }
        let stateFile = settings.journalPath.map(LifecycleStateFile.init(journalPath:))
        let startState = stateFile.map { Self.startState(explicit: explicitState, saved: $0, logger: logger) }
            ?? explicitState ?? .active
        let server = self.server
        do {
            defaultApp = try AppSession(
                id: ControlRequest.defaultApp, owner: nil, source: receiver.tap(), settings: settings,
                startState: startState, stateFile: stateFile, logger: logger, now: now,
                send: Self.sender(server: server))
        } catch {
            throw error.code == .journalIO ? .cannotCreate(error.message) : .usage(error.message)
        }
        apps = Locked([AppKey.shared: defaultApp])
        uplinks = try Self.makeUplinks(settings: settings, receiver: receiver, logger: logger)
        // The shared app's regions, as a previous run left them, then as configured: before its first fix.
        defaultApp.restoreRegions(logger: logger)
        if !settings.regions.isEmpty { applyConfiguredRegions(to: defaultApp) }
        restoreApps()
    }

    /// Opens each uplink's outbox (`uplinks/NAME.outbox` beside the journal, in a directory only locationd's
    /// user may enter; in memory without a journal) and its consumer on the shared receiver.
    private static func makeUplinks(
        settings: ServiceConfiguration, receiver: SharedReceiver, logger: Logger
    ) throws(CommandFailure) -> [UplinkConsumer] {
        var consumers: [UplinkConsumer] = []
        var names = Set<String>()
        var receivers = Set<String>()
        for (index, text) in settings.uplinks.enumerated() {
            let endpoint: UplinkEndpoint
            do throws(LocationError) {
                endpoint = try UplinkEndpoint(parsing: text, place: "uplink \(index + 1)")
            } catch { throw .usage(error.message) }
            guard receivers.insert(endpoint.sameReceiverKey).inserted, names.insert(endpoint.name).inserted else {
                throw .usage("uplink \(index + 1): \(endpoint.name) is given twice; one uplink per receiver, user and device")
            }
            if endpoint.format == .homeassistant, settings.regions.contains(where: { $0.identifier == HomeAssistantUplink.noZone }) {
                throw .usage("uplink \(index + 1): a region named \(HomeAssistantUplink.noZone) cannot be told from no zone on Home Assistant's state topic; rename it")
            }
            var outbox: String?
            var regions: String?
            if let journal = settings.journalPath, endpoint.format != .homeassistant || !settings.regions.isEmpty {
                let directory = FilePathText.parent(of: journal) + "/uplinks"
                if mkdir(directory, 0o700) != 0, errno != EEXIST {
                    throw .cannotCreate("cannot create \(directory) for the uplinks' outboxes: \(String(cString: strerror(errno)))")
                }
                do throws(LocationError) { try AppDirectory.checkPrivate(directory) } catch { throw .cannotCreate(error.message) }
                if endpoint.format != .homeassistant { outbox = "\(directory)/\(endpoint.name).outbox" }
                regions = "\(directory)/\(endpoint.name).regions"
            } else if endpoint.format != .homeassistant {
                logger.warning("uplink \(endpoint.name): without --journal its outbox is in memory only, and a crash loses what the receiver has not acknowledged")
            }
            do throws(LocationError) {
                let uplink = try Uplinks.make(endpoint, outboxPath: outbox, logger: logger)
                consumers.append(
                    try UplinkConsumer(
                        uplink: uplink, source: receiver.tap(), settings: settings, regionsPath: regions, logger: logger))
            } catch {
                switch error.code {
                case .journalIO, .journalCorrupt: throw .cannotCreate(error.message)
                default: throw .usage(error.message)
                }
            }
        }
        if let journal = settings.journalPath { warnOfUnusedOutboxes(in: FilePathText.parent(of: journal) + "/uplinks", used: names, logger: logger) }
        return consumers
    }

    /// Says which outboxes in `directory` belong to no configured uplink and still hold fixes (a URL
    /// corrected or removed): they are not sent, and UPLINKS.md says how to hand them to another uplink.
    private static func warnOfUnusedOutboxes(in directory: String, used: Set<String>, logger: Logger) {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for entry in entries.sorted() where entry.hasSuffix(".outbox") {
            let name = String(entry.dropLast(".outbox".count))
            guard !used.contains(name) else { continue }
            var info = stat()
            guard lstat("\(directory)/\(entry)", &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size > 0 else { continue }
            // Acknowledged records stay in the file until it is rewritten: only what waits is worth a word.
            guard let waiting = Uplinks.waitingCount(outbox: "\(directory)/\(entry)"), waiting > 0 else { continue }
            logger.warning(
                "\(directory)/\(entry) holds \(waiting) \(waiting == 1 ? "fix" : "fixes") of no uplink configured now (a changed or removed URL?): they are not sent; UPLINKS.md says how to hand them to an uplink, or remove the file with its .cursor"
            )
        }
    }

    /// Sends an app's lines to its watchers.
    private static func sender(
        server: Locked<ControlServer?>
    ) -> @Sendable (Outgoing, Set<ControlConnection>) -> Void {
        { outgoing, watchers in
            guard !watchers.isEmpty, let server = server.withLock({ $0 }) else { return }
            switch outgoing {
            case .event(let event):
                server.broadcast(JSONLineEncoder.line(event), to: watchers)
            case .batch(let line, let count):
                // A held batch: one line, whole or not at all.
                server.broadcastBatch(line, count: count, to: watchers)
            }
        }
    }

    // MARK: - App sessions

    /// Where the apps' journals go (`apps/` beside the daemon's journal); none without one.
    private var appDirectory: AppDirectory? { settings.journalPath.map(AppDirectory.init(daemonJournal:)) }

    /// Creates the session of a new app (its journal restored, if it has one, in its saved state).
    private func makeApp(_ id: String, owner: UInt32, restoring: Bool) throws(LocationError) -> AppSession {
        var appSettings = settings
        if let appDirectory {
            let files = appDirectory.files(app: id, owner: owner)
            appSettings.journalPath = files.journal
            try appDirectory.createDirectories(for: owner, app: id)
            // A new app without a journal starts clean: files left by a removal a crash cut short (an outbox,
            // a state record) are not its own.
            var info = stat()
            if !restoring, lstat(files.journal, &info) != 0 { files.removeAll() }
            // Launched with its own background location mode, as it ran: an app that was in the background
            // with the mode on resumes running there, not suspended for want of it.
            if restoring, let mode = AppSession.savedPolicy(in: files.policy)?.backgroundLocation {
                appSettings.backgroundLocation = mode
            }
        } else {
            appSettings.journalPath = nil
        }
        let stateFile = appSettings.journalPath.map(LifecycleStateFile.init(journalPath:))
        var startState = ApplicationState.active
        if let stateFile, let path = appSettings.journalPath {
            switch stateFile.load() {
            case .restored(let saved):
                startState = saved
            case .ignored(let reason):
                // The fixes in the journal are kept for the app's next foreground, not flushed to nobody.
                logger.warning("\(reason); the app \(id) starts suspended, holding what its journal has")
                startState = .suspended
            case .absent:
                if access(path, F_OK) == 0 {
                    logger.warning("the app \(id)'s state file is missing; it starts suspended, holding what its journal has")
                    startState = .suspended
                }
            }
        }
        let app = try AppSession(
            id: id, owner: owner, source: receiver.tap(), settings: appSettings, startState: startState,
            stateFile: stateFile, logger: logger, now: now, send: Self.sender(server: server))
        // Its regions before its first fix, so that none goes unevaluated (a file a removal left is gone
        // already: see above).
        app.restoreRegions(logger: logger)
        app.manager.startUpdatingLocation()
        guard restoring else { return app }
        // Restored: the app's own policy as its opens left it (its updates on or off included).
        if let policy = app.savedPolicy() { app.restore(policy) }
        // An app that had gone away is still gone (and is held for); one that was attached when the daemon
        // died went with it, and is gone from now; any other resumes as it was.
        let date = Date(timeIntervalSince1970: now().timeIntervalSince1970.rounded(.down))
        if let since = app.savedGone() {
            app.holdWhileGone()
            app.markAbandoned(since: since, now: date)
        } else if app.hasGoneMarker() || app.wasAttached() {
            // Gone, but since when is not known (a marker that cannot be read), or the daemon died with the
            // app: gone from now, so that it still expires.
            let reason = app.wasAttached() ? "it was attached when locationd stopped" : "its gone marker could not be read"
            app.holdWhileGone()
            app.markAbandoned(since: date, now: date)
            app.saveGone(at: date)
            app.clearAttachedMarker()
            logger.notice("the app \(id) is gone (\(reason)); its fixes are held until it opens its session again")
        }
        return app
    }

    /// Brings back the sessions of apps that were journaled when the daemon last ran: their apps are gone
    /// until they open them again, so they hold what the receiver gives them.
    private func restoreApps() {
        guard let appDirectory else { return }
        for (owner, id) in appDirectory.journaledApps() {
            guard appCount < settings.maxApps else {
                logger.warning("not restoring the app \(id): already \(settings.maxApps) apps (apps.max)")
                continue
            }
            do throws(LocationError) {
                let app = try makeApp(id, owner: owner, restoring: true)
                apps.withLock { $0[app.key] = app }
                let gone = app.abandonedSince.map { ", gone since \(RFC3339.string(from: $0, fractionDigits: 3))" } ?? ""
                logger.info("restored the app \(id) of uid \(owner): \(app.application.applicationState.rawValue), holding \(app.manager.heldCount.counted("fix"))\(gone)")
            } catch {
                logger.error("cannot restore the app \(id) of uid \(owner): \(error.message)")
            }
        }
    }

    /// How many apps there are besides `default` (what `apps.max` bounds).
    private var appCount: Int { apps.withLock { $0.count - 1 } }

    /// The app a connection acts on; `nil` after an `open` that failed, so that what was sent after it
    /// never falls back to the shared app.
    private func app(for connection: ControlConnection) -> AppSession? {
        let key = connectionApps.withLock { $0[connection] } ?? AppKey.shared
        return apps.withLock { $0[key] }
    }

    /// The app an `open` or `remove` from `connection` names: the caller's own app `id`, or `owner`'s for root;
    /// `default` for everyone. A reply when the request may not name it.
    private func key(for id: String, owner: UInt32?, connection: ControlConnection) -> KeyLookup {
        if id == ControlRequest.defaultApp {
            guard owner == nil else {
                return .refused(.failure(.badRequest, "the app default is shared by every client and has no \"owner\""))
            }
            return .key(.shared)
        }
        guard let uid = connection.peerUID else {
            return .refused(.failure("not-owner", "locationd cannot tell which user is connected"))
        }
        let owner = owner ?? uid
        guard owner == uid || uid == 0 else {
            // The same answer whether or not that user has such an app: nothing is told about other users.
            return .refused(.failure("not-owner", "only root may name another user's app; leave \"owner\" out to use your own"))
        }
        return .key(AppKey(owner: owner, id: id))
    }

    /// Answers `open`: the caller's app, created if new (unless `create` is false). A refused `open` leaves the
    /// connection with no app until the next one succeeds.
    private func open(
        _ id: String, attach: Bool, create: Bool, policy: AppPolicy, owner: UInt32?, connection: ControlConnection
    ) -> ControlReply {
        let key: AppKey
        switch self.key(for: id, owner: owner, connection: connection) {
        case .key(let found): key = found
        case .refused(let reply):
            connectionApps.withLock { $0[connection] = AppKey.none }
            return reply
        }
        let reply = openApp(key, attach: attach, create: create, policy: policy, connection: connection)
        connectionApps.withLock { $0[connection] = reply.isSuccess ? key : AppKey.none }
        return reply
    }

    private enum KeyLookup {
        case key(AppKey)
        case refused(ControlReply)
    }

    private enum OpenOutcome {
        case found(AppSession, created: Bool)
        case refused(ControlReply)
    }

    private func openApp(
        _ key: AppKey, attach: Bool, create: Bool, policy: AppPolicy, connection: ControlConnection
    ) -> ControlReply {
        let id = key.id
        let uid = connection.peerUID
        if attach, key == .shared {
            return .failure(
                .badRequest,
                "the app default is shared by every client and cannot be attached: open an app of your own (\"app\":\"NAME\")")
        }
        // One creation at a time: two clients opening a new app at once get the one session.
        let outcome = creating.withLock { _ -> OpenOutcome in
            if let found = apps.withLock({ $0[key] }) { return .found(found, created: false) }
            let whose = key.owner == uid ? "" : " of \(Self.userName(key.owner))"
            guard create, let owner = key.owner else {
                return .refused(.failure("no-such-app", "locationd has no app \(id)\(whose); create it with locationctl state --app \(id) active (or another state)"))
            }
            guard appCount < settings.maxApps else {
                return .refused(.failure("too-many-apps", "locationd already serves \(settings.maxApps) apps (apps.max); cannot open \(id)"))
            }
            let owned = apps.value.keys.filter { $0.owner == owner }.count
            guard owned < settings.maxAppsPerUser || uid == 0 else {
                return .refused(.failure(
                    "too-many-apps",
                    "\(Self.userName(owner)) already has \(owned) apps in locationd (apps.maxPerUser); remove one no longer used (locationctl apps remove NAME) to open \(id)"))
            }
            do throws(LocationError) {
                let app = try makeApp(id, owner: owner, restoring: false)
                apps.withLock { $0[key] = app }
                logger.info("opened the app \(id) for uid \(owner)")
                return .found(app, created: true)
            } catch {
                return .refused(.failure(error))
            }
        }
        let app: AppSession, created: Bool
        switch outcome {
        case .found(let found, let isNew): (app, created) = (found, isNew)
        case .refused(let reply): return reply
        }
        app.noteUse()
        if attach {
            if app.abandonedSince != nil { logger.info("the app \(id) is back, holding \(app.manager.heldCount.counted("fix"))") }
            app.attach(connection)
        } else {
            app.detach(connection)
        }
        // After the attach, which restores the background location mode the app had before it went: what
        // this open asks for wins over that (an app that comes back suspended asks for it on).
        // The default app's policy comes from the daemon's configuration at each start; an app's own is kept.
        app.apply(policy, save: key != .shared)
        return .opened(app: id, created: created, state: app.application.applicationState, policy: app.manager.accuracyPolicy)
    }

    /// A connection closed: it watches nothing more; when it was an app itself, that app is gone and its
    /// session holds its fixes for it.
    private func connectionClosed(_ connection: ControlConnection) {
        connectionApps.withLock { _ = $0.removeValue(forKey: connection) }
        // Whole seconds: the time is shown to people and saved for a restart.
        let date = Date(timeIntervalSince1970: now().timeIntervalSince1970.rounded(.down))
        // Every app: the connection may have watched or been one app and then opened another.
        for app in apps.value.values where app.connectionClosed(connection, at: date) {
            app.holdWhileGone()
            app.saveGone(at: date)
            app.clearAttachedMarker()
            logger.notice("the app \(app.id) went away while tracking; holding its fixes for \(ValueRange.text(settings.keepAbandoned)) s at most")
        }
    }

    /// Drops the sessions of apps gone for longer than `apps.keepAbandoned`, and of apps nobody has used for as
    /// long (no connection has them open or watches them), with what they held.
    func dropExpiredApps(at date: Date) {
        let inUse = Set(connectionApps.value.values)
        creating.withLock { _ in dropExpired(at: date, inUse: inUse) }
    }

    /// What ``dropExpiredApps(at:)`` does, with creation held back.
    private func dropExpired(at date: Date, inUse: Set<AppKey>) {
        let expired = apps.withLock { apps -> [(AppSession, String)] in
            var expired: [(AppSession, String)] = []
            for (key, app) in apps where key != .shared {
                if app.goneFor.map({ $0 >= settings.keepAbandoned }) ?? false {
                    expired.append((app, "gone since \(RFC3339.string(from: app.abandonedSince ?? date, fractionDigits: 3))"))
                } else if !inUse.contains(key), let idle = app.unusedFor, idle >= settings.keepAbandoned {
                    expired.append((app, "unused for \(ValueRange.text(idle.rounded(.down))) s"))
                }
            }
            for (app, _) in expired { apps[app.key] = nil }
            return expired
        }
        for (app, why) in expired {
            logger.warning("dropping the app \(app.id) of uid \(app.owner.map(String.init) ?? "?"), \(why), with the \((app.manager.heldCount + app.outbox.count).counted("fix")) it held (apps.keepAbandoned)")
            end(app)
        }
    }

    /// Ends an app's session and deletes its files.
    private func end(_ app: AppSession) {
        app.stopSavingState()
        app.manager.shutdown()
        app.outbox.close()
        app.files?.removeAll()
    }

    /// Answers `remove`: the app's session ends and what it held is deleted, unless the app itself is connected.
    private func remove(_ id: String, owner: UInt32?, connection: ControlConnection) -> ControlReply {
        let key: AppKey
        switch self.key(for: id, owner: owner, connection: connection) {
        case .key(let found): key = found
        case .refused(let reply): return reply
        }
        guard key != .shared else {
            return .failure(.badRequest, "the app default is shared by every client and cannot be removed")
        }
        enum Outcome { case absent, attached, removed(AppSession, held: Int) }
        // Ended and its files deleted before another open of the name may create it again.
        let outcome = creating.withLock { _ -> Outcome in
            let found = apps.withLock { apps -> Outcome in
                guard let app = apps[key] else { return .absent }
                guard !app.isAttached else { return .attached }
                apps[key] = nil
                return .removed(app, held: 0)
            }
            guard case .removed(let app, _) = found else { return found }
            let held = app.manager.heldCount + app.outbox.count
            end(app)
            return .removed(app, held: held)
        }
        switch outcome {
        case .absent:
            let whose = key.owner == connection.peerUID ? "" : " of \(Self.userName(key.owner))"
            return .failure("no-such-app", "locationd has no app \(id)\(whose) to remove")
        case .attached:
            return .failure("app-in-use", "the app \(id) is connected to locationd: quit it (or stop its updates) first")
        case .removed(let app, let held):
            logger.notice("removed the app \(id) of uid \(key.owner.map(String.init) ?? "?") with the \(held.counted("fix")) it held, as uid \(connection.peerUID.map(String.init) ?? "?") asked")
            // Its watchers learn why nothing more comes, and are let go.
            let removed = LocationError(LocationError.Code(rawValue: "app-removed"), "the app \(id) was removed")
            server.withLock { $0 }?.close(app.watchers, after: JSONLineEncoder.line(.error(removed)))
            struct Removed: Encodable { let removed: String, fixesDeleted: Int }
            return .success(Removed(removed: id, fixesDeleted: held))
        }
    }

    private static func userName(_ uid: UInt32?) -> String {
        guard let uid else { return "an unknown user" }
        let name = getpwuid(uid).flatMap { $0.pointee.pw_name.map { String(cString: $0) } }
        return name.map { "\($0) (uid \(uid))" } ?? "uid \(uid)"
    }

    /// The state to start in: an explicit `--state` wins; else the saved state, if it is valid and belongs to
    /// this journal; else active. Says which, and why a saved record was not used.
    private static func startState(
        explicit: ApplicationState?, saved file: LifecycleStateFile, logger: Logger
    ) -> ApplicationState {
        switch file.load() {
        case .absent:
            return explicit ?? .active
        case .restored(let saved):
            if let explicit {
                if explicit != saved {
                    logger.notice("starting \(explicit.rawValue) as --state asks; the saved state was \(saved.rawValue)")
                }
                return explicit
            }
            logger.info("resuming in state \(saved.rawValue), saved in \(file.path)")
            return saved
        case .ignored(let reason):
            let state = explicit ?? .active
            logger.warning("\(reason); starting \(state.rawValue)")
            return state
        }
    }

    func run() async throws {
        let control: ControlServer
        let group = try ControlGroup.id(settings.controlGroup)
        do {
            let limits = ControlServerConfiguration(
                stallTimeout: ValueRange.duration(clampingSeconds: settings.controlStallTimeout),
                maxTotalOutputBuffer: settings.controlMaxBufferedOutput, socketGroup: group)
            control = try ControlServer(path: settings.socketPath, configuration: limits) { [weak self] request, connection in
                guard let self else { return .failure("shutting-down", "locationd is shutting down") }
                return await self.handle(request, from: connection)
            } onClose: { [weak self] connection in
                self?.connectionClosed(connection)
            }
        } catch {
            throw CommandFailure.cannotCreate("cannot listen on \(settings.socketPath): \(error.message)")
        }
        server.withLock { $0 = control }
        if let path = settings.nmeaSocketPath {
            do {
                let consumer = try NMEAConsumer(
                    path: path, group: try ControlGroup.id(settings.nmeaGroup, for: .nmea), source: receiver.tap(), settings: settings,
                    logger: logger)
                nmea.withLock { $0 = consumer }
            } catch {
                control.stop()
                server.withLock { $0 = nil }
                throw error
            }
        }
        logger.info(
            "listening",
            metadata: [
                "socket": "\(settings.socketPath)", "source": "\(manager.source.name)",
                "state": "\(application.applicationState.rawValue)", "journal": "\(settings.journalPath ?? "none")",
                "apps": "\(apps.value.count)", "nmea": "\(settings.nmeaSocketPath ?? "none")",
            ])
        let tapsBefore = receiver.tapCount
        for consumer in uplinks { consumer.start() }
        if !uplinks.isEmpty {
            // Their managers attach their taps from tasks of their own: the source starts once all are there
            // (or after 5 s whatever happens, so that nothing waits for ever on one that could not).
            let deadline = ContinuousClock.now + .seconds(5)
            while receiver.tapCount < tapsBefore + uplinks.count, ContinuousClock.now < deadline {
                try? await Task.sleep(for: .milliseconds(5))
            }
            receiver.release()
        }
        manager.startUpdatingLocation()
        // Abandoned apps are looked at once a minute (or sooner, when they are kept for less).
        let sweep = Task { [weak self, keep = settings.keepAbandoned] in
            let period = Duration.seconds(min(60, max(1, keep / 2)))
            while !Task.isCancelled {
                try? await Task.sleep(for: period)
                self?.dropExpiredApps(at: Date())
            }
        }
        try? await gracefulShutdown()
        sweep.cancel()
        logger.info("shutting down")
        let all = apps.value.values
        for app in all { app.stopSavingState() }
        for app in all { app.manager.shutdown() }
        for app in all { await app.manager.waitForPendingDeliveries() }
        for consumer in uplinks { await consumer.stop() }
        if let consumer = nmea.withLock({ $0 }) { await consumer.stop() }
        sky.withLock { $0 }?.stop()
        receiver.stop()
        control.stop()
        server.withLock { $0 = nil }
    }

    /// Answers one request on the app the connection acts on.
    func handle(_ request: ControlRequest, from connection: ControlConnection) async -> ControlReply {
        // Users the namespace cannot tell apart would share one identity, and each other's apps.
        if let uid = connection.peerUID, namespace.isUnmapped(uid) {
            return .failure(
                "unmapped-user",
                "locationd cannot tell which user you are: it runs in a user namespace that does not map your user (PrivateUsers= in its unit?), where every such user looks alike; run it without one")
        }
        switch request {
        case .open(let id, let attach, let create, let policy, let owner):
            return open(id, attach: attach, create: create, policy: policy, owner: owner, connection: connection)
        case .remove(let id, let owner):
            return remove(id, owner: owner, connection: connection)
        case .apps:
            let uid = connection.peerUID
            let visible = apps.value.values.filter { $0.owner == nil || $0.admits(uid) }
                .sorted { ($0.id, $0.owner ?? 0) < ($1.id, $1.owner ?? 0) }
            return .apps(visible.map { status(of: $0, for: uid) })
        case .sky(let after):
            // The receiver's, not an app's: what it sees of the sky tells no one where anybody is.
            guard let gpsd = receiver.source as? GPSDLocationSource else {
                return .failure(LocationError(
                    .sourceUnavailable, "locationd reads \(receiver.source.name), which reports no satellites; sky shows gpsd's receiver"))
            }
            let relay = sky.withLock { relay in
                if relay == nil { relay = SkyRelay(configuration: gpsd.configuration) }
                return relay!
            }
            do {
                let answer = try await relay.view(after: after, wait: .seconds(3))
                return .sky(answer.view, sequence: answer.sequence, problem: answer.problem)
            } catch {
                return .failure(error)
            }
        default:
            guard let app = app(for: connection) else {
                return .failure("no-app", "this connection acts on no app (its last open failed, or the app was removed): open one first")
            }
            app.noteUse()
            // The app was another user's when the connection opened it, so this holds; kept as a guard.
            guard app.admits(connection.peerUID) else {
                return .failure("not-owner", "the app \(app.id) belongs to \(Self.userName(app.owner))")
            }
            if case .watch(let batches) = request {
                // The app itself watching takes back what was held while it was gone, whatever state it comes
                // back in: flushed before this connection watches, so that this watch's reply carries it (and
                // watchers already there get it too, but none of them can take it from the app).
                if app.isAttached(by: connection) { await app.takeBackHeld() }
                app.watch(from: connection, batches: batches)
            }
            return await handle(request, for: app, viewer: connection.peerUID)
        }
    }

    /// Answers one request about `app`.
    func handle(_ request: ControlRequest, for app: AppSession, viewer: UInt32?) async -> ControlReply {
        let manager = app.manager
        let application = app.application
        let session = app.session
        switch request {
        case .current(let timeout, let accuracy, let maxAge):
            // A source that is down answers at once with its own reason, rather than after the timeout.
            if let outage = session.outage {
                return .failure(LocationError(.sourceUnavailable, outage.message(source: manager.source.name)))
            }
            // The manager's last fix is after the policy: coarsened while the app runs in the background.
            // A replay that has ended keeps its last fix: asking the manager would start it again from
            // its first point.
            if manager.sourceStatus == .ended {
                guard let (location, age) = manager.locationWithAge else {
                    return .failure(LocationError(.noFix, "\(manager.source.name) ended before any fix"))
                }
                // Asked for a fix no older than that: an ended source has none newer to give.
                if let maxAge, age > maxAge {
                    return .failure(LocationError(.noFix, "\(manager.source.name) has ended; its last fix is \(Int(age.seconds)) s old, older than the \(ValueRange.text(maxAge.seconds)) s asked for"))
                }
                return .location(location)
            }
            if let (location, age) = manager.locationWithAge, age <= maxAge ?? Self.freshFixAge,
                AcquisitionSelector.meets(location, accuracy)
            {
                return .location(location)
            }
            do {
                let location = try await manager.requestLocation(timeout: timeout ?? .seconds(30), desiredAccuracy: accuracy)
                return .location(location)
            } catch {
                return .failure(error)
            }
        case .state(let target):
            if let target {
                guard let state = ApplicationState(rawValue: target), state != .notRunning else {
                    return .failure("bad-request", "'\(target)' is not a state; use active, inactive, background or suspended")
                }
                do { try application.transition(to: state) } catch { return .failure(error) }
                await application.waitForPendingEvents()
                await manager.waitForPendingDeliveries()
            }
            let state = application.applicationState
            return .state(state, executingInBackground: application.executingInBackground,
                          policy: manager.accuracyPolicy)
        case .status:
            return .status(status(of: app, for: viewer))
        case .watch(let batches):
            let state = application.applicationState
            // The state as the event that left the app in it (the state alone does not say which led to
            // `inactive`); the session hears of a change after the application makes it.
            let last = session.lastLifecycleEvent.flatMap { $0.resultingState == state ? $0 : nil }
            var first = [JSONLineEncoder.line(.lifecycle(last ?? .leading(to: state)))]
            // A new watcher learns at once why no fix may come, rather than facing a blank screen.
            if let outage = session.outage {
                first.append(JSONLineEncoder.line(.error(LocationError(.sourceUnavailable, outage.message(source: manager.source.name)))))
            } else if manager.sourceStatus == .ended {
                first.append(JSONLineEncoder.line(.sourceStatus(.ended)))
            }
            // What was flushed and no consumer acknowledged yet: this watcher may be the consumer it waits for.
            if let (line, count) = app.pendingBatch(batches) {
                return .watching(then: first, heldBatch: line, count: count)
            }
            return .watching(then: first)
        case .acknowledge(let batch):
            do {
                guard let removed = try app.outbox.acknowledge(batch) else {
                    return .failure(
                        "no-such-batch",
                        "the app \(app.id) has no batch \(batch) from this run of locationd waiting; what waits is sent again to its next watcher")
                }
                return .success(["acknowledged": removed, "unacknowledged": app.outbox.count])
            } catch {
                return .failure(error)
            }
        case .monitorRegion(let region):
            // Bounded: any local user may add to an app of theirs (or to the shared one), and each region is
            // saved and evaluated.
            if app.manager.regionState(of: region.identifier) == nil, app.manager.regionCount >= Self.maximumRegionsPerApp {
                return .failure("too-many-regions", "the app \(app.id) monitors \(Self.maximumRegionsPerApp) regions, the most locationd keeps for one app; remove one first")
            }
            app.manager.startMonitoring(region)
            app.scheduleRegionSave()
            return .success(RegionList(app.manager.regionSnapshot.records.filter { $0.region.identifier == region.identifier }))
        case .stopMonitoringRegion(let identifier):
            guard app.manager.stopMonitoring(identifier) else {
                return .failure("no-such-region", "the app \(app.id) monitors no region \(JSONText.string(ValueRange.printable(identifier)))")
            }
            app.scheduleRegionSave()
            return .success(RegionList([]))
        case .regions:
            return .success(RegionList(app.manager.regionSnapshot.records))
        case .open, .apps, .remove, .sky:
            return .failure(.internalError, "locationd answered \(request.command) as an app's request")
        }
    }

    /// The regions of `--region` (YAML `regions:`) on the shared app `default`: added when new or changed, a
    /// region it already monitors as configured keeps its state (a restart gives no second enter).
    private func applyConfiguredRegions(to app: AppSession) {
        let existing = Dictionary(app.manager.regionSnapshot.records.map { ($0.region.identifier, $0.region) }, uniquingKeysWith: { a, _ in a })
        for region in settings.regions where existing[region.identifier] != region {
            app.manager.startMonitoring(region)
        }
        app.saveRegions()
    }

    /// One app's status, with the receiver's and, for root (`viewer` 0), the daemon's: how many apps there
    /// are and what the receiver does tell a user about the others'.
    private func status(of app: AppSession, for viewer: UInt32?) -> DaemonStatus {
        let manager = app.manager
        let application = app.application
        let session = app.session
        let fix = manager.locationWithAge
        let outage = session.outage
        var status = DaemonStatus(
            state: application.applicationState, executingInBackground: application.executingInBackground,
            policy: manager.accuracyPolicy, source: manager.source.name, sourceStatus: manager.sourceStatus,
            lastFix: fix?.location, lastFixAge: fix.map { $0.age.seconds },
            held: manager.heldCount, unjournaled: manager.unjournaledCount, dropped: manager.droppedCount,
            journal: manager.journalPath,
            watchers: app.watcherCount, uptime: (ContinuousClock.now - startedAt).seconds,
            journalProblem: session.journalProblem, sourceProblem: session.sourceProblem,
            sourceDownSince: outage.map { RFC3339.string(from: $0.since, fractionDigits: 3) }, sourceDownReason: outage?.reason?.message)
        status.app = app.id
        status.owner = app.owner
        status.attached = app.isAttached
        if let since = app.abandonedSince {
            status.abandonedSince = RFC3339.string(from: since, fractionDigits: 3)
            status.keptUntil = RFC3339.string(from: since.addingTimeInterval(settings.keepAbandoned), fractionDigits: 3)
        }
        status.holdLimit = manager.configuration.batchCapacity
        status.unacknowledged = app.outbox.count
        status.motion = manager.motionState
        if manager.configuration.outlierGate != nil { status.outliersRejected = manager.rejectedOutlierCount }
        let reduced = manager.reducedPolicy
        status.reducedInterval = reduced.interval.seconds
        status.reducedAccuracy = reduced.desiredAccuracy
        status.backgroundLocation = manager.allowsBackgroundLocationUpdates
        status.updating = manager.isUpdatingLocation
        // The uplinks are the daemon's: its own user and root see them (their URLs name hosts and users).
        if !uplinks.isEmpty, viewer == 0 || viewer == geteuid() { status.uplinks = uplinks.map(\.uplink.status) }
        if let server = nmea.withLock({ $0?.server }), viewer == 0 || viewer == geteuid() {
            let counts = server.counts
            status.nmeaSocket = NMEASocketStatus(
                path: server.path, connections: counts.connections, epochsSent: counts.epochsSent,
                epochsMissed: counts.epochsMissed, refused: counts.refused)
        }
        guard viewer == 0 else { return status }
        status.receiver = Self.describe(receiver.mode)
        status.apps = apps.value.count
        status.receiverMessages = (receiver.source as? GPSDLocationSource)?.messagesRead
        return status
    }

    /// The receiver's mode in words.
    private static func describe(_ mode: AcquisitionMode?) -> String {
        switch mode {
        case nil: "off"
        case .continuous?: "continuous"
        case .dutyCycled(let cycle)?: "duty-cycled every \(ValueRange.text(cycle.interval.seconds)) s"
        }
    }
}
