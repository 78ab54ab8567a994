/// A benchmark set-up failure.
package struct BenchError: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}
