//! The store's behaviour: events, order, the parent rule, sweeps, and its memory.
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

#[test]
fn siblings_whose_names_sort_around_the_slash_keep_path_order() {
    // '-' and '.' sort before '/', '0' after: the children of `a-b` come before those of `a`.
    let mut s = Store::new("/r");
    let all = [
        "/r",
        "/r/a",
        "/r/a-b",
        "/r/a.b",
        "/r/a0",
        "/r/a/x",
        "/r/a-b/y",
        "/r/a.b/z",
        "/r/a0/w",
        "/r/a/x/1",
        "/r/a-b/y/2",
    ];
    for p in all {
        read(&mut s, p, 1, 0, "");
    }
    let mut want: Vec<&str> = all.to_vec();
    want.sort_by(|a, b| depth(a).cmp(&depth(b)).then(a.cmp(b)));
    assert_eq!(paths(&s.entries()), want);
    assert_eq!(
        paths(&s.children("/r")),
        ["/r/a", "/r/a-b", "/r/a.b", "/r/a0"]
    );
    let gone = s.remove("/r", true);
    let gone: Vec<_> = gone.iter().filter_map(|e| e.path()).collect();
    let mut want_gone = all.to_vec();
    want_gone.sort_by(|a, b| depth(b).cmp(&depth(a)).then(a.cmp(b)));
    assert_eq!(gone, want_gone, "deepest first, by path within a depth");
    assert_eq!(s.len(), 0);
}

#[test]
fn big_data_is_shared_small_data_is_copied() {
    let mut s = Store::new("/r");
    let big = vec![7u8; tree::INLINE_MAX + 1];
    s.apply_read(
        "/r",
        stat(1, 0),
        Bytes::from(big.clone()),
        true,
        None,
        false,
    );
    let (a, b) = (
        s.get("/r").unwrap().data.unwrap(),
        s.get("/r").unwrap().data.unwrap(),
    );
    assert_eq!(&a[..], &big[..]);
    assert_eq!(a.as_ptr(), b.as_ptr(), "one copy for every reader");
    // Down to small, then up again: the old bytes never show through.
    s.apply_read(
        "/r",
        stat(1, 1),
        Bytes::from_static(b"xy"),
        true,
        None,
        false,
    );
    assert_eq!(s.get("/r").unwrap().data.as_deref(), Some(&b"xy"[..]));
    s.apply_read(
        "/r",
        stat(1, 2),
        Bytes::from_static(b"z"),
        true,
        None,
        false,
    );
    assert_eq!(s.get("/r").unwrap().data.as_deref(), Some(&b"z"[..]));
    s.apply_read(
        "/r",
        stat(1, 3),
        Bytes::from_static(b"longer"),
        true,
        None,
        false,
    );
    assert_eq!(s.get("/r").unwrap().data.as_deref(), Some(&b"longer"[..]));
    s.apply_read(
        "/r",
        stat(1, 4),
        Bytes::from(big.clone()),
        false,
        None,
        false,
    );
    assert_eq!(s.get("/r").unwrap().data, None);
    assert_eq!(s.get("/r").unwrap().stat.version, 4);
}

/// The bench's subtree (`bench/examples/cache_memory.rs`): a root, parents `p<i>` and 100
/// children `c<j>` each, 32 bytes of data per node.
fn bench_tree(n: usize) -> Store {
    let mut s = Store::new("/bench/cache");
    let data = Bytes::from(vec![0x5a; 32]);
    let mut made = 0;
    let mut put = |s: &mut Store, path: &str| {
        made += 1;
        s.apply_read(
            path,
            stat(made as i64, 0),
            data.clone(),
            true,
            Some(1),
            false,
        );
    };
    put(&mut s, "/bench/cache");
    'outer: for p in 0.. {
        let parent = format!("/bench/cache/p{p}");
        put(&mut s, &parent);
        for c in 0..100 {
            if s.len() >= n {
                break 'outer;
            }
            put(&mut s, &format!("{parent}/c{c}"));
        }
        if s.len() >= n {
            break;
        }
    }
    s.sweep(1, false);
    assert_eq!(s.len(), n);
    s
}

#[test]
fn memory_per_node_stays_below_curators_heap() {
    // Curator 5.4's CuratorCache: 264 B of live heap per node at 10,000 nodes of this shape.
    let mut sizes = vec![1_000, 10_000, 100_000];
    if std::env::var_os("ZK_STORE_1M").is_some() {
        sizes.push(1_000_000);
    }
    for n in sizes {
        let s = bench_tree(n);
        let per_node = s.heap_bytes() as f64 / n as f64;
        println!("store: {n} nodes, {per_node:.1} B/node");
        assert!(per_node < 200.0, "{n} nodes: {per_node:.1} B per node");
    }
}

#[test]
fn memory_follows_the_live_nodes() {
    let mut s = bench_tree(20_000);
    let full = s.heap_bytes();
    // Most of it deleted, the rest rewritten with bigger data: freed slots and bytes go.
    for p in 0..190 {
        s.remove(&format!("/bench/cache/p{p}"), false);
    }
    for c in 0..100 {
        let path = format!("/bench/cache/p195/c{c}");
        s.apply_read(
            &path,
            stat(1_000_000 + c, 1),
            Bytes::from(vec![1; 64]),
            true,
            Some(2),
            false,
        );
    }
    s.apply_read(
        "/bench/cache",
        stat(1, 0),
        Bytes::new(),
        true,
        Some(2),
        false,
    );
    for p in 190..199 {
        let parent = format!("/bench/cache/p{p}");
        s.apply_read(&parent, stat(1, 0), Bytes::new(), true, Some(2), false);
        for c in 0..100 {
            let path = format!("{parent}/c{c}");
            if let Some(node) = s.get(&path) {
                let data = node.data.unwrap_or_default();
                s.apply_read(&path, node.stat, data, true, Some(2), false);
            }
        }
    }
    assert!(s.sweep(2, true).is_empty(), "every node left was seen");
    // The root, p190..=p198, and 100 children under each but p198 (made last, with none).
    assert_eq!(s.len(), 1 + 9 + 8 * 100);
    assert!(
        s.heap_bytes() < full / 10,
        "{} bytes left of {full}",
        s.heap_bytes()
    );
    let c = s.get("/bench/cache/p195/c7").unwrap();
    assert_eq!(c.data.as_deref(), Some(&[1u8; 64][..]));
    assert_eq!(c.stat.czxid, 1_000_007);
    assert_eq!(s.children("/bench/cache/p195").len(), 100);
}
