/// Receives an application's lifecycle messages, like an iOS app delegate. Every method has an empty default.
///
/// Messages arrive in order, one at a time, on the thread that caused the transition (or a timer's task).
public protocol ApplicationObserver: AnyObject, Sendable {
    /// The application finished launching.
    func applicationDidFinishLaunching(_ application: Application)
    /// The application is about to leave the active state.
    func applicationWillResignActive(_ application: Application)
    /// The application entered the background.
    ///
    /// Together with the other observers and hooks of this message it has
    /// ``ApplicationConfiguration/didEnterBackgroundBudget`` (5 s) on the application's clock; taking longer
    /// without beginning a background task gets the app purged. With no task open and nothing keeping the
    /// app running, it is suspended as soon as this returns.
    func applicationDidEnterBackground(_ application: Application)
    /// The application was suspended.
    func applicationDidSuspend(_ application: Application)
    /// The application is about to enter the foreground.
    func applicationWillEnterForeground(_ application: Application)
    /// The application became active.
    func applicationDidBecomeActive(_ application: Application)
    /// The application is about to terminate, from the foreground or from running in the background.
    ///
    /// Not sent to a suspended app that is terminated, nor to one that is purged; see
    /// ``Application/terminationReason``.
    func applicationWillTerminate(_ application: Application)
}

extension ApplicationObserver {
    public func applicationDidFinishLaunching(_ application: Application) {}
    public func applicationWillResignActive(_ application: Application) {}
    public func applicationDidEnterBackground(_ application: Application) {}
    public func applicationDidSuspend(_ application: Application) {}
    public func applicationWillEnterForeground(_ application: Application) {}
    public func applicationDidBecomeActive(_ application: Application) {}
    public func applicationWillTerminate(_ application: Application) {}

    func receive(_ event: ApplicationEvent, from application: Application) {
        switch event {
        case .didFinishLaunching: applicationDidFinishLaunching(application)
        case .willResignActive: applicationWillResignActive(application)
        case .didEnterBackground: applicationDidEnterBackground(application)
        case .didSuspend: applicationDidSuspend(application)
        case .willEnterForeground: applicationWillEnterForeground(application)
        case .didBecomeActive: applicationDidBecomeActive(application)
        case .willTerminate: applicationWillTerminate(application)
        }
    }
}
