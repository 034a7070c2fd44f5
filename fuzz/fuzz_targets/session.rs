#![no_main]

// The session core (zk-client's sans-IO state machine) driven by arbitrary server frames,
// commands and timer events: no panic, no unbounded growth.
libfuzzer_sys::fuzz_target!(|data: &[u8]| zk_client::fuzzing::drive_session(data));
