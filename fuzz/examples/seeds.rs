//! Writes the seed corpora under `fuzz/corpus/<target>/` from the golden fixtures of zk-proto
//! (`zk-proto/tests/fixtures/*.hex`, frames captured from the real Java client and server).
//!
//! Run from the repository root: `cargo run --manifest-path fuzz/Cargo.toml --example seeds`.

use std::fs;
use std::path::Path;

use zk_proto_fuzz::{index_of, ALL, REPLIES, REQUESTS};

const FILES: &[(&str, &str)] = &[
    ("acl", include_str!("../../zk-proto/tests/fixtures/acl.hex")),
    (
        "auth",
        include_str!("../../zk-proto/tests/fixtures/auth.hex"),
    ),
    (
        "children",
        include_str!("../../zk-proto/tests/fixtures/children.hex"),
    ),
    (
        "config",
        include_str!("../../zk-proto/tests/fixtures/config.hex"),
    ),
    (
        "connect",
        include_str!("../../zk-proto/tests/fixtures/connect.hex"),
    ),
    (
        "multi",
        include_str!("../../zk-proto/tests/fixtures/multi.hex"),
    ),
    (
        "node",
        include_str!("../../zk-proto/tests/fixtures/node.hex"),
    ),
    (
        "session",
        include_str!("../../zk-proto/tests/fixtures/session.hex"),
    ),
    (
        "watch",
        include_str!("../../zk-proto/tests/fixtures/watch.hex"),
    ),
];

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("fixture hex"))
        .collect()
}

fn write(dir: &Path, target: &str, name: &str, data: &[u8]) {
    let dir = dir.join(target);
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join(name.replace('#', "_")), data).unwrap();
}

fn main() {
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let mut count = 0;
    for (file, text) in FILES {
        let mut stream = Vec::new();
        for line in text
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
        {
            let parts: Vec<&str> = line.split_whitespace().collect();
            let (name, dir, record, wire) = (parts[0], parts[1], parts[2], hex(parts[3]));
            stream.extend_from_slice(&wire);
            let body = &wire[4..];
            let record = if record == "-" { "Empty" } else { record };
            let is_connect = record.starts_with("Connect");
            let header_len = match (is_connect, dir) {
                (true, _) => 0,
                (false, "C>S") => 8,
                (false, _) => 16,
            };
            let table = if dir == "C>S" { REQUESTS } else { REPLIES };
            let sel = index_of(table, record).unwrap_or_else(|| panic!("{record} not in table"));
            let target = if dir == "C>S" { "request" } else { "reply" };
            write(&out, target, name, &[&[sel], body].concat());
            if let Some(sel) = index_of(ALL, record) {
                write(
                    &out,
                    "roundtrip",
                    name,
                    &[&[sel], &body[header_len..]].concat(),
                );
            }
            count += 1;
        }
        write(&out, "frame", file, &stream);
    }
    println!("wrote seeds for {count} frames to {}", out.display());
}
