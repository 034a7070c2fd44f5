//! Dynamic reconfiguration. `getConfig` is a `getData` of [`CONFIG_NODE`].

use bytes::{Bytes, BytesMut};

use crate::codec::{get_i64, get_string, put_opt_buffer};
use crate::{DecodeError, Record};

/// The node holding the ensemble configuration (`ZooDefs.CONFIG_NODE`).
pub const CONFIG_NODE: &str = "/zookeeper/config";

/// `reconfig` request; the reply is a `GetDataResponse` with the new configuration.
///
/// The server tells the two modes apart by which strings are **null**: a non-null
/// `newMembers` means a bulk (non-incremental) change, otherwise `joiningServers` and
/// `leavingServers` are applied where non-null (`PrepRequestProcessor` in 3.8). So an empty
/// string here is written as the jute null marker (`-1`), as the Java client does for an
/// argument it was not given, and a null string reads back as empty. An empty string is never
/// a meaningful argument, so nothing is lost.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReconfigRequest {
    /// Servers to add (incremental mode), comma separated; empty for none.
    pub joining_servers: String,
    /// Server ids to remove (incremental mode), comma separated; empty for none.
    pub leaving_servers: String,
    /// The whole new membership (bulk mode); empty for an incremental change.
    pub new_members: String,
    /// Expected current config version, or -1.
    pub cur_config_id: i64,
}

fn put_null_if_empty(buf: &mut BytesMut, s: &str) {
    put_opt_buffer(buf, (!s.is_empty()).then_some(s.as_bytes()));
}

impl Record for ReconfigRequest {
    fn encode(&self, buf: &mut BytesMut) {
        put_null_if_empty(buf, &self.joining_servers);
        put_null_if_empty(buf, &self.leaving_servers);
        put_null_if_empty(buf, &self.new_members);
        self.cur_config_id.encode(buf);
    }

    fn decode(buf: &mut Bytes) -> Result<Self, DecodeError> {
        Ok(Self {
            joining_servers: get_string(buf)?,
            leaving_servers: get_string(buf)?,
            new_members: get_string(buf)?,
            cur_config_id: get_i64(buf)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode_to_bytes;

    #[test]
    fn incremental_reconfig_sends_null_for_unused_strings() {
        let req = ReconfigRequest {
            joining_servers: "server.2=h:2888:3888;2181".into(),
            cur_config_id: -1,
            ..Default::default()
        };
        let wire = encode_to_bytes(&req);
        assert_eq!(&wire[wire.len() - 16..wire.len() - 8], &[0xff; 8]);
        assert_eq!(crate::decode_exact::<ReconfigRequest>(wire), Ok(req));
    }
}
