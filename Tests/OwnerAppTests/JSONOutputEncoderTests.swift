import Foundation
import Telemetry
import Testing

@testable import OwnerApp

/// `JSONOutputEncoder` writes an `Encodable` answer as the API has always written its JSON: members in the order
/// `encode(to:)` gives them, nulls where it encodes nil, numbers as the shortest decimal, control characters escaped.
@Suite struct JSONOutputEncoderTests {
    struct Inner: Encodable {
        var name: String
        var tags: [String]
    }

    struct Sample: Encodable {
        var zebra: Int64
        var apple: Double?
        var middle: String?
        var inner: Inner?
        var list: [Inner]
        var flag: Bool
        var huge: UInt64

        enum CodingKeys: String, CodingKey {
            case zebra, apple, middle, inner, list, flag, huge
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(zebra, forKey: .zebra)
            try container.encode(apple, forKey: .apple)
            try container.encode(middle, forKey: .middle)
            try container.encode(inner, forKey: .inner)
            try container.encode(list, forKey: .list)
            try container.encode(flag, forKey: .flag)
            try container.encode(huge, forKey: .huge)
        }
    }

    @Test(
        "members in order, nulls kept, numbers and text as JSONOutput writes them",
        arguments: [
            (
                Sample(
                    zebra: 1, apple: 2_000, middle: nil, inner: nil, list: [], flag: true, huge: 5),
                #"{"zebra":1,"apple":2000,"middle":null,"inner":null,"list":[],"flag":true,"huge":5}"#
            ),
            (
                Sample(
                    zebra: -7, apple: 1_500.5, middle: "a/b\u{7F}\u{85}\"", inner: Inner(name: "x", tags: ["p", "q"]),
                    list: [Inner(name: "y", tags: [])], flag: false, huge: UInt64.max),
                #"{"zebra":-7,"apple":1500.5,"middle":"a/b\u007f\u0085\"","inner":{"name":"x","tags":["p","q"]},"#
                    + #""list":[{"name":"y","tags":[]}],"flag":false,"huge":1.8446744073709552e+19}"#
            ),
            (
                Sample(zebra: 0, apple: 1e-300, middle: "é", inner: nil, list: [], flag: true, huge: 0),
                #"{"zebra":0,"apple":1e-300,"middle":"é","inner":null,"list":[],"flag":true,"huge":0}"#
            ),
        ] as [(Sample, String)])
    func encodes(sample: Sample, json: String) throws {
        let text = try JSONOutputEncoder().encode(sample).text
        #expect(text == json)
        #expect((try? JSONParser.parse(Array(text.utf8))) != nil)
    }
}
