//! Protocol revisions and what each one changes for a client.

use std::fmt;

/// The newest revision we offer in `initialize`.
pub const LATEST_PROTOCOL_VERSION: &str = "2025-11-25";

/// Every handshake-era revision we accept from a server in `initialize`, newest first.
pub const SUPPORTED_PROTOCOL_VERSIONS: &[&str] =
    &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The stateless (handshake-free) revisions we speak, newest first: offered in every request's
/// `_meta` and in the `server/discover` probe.
pub const STATELESS_PROTOCOL_VERSIONS: &[&str] = &["2026-07-28"];

/// A negotiated protocol revision: one of the handshake era, or 2026-07-28 (stateless).
/// Behaviour that differs between revisions asks this value, so the era is a property of the
/// session, not scattered checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProtocolVersion {
    /// 2024-11-05: the first revision (HTTP+SSE transport).
    V2024_11_05,
    /// 2025-03-26: Streamable HTTP, batching, audio content, tool annotations.
    V2025_03_26,
    /// 2025-06-18: `MCP-Protocol-Version` header, elicitation, structured content.
    V2025_06_18,
    /// 2025-11-25: URL elicitation, tasks, icons.
    V2025_11_25,
    /// 2026-07-28: stateless; no handshake, per-request `_meta`, `input_required` results.
    V2026_07_28,
}

impl ProtocolVersion {
    /// The revision's name, e.g. `"2025-06-18"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ProtocolVersion::V2024_11_05 => "2024-11-05",
            ProtocolVersion::V2025_03_26 => "2025-03-26",
            ProtocolVersion::V2025_06_18 => "2025-06-18",
            ProtocolVersion::V2025_11_25 => "2025-11-25",
            ProtocolVersion::V2026_07_28 => "2026-07-28",
        }
    }

    /// Parses a revision name we support.
    pub fn parse(s: &str) -> Option<ProtocolVersion> {
        Some(match s {
            "2024-11-05" => ProtocolVersion::V2024_11_05,
            "2025-03-26" => ProtocolVersion::V2025_03_26,
            "2025-06-18" => ProtocolVersion::V2025_06_18,
            "2025-11-25" => ProtocolVersion::V2025_11_25,
            "2026-07-28" => ProtocolVersion::V2026_07_28,
            _ => return None,
        })
    }

    /// The latest handshake-era revision we speak (the one offered in `initialize`).
    pub fn latest() -> ProtocolVersion {
        ProtocolVersion::V2025_11_25
    }

    /// The latest stateless revision we speak (the one offered in `server/discover`).
    pub fn latest_stateless() -> ProtocolVersion {
        ProtocolVersion::V2026_07_28
    }

    /// Whether this revision is stateless (2026-07-28 on): no handshake, `_meta` on every
    /// request.
    pub fn is_stateless(self) -> bool {
        self >= ProtocolVersion::V2026_07_28
    }

    /// Whether HTTP requests carry `MCP-Protocol-Version` (from 2025-06-18).
    pub fn sends_version_header(self) -> bool {
        self >= ProtocolVersion::V2025_06_18
    }

    /// Whether the server may send `elicitation/create` (from 2025-06-18).
    pub fn has_elicitation(self) -> bool {
        self >= ProtocolVersion::V2025_06_18
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_supported_name_parses_and_round_trips() {
        for name in SUPPORTED_PROTOCOL_VERSIONS {
            assert_eq!(ProtocolVersion::parse(name).unwrap().as_str(), *name);
        }
        assert_eq!(ProtocolVersion::latest().as_str(), LATEST_PROTOCOL_VERSION);
        assert!(ProtocolVersion::parse("2026-07-28").unwrap().is_stateless());
        assert!(!ProtocolVersion::latest().is_stateless());
        assert!(ProtocolVersion::parse("2027-01-01").is_none());
        assert!(!ProtocolVersion::V2025_03_26.sends_version_header());
        assert!(ProtocolVersion::V2025_06_18.sends_version_header());
    }
}
