//! The SetWatches / SetWatches2 packets that re-arm a session's watches on a new connection,
//! cut into batches that each stay under the server's `jute.maxbuffer`.

use bytes::BytesMut;
use zk_proto::records::{SetWatches, SetWatches2};
use zk_proto::{OpCode, Record};

/// One SetWatches/SetWatches2 packet to send on reconnect.
#[derive(Debug)]
pub(crate) struct SetWatchesBatch {
    pub(crate) op: OpCode,
    pub(crate) body: BytesMut,
}

/// The five path lists of a SetWatches2 record.
#[derive(Debug, Clone, Copy)]
pub(crate) enum List {
    Data,
    Exist,
    Child,
    Persistent,
    Recursive,
}

/// Collects paths into records of at most `batch_bytes` of paths each.
#[derive(Debug)]
pub(crate) struct Batcher {
    relative_zxid: i64,
    /// SetWatches2 (with persistent lists) rather than SetWatches.
    v2: bool,
    batch_bytes: usize,
    current: SetWatches2,
    size: usize,
    batches: Vec<SetWatchesBatch>,
}

impl Batcher {
    pub(crate) fn new(relative_zxid: i64, v2: bool, batch_bytes: usize) -> Batcher {
        Batcher {
            relative_zxid,
            v2,
            batch_bytes,
            current: SetWatches2 {
                relative_zxid,
                ..Default::default()
            },
            size: 0,
            batches: Vec::new(),
        }
    }

    /// Adds `path` to `list`, starting a new packet first when this one would grow past the
    /// batch size (a packet always takes at least one path).
    pub(crate) fn push(&mut self, list: List, path: &str) {
        let cost = path.len() + 4;
        if self.size > 0 && self.size + cost > self.batch_bytes {
            self.flush();
        }
        self.size += cost;
        let c = &mut self.current;
        let list = match list {
            List::Data => &mut c.data_watches,
            List::Exist => &mut c.exist_watches,
            List::Child => &mut c.child_watches,
            List::Persistent => &mut c.persistent_watches,
            List::Recursive => &mut c.persistent_recursive_watches,
        };
        list.push(path.to_owned());
    }

    /// The packets, in order.
    pub(crate) fn finish(mut self) -> Vec<SetWatchesBatch> {
        if self.size > 0 {
            self.flush();
        }
        self.batches
    }

    fn flush(&mut self) {
        let fresh = SetWatches2 {
            relative_zxid: self.relative_zxid,
            ..Default::default()
        };
        let record = std::mem::replace(&mut self.current, fresh);
        self.size = 0;
        let mut body = BytesMut::new();
        let op = if self.v2 {
            record.encode(&mut body);
            OpCode::SetWatches2
        } else {
            SetWatches {
                relative_zxid: self.relative_zxid,
                data_watches: record.data_watches,
                exist_watches: record.exist_watches,
                child_watches: record.child_watches,
            }
            .encode(&mut body);
            OpCode::SetWatches
        };
        self.batches.push(SetWatchesBatch { op, body });
    }
}
