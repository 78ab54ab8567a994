import GPSDTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("LoopbackTCP: ports and sockets on 127.0.0.1")
struct LoopbackTCPTests {
    @Test("a listening socket accepts connections on its port until it is closed")
    func listenAcceptsUntilClosed() throws {
        let (listener, port) = try LoopbackTCP.listen()
        #expect(port > 0)
        #expect(LoopbackTCP.accepts(port: port))
        let client = try LoopbackTCP.connect(port: port)
        close(client)
        close(listener)
        #expect(!LoopbackTCP.accepts(port: port))
        let refused = #expect(throws: TestSupportError.self) { try LoopbackTCP.connect(port: port) }
        #expect(refused == .socketFailed(operation: "connect to 127.0.0.1:\(port) (is the server running?)", errno: ECONNREFUSED))
        #expect(refused?.code == "socket-failed")
    }

    @Test("a listener is recognised as its own process's, not another's; a bound socket that does not listen is nobody's")
    func listenerOwnership() throws {
        let (listener, port) = try LoopbackTCP.listen()
        defer { close(listener) }
        #expect(LoopbackTCP.isListening(port: port, pid: getpid()))
        #expect(!LoopbackTCP.isListening(port: port, pid: getppid()), "the parent holds no such socket")
        let (reserved, reservedPort) = try LoopbackTCP.reservedPort()
        defer { close(reserved) }
        #expect(!LoopbackTCP.isListening(port: reservedPort, pid: getpid()))
    }

    @Test("a port in use cannot be listened on twice; once closed, a new server gets it again")
    func portReuse() throws {
        let (first, port) = try LoopbackTCP.listen()
        do {
            let (second, _) = try LoopbackTCP.listen(port: port)
            close(second)
            Issue.record("a second listener got port \(port)")
        } catch {
            #expect(error == .socketFailed(operation: "listen on 127.0.0.1:\(port)", errno: EADDRINUSE))
            #expect(error.message == "cannot listen on 127.0.0.1:\(port): Address already in use")
        }
        close(first)
        let (second, again) = try LoopbackTCP.listen(port: port)
        defer { close(second) }
        #expect(again == port)
        #expect(LoopbackTCP.accepts(port: port))
    }

    @Test("a free port is one nobody listens on")
    func freePort() throws {
        let port = try LoopbackTCP.freePort()
        #expect((1...65535).contains(port))
        #expect(!LoopbackTCP.accepts(port: port))
    }

    @Test("the loopback address is 127.0.0.1 with the port in network byte order")
    func address() {
        let address = LoopbackTCP.address(port: 2947)
        #expect(address.sin_family == sa_family_t(AF_INET))
        #expect(UInt32(bigEndian: address.sin_addr.s_addr) == 0x7F00_0001)
        #expect(UInt16(bigEndian: address.sin_port) == 2947)
    }
}
