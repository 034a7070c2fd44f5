//! The compact layout of the snapshot: one flat array of fixed-size nodes linked to their
//! parent and siblings, one byte arena for their names and small data, and one hash index.
//!
//! A node keeps only its own name (its path is its ancestors' names), its `Stat` fields
//! unpadded, and its data inline in the arena when it is small ([`INLINE_MAX`]); larger data
//! stays a [`Bytes`] of its own, so reading a big node never copies it. The index maps
//! (parent, name) to a node: a lookup by path hashes one segment per level. Slots and arena
//! bytes freed by removals and data changes are reused or compacted away
//! ([`Tree::compact`]), so memory follows the live nodes.
//!
//! Nothing here knows about paths above the cached root, events or passes: `mod.rs` does.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher, RandomState};

use hashbrown::HashTable;
use zk_client::{Bytes, Stat};

/// No node (a missing link, or the parent of the cached root).
pub(super) const NONE: u32 = u32::MAX;
/// The `parent` of a free slot.
const VACANT: u32 = u32::MAX - 1;
/// Data up to this length is kept inline in the arena and copied on each read of the node;
/// longer data keeps a `Bytes` of its own, shared with every reader.
pub(super) const INLINE_MAX: usize = 256;
/// `Node::data` of a node whose data is not kept.
const NOT_KEPT: u32 = u32::MAX;
/// `Node::data` of a node whose data is in `Tree::big`.
const BIG: u32 = u32::MAX - 1;
/// Free slots and dead arena bytes are compacted away once they exceed the live ones and
/// these floors (small caches never pay for a compaction).
const MIN_FREE_SLOTS: usize = 1024;
const MIN_DEAD_BYTES: usize = 64 * 1024;

/// One node: its links, its `Stat` without padding, where its name and data are.
/// 104 bytes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Node {
    czxid: i64,
    mzxid: i64,
    ctime: i64,
    mtime: i64,
    ephemeral_owner: i64,
    pzxid: i64,
    /// Offset in `Tree::bytes` of the name, followed by the inline data.
    at: u64,
    version: i32,
    cversion: i32,
    aversion: i32,
    data_length: i32,
    num_children: i32,
    parent: u32,
    first_child: u32,
    next: u32,
    prev: u32,
    name_len: u32,
    /// The inline data's length, [`NOT_KEPT`] or [`BIG`].
    data: u32,
    /// The resync pass that last saw this node on the server (see `Store::sweep`).
    pub(super) seen: u32,
}

impl Node {
    pub(super) fn czxid(&self) -> i64 {
        self.czxid
    }

    pub(super) fn version(&self) -> i32 {
        self.version
    }

    pub(super) fn parent(&self) -> u32 {
        self.parent
    }

    pub(super) fn stat(&self) -> Stat {
        Stat {
            czxid: self.czxid,
            mzxid: self.mzxid,
            ctime: self.ctime,
            mtime: self.mtime,
            version: self.version,
            cversion: self.cversion,
            aversion: self.aversion,
            ephemeral_owner: self.ephemeral_owner,
            data_length: self.data_length,
            num_children: self.num_children,
            pzxid: self.pzxid,
        }
    }

    fn set_stat(&mut self, s: &Stat) {
        self.czxid = s.czxid;
        self.mzxid = s.mzxid;
        self.ctime = s.ctime;
        self.mtime = s.mtime;
        self.version = s.version;
        self.cversion = s.cversion;
        self.aversion = s.aversion;
        self.ephemeral_owner = s.ephemeral_owner;
        self.data_length = s.data_length;
        self.num_children = s.num_children;
        self.pzxid = s.pzxid;
    }

    /// Bytes of the arena this node's record holds (its name and inline data).
    fn record_len(&self) -> usize {
        self.name_len as usize + self.inline_len()
    }

    fn inline_len(&self) -> usize {
        match self.data {
            NOT_KEPT | BIG => 0,
            n => n as usize,
        }
    }
}

/// The nodes of the cached subtree.
#[derive(Debug)]
pub(super) struct Tree {
    nodes: Vec<Node>,
    /// Vacant slots of `nodes`, reused first.
    free: Vec<u32>,
    /// Names and inline data, one record per node; `live` bytes of it are in use.
    bytes: Vec<u8>,
    live: usize,
    /// Data longer than [`INLINE_MAX`], by node.
    big: HashMap<u32, Bytes>,
    /// (parent, name) → node, for every node but the top one.
    index: HashTable<u32>,
    hasher: RandomState,
    /// The cached root, or [`NONE`].
    top: u32,
    len: usize,
}

/// The hash of a child called `name` under `parent`.
fn key_hash(hasher: &RandomState, parent: u32, name: &[u8]) -> u64 {
    let mut h = hasher.build_hasher();
    h.write_u32(parent);
    h.write(name);
    h.finish()
}

/// `name` of the node at `i` (empty for a slot out of range, which the links never point to).
fn name_in<'a>(nodes: &[Node], bytes: &'a [u8], i: u32) -> &'a [u8] {
    nodes
        .get(i as usize)
        .and_then(|n| bytes.get(n.at as usize..n.at as usize + n.name_len as usize))
        .unwrap_or_default()
}

fn hash_of(hasher: &RandomState, nodes: &[Node], bytes: &[u8], i: u32) -> u64 {
    let parent = nodes.get(i as usize).map_or(NONE, |n| n.parent);
    key_hash(hasher, parent, name_in(nodes, bytes, i))
}

/// Makes room for `additional` more items, growing by a quarter rather than doubling: the
/// slack of a large cache stays a fraction of it.
fn reserve<T>(v: &mut Vec<T>, additional: usize, floor: usize) {
    if v.capacity() - v.len() < additional {
        let grow = additional.max(v.capacity() / 4).max(floor);
        v.reserve_exact(grow);
    }
}

impl Tree {
    pub(super) fn new() -> Tree {
        Tree {
            nodes: Vec::new(),
            free: Vec::new(),
            bytes: Vec::new(),
            live: 0,
            big: HashMap::new(),
            index: HashTable::new(),
            hasher: RandomState::new(),
            top: NONE,
            len: 0,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The cached root, if any.
    pub(super) fn top(&self) -> Option<u32> {
        (self.top != NONE).then_some(self.top)
    }

    pub(super) fn node(&self, i: u32) -> Option<&Node> {
        self.nodes.get(i as usize).filter(|n| n.parent != VACANT)
    }

    /// The name of node `i` (empty for the top node).
    pub(super) fn name(&self, i: u32) -> &str {
        std::str::from_utf8(name_in(&self.nodes, &self.bytes, i)).unwrap_or_default()
    }

    /// The child of `parent` called `name`.
    pub(super) fn child(&self, parent: u32, name: &str) -> Option<u32> {
        let (nodes, bytes) = (&self.nodes, &self.bytes);
        let hash = key_hash(&self.hasher, parent, name.as_bytes());
        self.index
            .find(hash, |&i| {
                nodes.get(i as usize).is_some_and(|n| n.parent == parent)
                    && name_in(nodes, bytes, i) == name.as_bytes()
            })
            .copied()
    }

    /// The children of `parent`, in no particular order.
    pub(super) fn children(&self, parent: u32) -> Children<'_> {
        Children {
            tree: self,
            next: self.node(parent).map_or(NONE, |n| n.first_child),
        }
    }

    pub(super) fn has_children(&self, i: u32) -> bool {
        self.node(i).is_some_and(|n| n.first_child != NONE)
    }

    /// Node `i`'s data: `None` when not kept. Inline data is copied (it is small); big data
    /// is shared.
    pub(super) fn data(&self, i: u32) -> Option<Bytes> {
        let n = self.node(i)?;
        match n.data {
            NOT_KEPT => None,
            BIG => self.big.get(&i).cloned(),
            len => {
                let from = n.at as usize + n.name_len as usize;
                let inline = self.bytes.get(from..from + len as usize)?;
                Some(Bytes::copy_from_slice(inline))
            }
        }
    }

    /// Adds a node called `name` under `parent` ([`NONE`]: the top node, whose name is
    /// empty). `None` when it cannot be indexed (4 billion nodes).
    pub(super) fn insert(
        &mut self,
        parent: u32,
        name: &str,
        stat: &Stat,
        data: Option<&[u8]>,
        seen: u32,
    ) -> Option<u32> {
        let i = match self.free.pop() {
            Some(i) => i,
            None => {
                let i = u32::try_from(self.nodes.len())
                    .ok()
                    .filter(|&i| i < VACANT)?;
                reserve(&mut self.nodes, 1, 8);
                self.nodes.push(Node {
                    czxid: 0,
                    mzxid: 0,
                    ctime: 0,
                    mtime: 0,
                    ephemeral_owner: 0,
                    pzxid: 0,
                    at: 0,
                    version: 0,
                    cversion: 0,
                    aversion: 0,
                    data_length: 0,
                    num_children: 0,
                    parent: VACANT,
                    first_child: NONE,
                    next: NONE,
                    prev: NONE,
                    name_len: 0,
                    data: NOT_KEPT,
                    seen: 0,
                });
                i
            }
        };
        // The name and small data in one record; big data aside.
        let (inline, code): (&[u8], u32) = match data {
            None => (&[], NOT_KEPT),
            Some(d) if d.len() > INLINE_MAX => {
                self.big.insert(i, Bytes::copy_from_slice(d));
                (&[], BIG)
            }
            Some(d) => (d, d.len() as u32),
        };
        let at = self.append(name.as_bytes(), inline);
        let first = if parent == NONE {
            self.top = i;
            NONE
        } else {
            let first = self
                .nodes
                .get(parent as usize)
                .map_or(NONE, |p| p.first_child);
            if let Some(f) = self.nodes.get_mut(first as usize) {
                f.prev = i;
            }
            if let Some(p) = self.nodes.get_mut(parent as usize) {
                p.first_child = i;
            }
            first
        };
        if let Some(n) = self.nodes.get_mut(i as usize) {
            n.set_stat(stat);
            n.at = at;
            n.parent = parent;
            n.first_child = NONE;
            n.next = first;
            n.prev = NONE;
            n.name_len = name.len() as u32;
            n.data = code;
            n.seen = seen;
        }
        self.live += name.len() + inline.len();
        if parent != NONE {
            let (nodes, bytes, hasher) = (&self.nodes, &self.bytes, &self.hasher);
            let hash = key_hash(hasher, parent, name.as_bytes());
            self.index
                .insert_unique(hash, i, |&j| hash_of(hasher, nodes, bytes, j));
        }
        self.len += 1;
        Some(i)
    }

    /// Appends `name` then `data` to the arena; returns where they start.
    fn append(&mut self, name: &[u8], data: &[u8]) -> u64 {
        reserve(&mut self.bytes, name.len() + data.len(), 256);
        let at = self.bytes.len() as u64;
        self.bytes.extend_from_slice(name);
        self.bytes.extend_from_slice(data);
        at
    }

    pub(super) fn set_stat(&mut self, i: u32, stat: &Stat, seen: u32) {
        if let Some(n) = self.nodes.get_mut(i as usize) {
            n.set_stat(stat);
            n.seen = seen;
        }
    }

    /// Replaces node `i`'s data (`None`: not kept).
    pub(super) fn set_data(&mut self, i: u32, data: Option<&[u8]>) {
        let Some(&n) = self.node(i) else {
            return;
        };
        if n.data == BIG {
            self.big.remove(&i);
        }
        let old = n.inline_len();
        let (at, code) = match data {
            None => (n.at, NOT_KEPT),
            Some(d) if d.len() > INLINE_MAX => {
                self.big.insert(i, Bytes::copy_from_slice(d));
                (n.at, BIG)
            }
            Some(d) if d.len() <= old => {
                let from = n.at as usize + n.name_len as usize;
                if let Some(slot) = self.bytes.get_mut(from..from + d.len()) {
                    slot.copy_from_slice(d);
                }
                (n.at, d.len() as u32)
            }
            Some(d) => {
                // Moves the record to the end of the arena: the name goes with it.
                let from = n.at as usize;
                let name = self
                    .bytes
                    .get(from..from + n.name_len as usize)
                    .unwrap_or_default()
                    .to_vec();
                let at = self.append(&name, d);
                (at, d.len() as u32)
            }
        };
        if let Some(n) = self.nodes.get_mut(i as usize) {
            self.live -= n.inline_len();
            n.at = at;
            n.data = code;
            self.live += n.inline_len();
        }
    }

    /// Removes node `i`, which has no children any more.
    pub(super) fn remove_leaf(&mut self, i: u32) {
        let Some(&n) = self.node(i) else {
            return;
        };
        if n.parent == NONE {
            self.top = NONE;
        } else {
            let (nodes, bytes) = (&self.nodes, &self.bytes);
            let hash = key_hash(&self.hasher, n.parent, name_in(nodes, bytes, i));
            if let Ok(entry) = self.index.find_entry(hash, |&j| j == i) {
                entry.remove();
            }
            if n.prev == NONE {
                if let Some(p) = self.nodes.get_mut(n.parent as usize) {
                    p.first_child = n.next;
                }
            } else if let Some(p) = self.nodes.get_mut(n.prev as usize) {
                p.next = n.next;
            }
        }
        if let Some(x) = self.nodes.get_mut(n.next as usize) {
            x.prev = n.prev;
        }
        if n.data == BIG {
            self.big.remove(&i);
        }
        self.live -= n.record_len();
        if let Some(slot) = self.nodes.get_mut(i as usize) {
            slot.parent = VACANT;
            slot.first_child = NONE;
            slot.next = NONE;
            slot.prev = NONE;
            slot.name_len = 0;
            slot.data = NOT_KEPT;
        }
        self.free.push(i);
        self.len -= 1;
    }

    /// Compacts when free slots or dead bytes outweigh the live ones. Node numbers change:
    /// call it when no number is held.
    pub(super) fn maybe_compact(&mut self) {
        let dead = self.bytes.len().saturating_sub(self.live);
        if (self.free.len() > MIN_FREE_SLOTS && self.free.len() > self.len)
            || (dead > MIN_DEAD_BYTES && dead > self.live)
        {
            self.compact();
        }
    }

    /// Rebuilds the arrays without free slots or dead bytes (node numbers change).
    pub(super) fn compact(&mut self) {
        let mut renumber = vec![NONE; self.nodes.len()];
        let mut nodes = Vec::with_capacity(self.len + self.len / 8);
        let mut bytes = Vec::with_capacity(self.live + self.live / 8);
        for (old, n) in self.nodes.iter().enumerate() {
            if n.parent == VACANT {
                continue;
            }
            let Some(new) = renumber.get_mut(old) else {
                continue;
            };
            *new = nodes.len() as u32;
            let from = n.at as usize;
            let record = self
                .bytes
                .get(from..from + n.record_len())
                .unwrap_or_default();
            let mut n = *n;
            n.at = bytes.len() as u64;
            bytes.extend_from_slice(record);
            nodes.push(n);
        }
        let map = |i: u32| renumber.get(i as usize).copied().unwrap_or(NONE);
        for n in &mut nodes {
            n.parent = map(n.parent);
            n.first_child = map(n.first_child);
            n.next = map(n.next);
            n.prev = map(n.prev);
        }
        self.big = std::mem::take(&mut self.big)
            .into_iter()
            .map(|(i, d)| (map(i), d))
            .collect();
        self.top = map(self.top);
        let mut index = HashTable::with_capacity(self.len);
        for (i, n) in nodes.iter().enumerate() {
            if n.parent != NONE {
                let hash = hash_of(&self.hasher, &nodes, &bytes, i as u32);
                index.insert_unique(hash, i as u32, |&j| {
                    hash_of(&self.hasher, &nodes, &bytes, j)
                });
            }
        }
        self.nodes = nodes;
        self.bytes = bytes;
        self.live = self.bytes.len();
        self.index = index;
        self.free = Vec::new();
    }

    /// Gives back the slack of the arrays after a load (or a resync): a cache's memory
    /// follows what it holds, not what it once held.
    pub(super) fn trim(&mut self) {
        if self.free.len() > self.len / 8
            || self.bytes.len().saturating_sub(self.live) > self.live / 8
        {
            self.compact();
        }
        // Exactly: the next insert grows them by a quarter again.
        if self.nodes.capacity() > self.nodes.len() + self.nodes.len() / 32 {
            self.nodes.shrink_to_fit();
        }
        if self.bytes.capacity() > self.bytes.len() + self.bytes.len() / 32 {
            self.bytes.shrink_to_fit();
        }
    }

    /// Bytes this tree holds on the heap (its arrays' capacities, the index, big data).
    #[cfg(test)]
    pub(super) fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        self.nodes.capacity() * size_of::<Node>()
            + self.free.capacity() * size_of::<u32>()
            + self.bytes.capacity()
            + self.index.allocation_size()
            + self.big.capacity() * (size_of::<(u32, Bytes)>() + 1)
            + self.big.values().map(Bytes::len).sum::<usize>()
    }
}

/// The children of one node (see [`Tree::children`]).
pub(super) struct Children<'a> {
    tree: &'a Tree,
    next: u32,
}

impl Iterator for Children<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        let i = self.next;
        let n = self.tree.node(i)?;
        self.next = n.next;
        Some(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_is_104_bytes() {
        assert_eq!(std::mem::size_of::<Node>(), 104);
    }
}
