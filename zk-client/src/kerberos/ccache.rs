//! The MIT Kerberos credentials cache (`FILE:` type, what `kinit` writes), read in pure Rust.
//!
//! Format (MIT krb5 `ccache_file_format`), all integers big-endian for versions 3 and 4
//! (`0x0503`, `0x0504`; versions 1 and 2 use the host's byte order and are refused):
//!
//! ```text
//! u16 version | (v4) u16 header length, header | principal (the default client)
//! credential*: client principal, server principal, keyblock (u16 enctype, data),
//!              u32 authtime, starttime, endtime, renew_till, u8 is_skey, u32 flags,
//!              u32 n + addresses (u16 type, data), u32 n + authdata (u16 type, data),
//!              ticket (data), second ticket (data)
//! principal:   u32 name type, u32 n components, realm (data), n components (data)
//! data:        u32 length, bytes
//! ```
//!
//! Parsing is bounded and panic-free: the file is read up to [`MAX_CCACHE_LEN`], every
//! length is checked against what is left, counts against fixed bounds; bad input is an
//! error naming what was wrong.

use std::path::{Path, PathBuf};

/// The largest cache read (a cache with a few dozen tickets is some tens of KiB).
pub(crate) const MAX_CCACHE_LEN: u64 = 1 << 20;
/// Bounds on counts read from the file.
const MAX_COMPONENTS: u32 = 16;
const MAX_LIST: u32 = 256;

/// A principal as the cache stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Principal {
    pub(crate) name_type: u32,
    pub(crate) realm: String,
    pub(crate) components: Vec<String>,
}

impl Principal {
    /// `a/b@REALM`.
    pub(crate) fn display(&self) -> String {
        format!("{}@{}", self.components.join("/"), self.realm)
    }

    /// Whether this is the ticket-granting service of `realm` (`krbtgt/REALM@REALM`).
    fn is_tgs_of(&self, realm: &str) -> bool {
        self.realm == realm
            && self.components.len() == 2
            && self.components.first().map(String::as_str) == Some("krbtgt")
            && self.components.get(1).map(String::as_str) == Some(realm)
    }
}

/// One credential (ticket and its session key).
#[derive(Debug, Clone)]
pub(crate) struct Credential {
    pub(crate) client: Principal,
    pub(crate) server: Principal,
    pub(crate) enctype: u16,
    pub(crate) key: Vec<u8>,
    pub(crate) starttime: u32,
    pub(crate) endtime: u32,
    pub(crate) ticket: Vec<u8>,
}

/// A parsed cache: its default principal and its credentials (configuration entries,
/// `X-CACHECONF:` servers, left out).
#[derive(Debug, Clone)]
pub(crate) struct Ccache {
    pub(crate) principal: Principal,
    pub(crate) credentials: Vec<Credential>,
}

impl Ccache {
    /// Parses the bytes of a cache file.
    pub(crate) fn parse(bytes: &[u8]) -> Result<Ccache, String> {
        let mut r = Reader { bytes, pos: 0 };
        let version = r.u16("version")?;
        match version {
            0x0504 => {
                let len = r.u16("header length")?;
                r.take(usize::from(len), "header")?;
            }
            0x0503 => {}
            0x0501 | 0x0502 => {
                return Err(format!(
                    "credentials cache version {version:#06x} (host byte order) is not supported"
                ))
            }
            _ => return Err(format!("not a credentials cache (version {version:#06x})")),
        }
        let principal = r.principal()?;
        let mut credentials = Vec::new();
        while !r.at_end() {
            if credentials.len() >= MAX_LIST as usize {
                return Err("credentials cache holds too many entries".into());
            }
            let cred = r.credential()?;
            if !cred.server.realm.starts_with("X-CACHECONF:") {
                credentials.push(cred);
            }
        }
        Ok(Ccache {
            principal,
            credentials,
        })
    }

    /// Reads and parses the cache at `path` (at most [`MAX_CCACHE_LEN`] bytes).
    pub(crate) fn read(path: &Path) -> Result<Ccache, String> {
        use std::io::Read;
        let file = std::fs::File::open(path)
            .map_err(|e| format!("cannot open credentials cache {}: {e}", path.display()))?;
        let mut bytes = Vec::new();
        file.take(MAX_CCACHE_LEN + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read credentials cache {}: {e}", path.display()))?;
        if bytes.len() as u64 > MAX_CCACHE_LEN {
            return Err(format!(
                "credentials cache {} is larger than {MAX_CCACHE_LEN} bytes",
                path.display()
            ));
        }
        Ccache::parse(&bytes).map_err(|e| format!("credentials cache {}: {e}", path.display()))
    }

    /// The ticket-granting ticket of the default principal's realm, valid at `now` (seconds
    /// since the epoch).
    ///
    /// # Errors
    ///
    /// A message saying whether there is no such ticket or it expired (and when).
    pub(crate) fn tgt(&self, now: u64) -> Result<&Credential, String> {
        let realm = &self.principal.realm;
        let tgts: Vec<&Credential> = self
            .credentials
            .iter()
            .filter(|c| c.client == self.principal && c.server.is_tgs_of(realm))
            .collect();
        let latest = tgts.iter().max_by_key(|c| c.endtime).ok_or_else(|| {
            format!(
                "no ticket-granting ticket for {} (run kinit)",
                self.principal.display()
            )
        })?;
        if u64::from(latest.endtime) <= now {
            return Err(format!(
                "the ticket-granting ticket of {} expired {} s ago (run kinit)",
                self.principal.display(),
                now - u64::from(latest.endtime)
            ));
        }
        if u64::from(latest.starttime) > now + 300 {
            return Err(format!(
                "the ticket-granting ticket of {} is not valid yet",
                self.principal.display()
            ));
        }
        Ok(latest)
    }
}

/// Where the default cache is: `$KRB5CCNAME` (`FILE:path` or a plain path; other types are
/// refused), else `/tmp/krb5cc_<uid>`.
pub(crate) fn default_path() -> Result<PathBuf, String> {
    match std::env::var("KRB5CCNAME") {
        Ok(name) if !name.is_empty() => cache_path(&name),
        _ => {
            let uid = current_uid()?;
            Ok(PathBuf::from(format!("/tmp/krb5cc_{uid}")))
        }
    }
}

/// The file of a cache name: `FILE:path` or `path`; `DIR:`, `KEYRING:`, `KCM:`, `MEMORY:`,
/// `API:` are not supported.
pub(crate) fn cache_path(name: &str) -> Result<PathBuf, String> {
    if let Some(path) = name.strip_prefix("FILE:") {
        return Ok(PathBuf::from(path));
    }
    match name.split_once(':') {
        Some((kind, _)) if !kind.contains('/') => Err(format!(
            "credentials cache {name:?}: type {kind}: is not supported (only FILE:)"
        )),
        _ => Ok(PathBuf::from(name)),
    }
}

/// The process's real user id, from `/proc/self` (no libc call).
fn current_uid() -> Result<u32, String> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self")
        .map(|m| m.uid())
        .map_err(|e| format!("cannot find the user id for the default credentials cache: {e}"))
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn at_end(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len())
            .ok_or_else(|| format!("truncated at byte {} ({what})", self.pos))?;
        let out = self.bytes.get(self.pos..end).unwrap_or_default();
        self.pos = end;
        Ok(out)
    }

    fn u8(&mut self, what: &str) -> Result<u8, String> {
        Ok(self.take(1, what)?.first().copied().unwrap_or_default())
    }

    fn u16(&mut self, what: &str) -> Result<u16, String> {
        let b = self.take(2, what)?;
        Ok(u16::from_be_bytes(b.try_into().unwrap_or_default()))
    }

    fn u32(&mut self, what: &str) -> Result<u32, String> {
        let b = self.take(4, what)?;
        Ok(u32::from_be_bytes(b.try_into().unwrap_or_default()))
    }

    fn data(&mut self, what: &str) -> Result<&'a [u8], String> {
        let len = self.u32(what)?;
        let len = usize::try_from(len).map_err(|_| format!("{what}: length {len}"))?;
        self.take(len, what)
    }

    fn text(&mut self, what: &str) -> Result<String, String> {
        let b = self.data(what)?;
        String::from_utf8(b.to_vec()).map_err(|_| format!("{what} is not UTF-8"))
    }

    fn principal(&mut self) -> Result<Principal, String> {
        let name_type = self.u32("principal name type")?;
        let n = self.u32("principal component count")?;
        if n > MAX_COMPONENTS {
            return Err(format!("principal with {n} components"));
        }
        let realm = self.text("realm")?;
        let mut components = Vec::with_capacity(n as usize);
        for _ in 0..n {
            components.push(self.text("principal component")?);
        }
        Ok(Principal {
            name_type,
            realm,
            components,
        })
    }

    fn skip_list(&mut self, what: &str) -> Result<(), String> {
        let n = self.u32(what)?;
        if n > MAX_LIST {
            return Err(format!("{what}: {n} entries"));
        }
        for _ in 0..n {
            self.u16(what)?;
            self.data(what)?;
        }
        Ok(())
    }

    fn credential(&mut self) -> Result<Credential, String> {
        let client = self.principal()?;
        let server = self.principal()?;
        let enctype = self.u16("key type")?;
        let key = self.data("key")?.to_vec();
        let _authtime = self.u32("authtime")?;
        let starttime = self.u32("starttime")?;
        let endtime = self.u32("endtime")?;
        let _renew_till = self.u32("renew_till")?;
        let _is_skey = self.u8("is_skey")?;
        let _flags = self.u32("ticket flags")?;
        self.skip_list("addresses")?;
        self.skip_list("authdata")?;
        let ticket = self.data("ticket")?.to_vec();
        let _second = self.data("second ticket")?;
        Ok(Credential {
            client,
            server,
            enctype,
            key,
            starttime,
            endtime,
            ticket,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `kinit alice` (password) against the test KDC (10 h tickets, AES-256): version 4,
    /// one TGT and one configuration entry.
    const KINIT: &[u8] = include_bytes!("testdata/krb5cc_kinit");
    /// The same after `kvno zookeeper/localhost`: a service ticket too.
    const KINIT_KVNO: &[u8] = include_bytes!("testdata/krb5cc_kinit_kvno");

    #[test]
    fn reads_what_kinit_wrote() {
        let cache = Ccache::parse(KINIT).unwrap();
        assert_eq!(cache.principal.display(), "alice@ZKRS.TEST");
        assert_eq!(cache.principal.name_type, 1);
        assert_eq!(
            cache.credentials.len(),
            1,
            "the X-CACHECONF entry is left out"
        );
        let tgt = cache.credentials.first().unwrap();
        assert_eq!(tgt.server.display(), "krbtgt/ZKRS.TEST@ZKRS.TEST");
        assert_eq!((tgt.enctype, tgt.key.len()), (18, 32));
        assert_eq!(tgt.endtime - tgt.starttime, 10 * 3600);
        assert_eq!(
            tgt.ticket.first(),
            Some(&0x61),
            "a DER Ticket ([APPLICATION 1])"
        );
        let now = u64::from(tgt.starttime) + 60;
        assert_eq!(cache.tgt(now).unwrap().endtime, tgt.endtime);

        let cache = Ccache::parse(KINIT_KVNO).unwrap();
        let servers: Vec<String> = cache
            .credentials
            .iter()
            .map(|c| c.server.display())
            .collect();
        assert_eq!(
            servers,
            [
                "krbtgt/ZKRS.TEST@ZKRS.TEST",
                "zookeeper/localhost@ZKRS.TEST"
            ]
        );
        assert_eq!(
            cache.tgt(now).unwrap().server.components,
            ["krbtgt", "ZKRS.TEST"]
        );
    }

    #[test]
    fn an_expired_or_missing_tgt_says_so() {
        let cache = Ccache::parse(KINIT).unwrap();
        let end = u64::from(cache.credentials.first().unwrap().endtime);
        let err = cache.tgt(end + 5).unwrap_err();
        assert!(
            err.contains("expired 5 s ago") && err.contains("alice@ZKRS.TEST"),
            "{err}"
        );
        let mut none = cache.clone();
        none.credentials.clear();
        assert!(none
            .tgt(end - 5)
            .unwrap_err()
            .contains("no ticket-granting ticket"));
    }

    #[test]
    fn every_truncation_is_an_error() {
        for data in [KINIT, KINIT_KVNO] {
            // Cutting inside the last entry fails; cutting between entries is a shorter cache.
            let mut ok = 0;
            for cut in 0..data.len() {
                match Ccache::parse(&data[..cut]) {
                    Ok(c) => {
                        ok += 1;
                        assert!(c.credentials.len() < 2);
                    }
                    Err(e) => assert!(e.contains("truncated"), "cut {cut}: {e}"),
                }
            }
            assert!(ok <= 3, "{ok} prefixes parsed");
        }
    }

    #[test]
    fn garbage_and_other_versions_are_errors_not_panics() {
        assert!(Ccache::parse(b"").is_err());
        let err = Ccache::parse(&[0x05, 0x02, 0, 0]).unwrap_err();
        assert!(err.contains("0x0502"), "{err}");
        assert!(Ccache::parse(b"\x01\x02junk")
            .unwrap_err()
            .contains("not a credentials cache"));
        // A huge length or count anywhere: an error, never an allocation of that size.
        let mut big = KINIT.to_vec();
        big.splice(20..24, [0xff, 0xff, 0xff, 0xff]); // the component count
        assert!(Ccache::parse(&big).is_err());
        let mut x = 0x1234_5678_u32;
        for round in 0..2000 {
            let mut data = KINIT.to_vec();
            for _ in 0..(round % 8 + 1) {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                let i = x as usize % data.len();
                if let Some(b) = data.get_mut(i) {
                    *b = (x >> 8) as u8;
                }
            }
            let _ = Ccache::parse(&data);
        }
    }

    #[test]
    fn cache_names() {
        assert_eq!(
            cache_path("FILE:/tmp/cc").unwrap(),
            PathBuf::from("/tmp/cc")
        );
        assert_eq!(cache_path("/tmp/cc").unwrap(), PathBuf::from("/tmp/cc"));
        let err = cache_path("KEYRING:persistent:0").unwrap_err();
        assert!(err.contains("only FILE:"), "{err}");
        assert!(cache_path("KCM:").is_err());
    }
}
