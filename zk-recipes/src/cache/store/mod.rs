//! The snapshot: the cached subtree, path → (Stat, data), and the events its changes make.
//!
//! The nodes live in a compact tree (`tree.rs`): each keeps its name only, so a path is
//! shared with its parent's, and its `Stat` unpadded; a lookup by path hashes one segment per
//! level. Order is computed when asked for: children are sorted by name when listed, and
//! [`Store::entries`] walks the tree level by level (parents before their children, by depth
//! then path). Nothing here does IO: the cache's task applies reads and watch events and gets
//! back the events to publish.

#[cfg(test)]
mod model;
#[cfg(test)]
mod tests;
mod tree;

use std::cmp::Ordering;

use zk_client::{Bytes, Stat};

use self::tree::{Node, Tree, NONE};
use super::node::{CacheEvent, ChildData};
use crate::path::join;

/// How many `/`-separated segments `path` has (`/` has 0, `/a/b` has 2).
pub(crate) fn depth(path: &str) -> usize {
    if path == "/" {
        0
    } else {
        path.bytes().filter(|&b| b == b'/').count()
    }
}

/// How far below `root` `path` is, or `None` when it is not in `root`'s subtree.
pub(crate) fn level_below(root: &str, path: &str) -> Option<usize> {
    let inside = path == root
        || (path.starts_with(root)
            && (root == "/" || path.as_bytes().get(root.len()) == Some(&b'/')));
    inside.then(|| depth(path) - depth(root))
}

/// Siblings in the order of their paths with a `/` after them: the order of their children's
/// paths (`a-b/x` sorts before `a/x` though `a` sorts before `a-b`).
fn as_parents(a: &str, b: &str) -> Ordering {
    a.bytes()
        .chain(std::iter::once(b'/'))
        .cmp(b.bytes().chain(std::iter::once(b'/')))
}

/// The cached subtree.
#[derive(Debug)]
pub(crate) struct Store {
    root: String,
    tree: Tree,
}

impl Store {
    pub(crate) fn new(root: &str) -> Store {
        Store {
            root: root.to_owned(),
            tree: Tree::new(),
        }
    }

    /// How far below the root `path` is, or `None` when it is not in the root's subtree.
    pub(crate) fn level(&self, path: &str) -> Option<usize> {
        level_below(&self.root, path)
    }

    pub(crate) fn len(&self) -> usize {
        self.tree.len()
    }

    /// The node at `path`, if cached.
    fn find(&self, path: &str) -> Option<u32> {
        self.level(path)?;
        let mut i = self.tree.top()?;
        if path == self.root {
            return Some(i);
        }
        let below = if self.root == "/" {
            path.get(1..)
        } else {
            path.get(self.root.len() + 1..)
        }?;
        for name in below.split('/') {
            i = self.tree.child(i, name)?;
        }
        Some(i)
    }

    /// The path of node `i` (its ancestors' names below the root).
    fn path_of(&self, mut i: u32) -> String {
        let mut names = Vec::new();
        while let Some(n) = self.tree.node(i).filter(|n| n.parent() != NONE) {
            names.push(self.tree.name(i));
            i = n.parent();
        }
        let mut path = self.root.clone();
        for name in names.iter().rev() {
            path = join(&path, name);
        }
        path
    }

    fn child_data(&self, i: u32, path: String) -> ChildData {
        ChildData {
            path,
            stat: self.tree.node(i).map(Node::stat).unwrap_or_default(),
            data: self.tree.data(i),
        }
    }

    pub(crate) fn get(&self, path: &str) -> Option<ChildData> {
        let i = self.find(path)?;
        Some(self.child_data(i, path.to_owned()))
    }

    /// The children of node `i`, in name order.
    fn sorted_children(&self, i: u32) -> Vec<u32> {
        let mut kids: Vec<u32> = self.tree.children(i).collect();
        kids.sort_unstable_by(|&a, &b| self.tree.name(a).cmp(self.tree.name(b)));
        kids
    }

    /// The direct children of `path` that are cached, in name order.
    pub(crate) fn children(&self, path: &str) -> Vec<ChildData> {
        let Some(i) = self.find(path) else {
            return Vec::new();
        };
        self.sorted_children(i)
            .into_iter()
            .map(|c| self.child_data(c, join(path, self.tree.name(c))))
            .collect()
    }

    /// Every cached node, parents before children (by depth, then by path).
    pub(crate) fn entries(&self) -> Vec<ChildData> {
        let mut out = Vec::with_capacity(self.len());
        let Some(top) = self.tree.top() else {
            return out;
        };
        out.push(self.child_data(top, self.root.clone()));
        // One level at a time. The parents of the next level, in the order of their paths
        // with a `/` after them, give the next level in path order, each parent's children
        // by name (see `as_parents`).
        let mut parents = vec![(top, 0)];
        while !parents.is_empty() {
            let mut next = Vec::new();
            for (p, at) in parents {
                let Some(parent_path) = out.get(at).map(|c| c.path.clone()) else {
                    continue;
                };
                let kids = self.sorted_children(p);
                let base = out.len();
                for &c in &kids {
                    out.push(self.child_data(c, join(&parent_path, self.tree.name(c))));
                }
                let mut with_children: Vec<(u32, usize)> = kids
                    .iter()
                    .enumerate()
                    .filter(|&(_, &c)| self.tree.has_children(c))
                    .map(|(k, &c)| (c, base + k))
                    .collect();
                with_children
                    .sort_unstable_by(|a, b| as_parents(self.tree.name(a.0), self.tree.name(b.0)));
                next.extend(with_children);
            }
            parents = next;
        }
        out
    }

    /// Applies a successful read of `path` made by resync pass `seen` (`None`: the read does
    /// not count as seeing the node in the current pass). Returns the events, if `events`.
    pub(crate) fn apply_read(
        &mut self,
        path: &str,
        stat: Stat,
        data: Bytes,
        keep: bool,
        seen: Option<u32>,
        events: bool,
    ) -> Vec<CacheEvent> {
        let Some(level) = self.level(path) else {
            return Vec::new();
        };
        // Kept as a copy of its own: the reply's bytes share the connection's read buffer.
        let kept = keep.then_some(&data[..]);
        let full = |stat: &Stat| ChildData {
            path: path.to_owned(),
            stat: stat.clone(),
            data: Some(data.clone()),
        };
        let mut out = Vec::new();
        match self.find(path) {
            None => {
                let (parent, name) = if level == 0 {
                    (Some(NONE), "")
                } else {
                    // `None` when its parent is not cached yet: a resync's walk has not
                    // reached it (the node came with an event for a subtree created while
                    // disconnected). The walk reads it after its parent; a node is never
                    // cached without its parent.
                    (
                        self.find(crate::path::parent(path)),
                        crate::path::name(path),
                    )
                };
                let inserted = parent.and_then(|parent| {
                    self.tree
                        .insert(parent, name, &stat, kept, seen.unwrap_or(0))
                });
                if inserted.is_some() && events {
                    out.push(CacheEvent::Created(full(&stat)));
                }
            }
            Some(i) => {
                let Some(&node) = self.tree.node(i) else {
                    return out;
                };
                let seen = seen.unwrap_or(node.seen);
                if node.czxid() != stat.czxid {
                    // A node with another czxid replaced the cached one: the old node's
                    // descendants were deleted before it was (a node with children cannot
                    // be), so they go first.
                    let czxid = stat.czxid;
                    out = self.remove_doomed(i, false, |n| n.czxid() < czxid, events);
                    if events {
                        out.push(CacheEvent::Deleted(self.child_data(i, path.to_owned())));
                        out.push(CacheEvent::Created(full(&stat)));
                    }
                    self.tree.set_stat(i, &stat, seen);
                    self.tree.set_data(i, kept);
                } else if node.version() != stat.version {
                    if events {
                        let old = self.child_data(i, path.to_owned());
                        out.push(CacheEvent::Changed {
                            old,
                            new: full(&stat),
                        });
                    }
                    self.tree.set_stat(i, &stat, seen);
                    self.tree.set_data(i, kept);
                } else {
                    // Same data: only the children's fields may have moved. No event.
                    self.tree.set_stat(i, &stat, seen);
                }
            }
        }
        self.tree.maybe_compact();
        out
    }

    /// Removes the nodes below `start` that `gone` selects, with everything below them, and
    /// `start` itself when `start_gone`: deepest first, by path within a depth. Returns
    /// their events.
    fn remove_doomed(
        &mut self,
        start: u32,
        start_gone: bool,
        gone: impl Fn(&Node) -> bool,
        events: bool,
    ) -> Vec<CacheEvent> {
        // (depth, node) of every node to remove; a node goes when its parent goes.
        let mut doomed: Vec<(u32, u32)> = Vec::new();
        let mut stack = vec![(start, 0u32, start_gone)];
        while let Some((i, depth, dies)) = stack.pop() {
            if dies {
                doomed.push((depth, i));
            }
            for c in self.tree.children(i) {
                let dies = dies || self.tree.node(c).is_some_and(&gone);
                stack.push((c, depth + 1, dies));
            }
        }
        let mut out = Vec::new();
        if events {
            let mut named: Vec<(u32, u32, String)> = doomed
                .into_iter()
                .map(|(d, i)| (d, i, self.path_of(i)))
                .collect();
            named.sort_unstable_by(|a, b| b.0.cmp(&a.0).then_with(|| a.2.cmp(&b.2)));
            out.reserve(named.len());
            for (_, i, path) in named {
                out.push(CacheEvent::Deleted(self.child_data(i, path)));
                self.tree.remove_leaf(i);
            }
        } else {
            doomed.sort_unstable_by_key(|d| std::cmp::Reverse(d.0));
            for (_, i) in doomed {
                self.tree.remove_leaf(i);
            }
        }
        out
    }

    /// Removes `path` and every cached descendant (deepest first), returning their events.
    pub(crate) fn remove(&mut self, path: &str, events: bool) -> Vec<CacheEvent> {
        let Some(i) = self.find(path) else {
            return Vec::new();
        };
        let out = self.remove_doomed(i, true, |_| true, events);
        self.tree.maybe_compact();
        out
    }

    /// Removes every node not seen by resync pass `pass` (deepest first), with what is below
    /// it: after a complete pass, those are the nodes deleted while no event could tell us.
    /// The pass is complete: the arrays give back their slack.
    pub(crate) fn sweep(&mut self, pass: u32, events: bool) -> Vec<CacheEvent> {
        let Some(top) = self.tree.top() else {
            return Vec::new();
        };
        let top_gone = self.tree.node(top).is_some_and(|n| n.seen != pass);
        let out = self.remove_doomed(top, top_gone, |n| n.seen != pass, events);
        self.tree.trim();
        out
    }

    /// Bytes the snapshot holds on the heap.
    #[cfg(test)]
    pub(crate) fn heap_bytes(&self) -> usize {
        self.root.capacity() + self.tree.heap_bytes()
    }

    #[cfg(test)]
    fn compact(&mut self) {
        self.tree.compact();
    }
}
