/// Tells ThreadSanitizer about the critical sections of `Synchronization.Mutex`, which it cannot see.
///
/// On Linux a contended `Mutex` is taken in the kernel (a priority-inheritance futex), out of
/// ThreadSanitizer's sight, so two threads that take the same mutex in turn look like a data race: six
/// threads appending to one `Mutex<[Int]>` are reported as racing. A build with `-DTHREAD_SANITIZER`
/// (`scripts/sanitize` passes it) marks each critical section as an acquire and a release of one address,
/// which is what ThreadSanitizer sees of a pthread mutex; in any other build these calls compile to nothing.
package enum ThreadSanitizerAnnotations {
    /// Call first inside the critical section of the lock identified by `lock`.
    @inline(__always)
    package static func acquired(_ lock: AnyObject) {
        #if THREAD_SANITIZER
            __tsan_acquire(Unmanaged.passUnretained(lock).toOpaque())
        #endif
    }

    /// Call last inside the critical section of the lock identified by `lock`.
    @inline(__always)
    package static func releasing(_ lock: AnyObject) {
        #if THREAD_SANITIZER
            __tsan_release(Unmanaged.passUnretained(lock).toOpaque())
        #endif
    }
}

#if THREAD_SANITIZER
    // ThreadSanitizer's annotation interface (compiler-rt's tsan_interface.h), present only in a build
    // linked with it; one pointer argument, which the Swift and C calling conventions pass alike.
    @_silgen_name("__tsan_acquire") private func __tsan_acquire(_ address: UnsafeMutableRawPointer)
    @_silgen_name("__tsan_release") private func __tsan_release(_ address: UnsafeMutableRawPointer)
#endif
