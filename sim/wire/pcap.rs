//! A classic pcap file (libpcap 2.4, Ethernet link type, microsecond timestamps) of frames,
//! written with `pcap-file`. Timestamps are virtual time on fabsim's fixed epoch (the same
//! wall clock the text views print), and the header is little-endian whatever the host, so a
//! run writes the same bytes everywhere.

use std::io::Write;
use std::time::Duration;

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::{DataLink, Endianness, TsResolution};

use super::{frame_bytes, Frame};
use crate::views::clock::wall_clock;

/// tcpdump's default snapshot length (`listening on …, snapshot length 262144 bytes`).
const SNAPLEN: u32 = 262_144;

/// Write `frames` in time order (stable: frames of one instant keep their order).
pub fn write(out: impl Write, frames: &[Frame]) -> Result<(), String> {
    let header = PcapHeader {
        version_major: 2,
        version_minor: 4,
        ts_correction: 0,
        ts_accuracy: 0,
        snaplen: SNAPLEN,
        datalink: DataLink::ETHERNET,
        ts_resolution: TsResolution::MicroSecond,
        endianness: Endianness::Little,
    };
    let mut w = PcapWriter::with_header(out, header).map_err(|e| e.to_string())?;
    let epoch_us = wall_clock(0).timestamp_micros().max(0) as u64;
    let mut order: Vec<&Frame> = frames.iter().collect();
    order.sort_by_key(|f| f.at_us);
    for f in order {
        let data = frame_bytes(f);
        let ts = Duration::from_micros(epoch_us + f.at_us);
        let len = u32::try_from(data.len()).unwrap_or(u32::MAX);
        w.write_packet(&PcapPacket::new(ts, len, &data))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}
