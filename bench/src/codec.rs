//! Codec throughput of zk-proto: encode and decode of two reply bodies, in MB/s of wire bytes.

use std::hint::black_box;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use zk_proto::records::{GetChildren2Response, GetDataResponse};
use zk_proto::{Record, Stat};

/// One codec measurement.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CodecSample {
    pub(crate) encode_mb_s: f64,
    pub(crate) decode_mb_s: f64,
    /// Wire bytes of one record.
    pub(crate) size: usize,
}

fn stat() -> Stat {
    Stat {
        czxid: 0x1_0000_0123,
        mzxid: 0x1_0000_0456,
        ctime: 1_700_000_000_000,
        mtime: 1_700_000_000_123,
        version: 3,
        cversion: 1000,
        aversion: 0,
        ephemeral_owner: 0,
        data_length: 100,
        num_children: 0,
        pzxid: 0x1_0000_0789,
    }
}

pub(crate) fn get_data_response() -> GetDataResponse {
    GetDataResponse {
        data: Bytes::from(vec![0x5a; 100]),
        stat: stat(),
    }
}

pub(crate) fn get_children2_response() -> GetChildren2Response {
    GetChildren2Response {
        children: (0..1000).map(|i| format!("child-{i:010}")).collect(),
        stat: Stat {
            num_children: 1000,
            ..stat()
        },
    }
}

/// Encodes and decodes `record` for about `budget` each; MB/s = wire bytes / second.
pub(crate) fn measure<R: Record + PartialEq + std::fmt::Debug>(
    record: &R,
    budget: Duration,
) -> CodecSample {
    let mut buf = BytesMut::new();
    record.encode(&mut buf);
    let wire = buf.split().freeze();
    let size = wire.len();
    assert_eq!(
        R::decode(&mut wire.clone()).as_ref(),
        Ok(record),
        "round trip"
    );

    // Batches of iterations until the budget is spent; the clock is read once per batch.
    let batch = (1 << 20) / size.max(1) + 1;
    let encode_mb_s = {
        let start = Instant::now();
        let mut bytes = 0usize;
        while start.elapsed() < budget {
            for _ in 0..batch {
                buf.clear();
                black_box(record).encode(&mut buf);
                bytes += black_box(&buf).len();
            }
        }
        bytes as f64 / start.elapsed().as_secs_f64() / 1e6
    };
    let decode_mb_s = {
        let start = Instant::now();
        let mut bytes = 0usize;
        while start.elapsed() < budget {
            for _ in 0..batch {
                let mut input = black_box(&wire).clone();
                let decoded = R::decode(&mut input);
                black_box(&decoded);
                bytes += size;
            }
        }
        bytes as f64 / start.elapsed().as_secs_f64() / 1e6
    };
    CodecSample {
        encode_mb_s,
        decode_mb_s,
        size,
    }
}
