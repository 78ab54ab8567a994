import Testing
@testable import LocationGPSD
