//! The snapshot: path → (Stat, data), one ordered map per depth below the cache's root.
//!
//! One map per depth makes the direct children of a node one contiguous range (all paths of
//! depth d+1 starting with `parent/`), so `children` never scans grandchildren, and iteration
//! gives parents before their children. Nothing here does IO: the cache's task applies reads
//! and watch events and gets back the events to publish.

use std::collections::BTreeMap;
use std::ops::Bound;

use zk_client::{Bytes, Stat};

use super::node::{CacheEvent, ChildData};

/// One stored node.
#[derive(Debug, Clone)]
struct Entry {
    stat: Stat,
    data: Option<Bytes>,
    /// The resync pass that last saw this node on the server (see `Store::sweep`).
    seen: u32,
}

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

/// `parent/` (or `/` for the root), the prefix of every descendant of `parent`.
fn prefix(parent: &str) -> String {
    if parent == "/" {
        "/".to_owned()
    } else {
        format!("{parent}/")
    }
}

/// The cached subtree.
#[derive(Debug)]
pub(crate) struct Store {
    root: String,
    /// `levels[d]`: the nodes `d` levels below the root.
    levels: Vec<BTreeMap<Box<str>, Entry>>,
    len: usize,
}

impl Store {
    pub(crate) fn new(root: &str) -> Store {
        Store {
            root: root.to_owned(),
            levels: Vec::new(),
            len: 0,
        }
    }

    /// How far below the root `path` is, or `None` when it is not in the root's subtree.
    pub(crate) fn level(&self, path: &str) -> Option<usize> {
        level_below(&self.root, path)
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn get(&self, path: &str) -> Option<ChildData> {
        let level = self.level(path)?;
        let entry = self.levels.get(level)?.get(path)?;
        Some(child_data(path, entry))
    }

    /// The direct children of `path` that are cached, in name order.
    pub(crate) fn children(&self, path: &str) -> Vec<ChildData> {
        let Some(level) = self.level(path) else {
            return Vec::new();
        };
        let Some(map) = self.levels.get(level + 1) else {
            return Vec::new();
        };
        let (from, to) = range_of(path);
        map.range::<str, _>((Bound::Included(from.as_str()), bound_to(&to)))
            .map(|(p, e)| child_data(p, e))
            .collect()
    }

    /// Every cached node, parents before children (by depth, then by path).
    pub(crate) fn entries(&self) -> Vec<ChildData> {
        let mut out = Vec::with_capacity(self.len);
        for map in &self.levels {
            out.extend(map.iter().map(|(p, e)| child_data(p, e)));
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
        while self.levels.len() <= level {
            self.levels.push(BTreeMap::new());
        }
        // A node with another czxid replaced the cached one: the old node's descendants were
        // deleted before it was (a node with children cannot be), so they go first.
        let mut out = Vec::new();
        let replaced = self.levels[level]
            .get(path)
            .is_some_and(|e| e.stat.czxid != stat.czxid);
        if replaced {
            out = self.remove_descendants(path, level, |e| e.stat.czxid < stat.czxid, events);
        }
        let orphan = level > 0 && !self.parent_cached(path, level);
        let map = &mut self.levels[level];
        let new = |stat: Stat, seen: u32| Entry {
            stat,
            // A copy of its own: the reply's bytes share the connection's read buffer.
            data: keep.then(|| Bytes::copy_from_slice(&data)),
            seen,
        };
        let full = |stat: &Stat| ChildData {
            path: path.to_owned(),
            stat: stat.clone(),
            data: Some(data.clone()),
        };
        match map.get_mut(path) {
            None if orphan => {
                // Its parent is not cached yet: a resync's walk has not reached it (the node
                // came with an event for a subtree created while disconnected). The walk
                // reads it after its parent; a node is never cached without its parent.
            }
            None => {
                if events {
                    out.push(CacheEvent::Created(full(&stat)));
                }
                map.insert(path.into(), new(stat, seen.unwrap_or(0)));
                self.len += 1;
            }
            Some(entry) => {
                let seen = seen.unwrap_or(entry.seen);
                if entry.stat.czxid != stat.czxid {
                    if events {
                        out.push(CacheEvent::Deleted(child_data(path, entry)));
                        out.push(CacheEvent::Created(full(&stat)));
                    }
                    *entry = new(stat, seen);
                } else if entry.stat.version != stat.version {
                    if events {
                        let old = child_data(path, entry);
                        out.push(CacheEvent::Changed {
                            old,
                            new: full(&stat),
                        });
                    }
                    *entry = new(stat, seen);
                } else {
                    // Same data: only the children's fields may have moved. No event.
                    entry.stat = stat;
                    entry.seen = seen;
                }
            }
        }
        out
    }

    /// Whether the parent of `path` (at `level` > 0) is cached.
    fn parent_cached(&self, path: &str, level: usize) -> bool {
        self.levels
            .get(level - 1)
            .is_some_and(|m| m.contains_key(crate::path::parent(path)))
    }

    /// Removes the cached descendants of `path` (at `level`) that `gone` selects, deepest
    /// first, returning their events.
    fn remove_descendants(
        &mut self,
        path: &str,
        level: usize,
        gone: impl Fn(&Entry) -> bool,
        events: bool,
    ) -> Vec<CacheEvent> {
        let mut out = Vec::new();
        let (from, to) = range_of(path);
        for d in (level + 1..self.levels.len()).rev() {
            let map = &mut self.levels[d];
            let gone: Vec<Box<str>> = map
                .range::<str, _>((Bound::Included(from.as_str()), bound_to(&to)))
                .filter(|(_, e)| gone(e))
                .map(|(p, _)| p.clone())
                .collect();
            for p in gone {
                if let Some(e) = map.remove(&p) {
                    self.len -= 1;
                    if events {
                        out.push(CacheEvent::Deleted(child_data(&p, &e)));
                    }
                }
            }
        }
        out
    }

    /// Removes `path` and every cached descendant (deepest first), returning their events.
    pub(crate) fn remove(&mut self, path: &str, events: bool) -> Vec<CacheEvent> {
        let Some(level) = self.level(path) else {
            return Vec::new();
        };
        let mut out = self.remove_descendants(path, level, |_| true, events);
        if let Some(e) = self.levels.get_mut(level).and_then(|m| m.remove(path)) {
            self.len -= 1;
            if events {
                out.push(CacheEvent::Deleted(child_data(path, &e)));
            }
        }
        out
    }

    /// Removes every node not seen by resync pass `pass` (deepest first): after a complete
    /// pass, those are the nodes deleted while no event could tell us.
    pub(crate) fn sweep(&mut self, pass: u32, events: bool) -> Vec<CacheEvent> {
        let mut out = Vec::new();
        for map in self.levels.iter_mut().rev() {
            let before = map.len();
            map.retain(|p, e| {
                let keep = e.seen == pass;
                if !keep && events {
                    out.push(CacheEvent::Deleted(child_data(p, e)));
                }
                keep
            });
            self.len -= before - map.len();
        }
        out
    }
}

/// `[parent/, parent0)`: the range holding exactly the paths below `parent` at one depth
/// (`0` is the byte after `/`).
fn range_of(parent: &str) -> (String, Option<String>) {
    let from = prefix(parent);
    if from == "/" {
        return (from, None);
    }
    let mut to = from.clone();
    to.pop();
    to.push('0');
    (from, Some(to))
}

fn bound_to(to: &Option<String>) -> Bound<&str> {
    match to {
        Some(t) => Bound::Excluded(t.as_str()),
        None => Bound::Unbounded,
    }
}

fn child_data(path: &str, e: &Entry) -> ChildData {
    ChildData {
        path: path.to_owned(),
        stat: e.stat.clone(),
        data: e.data.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(czxid: i64, version: i32) -> Stat {
        Stat {
            czxid,
            version,
            ..Stat::default()
        }
    }

    fn read(s: &mut Store, path: &str, czxid: i64, version: i32, data: &str) -> Vec<CacheEvent> {
        s.apply_read(
            path,
            stat(czxid, version),
            Bytes::copy_from_slice(data.as_bytes()),
            true,
            Some(1),
            true,
        )
    }

    fn paths(v: &[ChildData]) -> Vec<&str> {
        v.iter().map(|c| c.path.as_str()).collect()
    }

    #[test]
    fn children_are_direct_only_and_siblings_with_common_prefixes_stay_apart() {
        let mut s = Store::new("/app");
        for p in [
            "/app", "/app/a", "/app/a/x", "/app/ab", "/app/a0", "/app/b", "/other",
        ] {
            read(&mut s, p, 1, 0, "");
        }
        assert_eq!(s.len(), 6, "/other is outside the root");
        assert_eq!(
            paths(&s.children("/app")),
            ["/app/a", "/app/a0", "/app/ab", "/app/b"]
        );
        assert_eq!(paths(&s.children("/app/a")), ["/app/a/x"]);
        assert!(s.children("/app/ab").is_empty());
        assert_eq!(paths(&s.entries())[0], "/app");
    }

    #[test]
    fn root_slash_works() {
        let mut s = Store::new("/");
        for p in ["/", "/a", "/a/b", "/c"] {
            read(&mut s, p, 1, 0, "");
        }
        assert_eq!(paths(&s.children("/")), ["/a", "/c"]);
        assert_eq!(s.get("/a/b").unwrap().path, "/a/b");
        assert_eq!(s.remove("/a", true).len(), 2);
        assert_eq!(s.len(), 2);
    }

    #[test]
    fn events_follow_version_and_identity() {
        let mut s = Store::new("/r");
        assert!(matches!(
            read(&mut s, "/r", 1, 0, "a")[..],
            [CacheEvent::Created(_)]
        ));
        assert!(
            read(&mut s, "/r", 1, 0, "a").is_empty(),
            "same version: nothing"
        );
        match &read(&mut s, "/r", 1, 1, "b")[..] {
            [CacheEvent::Changed { old, new }] => {
                assert_eq!(old.data.as_deref(), Some(&b"a"[..]));
                assert_eq!(new.data.as_deref(), Some(&b"b"[..]));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            read(&mut s, "/r", 7, 1, "c")[..],
            [CacheEvent::Deleted(_), CacheEvent::Created(_)]
        ));
        assert!(matches!(s.remove("/r", true)[..], [CacheEvent::Deleted(_)]));
        assert!(
            s.remove("/r", true).is_empty(),
            "removing twice reports once"
        );
    }

    #[test]
    fn remove_takes_the_subtree_deepest_first() {
        let mut s = Store::new("/r");
        for p in ["/r", "/r/a", "/r/a/b", "/r/a/b/c", "/r/ab"] {
            read(&mut s, p, 1, 0, "");
        }
        let ev = s.remove("/r/a", true);
        let gone: Vec<_> = ev.iter().filter_map(|e| e.path()).collect();
        assert_eq!(gone, ["/r/a/b/c", "/r/a/b", "/r/a"]);
        assert_eq!(paths(&s.entries()), ["/r", "/r/ab"]);
    }

    #[test]
    fn a_node_is_never_cached_without_its_parent() {
        let mut s = Store::new("/r");
        assert!(read(&mut s, "/r/a", 2, 0, "").is_empty(), "no /r yet");
        read(&mut s, "/r", 1, 0, "");
        assert!(read(&mut s, "/r/a/b", 3, 0, "").is_empty(), "no /r/a yet");
        assert_eq!(read(&mut s, "/r/a", 2, 0, "").len(), 1);
        assert_eq!(read(&mut s, "/r/a/b", 3, 0, "").len(), 1);
        assert_eq!(paths(&s.entries()), ["/r", "/r/a", "/r/a/b"]);
    }

    #[test]
    fn a_node_found_replaced_drops_its_old_descendants_first() {
        let mut s = Store::new("/r");
        read(&mut s, "/r", 1, 0, "");
        read(&mut s, "/r/a", 2, 0, "");
        read(&mut s, "/r/a/b", 3, 0, "");
        read(&mut s, "/r/a/b/c", 4, 0, "");
        read(&mut s, "/r/ab", 5, 0, "");
        // /r/a deleted with its subtree and created again (czxid 8); /r/a/b re-created under
        // it (czxid 9) was read first by an event refresh: it stays.
        s.remove("/r/a/b", false);
        read(&mut s, "/r/a/b", 9, 0, "");
        let ev = read(&mut s, "/r/a", 8, 0, "");
        let described: Vec<String> = ev
            .iter()
            .map(|e| match e {
                CacheEvent::Created(n) => format!("+{}@{}", n.path, n.stat.czxid),
                CacheEvent::Deleted(n) => format!("-{}@{}", n.path, n.stat.czxid),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(described, ["-/r/a@2", "+/r/a@8"]);
        assert_eq!(paths(&s.entries()), ["/r", "/r/a", "/r/ab", "/r/a/b"]);

        // Found replaced again with the old subtree still cached: the old children go first.
        read(&mut s, "/r/a/b/c", 10, 0, "");
        let ev = read(&mut s, "/r/a", 20, 0, "");
        let gone: Vec<_> = ev.iter().filter_map(|e| e.path()).collect();
        assert_eq!(gone, ["/r/a/b/c", "/r/a/b", "/r/a", "/r/a"]);
        assert!(matches!(
            ev[..],
            [.., CacheEvent::Deleted(_), CacheEvent::Created(_)]
        ));
        assert_eq!(paths(&s.entries()), ["/r", "/r/a", "/r/ab"]);
    }

    #[test]
    fn sweep_removes_what_a_pass_did_not_see() {
        let mut s = Store::new("/r");
        for p in ["/r", "/r/a", "/r/b"] {
            read(&mut s, p, 1, 0, "");
        }
        s.apply_read("/r", stat(1, 0), Bytes::new(), true, Some(2), false);
        s.apply_read("/r/b", stat(1, 0), Bytes::new(), true, Some(2), false);
        // A read outside the pass does not count as seen.
        s.apply_read("/r/a", stat(1, 0), Bytes::new(), true, None, false);
        let ev = s.sweep(2, true);
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].path(), Some("/r/a"));
        assert_eq!(paths(&s.entries()), ["/r", "/r/b"]);
    }

    #[test]
    fn data_not_kept_keeps_the_stat() {
        let mut s = Store::new("/r");
        let ev = s.apply_read(
            "/r",
            stat(1, 0),
            Bytes::from_static(b"x"),
            false,
            None,
            true,
        );
        match &ev[..] {
            [CacheEvent::Created(c)] => assert_eq!(c.data.as_deref(), Some(&b"x"[..])),
            other => panic!("{other:?}"),
        }
        let got = s.get("/r").unwrap();
        assert_eq!(got.data, None);
        assert_eq!(got.stat.czxid, 1);
    }
}
