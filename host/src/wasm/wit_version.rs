//! The released versions of the WIT package `rebound:policy` this host loads: what each one
//! can say, so that a component built for any of them keeps loading and is told only what its
//! version has words for.

use crate::reason::ReasonKind;
use crate::request::Service;

/// A released version of the WIT package `rebound:policy`. The host keeps one set of bindings
/// per released version, so a component built for any of them keeps loading
/// (docs/wit-versions.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[non_exhaustive]
pub enum WitVersion {
    /// `rebound:policy@0.1.0`: `retry-after(request, reason)`; context through `host`.
    #[serde(rename = "0.1.0")]
    V0_1_0,
    /// `rebound:policy@0.2.0`: `retry-after(reason)`; the failure read through `failure`.
    #[serde(rename = "0.2.0")]
    V0_2_0,
    /// `rebound:policy@0.3.0`: 0.2.0 and `failure.server-delay-ms`, the server's pushback.
    #[serde(rename = "0.3.0")]
    V0_3_0,
    /// `rebound:policy@0.4.0`: 0.3.0 and requests of any protocol (plain HTTP requests, gRPC
    /// calls: method, authority, route, status) and `failure.retries-since-pushback`.
    #[serde(rename = "0.4.0")]
    V0_4_0,
    /// `rebound:policy@0.5.0`: 0.4.0 and the optional `hedging` export (world
    /// `hedging-policy`): when the next copy of a request in flight goes.
    #[serde(rename = "0.5.0")]
    V0_5_0,
    /// `rebound:policy@0.6.0`: 0.5.0 and the attempt's facts (how far it got, the attempt
    /// timeout that cut it, the `attempt-timeout` reason) and a retry's own attempt timeout.
    #[serde(rename = "0.6.0")]
    V0_6_0,
}

impl WitVersion {
    /// Every version this host loads, oldest first.
    pub const ALL: [WitVersion; 6] = [
        WitVersion::V0_1_0,
        WitVersion::V0_2_0,
        WitVersion::V0_3_0,
        WitVersion::V0_4_0,
        WitVersion::V0_5_0,
        WitVersion::V0_6_0,
    ];
    /// The newest version: the one `wit/policy.wit` and the guest SDK implement.
    pub const CURRENT: WitVersion = WitVersion::V0_6_0;

    /// The version number, e.g. `0.2.0`.
    pub const fn number(self) -> &'static str {
        match self {
            WitVersion::V0_1_0 => "0.1.0",
            WitVersion::V0_2_0 => "0.2.0",
            WitVersion::V0_3_0 => "0.3.0",
            WitVersion::V0_4_0 => "0.4.0",
            WitVersion::V0_5_0 => "0.5.0",
            WitVersion::V0_6_0 => "0.6.0",
        }
    }

    /// The versioned package name, e.g. `rebound:policy@0.2.0`.
    pub const fn package(self) -> &'static str {
        match self {
            WitVersion::V0_1_0 => "rebound:policy@0.1.0",
            WitVersion::V0_2_0 => "rebound:policy@0.2.0",
            WitVersion::V0_3_0 => "rebound:policy@0.3.0",
            WitVersion::V0_4_0 => "rebound:policy@0.4.0",
            WitVersion::V0_5_0 => "rebound:policy@0.5.0",
            WitVersion::V0_6_0 => "rebound:policy@0.6.0",
        }
    }

    /// Whether a policy of this version can be told about a request to `service`: versions
    /// before 0.4.0 have no words for plain HTTP requests or gRPC calls.
    pub const fn describes(self, service: Service) -> bool {
        self as u8 >= WitVersion::V0_4_0 as u8 || !matches!(service, Service::Http | Service::Grpc)
    }

    /// Whether this version's `retry-reason` has a case for `kind`. A reason it has none for
    /// reaches its policies by its name, as `other(name)`; what they answer decides, under the
    /// host's rules.
    pub const fn has_case_for(self, kind: ReasonKind) -> bool {
        match kind {
            ReasonKind::HttpStatus | ReasonKind::GrpcStatus => {
                self as u8 >= WitVersion::V0_4_0 as u8
            }
            ReasonKind::AttemptTimeout | ReasonKind::AwsThrottling | ReasonKind::AwsTransient => {
                self as u8 >= WitVersion::V0_6_0 as u8
            }
            _ => true,
        }
    }

    /// The version with this number, if this host loads it.
    pub fn from_number(number: &str) -> Option<WitVersion> {
        WitVersion::ALL.into_iter().find(|v| v.number() == number)
    }

    /// The WIT text of this version, as released.
    pub fn wit(self) -> &'static str {
        match self {
            WitVersion::V0_1_0 => include_str!("../../wit/released/0.1.0/policy.wit"),
            WitVersion::V0_2_0 => include_str!("../../wit/released/0.2.0/policy.wit"),
            WitVersion::V0_3_0 => include_str!("../../wit/released/0.3.0/policy.wit"),
            WitVersion::V0_4_0 => include_str!("../../wit/released/0.4.0/policy.wit"),
            WitVersion::V0_5_0 => include_str!("../../wit/released/0.5.0/policy.wit"),
            WitVersion::V0_6_0 => include_str!("../../wit/policy.wit"),
        }
    }

    /// Which hosts accept a component built for this version, in words: this one (the
    /// `rebound` crate's version, and the versions it loads), and by the support rule
    /// (docs/wit-versions.md) every later one.
    pub fn accepted_by(self) -> String {
        let loads: Vec<&str> = WitVersion::ALL.iter().map(|v| v.number()).collect();
        format!(
            "accepted by this host (rebound {}, which loads rebound:policy {}) and every later host; {} is the newest",
            crate::VERSION,
            loads.join(", "),
            if self == WitVersion::CURRENT { "it" } else { WitVersion::CURRENT.package() },
        )
    }

    /// The `rebound:policy` interfaces a component of this version may import.
    pub(crate) fn granted_interfaces(self) -> &'static [&'static str] {
        match self {
            WitVersion::V0_1_0 => &["types", "host"],
            _ => &["types", "failure", "host"],
        }
    }
}

impl std::fmt::Display for WitVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.package())
    }
}
