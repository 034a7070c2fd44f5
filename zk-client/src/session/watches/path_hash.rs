//! The hasher of the watch registry's path keys.
//!
//! A watch registration, its reply, its event and the reconcile after it each hash the path
//! (5-6 hashes per lock acquisition); std's SipHash-1-3 costs ~300 instructions for a lock
//! node's 60-byte path, this multiplicative hash (8 bytes per step) a tenth of that. The
//! registry's keys are paths the application chose to watch (a server's notification only
//! looks one up), so flooding resistance buys nothing here.

use std::hash::{BuildHasherDefault, Hasher};

/// `HashMap` state for path keys.
pub(crate) type BuildPathHasher = BuildHasherDefault<PathHasher>;

/// An odd 64-bit constant with well-spread bits (the multiplier of the golden ratio).
const MUL: u64 = 0x9e37_79b9_7f4a_7c15;

#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct PathHasher(u64);

impl PathHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(MUL);
    }
}

impl Hasher for PathHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            self.add(u64::from_le_bytes(word.try_into().unwrap_or_default()));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last.get_mut(..rest.len())
                .unwrap_or_default()
                .copy_from_slice(rest);
            self.add(u64::from_le_bytes(last));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        // The product's high bits are its best mixed; the table indexes with the low ones.
        self.0.rotate_left(26)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::hash::BuildHasher;

    use super::*;

    #[test]
    fn paths_that_differ_anywhere_hash_apart() {
        let build = BuildPathHasher::default();
        let mut seen = HashSet::new();
        for i in 0..2000 {
            for path in [
                format!("/locks/_c_{i:08}-lock-"),
                format!("/locks/x/lock-{i:010}"),
                format!("/{i}"),
            ] {
                assert!(seen.insert(build.hash_one(&path)), "{path}");
            }
        }
        // The low bits (the bucket index) spread too.
        let buckets: HashSet<u64> = (0..1024)
            .map(|i| build.hash_one(format!("/locks/lock-{i:010}")) & 1023)
            .collect();
        assert!(buckets.len() > 500, "{} buckets of 1024", buckets.len());
    }
}
