//! The store against a plain model of what it must do (one sorted map of full paths), over
//! random reads, removals, sweeps and compactions on names that sort around the `/`.

use std::collections::BTreeMap;

use zk_client::{Bytes, Stat};

use super::{depth, level_below, Store};
use crate::cache::node::{CacheEvent, ChildData};
use crate::path::parent;

#[derive(Clone)]
struct Entry {
    stat: Stat,
    data: Option<Bytes>,
    seen: u32,
}

/// The reference: every path in one map, everything computed by brute force.
struct Model {
    root: String,
    nodes: BTreeMap<String, Entry>,
}

impl Model {
    fn is_below(&self, path: &str, ancestor: &str) -> bool {
        path != ancestor
            && path.starts_with(ancestor)
            && (ancestor == "/" || path.as_bytes().get(ancestor.len()) == Some(&b'/'))
    }

    fn child_data(&self, path: &str) -> ChildData {
        let e = &self.nodes[path];
        ChildData {
            path: path.to_owned(),
            stat: e.stat.clone(),
            data: e.data.clone(),
        }
    }

    /// Removes the nodes `gone` selects among `candidates` (a node also goes with its
    /// parent), deepest first, by path within a depth.
    fn remove_where(
        &mut self,
        mut candidates: Vec<String>,
        gone: impl Fn(&str, &Entry) -> bool,
    ) -> Vec<CacheEvent> {
        candidates.sort_by(|a, b| depth(a).cmp(&depth(b)).then(a.cmp(b)));
        let mut doomed: Vec<String> = Vec::new();
        for p in candidates {
            if gone(&p, &self.nodes[&p]) || doomed.iter().any(|d| d == parent(&p)) {
                doomed.push(p);
            }
        }
        doomed.sort_by(|a, b| depth(b).cmp(&depth(a)).then(a.cmp(b)));
        let out = doomed
            .iter()
            .map(|p| CacheEvent::Deleted(self.child_data(p)))
            .collect();
        for p in &doomed {
            self.nodes.remove(p);
        }
        out
    }

    fn below(&self, path: &str) -> Vec<String> {
        self.nodes
            .keys()
            .filter(|p| self.is_below(p, path))
            .cloned()
            .collect()
    }

    fn read(
        &mut self,
        path: &str,
        stat: Stat,
        data: Bytes,
        keep: bool,
        seen: Option<u32>,
    ) -> Vec<CacheEvent> {
        let Some(level) = level_below(&self.root, path) else {
            return Vec::new();
        };
        let full = ChildData {
            path: path.to_owned(),
            stat: stat.clone(),
            data: Some(data.clone()),
        };
        let new = |seen: u32| Entry {
            stat: stat.clone(),
            data: keep.then(|| data.clone()),
            seen,
        };
        let Some(old) = self.nodes.get(path).cloned() else {
            if level > 0 && !self.nodes.contains_key(parent(path)) {
                return Vec::new();
            }
            self.nodes.insert(path.to_owned(), new(seen.unwrap_or(0)));
            return vec![CacheEvent::Created(full)];
        };
        let seen = seen.unwrap_or(old.seen);
        if old.stat.czxid != stat.czxid {
            let below = self.below(path);
            let mut out = self.remove_where(below, |_, e| e.stat.czxid < stat.czxid);
            out.push(CacheEvent::Deleted(self.child_data(path)));
            out.push(CacheEvent::Created(full));
            self.nodes.insert(path.to_owned(), new(seen));
            out
        } else if old.stat.version != stat.version {
            let out = vec![CacheEvent::Changed {
                old: self.child_data(path),
                new: full,
            }];
            self.nodes.insert(path.to_owned(), new(seen));
            out
        } else {
            let e = self.nodes.get_mut(path).expect("present");
            e.stat = stat;
            e.seen = seen;
            Vec::new()
        }
    }

    fn remove(&mut self, path: &str) -> Vec<CacheEvent> {
        if !self.nodes.contains_key(path) {
            return Vec::new();
        }
        let mut all = self.below(path);
        all.push(path.to_owned());
        self.remove_where(all, |_, _| true)
    }

    fn sweep(&mut self, pass: u32) -> Vec<CacheEvent> {
        let all: Vec<String> = self.nodes.keys().cloned().collect();
        self.remove_where(all, |_, e| e.seen != pass)
    }

    fn entries(&self) -> Vec<ChildData> {
        let mut paths: Vec<&String> = self.nodes.keys().collect();
        paths.sort_by(|a, b| depth(a).cmp(&depth(b)).then(a.cmp(b)));
        paths.into_iter().map(|p| self.child_data(p)).collect()
    }

    fn children(&self, path: &str) -> Vec<ChildData> {
        self.nodes
            .keys()
            .filter(|p| self.is_below(p, path) && parent(p) == path)
            .map(|p| self.child_data(p))
            .collect()
    }
}

/// xorshift64*: deterministic and enough to pick operations.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

const NAMES: [&str; 7] = ["a", "a-b", "a.b", "a0", "ab", "b", "z"];

fn random_path(rng: &mut Rng, root: &str) -> String {
    let mut path = root.to_owned();
    for _ in 0..rng.below(4) {
        path = crate::path::join(&path, rng.pick(&NAMES));
    }
    path
}

fn check(store: &Store, model: &Model, rng: &mut Rng, root: &str) {
    assert_eq!(store.len(), model.nodes.len());
    assert_eq!(store.entries(), model.entries());
    for p in model.nodes.keys() {
        assert_eq!(store.children(p), model.children(p), "children of {p}");
        assert_eq!(store.get(p), Some(model.child_data(p)));
    }
    for _ in 0..8 {
        let p = random_path(rng, root);
        assert_eq!(store.get(&p).is_some(), model.nodes.contains_key(&p), "{p}");
    }
}

fn run(seed: u64, root: &str, steps: usize) {
    let mut rng = Rng(seed);
    let mut store = Store::new(root);
    let mut model = Model {
        root: root.to_owned(),
        nodes: BTreeMap::new(),
    };
    let mut zxid = 1i64;
    let mut pass = 1u32;
    for step in 0..steps {
        let events = rng.below(4) != 0;
        let what = rng.below(100);
        let path = random_path(&mut rng, root);
        let (got, want) = if what < 65 {
            let czxid = match model.nodes.get(&path) {
                // Found replaced, by a node older or newer than some of the old descendants.
                Some(e) if rng.below(5) == 0 => {
                    zxid += 1;
                    e.stat.czxid + 1 + rng.below((zxid - e.stat.czxid) as u64) as i64
                }
                Some(e) => e.stat.czxid,
                None => {
                    zxid += 1;
                    zxid
                }
            };
            let stat = Stat {
                czxid,
                version: rng.below(3) as i32,
                num_children: rng.below(3) as i32,
                ..Stat::default()
            };
            let len = [0, 3, 40, super::tree::INLINE_MAX + 20][rng.below(4) as usize];
            let data = Bytes::from(vec![step as u8; len]);
            let keep = rng.below(5) != 0;
            let seen = (rng.below(4) != 0).then_some(pass);
            (
                store.apply_read(&path, stat.clone(), data.clone(), keep, seen, events),
                model.read(&path, stat, data, keep, seen),
            )
        } else if what < 85 {
            (store.remove(&path, events), model.remove(&path))
        } else if what < 95 {
            let out = (store.sweep(pass, events), model.sweep(pass));
            if rng.below(2) == 0 {
                pass += 1;
            }
            out
        } else {
            store.compact();
            (Vec::new(), Vec::new())
        };
        if events {
            assert_eq!(got, want, "seed {seed} step {step} on {path}");
        } else {
            assert!(got.is_empty());
        }
        check(&store, &model, &mut rng, root);
    }
}

#[test]
fn the_store_does_what_the_model_does() {
    for seed in 1..=12u64 {
        run(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15), "/r", 400);
        run(seed.wrapping_mul(0x6a09_e667_f3bc_c909), "/", 400);
    }
}
