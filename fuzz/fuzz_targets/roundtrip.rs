#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| zk_proto_fuzz::fuzz_roundtrip(data));
