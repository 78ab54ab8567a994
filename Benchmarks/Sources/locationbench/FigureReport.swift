import Foundation

/// The figures as a Markdown table or as JSON.
enum FigureReport {
    /// A Markdown table: item, figure, ours, peers, ratio, goal and whether it is met.
    static func table(_ figures: [Figure]) -> String {
        var lines = [
            "| # | figure | ours | peers (same run) | ours vs peer | goal | met |",
            "|---|---|---:|---|---|---|---|",
        ]
        for figure in figures {
            let ours = figure.ours.map { Figure.format($0, unit: figure.unit) } ?? "–"
            let peers = figure.peers.map { peer in
                "\(peer.name): \(peer.value.map { Figure.format($0, unit: figure.unit) } ?? "not installed")"
            }.joined(separator: "; ")
            let ratios = figure.peers.compactMap { peer in
                figure.ratio(to: peer.name).map { "\(Figure.format($0, unit: ""))× \(peer.name)" }
            }.joined(separator: "; ")
            let met = figure.meetsGoal.map { $0 ? "yes" : "**no**" } ?? ""
            var name = figure.name
            if let note = figure.note { name += " (\(note))" }
            lines.append("| \(figure.item) | \(name) | \(ours) | \(peers) | \(ratios) | \(figure.goalText ?? "") | \(met) |")
        }
        return lines.joined(separator: "\n")
    }

    /// A JSON array with one object per figure: `figure`, `ours`, `unit`, `peers` {name: value or null},
    /// `goal`, `meetsGoal`, plus `item` and `note`.
    static func json(_ figures: [Figure]) throws -> String {
        func number(_ value: Double?) -> Any {
            guard let value, value.isFinite else { return NSNull() }
            return value
        }
        let objects: [[String: Any]] = figures.map { figure in
            var peers: [String: Any] = [:]
            for peer in figure.peers { peers[peer.name] = number(peer.value) }
            return [
                "item": figure.item,
                "figure": figure.name,
                "ours": number(figure.ours),
                "unit": figure.unit,
                "peers": peers,
                "goal": figure.goalText ?? NSNull(),
                "meetsGoal": figure.meetsGoal ?? NSNull(),
                "note": figure.note ?? NSNull(),
            ]
        }
        let data = try JSONSerialization.data(withJSONObject: objects, options: [.prettyPrinted, .sortedKeys])
        return String(decoding: data, as: UTF8.self)
    }
}
