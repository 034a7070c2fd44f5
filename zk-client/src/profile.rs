//! [`ServerProfile`]: what the server this client talks to supports, so that a call it does
//! not support fails locally ([`Error::Unimplemented`](crate::Error::Unimplemented)) instead
//! of reaching a server that answers it by closing the connection.
//!
//! Why it matters, from the servers' own sources:
//! * ZooKeeper answers an opcode it does not know with `UNIMPLEMENTED` (-6) **and then closes
//!   the connection** (`UnimplementedRequestProcessor.processRequest` sends the error, then
//!   `sendCloseSession()`; `ZooKeeperServer.submitRequestNow` routes every opcode
//!   `Request.isValid` rejects there). The session survives (the client reconnects and
//!   resumes it), but every other call in flight fails with `ConnectionLoss`.
//! * ClickHouse Keeper closes the connection on an opcode it does not know, without an answer
//!   (ClickHouse issues #48141, #55595), and never resumes a session (#116690): one
//!   unsupported call costs the session.
//! * A known opcode the server has switched off (TTL nodes on ZooKeeper without
//!   `zookeeper.extendedTypesEnabled`) gets `UNIMPLEMENTED` and keeps the connection.
//!
//! The profile is set on the builder ([`ClientBuilder::server`](crate::ClientBuilder::server)),
//! detected from Keeper's feature nodes
//! ([`ClientBuilder::detect_server`](crate::ClientBuilder::detect_server)), and narrowed at run
//! time: an `UNIMPLEMENTED` answer to a call marks its feature missing for the rest of the
//! session. [`Client::server_profile`](crate::Client::server_profile) shows what the client
//! knows now.

use std::fmt;
use std::sync::{Arc, Mutex};

use zk_proto::OpCode;

/// A protocol feature some servers lack, each tied to the request that uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Feature {
    /// `create2` (opcode 15): a create that answers with the new node's `Stat` (ZooKeeper
    /// 3.5+; ClickHouse Keeper only in late-2025 releases, behind a flag).
    Create2,
    /// Container nodes (`createContainer`, opcode 19; ZooKeeper 3.5.3+).
    Container,
    /// TTL nodes (`createTTL`, opcode 21; ZooKeeper 3.5.3+ with
    /// `zookeeper.extendedTypesEnabled=true`).
    Ttl,
    /// `multiRead` (opcode 22; ZooKeeper 3.6+, Keeper with its `MULTI_READ` flag).
    MultiRead,
    /// Persistent and persistent recursive watches (`addWatch`, opcode 106; ZooKeeper 3.6+).
    AddWatch,
    /// `getEphemerals` (opcode 103; ZooKeeper 3.6+).
    GetEphemerals,
    /// `getAllChildrenNumber` (opcode 104; ZooKeeper 3.6+).
    GetAllChildrenNumber,
    /// `whoAmI` (opcode 107; ZooKeeper 3.7+).
    WhoAmI,
    /// `checkWatches`/`removeWatches` (opcodes 17, 18; ZooKeeper 3.5+).
    RemoveWatches,
    /// `reconfig` (opcode 16; ZooKeeper 3.5+).
    Reconfig,
    /// ClickHouse Keeper's `RemoveRecursive` (opcode 503; its `REMOVE_RECURSIVE` feature
    /// flag): [`Client::delete_all`](crate::Client::delete_all) in one request. No ZooKeeper
    /// has it.
    RemoveRecursive,
}

impl Feature {
    /// Every feature, in declaration order (more may be added).
    pub const ALL: &'static [Feature] = &[
        Feature::Create2,
        Feature::Container,
        Feature::Ttl,
        Feature::MultiRead,
        Feature::AddWatch,
        Feature::GetEphemerals,
        Feature::GetAllChildrenNumber,
        Feature::WhoAmI,
        Feature::RemoveWatches,
        Feature::Reconfig,
        Feature::RemoveRecursive,
    ];

    /// The feature a request of `op` needs, if any (`None`: every server has it).
    pub fn of(op: OpCode) -> Option<Feature> {
        Some(match op {
            OpCode::Create2 => Feature::Create2,
            OpCode::CreateContainer => Feature::Container,
            OpCode::CreateTtl => Feature::Ttl,
            OpCode::MultiRead => Feature::MultiRead,
            OpCode::AddWatch => Feature::AddWatch,
            OpCode::GetEphemerals => Feature::GetEphemerals,
            OpCode::GetAllChildrenNumber => Feature::GetAllChildrenNumber,
            OpCode::WhoAmI => Feature::WhoAmI,
            OpCode::CheckWatches | OpCode::RemoveWatches => Feature::RemoveWatches,
            OpCode::Reconfig => Feature::Reconfig,
            OpCode::RemoveRecursive => Feature::RemoveRecursive,
            _ => return None,
        })
    }

    fn bit(self) -> u32 {
        1 << (self as u32)
    }
}

impl fmt::Display for Feature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Feature::Create2 => "create2",
            Feature::Container => "container nodes",
            Feature::Ttl => "TTL nodes",
            Feature::MultiRead => "multiRead",
            Feature::AddWatch => "addWatch (persistent watches)",
            Feature::GetEphemerals => "getEphemerals",
            Feature::GetAllChildrenNumber => "getAllChildrenNumber",
            Feature::WhoAmI => "whoAmI",
            Feature::RemoveWatches => "removeWatches",
            Feature::Reconfig => "reconfig",
            Feature::RemoveRecursive => "removeRecursive (ClickHouse Keeper)",
        })
    }
}

/// Which server implementation the client talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Flavour {
    /// Apache ZooKeeper: answers an unknown opcode with `UNIMPLEMENTED` (then closes the
    /// connection), resumes sessions after a reconnect.
    ZooKeeper,
    /// ClickHouse Keeper: closes the connection on an unknown opcode, never resumes a
    /// session (a reconnect ends it: the client reports
    /// [`SessionState::Expired`](crate::SessionState::Expired)).
    Keeper,
}

/// What the server supports: its [`Flavour`] and a set of [`Feature`]s.
///
/// ```
/// use zk_client::{Feature, Flavour, ServerProfile};
///
/// let old = ServerProfile::zookeeper(3, 5);
/// assert!(old.supports(Feature::Create2) && !old.supports(Feature::AddWatch));
///
/// let keeper = ServerProfile::keeper().with(Feature::Create2);
/// assert_eq!(keeper.flavour(), Flavour::Keeper);
/// assert!(!keeper.supports(Feature::WhoAmI));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ServerProfile {
    flavour: Flavour,
    features: u32,
}

impl fmt::Debug for ServerProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let features: Vec<Feature> = Feature::ALL
            .iter()
            .copied()
            .filter(|x| self.supports(*x))
            .collect();
        f.debug_struct("ServerProfile")
            .field("flavour", &self.flavour)
            .field("features", &features)
            .finish()
    }
}

impl Default for ServerProfile {
    /// [`ServerProfile::zookeeper`]`(3, 8)`: a current ZooKeeper, with every ZooKeeper feature.
    fn default() -> Self {
        ServerProfile::zookeeper(3, 8)
    }
}

/// Keeper's feature flag numbers (`KeeperFeatureFlag` in ClickHouse's
/// `src/Coordination/KeeperFeatureFlags.h`; bit `n` is bit `7 - n % 8` of byte `n / 8` of
/// `/keeper/feature_flags`, `KeeperFeatureFlags.cpp`). Only the flags this client maps to a
/// [`Feature`] are named; later flags are ignored (the profile stays on the safe side).
const KEEPER_FLAG_MULTI_READ: usize = 1;
/// `KeeperFeatureFlag::REMOVE_RECURSIVE`.
const KEEPER_FLAG_REMOVE_RECURSIVE: usize = 4;

/// `KeeperApiVersion::WITH_MULTI_READ`: servers older than feature flags say what they
/// support by this number in `/keeper/api_version`.
const KEEPER_API_WITH_MULTI_READ: u32 = 2;

impl ServerProfile {
    /// Apache ZooKeeper `major.minor`: 3.4 has none of the features; 3.5 adds `create2`,
    /// containers, TTL nodes, `removeWatches` and `reconfig`; 3.6 adds `addWatch`,
    /// `multiRead`, `getEphemerals` and `getAllChildrenNumber`; 3.7 adds `whoAmI`. Any
    /// later version has them all (3.8, 3.9) but ClickHouse Keeper's own
    /// [`Feature::RemoveRecursive`]. TTL nodes also need the server's
    /// `zookeeper.extendedTypesEnabled=true`: without it the first TTL create learns it.
    pub fn zookeeper(major: u32, minor: u32) -> ServerProfile {
        let version = (major, minor);
        let mut p = ServerProfile {
            flavour: Flavour::ZooKeeper,
            features: 0,
        };
        if version >= (3, 5) {
            p = p
                .with(Feature::Create2)
                .with(Feature::Container)
                .with(Feature::Ttl)
                .with(Feature::RemoveWatches)
                .with(Feature::Reconfig);
        }
        if version >= (3, 6) {
            p = p
                .with(Feature::AddWatch)
                .with(Feature::MultiRead)
                .with(Feature::GetEphemerals)
                .with(Feature::GetAllChildrenNumber);
        }
        if version >= (3, 7) {
            p = p.with(Feature::WhoAmI);
        }
        // RemoveRecursive is ClickHouse Keeper's own.
        p
    }

    /// ClickHouse Keeper with none of the optional features: what a Keeper without feature
    /// flags for them supports (plain `create`, `multi`, one-shot watches). Add what your
    /// server has with [`with`](Self::with), or let the client read it
    /// ([`ClientBuilder::detect_server`](crate::ClientBuilder::detect_server)).
    pub fn keeper() -> ServerProfile {
        ServerProfile {
            flavour: Flavour::Keeper,
            features: 0,
        }
    }

    /// The Keeper profile its feature nodes describe: `api_version` is the data of
    /// `/keeper/api_version` (a decimal number), `feature_flags` the data of
    /// `/keeper/feature_flags` when the server has it (a bit set). Flags this client does not
    /// know are ignored.
    pub fn from_keeper_nodes(api_version: &[u8], feature_flags: Option<&[u8]>) -> ServerProfile {
        let mut p = ServerProfile::keeper();
        let api = std::str::from_utf8(api_version)
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok())
            .unwrap_or(0);
        let flag = |n: usize| {
            feature_flags
                .and_then(|f| f.get(n / 8))
                .is_some_and(|byte| byte & (1 << (7 - n % 8)) != 0)
        };
        if flag(KEEPER_FLAG_MULTI_READ)
            || (feature_flags.is_none() && api >= KEEPER_API_WITH_MULTI_READ)
        {
            p = p.with(Feature::MultiRead);
        }
        if flag(KEEPER_FLAG_REMOVE_RECURSIVE) {
            p = p.with(Feature::RemoveRecursive);
        }
        p
    }

    /// What detection makes of this (detected Keeper) profile given the builder's: a
    /// Keeper profile the user set keeps its features (flags this client cannot read yet,
    /// such as `create2` on a 2026 Keeper) and gains the detected ones; any other is
    /// replaced.
    pub(crate) fn detected_over(self, configured: ServerProfile) -> ServerProfile {
        if configured.flavour == Flavour::Keeper {
            ServerProfile {
                flavour: Flavour::Keeper,
                features: self.features | configured.features,
            }
        } else {
            self
        }
    }

    /// The server's flavour.
    pub fn flavour(&self) -> Flavour {
        self.flavour
    }

    /// Whether the server supports `feature`.
    pub fn supports(&self, feature: Feature) -> bool {
        self.features & feature.bit() != 0
    }

    /// Whether the server supports requests of `op` (every opcode without a [`Feature`] is
    /// supported).
    pub fn supports_op(&self, op: OpCode) -> bool {
        Feature::of(op).is_none_or(|f| self.supports(f))
    }

    /// This profile with `feature`.
    pub fn with(mut self, feature: Feature) -> ServerProfile {
        self.features |= feature.bit();
        self
    }

    /// This profile without `feature`.
    pub fn without(mut self, feature: Feature) -> ServerProfile {
        self.features &= !feature.bit();
        self
    }

    /// Whether the server resumes a session after a reconnect (ZooKeeper does, Keeper does
    /// not: there a reconnect ends the session).
    pub fn resumes_sessions(&self) -> bool {
        self.flavour == Flavour::ZooKeeper
    }
}

/// The profile a client's handles share: set at connect, narrowed by what the server
/// answers.
#[derive(Debug, Clone, Default)]
pub(crate) struct ProfileCell(Arc<Mutex<ServerProfile>>);

impl ProfileCell {
    pub(crate) fn new(profile: ServerProfile) -> ProfileCell {
        ProfileCell(Arc::new(Mutex::new(profile)))
    }

    pub(crate) fn get(&self) -> ServerProfile {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn set(&self, profile: ServerProfile) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = profile;
    }

    /// Records that the server lacks `feature`.
    pub(crate) fn forget(&self, feature: Feature) {
        let mut p = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *p = p.without(feature);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zookeeper_versions_add_features_in_order() {
        let v34 = ServerProfile::zookeeper(3, 4);
        assert!(Feature::ALL.iter().all(|f| !v34.supports(*f)));
        let v35 = ServerProfile::zookeeper(3, 5);
        assert!(v35.supports(Feature::Create2) && v35.supports(Feature::Container));
        assert!(!v35.supports(Feature::AddWatch) && !v35.supports(Feature::MultiRead));
        let v36 = ServerProfile::zookeeper(3, 6);
        assert!(v36.supports(Feature::AddWatch) && !v36.supports(Feature::WhoAmI));
        for (major, minor) in [(3, 7), (3, 8), (3, 9), (4, 0)] {
            let p = ServerProfile::zookeeper(major, minor);
            let zookeepers = Feature::ALL
                .iter()
                .filter(|f| **f != Feature::RemoveRecursive);
            assert!(zookeepers.clone().all(|f| p.supports(*f)), "{p:?}");
            assert!(!p.supports(Feature::RemoveRecursive));
            assert!(p.resumes_sessions());
        }
        assert_eq!(ServerProfile::default(), ServerProfile::zookeeper(3, 9));
    }

    #[test]
    fn opcodes_map_to_their_features() {
        let v35 = ServerProfile::zookeeper(3, 5);
        assert!(v35.supports_op(OpCode::Create2));
        assert!(!v35.supports_op(OpCode::AddWatch));
        assert!(v35.supports_op(OpCode::GetData));
        assert!(!ServerProfile::keeper().supports_op(OpCode::Create2));
        assert!(ServerProfile::keeper().supports_op(OpCode::Create));
        for &f in Feature::ALL {
            assert!(!v35.without(f).supports(f));
            assert!(ServerProfile::keeper().with(f).supports(f));
        }
    }

    #[test]
    fn keeper_nodes_give_the_keeper_profile() {
        // api_version 0: ZooKeeper-compatible, nothing optional.
        let p = ServerProfile::from_keeper_nodes(b"0", None);
        assert_eq!(p.flavour(), Flavour::Keeper);
        assert!(!p.resumes_sessions());
        assert!(Feature::ALL.iter().all(|f| !p.supports(*f)));
        // Without feature flags, api_version 2+ means multiRead.
        assert!(ServerProfile::from_keeper_nodes(b"3", None).supports(Feature::MultiRead));
        assert!(!ServerProfile::from_keeper_nodes(b"1", None).supports(Feature::MultiRead));
        // Flag 1 (MULTI_READ) is bit 6 of byte 0; flags win over the api version.
        let p = ServerProfile::from_keeper_nodes(b"3", Some(&[0b0100_0000]));
        assert!(p.supports(Feature::MultiRead));
        let p = ServerProfile::from_keeper_nodes(b"3", Some(&[0b1011_1111]));
        assert!(!p.supports(Feature::MultiRead));
        // Flag 4 (REMOVE_RECURSIVE) is bit 3 of byte 0.
        assert!(p.supports(Feature::RemoveRecursive));
        let p = ServerProfile::from_keeper_nodes(b"3", Some(&[0b1111_0111]));
        assert!(!p.supports(Feature::RemoveRecursive));
        // Garbage stays on the safe side.
        let p = ServerProfile::from_keeper_nodes(b"\xff", Some(&[]));
        assert!(Feature::ALL.iter().all(|f| !p.supports(*f)));
    }

    #[test]
    fn detection_keeps_what_the_user_said_of_a_keeper_and_replaces_the_rest() {
        let detected = ServerProfile::from_keeper_nodes(b"2", None);
        let user = ServerProfile::keeper().with(Feature::Create2);
        let merged = detected.detected_over(user);
        assert!(merged.supports(Feature::Create2) && merged.supports(Feature::MultiRead));
        assert_eq!(merged.flavour(), Flavour::Keeper);
        let replaced = detected.detected_over(ServerProfile::default());
        assert_eq!(replaced, detected);
    }

    #[test]
    fn the_cell_narrows() {
        let cell = ProfileCell::new(ServerProfile::zookeeper(3, 8));
        cell.forget(Feature::Ttl);
        assert!(!cell.get().supports(Feature::Ttl));
        assert!(cell.clone().get().supports(Feature::AddWatch));
    }
}
