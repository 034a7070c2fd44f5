//! The server host's canonical name for its Kerberos principal, as the Java client's
//! `zookeeper.sasl.client.canonicalize.hostname=true` (its default) finds it
//! (`SaslServerPrincipal.getServerPrincipal`): the server's address is looked up in reverse
//! (`InetAddress.getCanonicalHostName`), and the name found is used when it resolves back to
//! that address (Java's check); otherwise the host is used as written.
//!
//! The address is the one the connection went to, as the client's resolver gave it (Java
//! resolves the host again, which may pick another address of a round-robin name: the
//! principal would then be another server's). The check that the name resolves back goes
//! through the client's resolver too (`ClientBuilder`'s, or the system's by default).
//!
//! The reverse lookup reads `/etc/hosts` (the first name of the address's line), then asks
//! the name servers of `/etc/resolv.conf` for the address's PTR record over UDP (one second
//! each, the first three), as the C resolver does with `hosts: files dns`; no C library is
//! called (the crate forbids `unsafe`, and `getnameinfo` needs it).

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use tokio::net::UdpSocket;

use crate::resolve::Resolver;

/// How long one name server may take to answer.
const DNS_TIMEOUT: Duration = Duration::from_secs(1);
/// How many name servers of resolv.conf are asked (glibc's `MAXNS`).
const MAX_SERVERS: usize = 3;
/// DNS record type PTR and class IN.
const PTR: u16 = 12;
const IN: u16 = 1;

/// The host name for the server principal of a connection to `host` at address
/// `connected`: the address's canonical name, or `host` itself when it has none
/// (lowercased either way, as principals are).
pub(crate) async fn canonical_host(host: &str, connected: IpAddr, resolver: &Resolver) -> String {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let canonical = match reverse(connected).await {
        Some(name) if resolves_to(&name, connected, resolver).await => Some(name),
        _ => None,
    };
    match canonical {
        Some(name) => {
            tracing::debug!(%host, %connected, canonical = %name, "Kerberos: canonical server host name");
            name
        }
        None => host.to_ascii_lowercase(),
    }
}

/// Java's check: `name` resolves (through the client's resolver) to `ip` among others.
async fn resolves_to(name: &str, ip: IpAddr, resolver: &Resolver) -> bool {
    match resolver.resolve(&format!("{name}:0")).await {
        Ok(addrs) => addrs.iter().any(|a| a.ip() == ip),
        Err(_) => false,
    }
}

/// The name of `ip`: `/etc/hosts`, then DNS.
async fn reverse(ip: IpAddr) -> Option<String> {
    if let Some(name) = std::fs::read_to_string("/etc/hosts")
        .ok()
        .and_then(|text| hosts_name(&text, ip))
    {
        return Some(name);
    }
    let conf = std::fs::read_to_string("/etc/resolv.conf").ok()?;
    for server in nameservers(&conf).into_iter().take(MAX_SERVERS) {
        if let Some(name) = ptr_lookup(server, ip).await {
            return Some(name);
        }
    }
    None
}

/// The first name of `ip`'s line in a hosts file.
fn hosts_name(text: &str, ip: IpAddr) -> Option<String> {
    text.lines().find_map(|line| {
        let line = line.split('#').next().unwrap_or_default();
        let mut fields = line.split_whitespace();
        let addr = fields.next()?.parse::<IpAddr>().ok()?;
        (addr == ip)
            .then(|| fields.next().map(str::to_ascii_lowercase))
            .flatten()
    })
}

/// The `nameserver` addresses of a resolv.conf.
fn nameservers(conf: &str) -> Vec<IpAddr> {
    conf.lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            (fields.next()? == "nameserver")
                .then(|| fields.next()?.parse().ok())
                .flatten()
        })
        .collect()
}

/// The PTR name of `ip`: `4.3.2.1.in-addr.arpa`, or the reversed nibbles `.ip6.arpa`.
fn ptr_name(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, d] = v4.octets();
            format!("{d}.{c}.{b}.{a}.in-addr.arpa")
        }
        IpAddr::V6(v6) => {
            let mut name = String::with_capacity(72);
            for byte in v6.octets().iter().rev() {
                name.push_str(&format!("{:x}.{:x}.", byte & 0xf, byte >> 4));
            }
            name.push_str("ip6.arpa");
            name
        }
    }
}

/// A DNS query for the PTR record of `name`, with id `id` (recursion desired).
fn ptr_query(id: u16, name: &str) -> Vec<u8> {
    let mut q = Vec::with_capacity(name.len() + 18);
    q.extend_from_slice(&id.to_be_bytes());
    q.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in name.split('.') {
        // Labels of a PTR name are at most 16 bytes ("in-addr"): they fit a length byte.
        q.push(label.len() as u8);
        q.extend_from_slice(label.as_bytes());
    }
    q.push(0);
    q.extend_from_slice(&PTR.to_be_bytes());
    q.extend_from_slice(&IN.to_be_bytes());
    q
}

async fn ptr_lookup(server: IpAddr, ip: IpAddr) -> Option<String> {
    let bind: SocketAddr = match server {
        IpAddr::V4(_) => ([0, 0, 0, 0], 0).into(),
        IpAddr::V6(_) => ([0u16; 8], 0).into(),
    };
    let socket = UdpSocket::bind(bind).await.ok()?;
    socket.connect((server, 53)).await.ok()?;
    let id: u16 = rand::random();
    socket.send(&ptr_query(id, &ptr_name(ip))).await.ok()?;
    let mut buf = vec![0; 1500];
    let n = tokio::time::timeout(DNS_TIMEOUT, socket.recv(&mut buf))
        .await
        .ok()?
        .ok()?;
    buf.truncate(n);
    ptr_answer(&buf, id)
}

fn be16(msg: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*msg.get(at)?, *msg.get(at + 1)?]))
}

/// The first PTR name of a DNS reply to our query `id` (untrusted bytes: never panics).
fn ptr_answer(msg: &[u8], id: u16) -> Option<String> {
    let flags = be16(msg, 2)?;
    // Our id, a response, no error.
    if be16(msg, 0)? != id || flags & 0x8000 == 0 || flags & 0x000f != 0 {
        return None;
    }
    let questions = be16(msg, 4)?;
    let answers = be16(msg, 6)?;
    let mut at = 12;
    for _ in 0..questions {
        at = read_name(msg, at)?.1 + 4;
    }
    for _ in 0..answers {
        let (_, end) = read_name(msg, at)?;
        let kind = be16(msg, end)?;
        let len = usize::from(be16(msg, end + 8)?);
        let data = end + 10;
        if data + len > msg.len() {
            return None;
        }
        if kind == PTR {
            let (name, _) = read_name(msg, data)?;
            return (!name.is_empty()).then(|| name.to_ascii_lowercase());
        }
        at = data + len;
    }
    None
}

/// The name at `at` (following compression pointers, bounded) and the offset after it.
fn read_name(msg: &[u8], mut at: usize) -> Option<(String, usize)> {
    let mut name = String::new();
    let mut end = None;
    for _ in 0..64 {
        let len = *msg.get(at)?;
        match len {
            0 => return Some((name, end.unwrap_or(at + 1))),
            l if l & 0xc0 == 0xc0 => {
                let target = usize::from(be16(msg, at)? & 0x3fff);
                end.get_or_insert(at + 2);
                at = target;
            }
            l if l & 0xc0 == 0 => {
                let label = msg.get(at + 1..at + 1 + usize::from(l))?;
                if !name.is_empty() {
                    name.push('.');
                }
                name.push_str(std::str::from_utf8(label).ok()?);
                if name.len() > 255 {
                    return None;
                }
                at += 1 + usize::from(l);
            }
            _ => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A resolver that knows one name.
    fn knowing(name: &str, ip: IpAddr) -> Resolver {
        let name = name.to_owned();
        Resolver::new(move |host: &str, port: u16| {
            let found = (host == name).then(|| vec![std::net::SocketAddr::new(ip, port)]);
            let host = host.to_owned();
            async move { found.ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, host)) }
        })
    }

    #[tokio::test]
    async fn the_check_back_goes_through_the_clients_resolver() {
        let ip: IpAddr = "192.0.2.7".parse().unwrap();
        let other: IpAddr = "192.0.2.8".parse().unwrap();
        assert!(resolves_to("zk1.example", ip, &knowing("zk1.example", ip)).await);
        // The name resolves, but to another address: not this server's name.
        assert!(!resolves_to("zk1.example", ip, &knowing("zk1.example", other)).await);
        // The client's resolver does not know it (whatever the system's would say).
        assert!(
            !resolves_to(
                "localhost",
                "127.0.0.1".parse().unwrap(),
                &knowing("zk1.example", ip)
            )
            .await
        );
    }

    #[tokio::test]
    async fn the_connected_address_is_named_only_when_the_clients_resolver_agrees() {
        // Loopback only: 127.0.0.1's name comes from /etc/hosts, no DNS query is sent.
        let hosts = std::fs::read_to_string("/etc/hosts").unwrap_or_default();
        let loopback: IpAddr = "127.0.0.1".parse().unwrap();
        let name = hosts_name(&hosts, loopback)
            .expect("this test needs a 127.0.0.1 line in /etc/hosts, as every Debian has");
        let agrees = knowing(&name, loopback);
        assert_eq!(canonical_host("127.0.0.1", loopback, &agrees).await, name);
        // The client's resolver puts that name elsewhere: the host as written, lowercased.
        let elsewhere = knowing(&name, "192.0.2.7".parse().unwrap());
        assert_eq!(
            canonical_host("[ZK1.Example]", loopback, &elsewhere).await,
            "zk1.example"
        );
    }

    #[test]
    fn hosts_files_give_the_first_name_of_the_address() {
        let hosts = "# comment\n127.0.0.1 localhost loopback\n127.0.0.1 runsc\n\
                     10.0.0.5\tZK1.Example.COM zk1 # the first\n::1 ip6-localhost\n";
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(
            hosts_name(hosts, ip("127.0.0.1")).as_deref(),
            Some("localhost")
        );
        assert_eq!(
            hosts_name(hosts, ip("10.0.0.5")).as_deref(),
            Some("zk1.example.com")
        );
        assert_eq!(
            hosts_name(hosts, ip("::1")).as_deref(),
            Some("ip6-localhost")
        );
        assert_eq!(hosts_name(hosts, ip("10.0.0.6")), None);
        assert_eq!(hosts_name("10.0.0.7\n", ip("10.0.0.7")), None, "no name");
        assert_eq!(
            nameservers("search x\nnameserver 10.255.255.53\nnameserver ::1\nnameserver bad\n"),
            vec![ip("10.255.255.53"), ip("::1")]
        );
    }

    #[test]
    fn ptr_names_reverse_the_address() {
        assert_eq!(
            ptr_name("10.1.2.3".parse().unwrap()),
            "3.2.1.10.in-addr.arpa"
        );
        let v6 = ptr_name("2001:db8::1".parse().unwrap());
        assert!(v6.starts_with("1.0.0.0.0.0.0.0."), "{v6}");
        assert!(v6.ends_with(".8.b.d.0.1.0.0.2.ip6.arpa"), "{v6}");
    }

    /// A reply as a server sends it: the question, then a PTR answer whose owner name is a
    /// compression pointer to the question's name.
    fn reply(id: u16, rcode: u8, target: &[&str]) -> Vec<u8> {
        let mut msg = ptr_query(id, "3.2.1.10.in-addr.arpa");
        msg[2] = 0x81;
        msg[3] = 0x80 | rcode;
        msg[7] = 1; // one answer
        msg.extend_from_slice(&[0xc0, 12]); // the question's name
        msg.extend_from_slice(&PTR.to_be_bytes());
        msg.extend_from_slice(&IN.to_be_bytes());
        msg.extend_from_slice(&[0, 0, 1, 0]); // ttl
        let mut data = Vec::new();
        for label in target {
            data.push(label.len() as u8);
            data.extend_from_slice(label.as_bytes());
        }
        data.push(0);
        msg.extend_from_slice(&(data.len() as u16).to_be_bytes());
        msg.extend_from_slice(&data);
        msg
    }

    #[test]
    fn ptr_answers_are_read_and_bad_replies_refused_without_panics() {
        let ok = reply(7, 0, &["ZK1", "example", "com"]);
        assert_eq!(ptr_answer(&ok, 7).as_deref(), Some("zk1.example.com"));
        assert_eq!(ptr_answer(&ok, 8), None, "another id");
        assert_eq!(ptr_answer(&reply(7, 3, &["x"]), 7), None, "NXDOMAIN");
        // Every truncation and every single-byte corruption: an answer or none, no panic.
        for cut in 0..ok.len() {
            let _ = ptr_answer(&ok[..cut], 7);
        }
        for at in 0..ok.len() {
            for byte in [0x00, 0x3f, 0xc0, 0xff] {
                let mut bad = ok.clone();
                bad[at] = byte;
                let _ = ptr_answer(&bad, 7);
            }
        }
        // A pointer loop ends.
        let mut looped = ok.clone();
        // Header (12), the question's name (23), type and class (4): the answer's name.
        let answer_name = 12 + 23 + 4;
        assert_eq!(ok[answer_name], 0xc0);
        looped[answer_name + 1] = answer_name as u8;
        assert_eq!(ptr_answer(&looped, 7), None);
    }
}
