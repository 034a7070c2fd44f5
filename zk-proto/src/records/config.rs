//! Dynamic reconfiguration. `getConfig` is a `getData` of [`CONFIG_NODE`].

use crate::codec::record;

/// The node holding the ensemble configuration (`ZooDefs.CONFIG_NODE`).
pub const CONFIG_NODE: &str = "/zookeeper/config";

record! {
    /// `reconfig` request; the reply is a `GetDataResponse` with the new configuration.
    pub struct ReconfigRequest {
        /// Servers to add (incremental mode), comma separated.
        pub joining_servers: String,
        /// Server ids to remove (incremental mode), comma separated.
        pub leaving_servers: String,
        /// The whole new membership (bulk mode).
        pub new_members: String,
        /// Expected current config version, or -1.
        pub cur_config_id: i64,
    }
}
