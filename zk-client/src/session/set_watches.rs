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
    /// For each packet after the first, the first path (in the order pushed) that ends in
    /// it: see [`Rearm`].
    starts: Vec<String>,
}

/// A new connection's re-arm: how many SetWatches packets it sent, how many the server has
/// answered, and where each packet's paths begin. The events before a packet's reply
/// include the server catching up on that packet's paths (what changed while
/// disconnected): a path derives no children change, and drops no real one as derived,
/// until the last packet holding it is answered. Paths are pushed in sorted order, so the
/// packet a path ended in is the number of packet starts at or before it.
#[derive(Debug, Default)]
pub(crate) struct Rearm {
    packets: usize,
    answered: usize,
    starts: Vec<String>,
}

impl Rearm {
    /// The server answered the oldest SetWatches packet not yet answered. Those of the
    /// re-arm come first (the server answers in order); later ones, a watch armed on its
    /// own, find the re-arm over.
    pub(crate) fn answered(&mut self) {
        self.answered = self.answered.saturating_add(1);
        if self.answered >= self.packets {
            *self = Rearm::default();
        }
    }

    /// Whether the server may still be catching up on `path` (its last packet is not
    /// answered).
    pub(crate) fn catching_up(&self, path: &str) -> bool {
        if self.answered >= self.packets {
            return false;
        }
        let last = self.starts.partition_point(|start| start.as_str() <= path);
        last >= self.answered
    }
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
            starts: Vec::new(),
        }
    }

    /// Every list of `path` is pushed: records the packets that opened since the last path
    /// as starting at it (paths must come in sorted order; see [`Rearm`]).
    pub(crate) fn end_path(&mut self, path: &str) {
        while self.starts.len() < self.batches.len() {
            self.starts.push(path.to_owned());
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
    pub(crate) fn finish(self) -> Vec<SetWatchesBatch> {
        self.finish_rearm().0
    }

    /// The packets, in order, and the re-arm they make (for paths ended with
    /// [`end_path`](Self::end_path)).
    pub(crate) fn finish_rearm(mut self) -> (Vec<SetWatchesBatch>, Rearm) {
        if self.size > 0 {
            self.flush();
        }
        let rearm = Rearm {
            packets: self.batches.len(),
            answered: 0,
            starts: self.starts,
        };
        (self.batches, rearm)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_caught_up_once_the_last_packet_holding_it_is_answered() {
        // 12 bytes a packet: `/a` and `/b` (6 each) fill the first; `/c`'s two lists
        // straddle the second and third; `/d` ends in the third.
        let mut batcher = Batcher::new(0, true, 12);
        for (path, lists) in [
            ("/a", &[List::Data][..]),
            ("/b", &[List::Data]),
            ("/c", &[List::Data, List::Child, List::Recursive]),
            ("/d", &[List::Data]),
        ] {
            for list in lists {
                batcher.push(*list, path);
            }
            batcher.end_path(path);
        }
        let (batches, mut rearm) = batcher.finish_rearm();
        assert_eq!(batches.len(), 3);
        let catching_up = |rearm: &Rearm| {
            ["/a", "/b", "/c", "/d"]
                .into_iter()
                .filter(|p| rearm.catching_up(p))
                .collect::<Vec<_>>()
        };
        assert_eq!(catching_up(&rearm), ["/a", "/b", "/c", "/d"]);
        rearm.answered();
        assert_eq!(catching_up(&rearm), ["/c", "/d"]);
        rearm.answered();
        assert_eq!(
            catching_up(&rearm),
            ["/c", "/d"],
            "/c's last list is in the third"
        );
        rearm.answered();
        assert!(catching_up(&rearm).is_empty());
        rearm.answered();
        assert!(
            catching_up(&rearm).is_empty(),
            "a later packet finds it over"
        );
    }
}
