import Foundation

/// Encodes an `Encodable` answer into a ``JSONOutput``, members in the order its `encode(to:)` writes them: the
/// API's bytes stay what ``JSONOutput`` writes (members in a fixed order, C1 and DEL escaped, a `Double` as the
/// shortest decimal that reads back as the same value, `nil` as null when encoded with `encode`), which
/// Foundation's `JSONEncoder` would not keep (it orders members by hash or by name).
struct JSONOutputEncoder {
    func encode(_ value: some Encodable) throws -> JSONOutput {
        let node = Node()
        try value.encode(to: NodeEncoder(node: node, codingPath: []))
        return node.output
    }

    /// A value being written: a scalar, or members or items written one by one.
    final class Node {
        enum Content {
            case scalar(JSONOutput)
            case object([(String, Node)])
            case array([Node])
        }

        var content = Content.scalar(.null)

        var output: JSONOutput {
            switch content {
            case .scalar(let value): value
            case .object(let members): .object(members.map { ($0.0, $0.1.output) })
            case .array(let items): .array(items.map(\.output))
            }
        }

        func member(_ name: String) -> Node {
            let node = Node()
            if case .object(let members) = content {
                content = .object(members.filter { $0.0 != name } + [(name, node)])
            } else {
                content = .object([(name, node)])
            }
            return node
        }

        func item() -> Node {
            let node = Node()
            if case .array(let items) = content { content = .array(items + [node]) } else { content = .array([node]) }
            return node
        }

        func set(_ value: some Encodable, codingPath: [any CodingKey]) throws {
            switch value {
            case let text as String: content = .scalar(.string(text))
            case let flag as Bool: content = .scalar(.bool(flag))
            case let number as Double: content = .scalar(.exact(number))
            case let number as Float: content = .scalar(.exact(Double(number)))
            case let number as Int: content = .scalar(.integer(Int64(number)))
            case let number as Int64: content = .scalar(.integer(number))
            case let number as Int32: content = .scalar(.integer(Int64(number)))
            case let figure as Measured: content = .scalar(.number(figure.value))
            case let money as Money: content = .scalar(.decimal(money.text))
            default: try value.encode(to: NodeEncoder(node: self, codingPath: codingPath))
            }
        }
    }

    struct NodeEncoder: Encoder {
        let node: Node
        var codingPath: [any CodingKey]
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            if case .object = node.content {} else { node.content = .object([]) }
            return KeyedEncodingContainer(Keyed<Key>(node: node, codingPath: codingPath))
        }

        func unkeyedContainer() -> any UnkeyedEncodingContainer {
            if case .array = node.content {} else { node.content = .array([]) }
            return Unkeyed(node: node, codingPath: codingPath)
        }

        func singleValueContainer() -> any SingleValueEncodingContainer {
            Single(node: node, codingPath: codingPath)
        }
    }

    struct Keyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let node: Node
        var codingPath: [any CodingKey]

        mutating func encodeNil(forKey key: Key) throws { node.member(key.stringValue).content = .scalar(.null) }
        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            try node.member(key.stringValue).set(value, codingPath: codingPath + [key])
        }
        mutating func encode(_ value: Bool, forKey key: Key) throws { try encode(Optional(value), forKey: key) }
        mutating func encode(_ value: String, forKey key: Key) throws { try encode(Optional(value), forKey: key) }
        mutating func encode(_ value: Double, forKey key: Key) throws { try encode(Optional(value), forKey: key) }
        mutating func encode(_ value: Float, forKey key: Key) throws { try encode(Optional(value), forKey: key) }
        mutating func encode(_ value: Int, forKey key: Key) throws { try encode(Optional(value), forKey: key) }
        mutating func encode(_ value: Int8, forKey key: Key) throws { try encode(Int(value), forKey: key) }
        mutating func encode(_ value: Int16, forKey key: Key) throws { try encode(Int(value), forKey: key) }
        mutating func encode(_ value: Int32, forKey key: Key) throws { try encode(Int(value), forKey: key) }
        mutating func encode(_ value: Int64, forKey key: Key) throws { try encode(Optional(value), forKey: key) }
        mutating func encode(_ value: UInt, forKey key: Key) throws { try encode(UInt64(value), forKey: key) }
        mutating func encode(_ value: UInt8, forKey key: Key) throws { try encode(Int(value), forKey: key) }
        mutating func encode(_ value: UInt16, forKey key: Key) throws { try encode(Int(value), forKey: key) }
        mutating func encode(_ value: UInt32, forKey key: Key) throws { try encode(Int64(value), forKey: key) }
        mutating func encode(_ value: UInt64, forKey key: Key) throws {
            if let exact = Int64(exactly: value) {
                try encode(exact, forKey: key)
            } else {
                try encode(Double(value), forKey: key)
            }
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
            -> KeyedEncodingContainer<NestedKey>
        {
            NodeEncoder(node: node.member(key.stringValue), codingPath: codingPath + [key]).container(keyedBy: keyType)
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            NodeEncoder(node: node.member(key.stringValue), codingPath: codingPath + [key]).unkeyedContainer()
        }

        mutating func superEncoder() -> any Encoder { NodeEncoder(node: node.member("super"), codingPath: codingPath) }
        mutating func superEncoder(forKey key: Key) -> any Encoder {
            NodeEncoder(node: node.member(key.stringValue), codingPath: codingPath + [key])
        }
    }

    struct Unkeyed: UnkeyedEncodingContainer {
        let node: Node
        var codingPath: [any CodingKey]
        var count: Int {
            if case .array(let items) = node.content { return items.count }
            return 0
        }

        mutating func encodeNil() throws { node.item().content = .scalar(.null) }
        mutating func encode<T: Encodable>(_ value: T) throws { try node.item().set(value, codingPath: codingPath) }
        mutating func encode(_ value: Bool) throws { try encode(Optional(value)) }
        mutating func encode(_ value: String) throws { try encode(Optional(value)) }
        mutating func encode(_ value: Double) throws { try encode(Optional(value)) }
        mutating func encode(_ value: Float) throws { try encode(Optional(value)) }
        mutating func encode(_ value: Int) throws { try encode(Optional(value)) }
        mutating func encode(_ value: Int8) throws { try encode(Int(value)) }
        mutating func encode(_ value: Int16) throws { try encode(Int(value)) }
        mutating func encode(_ value: Int32) throws { try encode(Int(value)) }
        mutating func encode(_ value: Int64) throws { try encode(Optional(value)) }
        mutating func encode(_ value: UInt) throws { try encode(UInt64(value)) }
        mutating func encode(_ value: UInt8) throws { try encode(Int(value)) }
        mutating func encode(_ value: UInt16) throws { try encode(Int(value)) }
        mutating func encode(_ value: UInt32) throws { try encode(Int64(value)) }
        mutating func encode(_ value: UInt64) throws {
            if let exact = Int64(exactly: value) { try encode(exact) } else { try encode(Double(value)) }
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
            -> KeyedEncodingContainer<NestedKey>
        {
            NodeEncoder(node: node.item(), codingPath: codingPath).container(keyedBy: keyType)
        }

        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            NodeEncoder(node: node.item(), codingPath: codingPath).unkeyedContainer()
        }

        mutating func superEncoder() -> any Encoder { NodeEncoder(node: node.item(), codingPath: codingPath) }
    }

    struct Single: SingleValueEncodingContainer {
        let node: Node
        var codingPath: [any CodingKey]

        mutating func encodeNil() throws { node.content = .scalar(.null) }
        mutating func encode<T: Encodable>(_ value: T) throws { try node.set(value, codingPath: codingPath) }
        mutating func encode(_ value: Bool) throws { try encode(Optional(value)) }
        mutating func encode(_ value: String) throws { try encode(Optional(value)) }
        mutating func encode(_ value: Double) throws { try encode(Optional(value)) }
        mutating func encode(_ value: Float) throws { try encode(Optional(value)) }
        mutating func encode(_ value: Int) throws { try encode(Optional(value)) }
        mutating func encode(_ value: Int8) throws { try encode(Int(value)) }
        mutating func encode(_ value: Int16) throws { try encode(Int(value)) }
        mutating func encode(_ value: Int32) throws { try encode(Int(value)) }
        mutating func encode(_ value: Int64) throws { try encode(Optional(value)) }
        mutating func encode(_ value: UInt) throws { try encode(UInt64(value)) }
        mutating func encode(_ value: UInt8) throws { try encode(Int(value)) }
        mutating func encode(_ value: UInt16) throws { try encode(Int(value)) }
        mutating func encode(_ value: UInt32) throws { try encode(Int64(value)) }
        mutating func encode(_ value: UInt64) throws {
            if let exact = Int64(exactly: value) { try encode(exact) } else { try encode(Double(value)) }
        }
    }
}
