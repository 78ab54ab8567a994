import GPSDTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("GPSDSharedMemory: gpsd's System V segments")
struct GPSDSharedMemoryTests {
    @Test("keys: the export segment's is gpsfake's 0x4770 + port, the NTP ones NTP0 to NTP7")
    func keys() {
        // gpsfake: shmkey = '0x4770%.04X' % port
        #expect(GPSDSharedMemory.exportKey(port: 2947) == 0x4770_0B83)
        #expect(GPSDSharedMemory.exportKey(port: 65535) == Int32(bitPattern: 0x4770_FFFF))
        #expect(GPSDSharedMemory.ntpKeys.count == 8)
        #expect(GPSDSharedMemory.ntpKeys.contains(Int32(bitPattern: 0x4E54_5030)))  // "NTP0"
        #expect(GPSDSharedMemory.ntpKeys.contains(Int32(bitPattern: 0x4E54_5037)))  // "NTP7"
        #expect(!GPSDSharedMemory.ntpKeys.contains(Int32(bitPattern: 0x4E54_5038)))
    }

    @Test("a /proc/sysvipc/shm listing gives each segment's key, creator and attach count")
    func listing() {
        let text = """
                   key      shmid perms                  size  cpid  lpid nattch   uid   gid  cuid  cgid      atime      dtime      ctime                   rss                  swap
            1314148400          3  1600                 12352  4242  4242      0     0     0     0     0 1700000000 1700000000 1700000000                 12288                     0
            1198525315          7   666                  9000  5151  6000      2     0     0     0     0 1700000000          0 1700000000                  8192                     0
            not a line
            """
        #expect(
            GPSDSharedMemory.segments(listing: text) == [
                .init(key: 0x4E54_5030, creator: 4242, attached: 0),
                .init(key: 0x4770_0B83, creator: 5151, attached: 2),
            ])
    }

    @Test("segments() reads the machine's segments: one made here is listed with this process as creator")
    func liveListing() throws {
        let id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0o600)
        try #require(id >= 0, "System V shared memory is available")
        defer { _ = shmctl(id, IPC_RMID, nil) }
        let ours = GPSDSharedMemory.segments().filter { $0.key == 0 && $0.creator == getpid() }
        #expect(ours.count == 1)
        #expect(ours.first?.attached == 0)
    }
}
